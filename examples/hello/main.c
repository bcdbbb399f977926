/* hello: trace a tiny LM-program-shaped function and call it.
 * Usage: hello_example [NAME] */
#include <stdio.h>
#include <string.h>

#include "hello_program.h"

static int report(af_error_t* err) {
  fprintf(stderr, "error %d: %s\n", (int)af_error_code(err), af_error_message(err));
  af_error_free(err);
  return 1;
}

int main(int argc, char** argv) {
  const char* name = argc > 1 ? argv[1] : "World";
  af_context_t* ctx = NULL;
  af_ir_t* ir = NULL;
  af_value_t* input = NULL;
  af_value_t* result = NULL;
  af_error_t* err = af_context_new(&ctx);
  if (!err) err = hello_trace(ctx, &ir);
  if (!err) err = af_value_str_new(name, strlen(name), &input);
  if (!err) {
    const af_value_t* inputs[1] = {input};
    err = af_ir_call(ctx, ir, inputs, 1, &result);
  }
  const char* s = NULL;
  size_t len = 0;
  if (!err) err = af_value_get_str(result, &s, &len);
  if (!err) printf("%.*s\n", (int)len, s);
  af_value_free(result);
  af_value_free(input);
  af_ir_free(ir);
  af_context_free(ctx);
  return err ? report(err) : 0;
}
