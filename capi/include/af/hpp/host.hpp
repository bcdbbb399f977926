/* af/hpp/host.hpp — part of af.hpp (include <af/af.hpp>): af::HostRequest,
 * one call of an async host function (Context::register_function_async,
 * context.hpp), finished with a Value. */
#ifndef AF_HPP_HOST_HPP
#define AF_HPP_HOST_HPP

#include "handle.hpp"
#include "value.hpp"

#include <string_view>

namespace af {

/* ---- Async host functions ------------------------------------------------- */

/* One call of an async host function. Finish it once with complete() or
 * fail(), from any thread, now or later (move it out of the callback to
 * finish later); a second finish throws INVALID_ARGUMENT and changes nothing.
 * One destroyed unfinished fails the call with CALLBACK. Move-only. */
class HostRequest {
 public:
  explicit HostRequest(af_host_request_t* r) noexcept : r_(r) {}

  /* True once the run no longer wants the result (cancelled, timed out,
   * failed elsewhere): stop working, then finish anyway (it is ignored). */
  bool cancelled() const noexcept { return af_host_request_cancelled(r_.get()) != 0; }
  /* INVALID_ARGUMENT naming the function if result does not match the
   * declared kinds (the call fails with it too). */
  void complete(const Value& result) { detail::check(af_host_request_complete(ptr(), result.get())); }
  void fail(Code code, std::string_view message) {
    af_host_request_t* r = ptr();  // first: a moved-from request throws before an error is made
    detail::check(af_host_request_fail(r, af_error_new(static_cast<int32_t>(code), message.data(), message.size())));
  }
  /* Fails with the exception in flight (call from a catch block); the run's
   * caller finds it as the cause's origin(). Ignored if already finished. */
  void fail_with_current_exception() noexcept {
    if (r_.get()) af_error_free(af_host_request_fail(r_.get(), detail::error_for_current(Code::Callback, "the C++ host function threw: ")));
  }

 private:
  af_host_request_t* ptr() const {
    if (!r_.get()) throw Error(Code::InvalidArgument, "the host request was moved from");
    return r_.get();
  }
  detail::Unique<af_host_request_t, af_host_request_free> r_;
};

}  // namespace af

#endif /* AF_HPP_HOST_HPP */
