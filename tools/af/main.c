/* af — the libaf command-line tool. A client of the public C API only.
 *   af version                      print the library version
 *   af demo [NAME] [--save FILE]    trace the example program (examples/hello),
 *                                   print its IR and DOT, call it on NAME
 *                                   (default World); --save writes its .afg
 *   af run FILE --input JSON        load a saved graph and run it on the
 *                                   positional inputs (a JSON list)
 *   af show FILE                    the IR text of a saved graph
 *   af dot FILE                     its Graphviz DOT
 *   af verify FILE                  every load check; exit 1 with the reason
 *   af convert FILE --to json [-o OUT]     .afg -> readable JSON
 *   af convert FILE --from json [-o OUT]   JSON -> .afg
 * Exit status: 0 success, 1 an error (printed with its code), 2 bad usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hello_program.h"

static int fail(af_error_t* err) {
  fprintf(stderr, "af: error %d: %s\n", (int)af_error_code(err), af_error_message(err));
  for (const af_error_t* c = af_error_cause(err); c; c = af_error_cause(c))
    fprintf(stderr, "  caused by %d: %s\n", (int)af_error_code(c), af_error_message(c));
  af_error_free(err);
  return 1;
}

static void usage(FILE* f) {
  fprintf(f,
          "usage: af <command>\n"
          "  version                         print the libaf version\n"
          "  demo [NAME] [--save FILE]       trace the example program, print its IR and DOT,\n"
          "                                  call it; --save writes it as a saved graph\n"
          "  run FILE --input JSON           run a saved graph on a JSON list of inputs\n"
          "  show FILE                       print the IR text of a saved graph\n"
          "  dot FILE                        print its Graphviz DOT\n"
          "  verify FILE                     run every load check (exit 1 with the reason)\n"
          "  convert FILE --to json [-o OUT]    saved graph -> readable JSON\n"
          "  convert FILE --from json [-o OUT]  readable JSON -> saved graph\n");
}

static int usage_error(const char* what) {
  fprintf(stderr, "af: %s\n", what);
  usage(stderr);
  return 2;
}

/* Reads a whole file into *out (malloc'ed, NUL-terminated). */
static af_error_t* read_all(const char* path, unsigned char** out, size_t* len) {
  char msg[512];
  FILE* f = fopen(path, "rb");
  size_t cap = 1 << 16, n = 0;
  unsigned char* buf = NULL;
  *out = NULL;
  *len = 0;
  if (!f) {
    snprintf(msg, sizeof msg, "cannot open \"%s\"", path);
    return af_error_new(AF_ERR_IO, msg, strlen(msg));
  }
  buf = malloc(cap + 1);
  while (buf) {
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (n < cap) break;
    if (cap >= ((size_t)1 << 31)) break; /* the library rejects anything this large */
    cap *= 2;
    unsigned char* grown = realloc(buf, cap + 1);
    if (!grown) {
      free(buf);
      buf = NULL;
    } else {
      buf = grown;
    }
  }
  if (!buf) {
    fclose(f);
    return af_error_new(AF_ERR_OUT_OF_MEMORY, "out of memory", 13);
  }
  if (ferror(f)) {
    fclose(f);
    free(buf);
    snprintf(msg, sizeof msg, "cannot read \"%s\"", path);
    return af_error_new(AF_ERR_IO, msg, strlen(msg));
  }
  fclose(f);
  buf[n] = 0;
  *out = buf;
  *len = n;
  return NULL;
}

/* Writes data to path, or to stdout when path is NULL. */
static af_error_t* write_all(const char* path, const void* data, size_t len) {
  char msg[512];
  FILE* f = path ? fopen(path, "wb") : stdout;
  if (!f) {
    snprintf(msg, sizeof msg, "cannot create \"%s\"", path);
    return af_error_new(AF_ERR_IO, msg, strlen(msg));
  }
  size_t wrote = fwrite(data, 1, len, f);
  int bad = wrote != len || fflush(f) != 0;
  if (path && fclose(f) != 0) bad = 1;
  if (bad) {
    snprintf(msg, sizeof msg, "cannot write \"%s\"", path ? path : "standard output");
    return af_error_new(AF_ERR_IO, msg, strlen(msg));
  }
  return NULL;
}

