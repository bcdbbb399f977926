/* The example program: hello(x) = concat(format("Hello, {}!", x), "?"),
 * traced from C through the public API. Shared by examples/hello/main.c and
 * `af demo`. */
#ifndef AF_EXAMPLES_HELLO_PROGRAM_H
#define AF_EXAMPLES_HELLO_PROGRAM_H

#include <af/af.h>

/* The traced function (an af_trace_fn). */
af_error_t* hello_fn(void* user_data, af_context_t* ctx, const af_value_t* const* inputs,
                     size_t n_inputs, af_value_t** out);
/* Traces hello on a string example. */
af_error_t* hello_trace(af_context_t* ctx, af_ir_t** out);

#endif
