/* af/hpp/context.hpp — part of af.hpp (include <af/af.hpp>): af::Context,
 * where tracing, operations, transforms, host functions and routes live,
 * with the callback types it takes (TraceFn, HostFn, AsyncHostFn) and its
 * Scope (tag, fold, cancel scopes). */
#ifndef AF_HPP_CONTEXT_HPP
#define AF_HPP_CONTEXT_HPP

#include "cancel.hpp"
#include "host.hpp"
#include "ir.hpp"
#include "provider.hpp"
#include "value.hpp"

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace af {

/* Defined in program.hpp: a run's options go with Program, whose native
 * form of them Context::eval(values, options) shares; so that eval is
 * defined there too. A caller can only make a RunOptions with program.hpp
 * included, so the definition is always there when it is called. */
struct RunOptions;

/* ---- Context: values, tracing, operations, host functions ---------------- */

/* The trace function: receives the context and one placeholder per example. */
using TraceFn = std::function<Value(Context&, const std::vector<Value>&)>;
/* A host function: receives its argument trees, returns its result. May run
 * on any thread, concurrently. */
using HostFn = std::function<Value(const std::vector<Value>&)>;
/* An async host function: starts the work and returns; finishes req now or
 * later (std::move(req) to keep it). If it throws while still holding req,
 * the call fails with what it threw. */
using AsyncHostFn = std::function<void(const std::vector<Value>&, HostRequest& req)>;

class Context {
 public:
  Context() {
    af_context_t* c = nullptr;
    detail::check(af_context_new(&c));
    h_ = decltype(h_)(c, af_context_free);
  }
  /* Options as af_context_new_with: {"lazy": true, "plan_cache": {...}}. */
  explicit Context(std::string_view options_json) {
    af_context_t* c = nullptr;
    detail::check(af_context_new_with(options_json.data(), options_json.size(), &c));
    h_ = decltype(h_)(c, af_context_free);
  }
  /* Move-only; a promise recorded on a lazy Context keeps the native
   * context alive after the Context object goes. */
  Context(Context&&) noexcept = default;
  Context& operator=(Context&&) noexcept = default;
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  af_context_t* get() const noexcept { return h_.get(); }

  /* Lazy contexts: evaluates the promises among values (and the pending
   * observable operations) as one run; the counters as JSON. */
  void eval(const std::vector<Value>& values) {
    std::vector<af_value_t*> p = handles(values);
    detail::check(af_eval(ptr(), p.data(), p.size()));
  }
  /* The same with a run's options for this evaluation (timeout_ms, cancel,
   * ...; af_eval_with): throws TIMEOUT / CANCELLED when they stopped it.
   * Defined in program.hpp, after Program (see RunOptions above). */
  void eval(const std::vector<Value>& values, const RunOptions& options);
  std::string stats() const {
    af_bytes_t b{nullptr, 0};
    detail::check(af_context_stats(ptr(), &b));
    return detail::take(b);
  }

  /* Values: the same as af::null(), af::str(s), ... (values belong to no
   * context; these are kept for brevity where a Context is at hand). */
  Value null() const { return af::null(); }
  Value boolean(bool b) const { return af::boolean(b); }
  Value integer(int64_t i) const { return af::integer(i); }
  Value real(double d) const { return af::real(d); }
  Value str(std::string_view s) const { return af::str(s); }
  Value json(std::string_view j) const { return af::json(j); }
  Value list(const std::vector<Value>& items) const { return af::list(items); }
  Value dict(const std::vector<std::pair<std::string_view, Value>>& entries) const { return af::dict(entries); }

  /* Traces fn once on placeholders shaped like examples. What fn throws is
   * rethrown here as itself (an af::Error an operation raised included). */
  Ir trace(TraceFn fn, const std::vector<Value>& examples, const Value& static_mask = Value()) {
    return trace_raw(std::move(fn), [&](TraceState* st, af_ir_t** out) {
      auto ex = detail::ptrs(examples);
      return af_trace(ptr(), &trace_trampoline, st, ex.data(), ex.size(), static_mask.get(), out);
    });
  }
  /* trace with a list mask (af_trace_with): its true leaves mark example
   * lists traced as lists of any length, inputs of kind list<T> that a
   * batched IR takes; calls pass lists of any length. */
  Ir trace_with(TraceFn fn, const std::vector<Value>& examples, const Value& list_mask,
                const Value& static_mask = Value()) {
    return trace_raw(std::move(fn), [&](TraceState* st, af_ir_t** out) {
      auto ex = detail::ptrs(examples);
      af_trace_options_t o{};
      o.struct_size = sizeof o;
      o.static_mask = static_mask.get();
      o.list_mask = list_mask.get();
      return af_trace_with(ptr(), &trace_trampoline, st, ex.data(), ex.size(), &o, out);
    });
  }

  /* Tags: while pushed, every equation the innermost trace of this thread
   * records carries the tag ("urgent" is the priority hint). Fold: between
   * push and pop, operations of the innermost trace run at trace time and
   * become literals. Prefer the scopes below, which pop on every exit. */
  void tag_push(std::string_view tag) { detail::check(af_tag_push(ptr(), tag.data(), tag.size())); }
  void tag_pop() { detail::check(af_tag_pop(ptr())); }
  void fold_push() { detail::check(af_fold_push(ptr())); }
  void fold_pop() { detail::check(af_fold_pop(ptr())); }
  /* Pops what it pushed when it goes out of scope. Move-only. */
  class Scope {
   public:
    Scope(Scope&& o) noexcept : ctx_(std::exchange(o.ctx_, nullptr)), pop_(o.pop_) {}
    Scope& operator=(Scope&&) = delete;
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    /* A pop cannot fail after a successful push on this thread. */
    ~Scope() {
      if (ctx_) af_error_free(pop_(ctx_));
    }

   private:
    friend class Context;
    Scope(af_context_t* ctx, af_error_t* (*pop)(af_context_t*)) : ctx_(ctx), pop_(pop) {}
    af_context_t* ctx_;
    af_error_t* (*pop_)(af_context_t*);
  };
  /* auto urgent = ctx.tag("urgent"); — tags what the trace records until
   * the end of the block. */
  [[nodiscard]] Scope tag(std::string_view tag) {
    tag_push(tag);
    return Scope(ptr(), af_tag_pop);
  }
  /* auto folded = ctx.fold(); — folds until the end of the block. */
  [[nodiscard]] Scope fold() {
    fold_push();
    return Scope(ptr(), af_fold_pop);
  }
  /* auto scope = ctx.cancel_scope(token); — a cancel scope
   * (af_cancel_scope_push / af_cancel_scope_pop): until the end of the
   * block, what this thread runs on this context ends with CANCELLED once
   * token.trigger() is called from any thread (noticed within 20 ms): eager
   * lm_call / lm_schema_call / lm_tool_call (the request aborted), host_call
   * of a blocking or async host function, and runs (Ir::call, Program::call,
   * call_async) whose RunOptions give no cancel token of their own. A plain
   * host function runs on this thread and is not interrupted; a lazy eval
   * takes its token from eval(values, options). The scope belongs to the
   * calling thread (other threads' calls are not in it) and holds its own
   * reference to the token. Scopes nest, and the token of every open scope
   * stops what runs inside it: an inner scope never shields from an outer
   * one, and a triggered token ends nothing outside its own scope. End
   * scopes in reverse order on the thread that made them (as blocks do). */
  [[nodiscard]] Scope cancel_scope(const CancelToken& token);

  /* Operations: recorded inside a trace, evaluated at once outside. */
  Value format(std::string_view tmpl, const std::vector<Value>& args, const Value& named = Value()) {
    auto p = detail::ptrs(args);
    return make([&](af_value_t** o) { return af_format(ptr(), tmpl.data(), tmpl.size(), p.data(), p.size(), named.get(), o); });
  }
  Value concat(const std::vector<Value>& args) {
    auto p = detail::ptrs(args);
    return make([&](af_value_t** o) { return af_concat(ptr(), p.data(), p.size(), o); });
  }
  Value match(const Value& a, const Value& b) {
    return make([&](af_value_t** o) { return af_match(ptr(), a.get(), b.get(), o); });
  }
  Value stop_gradient(const Value& v) { return make([&](af_value_t** o) { return af_stop_gradient(ptr(), v.get(), o); }); }
  /* value, produced only after every dep exists (DCE keeps the deps). */
  Value depends(const Value& value, const std::vector<Value>& deps) {
    auto p = detail::ptrs(deps);
    return make(
        [&](af_value_t** o) { return af_depends(ptr(), value.get(), p.data(), p.size(), o); });
  }
  /* Identity marking v as checkpoint `key` of `collection` (what collect
   * and inject scopes see). */
  Value checkpoint(const Value& v, std::string_view key, std::string_view collection) {
    return make([&](af_value_t** o) {
      return af_checkpoint(ptr(), v.get(), key.data(), key.size(), collection.data(),
                           collection.size(), o);
    });
  }
  Value lm_call(const Value& messages, const Value& model) {
    return make([&](af_value_t** o) { return af_lm_call(ptr(), messages.get(), model.get(), o); });
  }
  Value lm_schema_call(const Value& messages, const Value& model, const Value& schema) {
    return make([&](af_value_t** o) { return af_lm_schema_call(ptr(), messages.get(), model.get(), schema.get(), o); });
  }
  /* With sampling params: a dict of temperature, top_p, max_tokens, seed,
   * stop (part of the recorded equation). */
  Value lm_call(const Value& messages, const Value& model, const Value& params) {
    return make([&](af_value_t** o) { return af_lm_call_ex(ptr(), messages.get(), model.get(), params.get(), o); });
  }
  Value lm_schema_call(const Value& messages, const Value& model, const Value& schema, const Value& params) {
    return make([&](af_value_t** o) {
      return af_lm_schema_call_ex(ptr(), messages.get(), model.get(), schema.get(), params.get(), o);
    });
  }
  /* Tool calling (af_lm_tool_call): a dict {"called", "text", "names",
   * "arguments", "turn"}; history is "" to start, then what tool_results
   * returns. params may be null. */
  Value lm_tool_call(const Value& messages, const Value& history, const Value& model, const Value& tools,
                     const Value& params = Value()) {
    return make([&](af_value_t** o) {
      return af_lm_tool_call(ptr(), messages.get(), history.get(), model.get(), tools.get(), params.get(), o);
    });
  }
  /* The history after a turn and one result (str) per call it made (af_tool_results). */
  Value tool_results(const Value& history, const Value& turn, const Value& results) {
    return make([&](af_value_t** o) { return af_tool_results(ptr(), history.get(), turn.get(), results.get(), o); });
  }
  /* Runs the branch named by key (a str) on the operands. */
  Value switch_(const Value& key, const std::vector<std::pair<std::string_view, Ir>>& branches,
                const std::vector<Value>& operands) {
    std::vector<const char*> names;
    std::vector<size_t> lens;
    std::vector<const af_ir_t*> irs;
    for (const auto& [n, ir] : branches) {
      names.push_back(n.data());
      lens.push_back(n.size());
      irs.push_back(ir.ptr());
    }
    auto ops = detail::ptrs(operands);
    return make([&](af_value_t** o) {
      return af_switch(ptr(), key.get(), names.data(), lens.data(), irs.data(), irs.size(), ops.data(), ops.size(), o);
    });
  }
  Value while_loop(const Ir& cond, const Ir& body, const Value& init, uint64_t max_iters) {
    return make([&](af_value_t** o) { return af_while_loop(ptr(), cond.ptr(), body.ptr(), init.get(), max_iters, o); });
  }
  /* [carry, ys]: body(carry, item) -> [next carry, y] over the items of xs
   * (last to first when reverse); see af_scan. */
  Value scan(const Ir& body, const Value& init, const Value& xs, bool reverse = false) {
    return make([&](af_value_t** o) { return af_scan(ptr(), body.ptr(), init.get(), xs.get(), reverse ? 1 : 0, o); });
  }
  /* Runs ir (inlined when called inside a trace). */
  Value call(const Ir& ir, const std::vector<Value>& inputs) {
    auto p = detail::ptrs(inputs);
    return make([&](af_value_t** o) { return af_ir_call(ptr(), ir.ptr(), p.data(), p.size(), o); });
  }

  /* Host functions: registered by name (a saved graph refers to the name).
   * result_kinds: the result's structure with kind names as leaves. What fn
   * throws becomes a CALLBACK error whose cause's origin() is the exception
   * (an af::Error keeps its code and comes back as itself). */
  void register_function(std::string_view name, const Value& result_kinds, HostFn fn) {
    af_context_t* c = ptr();  // first: a moved-from Context throws before fn is handed over
    auto* state = new HostFn(std::move(fn));  // deleted by libaf's destroy, also on error
    detail::check(af_register_function(c, name.data(), name.size(), &host_trampoline, state,
                                       &destroy_host, result_kinds.get()));
  }
  /* A sync function run on the context's host pool (at most "host_threads"
   * at once, a context option): for slow tools that block. */
  void register_function_blocking(std::string_view name, const Value& result_kinds, HostFn fn) {
    af_context_t* c = ptr();  // first: a moved-from Context throws before fn is handed over
    auto* state = new HostFn(std::move(fn));  // deleted by libaf's destroy, also on error
    detail::check(af_register_function_blocking(c, name.data(), name.size(), &host_trampoline, state,
                                                &destroy_host, result_kinds.get()));
  }
  /* An async function: no libaf thread waits while it works. */
  void register_function_async(std::string_view name, const Value& result_kinds, AsyncHostFn fn) {
    af_context_t* c = ptr();  // first: a moved-from Context throws before fn is handed over
    auto* state = new AsyncHostFn(std::move(fn));  // deleted by libaf's destroy, also on error
    detail::check(af_register_function_async(c, name.data(), name.size(), &async_host_trampoline, state,
                                             &destroy_async_host, result_kinds.get()));
  }
  /* How a function registered with options runs: pure (AF_FUNCTION_PURE:
   * same arguments, same result, no effects, so libaf may drop a call whose
   * result is unused, merge equal calls and memoize them; functions are
   * effectful by default) and, for a sync one, blocking (on the host pool). */
  struct FunctionOptions {
    bool pure = false;
    bool blocking = false;
  };
  void register_function(std::string_view name, const Value& result_kinds, HostFn fn, FunctionOptions how) {
    af_context_t* c = ptr();  // first: a moved-from Context throws before fn is handed over
    af_function_options_t o = function_options(how, result_kinds);
    o.fn = &host_trampoline;
    o.user_data = new HostFn(std::move(fn));  // deleted by libaf's destroy, also on error
    o.destroy = &destroy_host;
    detail::check(af_register_function_with(c, name.data(), name.size(), &o));
  }
  void register_function_async(std::string_view name, const Value& result_kinds, AsyncHostFn fn,
                               FunctionOptions how) {
    af_context_t* c = ptr();  // first: a moved-from Context throws before fn is handed over
    af_function_options_t o = function_options(how, result_kinds);
    o.async_fn = &async_host_trampoline;
    o.user_data = new AsyncHostFn(std::move(fn));  // deleted by libaf's destroy, also on error
    o.destroy = &destroy_async_host;
    detail::check(af_register_function_with(c, name.data(), name.size(), &o));
  }
  Value host_call(std::string_view name, const std::vector<Value>& args) {
    auto p = detail::ptrs(args);
    return make([&](af_value_t** o) { return af_host_call(ptr(), name.data(), name.size(), p.data(), p.size(), o); });
  }

  /* Routes models matching pattern ('*', '?') to provider. */
  void route(std::string_view pattern, const Provider& provider) {
    detail::check(af_context_route(ptr(), pattern.data(), pattern.size(), provider.get()));
  }
  /* Routes to providers in order: the next is asked after a PROVIDER or
   * TIMEOUT error. */
  void route(std::string_view pattern, const std::vector<Provider>& fallbacks) {
    std::vector<af_provider_t*> p;
    for (const Provider& x : fallbacks) p.push_back(x.get());
    detail::check(af_context_route_fallback(ptr(), pattern.data(), pattern.size(), p.data(), p.size()));
  }

  /* Run-time scopes of the calling thread (pushes and pops pair up per
   * thread; runs started by other threads never see them). */
  void collect_push(std::string_view collection) { detail::check(af_collect_push(ptr(), collection.data(), collection.size())); }
  Value collect_pop() { return make([&](af_value_t** o) { return af_collect_pop(ptr(), o); }); }
  void inject_push(std::string_view collection, const Value& values) {
    detail::check(af_inject_push(ptr(), collection.data(), collection.size(), values.get()));
  }
  void inject_pop() { detail::check(af_inject_pop(ptr())); }
  void memoize_push() { detail::check(af_memoize_push(ptr())); }
  void memoize_pop() { detail::check(af_memoize_pop(ptr())); }

  /* Name scopes (af_name_push): inside a trace of this thread (or outside
   * one on a lazy context), what is recorded carries the open names as its
   * name path ("triage/classify"). Pushes and pops pair up. */
  void name_push(std::string_view name) {
    detail::check(af_name_push(ptr(), name.data(), name.size()));
  }
  void name_pop() { detail::check(af_name_pop(ptr())); }

  /* Transforms: IR -> IR. */
  Ir batch(const Ir& ir, const Value& in_axes = Value()) {
    return transform([&](af_ir_t** o) { return af_batch(ptr(), ir.ptr(), in_axes.get(), o); });
  }
  Ir pushforward(const Ir& ir) { return transform([&](af_ir_t** o) { return af_pushforward(ptr(), ir.ptr(), o); }); }
  Ir pullback(const Ir& ir) { return transform([&](af_ir_t** o) { return af_pullback(ptr(), ir.ptr(), o); }); }
  Ir dce(const Ir& ir, const Value& out_used = Value()) {
    return transform([&](af_ir_t** o) { return af_dce(ptr(), ir.ptr(), out_used.get(), o); });
  }
  Ir cse(const Ir& ir) { return transform([&](af_ir_t** o) { return af_cse(ptr(), ir.ptr(), o); }); }
  /* cse that also merges identical LM calls when merge_nondeterministic
   * (af_cse_with; effectful host calls are never merged). */
  Ir cse(const Ir& ir, bool merge_nondeterministic) {
    const std::string_view opts = merge_nondeterministic ? "{\"merge_nondeterministic\": true}" : "{}";
    return transform([&](af_ir_t** o) { return af_cse_with(ptr(), ir.ptr(), opts.data(), opts.size(), o); });
  }
  Ir sched(const Ir& ir) { return transform([&](af_ir_t** o) { return af_sched(ptr(), ir.ptr(), o); }); }

  /* Saved graphs. */
  Ir load(std::string_view path) {
    return transform([&](af_ir_t** o) { return af_ir_load(ptr(), path.data(), path.size(), o); });
  }
  Ir from_bytes(std::string_view bytes) {
    return transform([&](af_ir_t** o) {
      return af_ir_from_bytes(ptr(), reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), o);
    });
  }
  /* Runs every load check on .afg bytes; a one-line JSON summary. */
  std::string graph_verify(std::string_view bytes) {
    return take_bytes(
        [&](af_bytes_t* b) { return af_graph_verify(ptr(), data(bytes), bytes.size(), b); });
  }
  /* The readable JSON form of .afg bytes; graph_from_json gives the bytes back. */
  std::string graph_to_json(std::string_view bytes) {
    return take_bytes(
        [&](af_bytes_t* b) { return af_graph_to_json(ptr(), data(bytes), bytes.size(), b); });
  }
  std::string graph_from_json(std::string_view json) {
    return take_bytes(
        [&](af_bytes_t* b) { return af_graph_from_json(ptr(), json.data(), json.size(), b); });
  }

 private:
  friend class Program;
  friend class Walk;
  struct TraceState {
    Context* ctx;
    TraceFn fn;
    std::exception_ptr thrown;
  };
  af_context_t* ptr() const {
    if (!get()) throw detail::empty_handle("Context");
    return get();
  }
  Value make(const std::function<af_error_t*(af_value_t**)>& f) const { return adopt(detail::make_value(f)); }
  static std::vector<af_value_t*> handles(const std::vector<Value>& values) {
    std::vector<af_value_t*> p;
    p.reserve(values.size());
    for (const Value& v : values) p.push_back(v.get());
    return p;
  }
  /* v (owned) as a Value; a promise holds this context. */
  Value adopt(af_value_t* v) const {
    Value out = Value::own(v);
    if (v && !af_value_ready(v)) out.keep_ = h_;
    return out;
  }
  static const uint8_t* data(std::string_view bytes) {
    return reinterpret_cast<const uint8_t*>(bytes.data());
  }
  static std::string take_bytes(const std::function<af_error_t*(af_bytes_t*)>& f) {
    af_bytes_t b{nullptr, 0};
    detail::check(f(&b));
    return detail::take(b);
  }
  static Ir transform(const std::function<af_error_t*(af_ir_t**)>& f) {
    af_ir_t* out = nullptr;
    detail::check(f(&out));
    return Ir::own(out);
  }
  static std::vector<Value> borrow_all(const af_value_t* const* vs, size_t n) {
    std::vector<Value> out;
    out.reserve(n);
    for (size_t i = 0; i < n; ++i) out.push_back(Value::borrow(vs[i]));
    return out;
  }
  static af_error_t* trace_trampoline(void* ud, af_context_t*, const af_value_t* const* in, size_t n,
                                      af_value_t** out) noexcept {
    auto* st = static_cast<TraceState*>(ud);
    try {
      Value r = st->fn(*st->ctx, borrow_all(in, n));
      if (!r) throw Error(Code::InvalidArgument, "the trace function returned an empty af::Value");
      *out = af_value_clone(r.get());
      return nullptr;
    } catch (...) {
      st->thrown = std::current_exception();  // rethrown by trace() as itself
      static const char msg[] = "the C++ trace function threw";
      return af_error_new(AF_ERR_CALLBACK, msg, sizeof msg - 1);
    }
  }
  // Runs call (af_trace or af_trace_with) with fn behind the trampoline;
  // what fn threw is rethrown as itself.
  template <class Call>
  Ir trace_raw(TraceFn fn, Call&& call) {
    TraceState st{this, std::move(fn), nullptr};
    af_ir_t* out = nullptr;
    af_error_t* e = call(&st, &out);
    if (st.thrown) {
      af_error_free(e);
      af_ir_free(out);
      std::rethrow_exception(st.thrown);
    }
    detail::check(e);
    return Ir::own(out);
  }
  static af_error_t* host_trampoline(void* ud, const af_value_t* const* args, size_t n, af_value_t** out) noexcept {
    try {
      Value r = (*static_cast<HostFn*>(ud))(borrow_all(args, n));
      if (!r) throw Error(Code::InvalidArgument, "the host function returned an empty af::Value");
      *out = af_value_clone(r.get());
      return nullptr;
    } catch (...) {
      return detail::error_for_current(Code::Callback, "the C++ host function threw: ");
    }
  }
  static void destroy_host(void* ud) noexcept { delete static_cast<HostFn*>(ud); }
  static void async_host_trampoline(void* ud, const af_value_t* const* args, size_t n, af_host_request_t* req) noexcept {
    HostRequest r(req);
    try {
      (*static_cast<AsyncHostFn*>(ud))(borrow_all(args, n), r);
    } catch (...) {
      r.fail_with_current_exception();  // ignored if fn finished or moved the request
    }
  }
  static void destroy_async_host(void* ud) noexcept { delete static_cast<AsyncHostFn*>(ud); }
  static af_function_options_t function_options(FunctionOptions how, const Value& result_kinds) noexcept {
    af_function_options_t o{};
    o.struct_size = sizeof o;
    o.flags = (how.pure ? AF_FUNCTION_PURE : 0u) | (how.blocking ? AF_FUNCTION_BLOCKING : 0u);
    o.result_kinds = result_kinds.get();
    return o;
  }

  std::shared_ptr<af_context_t> h_;
};

inline Context::Scope Context::cancel_scope(const CancelToken& token) {
  if (!token.get()) throw detail::empty_handle("CancelToken");
  detail::check(af_cancel_scope_push(ptr(), token.get()));
  return Scope(ptr(), af_cancel_scope_pop);
}

}  // namespace af

#endif /* AF_HPP_CONTEXT_HPP */