static int demo(const char* name, const char* save) {
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
  if (!err && save) err = af_ir_save(ir, save, strlen(save));
  if (!err) {
    printf("== program: hello(x) = concat(format(\"Hello, {}!\", x), \"?\")\n");
    printf("== IR\n%s\n", (const char*)text.data);
    printf("== DOT\n%s\n", (const char*)dot.data);
    printf("== hello(\"%s\")\n%s\n", name, (const char*)json.data);
    if (save) printf("== saved to %s\n", save);
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

/* Loads FILE as an IR. */
static af_error_t* load(af_context_t* ctx, const char* path, af_ir_t** ir) {
  return af_ir_load(ctx, path, strlen(path), ir);
}

static int run(const char* path, const char* input_json) {
  af_context_t* ctx = NULL;
  af_ir_t* ir = NULL;
  af_value_t* args = NULL;
  af_value_t** items = NULL;
  af_value_t* result = NULL;
  af_bytes_t json = {0};
  size_t n = 0, i;
  af_error_t* err = af_context_new(&ctx);
  if (!err) err = load(ctx, path, &ir);
  if (!err) err = af_value_from_json(ctx, input_json, strlen(input_json), &args);
  if (!err && af_value_kind(args) != AF_KIND_LIST) {
    const char* msg = "--input must be a JSON list of the positional inputs, e.g. '[\"World\"]'";
    err = af_error_new(AF_ERR_INVALID_ARGUMENT, msg, strlen(msg));
  }
  if (!err) err = af_value_len(args, &n);
  if (!err) {
    items = calloc(n ? n : 1, sizeof *items);
    if (!items) err = af_error_new(AF_ERR_OUT_OF_MEMORY, "out of memory", 13);
  }
  for (i = 0; !err && i < n; i++) err = af_value_index(args, i, &items[i]);
  if (!err) err = af_ir_call(ctx, ir, (const af_value_t* const*)items, n, &result);
  if (!err) err = af_value_to_json(result, &json);
  if (!err) printf("%s\n", (const char*)json.data);
  for (i = 0; items && i < n; i++) af_value_free(items[i]);
  free(items);
  af_bytes_free(&json);
  af_value_free(result);
  af_value_free(args);
  af_ir_free(ir);
  af_context_free(ctx);
  return err ? fail(err) : 0;
}

/* show / dot: print the IR text or DOT of a saved graph. */
static int show(const char* path, int as_dot) {
  af_context_t* ctx = NULL;
  af_ir_t* ir = NULL;
  af_bytes_t out = {0};
  af_error_t* err = af_context_new(&ctx);
  if (!err) err = load(ctx, path, &ir);
  if (!err) err = as_dot ? af_ir_to_dot(ir, &out) : af_ir_to_text(ir, &out);
  if (!err) fputs((const char*)out.data, stdout);
  af_bytes_free(&out);
  af_ir_free(ir);
  af_context_free(ctx);
  return err ? fail(err) : 0;
}

static int verify(const char* path) {
  af_context_t* ctx = NULL;
  unsigned char* data = NULL;
  size_t len = 0;
  af_bytes_t summary = {0};
  af_error_t* err = af_context_new(&ctx);
  if (!err) err = read_all(path, &data, &len);
  if (!err) err = af_graph_verify(ctx, data, len, &summary);
  if (!err) printf("%s: ok %s\n", path, (const char*)summary.data);
  if (err) fprintf(stderr, "%s: verification failed\n", path);
  af_bytes_free(&summary);
  free(data);
  af_context_free(ctx);
  return err ? fail(err) : 0;
}

static int convert(const char* path, int to_json, const char* out_path) {
  af_context_t* ctx = NULL;
  unsigned char* data = NULL;
  size_t len = 0;
  af_bytes_t out = {0};
  af_error_t* err = af_context_new(&ctx);
  if (!err && !to_json && !out_path && isatty(STDOUT_FILENO)) {
    const char* msg = "refusing to write a binary graph to a terminal; use -o OUT.afg";
    err = af_error_new(AF_ERR_INVALID_ARGUMENT, msg, strlen(msg));
  }
  if (!err) err = read_all(path, &data, &len);
  if (!err) {
    err = to_json ? af_graph_to_json(ctx, data, len, &out)
                  : af_graph_from_json(ctx, (const char*)data, len, &out);
  }
  if (!err) err = write_all(out_path, out.data, out.len);
  af_bytes_free(&out);
  free(data);
  af_context_free(ctx);
  return err ? fail(err) : 0;
}

int main(int argc, char** argv) {
  const char* cmd = argc > 1 ? argv[1] : NULL;
  int i;
  if (!cmd) return usage_error("missing command");
  if (strcmp(cmd, "version") == 0) {
    printf("af %s (abi %u)\n", af_version(), (unsigned)af_abi_version());
    return 0;
  }
  if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0) {
    usage(stdout);
    return 0;
  }
  if (strcmp(cmd, "demo") == 0) {
    const char* name = "World";
    const char* save = NULL;
    for (i = 2; i < argc; i++) {
      if (strcmp(argv[i], "--save") == 0 && i + 1 < argc) {
        save = argv[++i];
      } else if (argv[i][0] == '-') {
        return usage_error("demo: unknown option");
      } else {
        name = argv[i];
      }
    }
    return demo(name, save);
  }
  if (argc < 3) return usage_error("missing FILE");
  const char* file = argv[2];
  if (strcmp(cmd, "show") == 0 && argc == 3) return show(file, 0);
  if (strcmp(cmd, "dot") == 0 && argc == 3) return show(file, 1);
  if (strcmp(cmd, "verify") == 0 && argc == 3) return verify(file);
  if (strcmp(cmd, "run") == 0) {
    const char* input = NULL;
    for (i = 3; i < argc; i++) {
      if (strcmp(argv[i], "--input") == 0 && i + 1 < argc) {
        input = argv[++i];
      } else {
        return usage_error("run: unknown option");
      }
    }
    if (!input) return usage_error("run: --input JSON is required (a list of the inputs)");
    return run(file, input);
  }
  if (strcmp(cmd, "convert") == 0) {
    int to_json = -1;
    const char* out = NULL;
    for (i = 3; i < argc; i++) {
      if (strcmp(argv[i], "--to") == 0 && i + 1 < argc && strcmp(argv[i + 1], "json") == 0) {
        to_json = 1;
        i++;
      } else if (strcmp(argv[i], "--from") == 0 && i + 1 < argc && strcmp(argv[i + 1], "json") == 0) {
        to_json = 0;
        i++;
      } else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
        out = argv[++i];
      } else {
        return usage_error("convert: unknown option");
      }
    }
    if (to_json < 0) return usage_error("convert: say --to json or --from json");
    return convert(file, to_json, out);
  }
  fprintf(stderr, "af: unknown command or arguments for \"%s\"\n", cmd);
  usage(stderr);
  return 2;
}
