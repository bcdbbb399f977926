// C side of the trace callback: af_trace calls afgo_trace_trampoline, which
// calls the exported Go function afgoTraceCallback with the cgo.Handle
// carried in user_data (an integer: no Go pointer ever reaches C).
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

af_error_t* afgo_trace_with(af_context_t* ctx, uintptr_t handle, const af_value_t* const* examples,
                            size_t n_examples, const af_value_t* static_mask,
                            const af_value_t* list_mask, af_ir_t** out) {
  af_trace_options_t o;
  o.struct_size = sizeof o;
  o.static_mask = static_mask;
  o.list_mask = list_mask;
  return af_trace_with(ctx, afgo_trace_trampoline, (void*)handle, examples, n_examples, &o, out);
}

/* ---- host functions, providers, progress and completion callbacks ----- */
/* Each passes its cgo.Handle (user_data) to an exported Go function; the
 * destroy callback deletes the handle, so the Go closure lives exactly as
 * long as libaf holds it. */

static void afgo_handle_destroy(void* user_data) { afgoHandleDelete((uintptr_t)user_data); }

static af_error_t* afgo_host_trampoline(void* user_data, const af_value_t* const* args, size_t n,
                                        af_value_t** out) {
  return afgoHostCallback((uintptr_t)user_data, (af_value_t**)args, n, out);
}

static void afgo_async_host_trampoline(void* user_data, const af_value_t* const* args, size_t n,
                                       af_host_request_t* req) {
  afgoAsyncHostCallback((uintptr_t)user_data, (af_value_t**)args, n, req);
}

/* Every host function of the binding (sync, blocking, async; pure or
 * effectful) is registered here: flags are AF_FUNCTION_* bits, async picks
 * async_fn over fn. libaf checks the combination (AF_FUNCTION_BLOCKING with
 * an async function is INVALID_ARGUMENT) and runs destroy on every error
 * once it has read the struct, so the handle is always released. */
af_error_t* afgo_register_function_with(af_context_t* ctx, const char* name, size_t name_len,
                                        uint32_t flags, int async, uintptr_t handle,
                                        const af_value_t* result_kinds) {
  af_function_options_t o;
  memset(&o, 0, sizeof o);
  o.struct_size = (uint32_t)sizeof o;
  o.flags = flags;
  if (async) {
    o.async_fn = afgo_async_host_trampoline;
  } else {
    o.fn = afgo_host_trampoline;
  }
  o.user_data = (void*)handle;
  o.destroy = afgo_handle_destroy;
  o.result_kinds = result_kinds;
  return af_register_function_with(ctx, name, name_len, &o);
}

static void afgo_submit_trampoline(void* user_data, af_lm_request_t* req) {
  afgoSubmitCallback((uintptr_t)user_data, req);
}

af_error_t* afgo_provider_host_new(uintptr_t handle, af_provider_t** out) {
  return af_provider_host_new(afgo_submit_trampoline, (void*)handle, afgo_handle_destroy, out);
}

static void afgo_progress_trampoline(void* user_data, uint64_t done, uint64_t total) {
  afgoProgressCallback((uintptr_t)user_data, done, total);
}

void afgo_set_progress(af_run_options_t* o, uintptr_t handle) {
  o->progress = afgo_progress_trampoline;
  o->progress_user_data = (void*)handle;
  o->progress_destroy = afgo_handle_destroy;
}

static void afgo_stream_trampoline(void* user_data, uint32_t eqn, uint64_t item, const char* text,
                                   size_t len) {
  afgoStreamCallback((uintptr_t)user_data, eqn, item, (char*)text, len);
}

void afgo_set_stream(af_run_options_t* o, uintptr_t handle) {
  o->stream = afgo_stream_trampoline;
  o->stream_user_data = (void*)handle;
  o->stream_destroy = afgo_handle_destroy;
}

static void afgo_done_trampoline(void* user_data) { afgoDoneCallback((uintptr_t)user_data); }

af_error_t* afgo_future_on_done(af_future_t* f, uintptr_t handle) {
  return af_future_on_done(f, afgo_done_trampoline, (void*)handle, afgo_handle_destroy);
}

/* ---- Go errors carried as error payloads ------------------------------ */
/* A Go callback's error crosses libaf as the payload of the af_error_t it
 * returns (af_error_new_with): a malloc'ed afgo_err_payload holding the
 * cgo.Handle of the Go error (an integer: no Go pointer is stored in C
 * memory). libaf keeps the payload on that node through every wrapping and
 * calls afgo_err_payload_destroy exactly once, on whatever thread frees the
 * last error holding it; that deletes the handle and frees the struct.
 *
 * Another binding in the same process may put its own payloads on errors
 * that reach us (its callback's error inside our run, or the reverse), and
 * a second copy of this binding (another Go c-shared library, with its own
 * handle table) may too. So a payload is ours only if it starts with
 * AFGO_ERR_MAGIC and names afgo_err_owner, a static of this very copy. */

#define AFGO_ERR_MAGIC UINT64_C(0x6166676f45727221) /* "afgoErr!" */

typedef struct afgo_err_payload {
  uint64_t magic; /* AFGO_ERR_MAGIC while alive, 0 once destroyed */
  const void* owner; /* &afgo_err_owner */
  uintptr_t handle; /* cgo.Handle of the Go error */
} afgo_err_payload;

static const char afgo_err_owner = 0;

static void afgo_err_payload_destroy(void* payload) {
  afgo_err_payload* p = (afgo_err_payload*)payload;
  uintptr_t h = p->handle;
  p->magic = 0;
  p->owner = NULL;
  afgoHandleDelete(h);
  free(p);
}

/* An owned error (code, msg) carrying the Go error whose cgo.Handle is
 * handle. Takes the handle in every case: if the payload cannot be
 * allocated, it is deleted here and the error is a plain one. */
af_error_t* afgo_error_new(int32_t code, const char* msg, size_t len, uintptr_t handle) {
  afgo_err_payload* p = (afgo_err_payload*)malloc(sizeof *p);
  if (p == NULL) {
    afgoHandleDelete(handle);
    return af_error_new(code, msg, len);
  }
  p->magic = AFGO_ERR_MAGIC;
  p->owner = &afgo_err_owner;
  p->handle = handle;
  /* On NULL (out of memory) libaf has already run the destroy callback. */
  return af_error_new_with(code, msg, len, p, afgo_err_payload_destroy);
}

/* The cgo.Handle of the Go error e itself carries (not its causes), or 0
 * when e carries no payload of this binding. Valid while e is. */
uintptr_t afgo_error_handle(const af_error_t* e) {
  const afgo_err_payload* p = (const afgo_err_payload*)af_error_payload(e);
  if (p == NULL || p->magic != AFGO_ERR_MAGIC || p->owner != &afgo_err_owner) {
    return 0;
  }
  return p->handle;
}
