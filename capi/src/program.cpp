// Programs, runs and futures: af_compile, af_program_call*, af_future_*.
#include <cstring>

#include "exec/executor.h"
#include "exec/profile.h"
#include "exec/summary.h"
#include "handles.h"
#include "run_options.h"
#include "trace/trace.h"

using namespace af;
using namespace af::capi;

struct af_program {
  mutable std::atomic<uint32_t> refs{1};
  std::shared_ptr<const Program> prog;
};

struct af_future {
  Future f;
  std::shared_ptr<RunSummary> summary;  // AF_RUN_SUMMARY only
};

namespace af::capi {

const std::shared_ptr<const Program>& program_of(const af_program* p) { return p->prog; }

af_program* wrap(std::shared_ptr<const Program> p) {
  auto h = std::make_unique<af_program>();
  h->prog = std::move(p);
  return h.release();
}

}  // namespace af::capi

namespace {

std::vector<Value> checked_inputs(const af_program_t* p, const af_value_t* const* inputs, size_t n,
                                  const char* fn, const RunOptions& opts) {
  return check_inputs(*p->prog->ir, resolved_all(inputs, n, fn, "inputs"), false, opts.item_errors);
}

}  // namespace

extern "C" {

af_error_t* af_compile(af_context_t* ctx, const af_ir_t* ir, af_program_t** out) {
  if (out) *out = nullptr;
  return guard([&] {
    require(ctx, "af_compile", "ctx");
    require(ir, "af_compile", "ir");
    require(out, "af_compile", "out");
    *out = wrap(program_of(ctx, ir));
  });
}

af_program_t* af_program_clone(const af_program_t* p) {
  if (!p) return nullptr;
  p->refs.fetch_add(1, std::memory_order_relaxed);
  return const_cast<af_program_t*>(p);
}

void af_program_free(af_program_t* p) {
  if (p && p->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete p;
}

af_error_t* af_program_call_with(af_context_t* ctx, const af_program_t* p, const af_value_t* const* inputs,
                                 size_t n, const af_run_options_t* options, af_value_t** out) {
  if (out) *out = nullptr;
  return guard([&] {
    const char* fn = "af_program_call";
    af_bytes_t* summary_out = nullptr;
    RunOptions opts = run_options(options, fn, &summary_out);
    require(ctx, fn, "ctx");
    require(p, fn, "p");
    require(out, fn, "out");
    std::vector<Value> in = unwrap_all(inputs, n, fn, "inputs");
    if (recording()) {
      *out = wrap(inline_ir(*p->prog->ir, in));
      return;
    }
    // On a lazy context a plain call is recorded; a call with run options
    // (timeout, cancel, progress, profile) is a run that happens now.
    if (ctx->lazy && !options && !is_tracing()) {
      *out = wrap(ctx->lazy->record_ir(*p->prog->ir, in));
      return;
    }
    for (Value& v : in) v = resolve(v);
    std::vector<Value> leaves = check_inputs(*p->prog->ir, in, false, opts.item_errors);
    // A failed run's summary is written too: its calls cost all the same.
    std::shared_ptr<RunSummary> summary = opts.summary;
    Value result;
    try {
      result = run_sync(ctx->env, p->prog, std::move(leaves), std::move(opts));
    } catch (...) {
      write_summary(summary.get(), summary_out);
      throw;
    }
    write_summary(summary.get(), summary_out);
    *out = wrap(std::move(result));
  });
}

af_error_t* af_program_call(af_context_t* ctx, const af_program_t* p, const af_value_t* const* inputs, size_t n,
                            af_value_t** out) {
  return af_program_call_with(ctx, p, inputs, n, nullptr, out);
}

af_error_t* af_program_call_async_with(af_context_t* ctx, const af_program_t* p, const af_value_t* const* inputs,
                                       size_t n, const af_run_options_t* options, af_future_t** out) {
  if (out) *out = nullptr;
  return guard([&] {
    const char* fn = "af_program_call_async";
    RunOptions opts = run_options(options, fn, nullptr);
    require(ctx, fn, "ctx");
    require(p, fn, "p");
    require(out, fn, "out");
    std::vector<Value> leaves = checked_inputs(p, inputs, n, fn, opts);
    auto h = std::make_unique<af_future>();
    h->summary = opts.summary;
    h->f = run_async(ctx->env, p->prog, std::move(leaves), std::move(opts));
    *out = h.release();
  });
}

af_error_t* af_program_call_async(af_context_t* ctx, const af_program_t* p, const af_value_t* const* inputs,
                                  size_t n, af_future_t** out) {
  return af_program_call_async_with(ctx, p, inputs, n, nullptr, out);
}

af_error_t* af_future_wait(af_future_t* f, af_value_t** out) {
  if (out) *out = nullptr;
  return guard([&] {
    require(f, "af_future_wait", "f");
    require(out, "af_future_wait", "out");
    *out = wrap(f->f.wait());
  });
}

int af_future_ready(const af_future_t* f) { return f && f->f.ready() ? 1 : 0; }

void af_future_cancel(af_future_t* f) {
  if (f) f->f.cancel();
}

af_error_t* af_future_on_done(af_future_t* f, void (*fn)(void*), void* user_data, void (*destroy)(void*)) {
  af_error_t* err = guard([&] {
    require(f, "af_future_on_done", "f");
    if (!fn) invalid("af_future_on_done: `fn` is NULL");
    auto ud = std::make_shared<UserData>(user_data, destroy);
    destroy = nullptr;  // owned by ud from here on
    f->f.on_done([ud, fn] { fn(ud->data); });
  });
  if (err && destroy) destroy(user_data);
  return err;
}

af_error_t* af_future_profile(const af_future_t* f, af_bytes_t* out) {
  if (out) *out = af_bytes_t{nullptr, 0};
  return guard([&] {
    require(f, "af_future_profile", "f");
    require(out, "af_future_profile", "out");
    std::string json = f->f.profile_json();
    if (json.empty())
      invalid("af_future_profile: the run has no profile; start it with AF_RUN_PROFILE or a profile_path");
    to_bytes(json, out);
  });
}

af_error_t* af_profile_event(const char* name, size_t name_len, const char* args_json, size_t args_len) {
  return guard([&] {
    const char* fn = "af_profile_event";
    std::string_view n = text(name, name_len, fn, "name");
    if (n.empty()) invalid("af_profile_event: `name` is empty");
    std::string args;
    if (args_json && args_len) {
      Value a = from_json(text(args_json, args_len, fn, "args_json"));
      if (a.kind() != Kind::Dict) invalid("af_profile_event: `args_json` must be a JSON object");
      args = to_json(a);
    }
    AsyncOp* op = HostCallScope::current();
    if (!op || !op->profiling()) return;  // not inside a profiled run's host call: nothing to mark
    op->record_event(HostEvent{std::string(n), std::move(args), now_ns(), engine_thread_index()});
  });
}

af_error_t* af_future_summary_json(const af_future_t* f, af_bytes_t* out) {
  if (out) *out = af_bytes_t{nullptr, 0};
  return guard([&] {
    require(f, "af_future_summary_json", "f");
    require(out, "af_future_summary_json", "out");
    if (!f->summary)
      invalid(
          "af_future_summary_json: the run has no summary; start it with AF_RUN_SUMMARY in "
          "options.flags");
    to_bytes(f->summary->to_json(), out);
  });
}

void af_future_free(af_future_t* f) { delete f; }

af_error_t* af_cancel_new(af_cancel_t** out) {
  if (out) *out = nullptr;
  return guard([&] {
    require(out, "af_cancel_new", "out");
    auto h = std::make_unique<af_cancel>();
    h->token = std::make_shared<CancelToken>();
    *out = h.release();
  });
}

void af_cancel_trigger(af_cancel_t* c) {
  if (c) c->token->cancel();
}

int af_cancel_triggered(const af_cancel_t* c) { return c && c->token->cancelled() ? 1 : 0; }

void af_cancel_free(af_cancel_t* c) { delete c; }

af_error_t* af_cancel_scope_push(af_context_t* ctx, const af_cancel_t* token) {
  return guard([&] {
    require(ctx, "af_cancel_scope_push", "ctx");
    require(token, "af_cancel_scope_push", "token");
    ctx->core.scopes.push_cancel(token->token);
  });
}

af_error_t* af_cancel_scope_pop(af_context_t* ctx) {
  return guard([&] {
    require(ctx, "af_cancel_scope_pop", "ctx");
    ctx->core.scopes.pop_cancel();
  });
}

}  // extern "C"
