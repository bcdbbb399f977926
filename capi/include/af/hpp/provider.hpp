/* af/hpp/provider.hpp — part of af.hpp (include <af/af.hpp>): where LM
 * requests go. af::Provider (echo, openai, replay, from a spec, or the
 * host's own function) and af::LmRequest, the one request a host provider
 * receives. Context::route (context.hpp) sends models to a Provider. */
#ifndef AF_HPP_PROVIDER_HPP
#define AF_HPP_PROVIDER_HPP

#include "handle.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>

namespace af {

/* ---- Providers ------------------------------------------------------------ */

/* One request handed to a host provider. Finish it exactly once with
 * complete() or fail(), from any thread; one destroyed unfinished fails with
 * PROVIDER. Move-only. */
namespace detail {
// How an LmRequest still unanswered goes: it fails, so the run never waits
// for it.
inline void drop_lm_request(af_lm_request_t* r) noexcept {
  static const char msg[] = "the host provider dropped the request without answering it";
  af_error_free(af_lm_request_fail(r, af_error_new(AF_ERR_PROVIDER, msg, sizeof msg - 1)));
}
}  // namespace detail

class LmRequest {
 public:
  explicit LmRequest(af_lm_request_t* r) noexcept : r_(r) {}

  /* {"model", "messages": [{"role", "content"}...], ...} */
  std::string json() const {
    af_bytes_t b{nullptr, 0};
    detail::check(af_lm_request_json(ptr(), &b));
    return detail::take(b);
  }
  bool cancelled() const { return af_lm_request_cancelled(ptr()) != 0; }
  /* Streams a piece of the reply before complete() (the run streams when
   * json() has "stream": true; ignored otherwise); whole UTF-8 characters. */
  void stream(std::string_view text) {
    detail::check(af_lm_request_stream(ptr(), text.empty() ? "" : text.data(), text.size()));
  }
  /* What was streamed so far does not count: the reply starts over. */
  void restart_stream() { detail::check(af_lm_request_stream(ptr(), nullptr, 0)); }
  void complete(std::string_view content) {
    detail::check(af_lm_request_complete(take(), content.data(), content.size()));
  }
  void fail(Code code, std::string_view message) {
    af_lm_request_t* r = take();  // first: a moved-from request throws before an error is made
    detail::check(af_lm_request_fail(r, af_error_new(static_cast<int32_t>(code), message.data(), message.size())));
  }
  /* Fails with the exception in flight (call from a catch block); the run's
   * caller gets it back as Error::origin(). */
  void fail_with_current_exception() noexcept {
    if (!r_.get()) return;
    af_error_free(af_lm_request_fail(r_.release(), detail::error_for_current(Code::Provider, "the host provider threw: ")));
  }

 private:
  af_lm_request_t* ptr() const {
    if (!r_.get()) throw Error(Code::InvalidArgument, "the LM request was already completed or failed, or moved from");
    return r_.get();
  }
  af_lm_request_t* take() {
    ptr();
    return r_.release();
  }
  detail::Unique<af_lm_request_t, detail::drop_lm_request> r_;
};

/* Where LM requests go: echo (offline, deterministic), openai, replay, or
 * the host's own function. */
class Provider {
 public:
  /* Any built-in type from a spec: {"type": "anthropic", ...options} (af_provider_new). */
  static Provider from_spec(std::string_view spec_json) { return make(af_provider_new, spec_json); }
  static Provider echo(std::string_view options_json = {}) { return make(af_provider_echo_new, options_json); }
  static Provider openai(std::string_view options_json) { return make(af_provider_openai_new, options_json); }
  static Provider replay(std::string_view options_json) { return make(af_provider_replay_new, options_json); }
  /* fn receives each request on a libaf thread and must finish it: at once,
   * or later from any thread after moving it out (std::move(req)). If fn
   * throws while still holding the request, the request fails with what it
   * threw (the run's caller finds it as Error::origin()). */
  using SubmitFn = std::function<void(LmRequest&)>;
  static Provider host(SubmitFn fn) {
    auto* state = new SubmitFn(std::move(fn));
    af_provider_t* p = nullptr;
    detail::check(af_provider_host_new(&submit, state, &destroy, &p));  // destroy runs also on error
    return Provider(p);
  }

  af_provider_t* get() const noexcept { return h_.get(); }
  void set_max_in_flight(uint32_t n) { detail::check(af_provider_set_max_in_flight(ptr(), n)); }
  /* The options every provider takes, e.g. {"requests_per_minute": 500,
   * "schema_retries": 2}; keys not given keep their values. */
  void set_options(std::string_view options_json) {
    detail::check(af_provider_set_options(ptr(), options_json.data(), options_json.size()));
  }
  /* Counters as JSON. */
  std::string stats() const {
    af_bytes_t b{nullptr, 0};
    detail::check(af_provider_stats(ptr(), &b));
    return detail::take(b);
  }

 private:
  explicit Provider(af_provider_t* p) : h_(p) {}
  af_provider_t* ptr() const {
    if (!get()) throw detail::empty_handle("Provider");
    return get();
  }
  static Provider make(af_error_t* (*f)(const char*, size_t, af_provider_t**), std::string_view o) {
    af_provider_t* p = nullptr;
    detail::check(f(o.empty() ? nullptr : o.data(), o.size(), &p));
    return Provider(p);
  }
  static void submit(void* ud, af_lm_request_t* req) noexcept {
    LmRequest r(req);
    try {
      (*static_cast<SubmitFn*>(ud))(r);
    } catch (...) {
      r.fail_with_current_exception();  // a no-op if fn moved the request out
    }
  }
  static void destroy(void* ud) noexcept { delete static_cast<SubmitFn*>(ud); }
  detail::Shared<af_provider_t, af_provider_clone, af_provider_free> h_;
};

}  // namespace af

#endif /* AF_HPP_PROVIDER_HPP */
