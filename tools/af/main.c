/* af — the libaf command-line tool. A client of the public C API only.
 *   af version          print the library version
 *   af demo [NAME]      trace the example program (examples/hello), print its
 *                       IR text and DOT, and call it on NAME (default World)
 */
#include <stdio.h>
#include <string.h>

#include "hello_program.h"

static int fail(af_error_t* err) {
  fprintf(stderr, "af: error %d: %s\n", (int)af_error_code(err), af_error_message(err));
  for (const af_error_t* c = af_error_cause(err); c; c = af_error_cause(c))
    fprintf(stderr, "  caused by %d: %s\n", (int)af_error_code(c), af_error_message(c));
  af_error_free(err);
  return 1;
}

static int demo(const char* name) {
  af_context_t* ctx = NULL;
  af_ir_t* ir = NULL;
  af_value_t* input = NULL;
  af_value_t* result = NULL;
  af_bytes_t text = {0}, dot = {0}, json = {0};
  af_error_t* err = af_context_new(&ctx);
  if (!err) err = hello_trace(ctx, &ir);
  if (!err) err = af_ir_to_text(ir, &text);
  if (!err) err = af_ir_to_dot(ir, &dot);
  if (!err) err = af_value_str(ctx, name, strlen(name), &input);
  if (!err) {
    const af_value_t* inputs[1] = {input};
    err = af_ir_call(ctx, ir, inputs, 1, &result);
  }
  if (!err) err = af_value_to_json(result, &json);
  if (!err) {
    printf("== program: hello(x) = concat(format(\"Hello, {}!\", x), \"?\")\n");
    printf("== IR\n%s\n", (const char*)text.data);
    printf("== DOT\n%s\n", (const char*)dot.data);
    printf("== hello(\"%s\")\n%s\n", name, (const char*)json.data);
  }
  af_bytes_free(&text);
  af_bytes_free(&dot);
  af_bytes_free(&json);
  af_value_free(result);
  af_value_free(input);
  af_ir_free(ir);
  af_context_free(ctx);
  return err ? fail(err) : 0;
}

static void usage(FILE* f) {
  fprintf(f,
          "usage: af <command>\n"
          "  version        print the libaf version\n"
          "  demo [NAME]    trace the example program, print its IR and DOT, call it\n");
}

int main(int argc, char** argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  if (strcmp(argv[1], "version") == 0) {
    printf("af %s (abi %u)\n", af_version(), (unsigned)af_abi_version());
    return 0;
  }
  if (strcmp(argv[1], "demo") == 0) return demo(argc > 2 ? argv[2] : "World");
  if (strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0) {
    usage(stdout);
    return 0;
  }
  fprintf(stderr, "af: unknown command \"%s\"\n", argv[1]);
  usage(stderr);
  return 2;
}
