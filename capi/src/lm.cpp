// LM calls, providers, routes and host requests.
#include "exec/context.h"
#include "handles.h"
#include "lm/options.h"
#include "lm/providers.h"
#include "lm/router.h"
#include "prims/lm.h"

using namespace af;
using namespace af::capi;

struct af_provider {
  mutable std::atomic<uint32_t> refs{1};
  lm::ProviderPtr p;
};

// Owned by the host from submit until complete/fail.
struct af_lm_request {
  std::shared_ptr<lm::Call> call;
};

namespace {

template <class Make>
af_error_t* new_provider(const char* fn, const char* options_json, size_t len, af_provider_t** out, Make make) {
  if (out) *out = nullptr;
  return guard([&] {
    require(out, fn, "out");
    std::string_view json = text(options_json, len, fn, "options_json");
    Value opts = lm::options_from_json(json, fn);
    auto h = std::make_unique<af_provider>();
    h->p = make(opts);
    *out = h.release();
  });
}

}  // namespace

extern "C" {

af_error_t* af_lm_call_ex(af_context_t* ctx, const af_value_t* messages, const af_value_t* model,
                          const af_value_t* params, af_value_t** out) {
  if (out) *out = nullptr;
  return guard([&] {
    require(ctx, "af_lm_call", "ctx");
    require(messages, "af_lm_call", "messages");
    require(model, "af_lm_call", "model");
    require(out, "af_lm_call", "out");
    *out = wrap(op_lm_call(unwrap(messages), unwrap(model), params ? unwrap(params) : Value(), ctx->env));
  });
}

af_error_t* af_lm_call(af_context_t* ctx, const af_value_t* messages, const af_value_t* model, af_value_t** out) {
  return af_lm_call_ex(ctx, messages, model, nullptr, out);
}

af_error_t* af_lm_schema_call_ex(af_context_t* ctx, const af_value_t* messages, const af_value_t* model,
                                 const af_value_t* schema, const af_value_t* params, af_value_t** out) {
  if (out) *out = nullptr;
  return guard([&] {
    require(ctx, "af_lm_schema_call", "ctx");
    require(messages, "af_lm_schema_call", "messages");
    require(model, "af_lm_schema_call", "model");
    require(schema, "af_lm_schema_call", "schema");
    require(out, "af_lm_schema_call", "out");
    *out = wrap(op_lm_schema_call(unwrap(messages), unwrap(model), unwrap(schema),
                                  params ? unwrap(params) : Value(), ctx->env));
  });
}

af_error_t* af_lm_schema_call(af_context_t* ctx, const af_value_t* messages, const af_value_t* model,
                              const af_value_t* schema, af_value_t** out) {
  return af_lm_schema_call_ex(ctx, messages, model, schema, nullptr, out);
}

af_error_t* af_lm_tool_call(af_context_t* ctx, const af_value_t* messages, const af_value_t* history,
                            const af_value_t* model, const af_value_t* tools, const af_value_t* params,
                            af_value_t** out) {
  if (out) *out = nullptr;
  return guard([&] {
    require(ctx, "af_lm_tool_call", "ctx");
    require(messages, "af_lm_tool_call", "messages");
    require(history, "af_lm_tool_call", "history");
    require(model, "af_lm_tool_call", "model");
    require(tools, "af_lm_tool_call", "tools");
    require(out, "af_lm_tool_call", "out");
    *out = wrap(op_lm_tool_call(unwrap(messages), unwrap(history), unwrap(model), unwrap(tools),
                                params ? unwrap(params) : Value(), ctx->env));
  });
}

af_error_t* af_tool_results(af_context_t* ctx, const af_value_t* history, const af_value_t* turn,
                            const af_value_t* results, af_value_t** out) {
  if (out) *out = nullptr;
  return guard([&] {
    require(ctx, "af_tool_results", "ctx");
    require(history, "af_tool_results", "history");
    require(turn, "af_tool_results", "turn");
    require(results, "af_tool_results", "results");
    require(out, "af_tool_results", "out");
    *out = wrap(op_tool_results(unwrap(history), unwrap(turn), unwrap(results), ctx->env));
  });
}

af_error_t* af_provider_new(const char* spec_json, size_t len, af_provider_t** out) {
  return new_provider("af_provider_new", spec_json, len, out, lm::make_provider);
}

af_error_t* af_provider_echo_new(const char* options_json, size_t len, af_provider_t** out) {
  return new_provider("af_provider_echo_new", options_json, len, out, lm::make_echo);
}

af_error_t* af_provider_openai_new(const char* options_json, size_t len, af_provider_t** out) {
  return new_provider("af_provider_openai_new", options_json, len, out,
                      [](const Value& opts) { return lm::make_http_provider("openai", opts); });
}

af_error_t* af_provider_replay_new(const char* options_json, size_t len, af_provider_t** out) {
  return new_provider("af_provider_replay_new", options_json, len, out, lm::make_replay);
}

af_error_t* af_provider_host_new(af_provider_submit_fn fn, void* user_data, void (*destroy)(void*),
                                 af_provider_t** out) {
  if (out) *out = nullptr;
  af_error_t* err = guard([&] {
    if (!fn) invalid("af_provider_host_new: `fn` is NULL");
    require(out, "af_provider_host_new", "out");
    auto h = std::make_unique<af_provider>();
    void (*d)(void*) = destroy;
    destroy = nullptr;  // the provider owns user_data from here on
    std::function<void()> on_free = [d, user_data] {
      if (d) d(user_data);
    };
    try {
      h->p = lm::make_host(
          [fn, user_data](std::shared_ptr<lm::Call> call) {
            auto* req = new af_lm_request{std::move(call)};
            fn(user_data, req);
          },
          on_free, 0);
    } catch (...) {
      on_free();
      throw;
    }
    *out = h.release();
  });
  if (err && destroy) destroy(user_data);
  return err;
}

af_error_t* af_lm_request_json(const af_lm_request_t* req, af_bytes_t* out) {
  if (out) *out = af_bytes_t{nullptr, 0};
  return guard([&] {
    require(req, "af_lm_request_json", "req");
    require(out, "af_lm_request_json", "out");
    to_bytes(req->call->request().to_json(), out);
  });
}

int af_lm_request_cancelled(const af_lm_request_t* req) { return req && req->call->finished() ? 1 : 0; }

af_error_t* af_lm_request_stream(af_lm_request_t* req, const char* delta, size_t len) {
  return guard([&] {
    require(req, "af_lm_request_stream", "req");
    if (!delta && len == 0) return req->call->restart();
    req->call->delta(text(delta, len, "af_lm_request_stream", "delta"));
  });
}

af_error_t* af_lm_request_complete(af_lm_request_t* req, const char* content, size_t len) {
  std::unique_ptr<af_lm_request> owned(req);
  return guard([&] {
    require(req, "af_lm_request_complete", "req");
    std::string_view s;
    try {
      s = text(content, len, "af_lm_request_complete", "content");
    } catch (const Error& e) {
      req->call->fail(Error(Code::Provider, std::string("host provider: ") + e.what()));
      throw;
    }
    req->call->complete(std::string(s));
  });
}

af_error_t* af_lm_request_fail(af_lm_request_t* req, af_error_t* err) {
  std::unique_ptr<af_lm_request> owned(req);
  return guard([&] {
    if (!req) {
      af_error_free(err);
      invalid("af_lm_request_fail: `req` is NULL");
    }
    if (!err) {
      req->call->fail(Error(Code::Provider, "host provider: the host failed the request without an error"));
      return;
    }
    int32_t code = af_error_code(err);
    std::string msg = af_error_message(err);
    Error cause = from_callback(err, "host provider");  // frees err
    std::shared_ptr<const Error> c = cause.code() == Code::Callback && cause.cause_ptr()
                                         ? cause.cause_ptr()
                                         : std::make_shared<const Error>(cause);
    req->call->fail(Error(Code(code), "host provider: " + msg, c));
  });
}

af_error_t* af_context_route(af_context_t* ctx, const char* model_pattern, size_t len, af_provider_t* provider) {
  return guard([&] {
    require(ctx, "af_context_route", "ctx");
    require(provider, "af_context_route", "provider");
    std::string_view pat = text(model_pattern, len, "af_context_route", "model_pattern");
    if (pat.empty()) invalid("af_context_route: the model pattern is empty (use \"*\" to route every model)");
    ctx->core.router().route(std::string(pat), provider->p);
  });
}

af_error_t* af_context_route_fallback(af_context_t* ctx, const char* model_pattern, size_t len,
                                     af_provider_t* const* providers, size_t n) {
  return guard([&] {
    const char* fn = "af_context_route_fallback";
    require(ctx, fn, "ctx");
    if (n == 0) invalid("af_context_route_fallback: give at least one provider (n is 0)");
    require(providers, fn, "providers");
    std::vector<lm::ProviderPtr> list;
    for (size_t i = 0; i < n; ++i) {
      if (!providers[i]) invalid("af_context_route_fallback: providers[" + std::to_string(i) + "] is NULL");
      list.push_back(providers[i]->p);
    }
    std::string_view pat = text(model_pattern, len, fn, "model_pattern");
    if (pat.empty()) invalid("af_context_route_fallback: the model pattern is empty (use \"*\" to route every model)");
    ctx->core.router().route(std::string(pat), std::move(list));
  });
}

af_error_t* af_provider_set_options(af_provider_t* p, const char* options_json, size_t len) {
  return guard([&] {
    require(p, "af_provider_set_options", "p");
    std::string_view json = text(options_json, len, "af_provider_set_options", "options_json");
    p->p->configure(lm::options_from_json(json, "af_provider_set_options"));
  });
}

af_error_t* af_provider_set_max_in_flight(af_provider_t* p, uint32_t max_in_flight) {
  return guard([&] {
    require(p, "af_provider_set_max_in_flight", "p");
    p->p->limiter().set_max_in_flight(max_in_flight);
  });
}

af_error_t* af_provider_stats(const af_provider_t* p, af_bytes_t* out) {
  if (out) *out = af_bytes_t{nullptr, 0};
  return guard([&] {
    require(p, "af_provider_stats", "p");
    require(out, "af_provider_stats", "out");
    lm::Limiter& l = p->p->limiter();
    lm::Limiter::Stats s = l.stats();
    std::string j = "{\"submitted\":" + std::to_string(s.submitted) + ",\"started\":" + std::to_string(s.started) +
                    ",\"finished\":" + std::to_string(s.finished) + ",\"in_flight\":" + std::to_string(s.in_flight) +
                    ",\"queued\":" + std::to_string(s.queued) + ",\"peak_in_flight\":" +
                    std::to_string(s.peak_in_flight) + ",\"max_in_flight\":" + std::to_string(l.max_in_flight()) +
                    ",\"prompt_tokens\":" + std::to_string(s.prompt_tokens) +
                    ",\"completion_tokens\":" + std::to_string(s.completion_tokens) +
                    ",\"requests_per_minute\":" + std::to_string(l.requests_per_minute()) +
                    ",\"tokens_per_minute\":" + std::to_string(l.tokens_per_minute()) +
                    ",\"rate_waits\":" + std::to_string(s.rate_waits) +
                    ",\"schema_retries\":" + std::to_string(p->p->schema_retries()) + "}";
    to_bytes(j, out);
  });
}

af_provider_t* af_provider_clone(const af_provider_t* p) {
  if (!p) return nullptr;
  p->refs.fetch_add(1, std::memory_order_relaxed);
  return const_cast<af_provider_t*>(p);
}

void af_provider_free(af_provider_t* p) {
  if (p && p->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete p;
}

}  // extern "C"
