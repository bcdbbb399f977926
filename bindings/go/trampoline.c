// C side of the trace callback: af_trace calls afgo_trace_trampoline, which
// calls the exported Go function afgoTraceCallback with the cgo.Handle
// carried in user_data (an integer: no Go pointer ever reaches C).
#include <stdint.h>

#include "af/af.h"
#include "_cgo_export.h"

static af_error_t* afgo_trace_trampoline(void* user_data, af_context_t* ctx,
                                         const af_value_t* const* inputs, size_t n_inputs,
                                         af_value_t** out) {
  (void)ctx; /* the Go side uses the *Context that called Trace */
  return afgoTraceCallback((uintptr_t)user_data, (af_value_t**)inputs, n_inputs, out);
}

af_error_t* afgo_trace(af_context_t* ctx, uintptr_t handle, const af_value_t* const* examples,
                       size_t n_examples, const af_value_t* static_mask, af_ir_t** out) {
  return af_trace(ctx, afgo_trace_trampoline, (void*)handle, examples, n_examples, static_mask,
                  out);
}
