/* af/hpp/walk.hpp — part of af.hpp (include <af/af.hpp>): af::Walk, which
 * steps through an IR one equation at a time. */
#ifndef AF_HPP_WALK_HPP
#define AF_HPP_WALK_HPP

#include "context.hpp"

#include <cstddef>
#include <optional>
#include <vector>

namespace af {

/* ---- Walking an IR one equation at a time -------------------------------- */

/* A stepper over an IR, for debuggers and hosts that run some equations
 * themselves: next() gives the next equation and its inputs; then eval()
 * lets libaf evaluate it or send() supplies its outputs; once next() gives
 * nothing, outputs() is the program's output. Use it while its Context
 * lives. Move-only. */
class Walk {
 public:
  /* Inputs are checked as for a call of ir. */
  Walk(Context& ctx, const Ir& ir, const std::vector<Value>& inputs) {
    auto p = detail::ptrs(inputs);
    af_walk_t* w = nullptr;
    detail::check(af_walk_new(ctx.ptr(), ir.ptr(), p.data(), p.size(), &w));
    h_ = decltype(h_)(w);
  }
  af_walk_t* get() const noexcept { return h_.get(); }

  struct Step {
    size_t eqn;    /* the equation's index (as Ir::eqn_prim numbers them) */
    Value inputs;  /* its input tree, with values */
  };
  /* The next equation (the same one again until eval() or send()), or
   * nothing once every equation ran. */
  std::optional<Step> next() {
    size_t eqn = AF_WALK_DONE;
    af_value_t* in = nullptr;
    detail::check(af_walk_next(ptr(), &eqn, &in));
    Value inputs = Value::own(in);
    if (eqn == AF_WALK_DONE) return std::nullopt;
    return Step{eqn, std::move(inputs)};
  }
  /* Evaluates the current equation with libaf's implementation. */
  void eval() { detail::check(af_walk_eval(ptr())); }
  /* Supplies the current equation's outputs (its output tree, concrete
   * leaves of the declared kinds). */
  void send(const Value& outputs) { detail::check(af_walk_send(ptr(), outputs.get())); }
  /* The program's output (INVALID_ARGUMENT while equations remain). */
  Value outputs() {
    af_value_t* out = nullptr;
    detail::check(af_walk_outputs(ptr(), &out));
    return Value::own(out);
  }

 private:
  af_walk_t* ptr() const {
    if (!get()) throw detail::empty_handle("Walk");
    return get();
  }
  detail::Unique<af_walk_t, af_walk_free> h_;
};

}  // namespace af

#endif /* AF_HPP_WALK_HPP */
