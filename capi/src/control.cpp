// Control flow (switch, while_loop), host functions, and the run-time
// scopes of a context (collect, inject, memoize).
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <span>

#include "handles.h"
#include "prims/control_flow.h"
#include "prims/host.h"

using namespace af;
using namespace af::capi;

namespace {


// A registered C callback; destroy runs once, when the last reference (the
// registry entry or a call in flight) goes away.
template <class Fn>
struct CHostFn {
  Fn fn = nullptr;
  void* user_data = nullptr;
  void (*destroy)(void*) = nullptr;
  ~CHostFn() {
    if (destroy) destroy(user_data);
  }
};

// The argument trees as borrowed handles for one callback, freed after it.
struct ArgHandles {
  std::vector<af_value_t*> h;
  explicit ArgHandles(std::span<const Value> args) {
    h.reserve(args.size());
    for (const Value& v : args) h.push_back(wrap(v));
  }
  ~ArgHandles() {
    for (af_value_t* v : h) af_value_free(v);
  }
  ArgHandles(const ArgHandles&) = delete;
  ArgHandles& operator=(const ArgHandles&) = delete;
};

std::string host_what(const std::string& name) { return "host function \"" + name + "\""; }

// Shared by the three registrations: takes ownership of user_data (destroy
// runs exactly once, also when this fails), checks the arguments, and
// registers the function `setup` completes from the holder.
template <class Fn, class Setup>
af_error_t* register_host(const char* api, af_context_t* ctx, const char* name, size_t name_len, Fn fn,
                          void* user_data, void (*destroy)(void*), const af_value_t* result_kinds,
                          HostFunction::Mode mode, bool pure, Setup setup) {
  std::shared_ptr<CHostFn<Fn>> holder;
  try {
    holder = std::make_shared<CHostFn<Fn>>();
  } catch (...) {
    if (destroy) destroy(user_data);
    return out_of_memory();
  }
  holder->fn = fn;
  holder->user_data = user_data;
  holder->destroy = destroy;
  return guard([&] {
    require(ctx, api, "ctx");
    if (!fn) invalid(std::string(api) + ": `fn` is NULL");
    require(result_kinds, api, "result_kinds");
    std::string n(text(name, name_len, api, "name"));
    if (n.empty()) invalid(std::string(api) + ": the name is empty");
    auto f = std::make_shared<HostFunction>();
    f->name = n;
    f->mode = mode;
    f->pure = pure;
    f->result_kinds = unwrap(result_kinds);
    f->result = parse_result_kinds(f->result_kinds);
    setup(*f, std::move(holder), n);
    ctx->core.hosts.add(std::move(f));
  });
}

// Sync and blocking functions: one C call returning the result.
void set_sync_call(HostFunction& f, std::shared_ptr<CHostFn<af_host_fn>> holder, const std::string& n) {
  f.call = [holder, n](std::span<const Value> args) -> Value {
    ArgHandles handles(args);
    af_value_t* result = nullptr;
    af_error_t* err = holder->fn(holder->user_data, handles.h.data(), handles.h.size(), &result);
    if (err) {
      af_value_free(result);
      throw from_callback(err, host_what(n));
    }
    if (!result) invalid(host_what(n) + " returned no value and no error");
    Value v = result->v;
    af_value_free(result);
    return v;
  };
}

}  // namespace

// Owned by the host from the call until af_host_request_free.
struct af_host_request {
  std::shared_ptr<HostRequest> req;
};

namespace {

// Async functions: the C callback starts the work with a request it owns.
void set_async_start(HostFunction& f, std::shared_ptr<CHostFn<af_host_async_fn>> holder, const std::string&) {
  f.start = [holder](std::span<const Value> args, std::shared_ptr<HostRequest> req) {
    ArgHandles handles(args);
    auto* h = new af_host_request{std::move(req)};
    holder->fn(holder->user_data, handles.h.data(), handles.h.size(), h);
  };
}

}  // namespace

