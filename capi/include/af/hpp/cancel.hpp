/* af/hpp/cancel.hpp — part of af.hpp (include <af/af.hpp>): af::CancelToken.
 * A file of its own because two parts take one: Context::cancel_scope
 * (context.hpp) and RunOptions::cancel (program.hpp). */
#ifndef AF_HPP_CANCEL_HPP
#define AF_HPP_CANCEL_HPP

#include "handle.hpp"

namespace af {

/* Cancels every run given it in its RunOptions, and what a thread runs in a
 * Context::cancel_scope of it, from any thread. */
class CancelToken {
 public:
  CancelToken() {
    af_cancel_t* c = nullptr;
    detail::check(af_cancel_new(&c));
    h_ = decltype(h_)(c);
  }
  af_cancel_t* get() const noexcept { return h_.get(); }
  void trigger() noexcept {
    if (get()) af_cancel_trigger(get());
  }
  bool triggered() const noexcept { return get() && af_cancel_triggered(get()) != 0; }

 private:
  detail::Unique<af_cancel_t, af_cancel_free> h_;
};

}  // namespace af

#endif /* AF_HPP_CANCEL_HPP */
