#include "hello_program.h"

#include <string.h>

af_error_t* hello_fn(void* user_data, af_context_t* ctx, const af_value_t* const* inputs,
                     size_t n_inputs, af_value_t** out) {
  (void)user_data;
  (void)n_inputs;
  af_value_t* greeting = NULL;
  af_value_t* mark = NULL;
  af_error_t* err = af_format(ctx, "Hello, {}!", strlen("Hello, {}!"), inputs, 1, NULL, &greeting);
  if (!err) err = af_value_str_new("?", 1, &mark);
  if (!err) {
    const af_value_t* parts[2] = {greeting, mark};
    err = af_concat(ctx, parts, 2, out);
  }
  af_value_free(greeting);
  af_value_free(mark);
  return err;
}

af_error_t* hello_trace(af_context_t* ctx, af_ir_t** out) {
  af_value_t* example = NULL;
  af_error_t* err = af_value_str_new("x", 1, &example);
  if (err) return err;
  const af_value_t* examples[1] = {example};
  err = af_trace(ctx, hello_fn, NULL, examples, 1, NULL, out);
  af_value_free(example);
  return err;
}