extern "C" {

af_error_t* af_switch(af_context_t* ctx, const af_value_t* key, const char* const* names,
                      const size_t* name_lens, const af_ir_t* const* branches, size_t n_branches,
                      const af_value_t* const* operands, size_t n_operands, af_value_t** out) {
  return op("af_switch", ctx, out, [&](RunEnv& env) {
    require(key, "af_switch", "key");
    if (n_branches && (!names || !name_lens || !branches))
      invalid("af_switch: `names`, `name_lens` or `branches` is NULL with " + std::to_string(n_branches) +
              " branch(es)");
    std::vector<std::string> ns;
    std::vector<IRPtr> irs;
    for (size_t i = 0; i < n_branches; ++i) {
      ns.emplace_back(text(names[i], name_lens[i], "af_switch", "names[i]"));
      if (!branches[i]) invalid("af_switch: `branches[" + std::to_string(i) + "]` is NULL");
      irs.push_back(branches[i]->ir);
    }
    return op_switch(unwrap(key), ns, irs, unwrap_all(operands, n_operands, "af_switch", "operands"), env);
  });
}

af_error_t* af_while_loop(af_context_t* ctx, const af_ir_t* cond, const af_ir_t* body,
                          const af_value_t* init, uint64_t max_iters, af_value_t** out) {
  return op("af_while_loop", ctx, out, [&](RunEnv& env) {
    require(cond, "af_while_loop", "cond");
    require(body, "af_while_loop", "body");
    require(init, "af_while_loop", "init");
    return op_while_loop(cond->ir, body->ir, unwrap(init), max_iters, env);
  });
}

af_error_t* af_scan(af_context_t* ctx, const af_ir_t* body, const af_value_t* init, const af_value_t* xs,
                    int32_t reverse, af_value_t** out) {
  return op("af_scan", ctx, out, [&](RunEnv& env) {
    require(body, "af_scan", "body");
    require(init, "af_scan", "init");
    require(xs, "af_scan", "xs");
    return op_scan(body->ir, unwrap(init), unwrap(xs), reverse != 0, env);
  });
}

af_error_t* af_register_function(af_context_t* ctx, const char* name, size_t name_len, af_host_fn fn,
                                 void* user_data, void (*destroy)(void*),
                                 const af_value_t* result_kinds) {
  return register_host("af_register_function", ctx, name, name_len, fn, user_data, destroy, result_kinds,
                       HostFunction::Mode::Sync, false, set_sync_call);
}

af_error_t* af_register_function_blocking(af_context_t* ctx, const char* name, size_t name_len, af_host_fn fn,
                                          void* user_data, void (*destroy)(void*),
                                          const af_value_t* result_kinds) {
  return register_host("af_register_function_blocking", ctx, name, name_len, fn, user_data, destroy,
                       result_kinds, HostFunction::Mode::Blocking, false, set_sync_call);
}

af_error_t* af_register_function_async(af_context_t* ctx, const char* name, size_t name_len,
                                       af_host_async_fn fn, void* user_data, void (*destroy)(void*),
                                       const af_value_t* result_kinds) {
  return register_host("af_register_function_async", ctx, name, name_len, fn, user_data, destroy, result_kinds,
                       HostFunction::Mode::Async, false, set_async_start);
}

af_error_t* af_register_function_with(af_context_t* ctx, const char* name, size_t name_len,
                                      const af_function_options_t* options) {
  constexpr const char* api = "af_register_function_with";
  if (!options) return guard([] { invalid(std::string(api) + ": `options` is NULL"); });
  // Fields beyond the caller's struct keep their defaults (zero).
  af_function_options_t o{};
  std::memcpy(&o, options, std::min<size_t>(options->struct_size, sizeof o));
  const char* bad = nullptr;
  if (options->struct_size < offsetof(af_function_options_t, result_kinds) + sizeof o.result_kinds)
    bad = "options.struct_size is too small; set it to sizeof(af_function_options_t)";
  else if (o.flags & ~uint32_t(AF_FUNCTION_PURE | AF_FUNCTION_BLOCKING))
    bad = "unknown bits in options.flags (AF_FUNCTION_PURE, AF_FUNCTION_BLOCKING)";
  else if (!o.fn == !o.async_fn)
    bad = "set exactly one of options.fn (sync or blocking) and options.async_fn";
  else if (o.async_fn && (o.flags & AF_FUNCTION_BLOCKING))
    bad = "AF_FUNCTION_BLOCKING is for options.fn (an async function never blocks a thread)";
  if (bad) {
    if (o.destroy) o.destroy(o.user_data);
    return guard([&] { invalid(std::string(api) + ": " + bad); });
  }
  const bool pure = o.flags & AF_FUNCTION_PURE;
  if (o.async_fn)
    return register_host(api, ctx, name, name_len, o.async_fn, o.user_data, o.destroy, o.result_kinds,
                         HostFunction::Mode::Async, pure, set_async_start);
  return register_host(api, ctx, name, name_len, o.fn, o.user_data, o.destroy, o.result_kinds,
                       (o.flags & AF_FUNCTION_BLOCKING) ? HostFunction::Mode::Blocking : HostFunction::Mode::Sync,
                       pure, set_sync_call);
}

int af_host_request_cancelled(const af_host_request_t* req) { return req && req->req->cancelled() ? 1 : 0; }

af_error_t* af_host_request_complete(af_host_request_t* req, const af_value_t* result) {
  return guard([&] {
    require(req, "af_host_request_complete", "req");
    if (!result) {
      Error e(Code::InvalidArgument, "af_host_request_complete: `result` is NULL (host function \"" +
                                         req->req->name() + "\"); use af_host_request_fail to report a failure");
      req->req->fail(e);
      throw e;
    }
    req->req->complete(unwrap(result));
  });
}

af_error_t* af_host_request_fail(af_host_request_t* req, af_error_t* err) {
  return guard([&] {
    if (!req) {
      af_error_free(err);
      invalid("af_host_request_fail: `req` is NULL");
    }
    const std::string what = host_what(req->req->name());
    if (!err) {
      req->req->fail(Error(Code::Callback, what + " failed without an error"));
      return;
    }
    req->req->fail(from_callback(err, what));  // frees err
  });
}

void af_host_request_free(af_host_request_t* req) { delete req; }

af_error_t* af_host_call(af_context_t* ctx, const char* name, size_t name_len, const af_value_t* const* args,
                         size_t n, af_value_t** out) {
  return op("af_host_call", ctx, out, [&](RunEnv& env) {
    std::string_view nm = text(name, name_len, "af_host_call", "name");
    return op_host_call(nm, unwrap_all(args, n, "af_host_call", "args"), env);
  });
}

af_error_t* af_collect_push(af_context_t* ctx, const char* collection, size_t len) {
  return guard([&] {
    require(ctx, "af_collect_push", "ctx");
    ctx->core.scopes.push_collect(std::string(text(collection, len, "af_collect_push", "collection")));
  });
}

af_error_t* af_collect_pop(af_context_t* ctx, af_value_t** collected) {
  if (collected) *collected = nullptr;
  return guard([&] {
    require(ctx, "af_collect_pop", "ctx");
    require(collected, "af_collect_pop", "collected");
    *collected = wrap(ctx->core.scopes.pop_collect());
  });
}

af_error_t* af_inject_push(af_context_t* ctx, const char* collection, size_t len, const af_value_t* values) {
  return guard([&] {
    require(ctx, "af_inject_push", "ctx");
    require(values, "af_inject_push", "values");
    ctx->core.scopes.push_inject(std::string(text(collection, len, "af_inject_push", "collection")),
                                 unwrap(values));
  });
}

af_error_t* af_inject_pop(af_context_t* ctx) {
  return guard([&] {
    require(ctx, "af_inject_pop", "ctx");
    ctx->core.scopes.pop_inject();
  });
}

af_error_t* af_memoize_push(af_context_t* ctx) {
  return guard([&] {
    require(ctx, "af_memoize_push", "ctx");
    ctx->core.scopes.push_memo();
  });
}

af_error_t* af_memoize_pop(af_context_t* ctx) {
  return guard([&] {
    require(ctx, "af_memoize_pop", "ctx");
    ctx->core.scopes.pop_memo();
  });
}

}  // extern "C"
