/* af/hpp/ir.hpp — part of af.hpp (include <af/af.hpp>): af::Ir, a traced
 * program (print, inspect, slice, save). Making one (trace, transforms,
 * load) is af::Context's (context.hpp); compiling one is af::Program's
 * (program.hpp). */
#ifndef AF_HPP_IR_HPP
#define AF_HPP_IR_HPP

#include "handle.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace af {

/* ---- IRs ---------------------------------------------------------------- */

/* A traced program, immutable. Print it, transform it, compile it, save it. */
class Ir {
 public:
  Ir() noexcept = default;
  static Ir own(af_ir_t* ir) { return Ir(ir); }
  af_ir_t* get() const noexcept { return h_.get(); }
  explicit operator bool() const noexcept { return get() != nullptr; }

  std::string text() const { return bytes_of(af_ir_to_text); }
  std::string dot() const { return bytes_of(af_ir_to_dot); }
  size_t eqn_count() const { return af_ir_eqn_count(ptr()); }
  std::string eqn_prim(size_t i) const {
    const char* p = af_ir_eqn_prim(ptr(), i);
    return p ? p : "";
  }
  size_t input_count() const { return af_ir_input_count(ptr()); }
  uint64_t hash() const { return af_ir_hash(ptr()); }
  /* The annotation Context::sched() put on equation i (NOT_FOUND if the IR
   * was not scheduled). */
  struct Sched {
    uint32_t level;
    double priority;
  };
  Sched eqn_sched(size_t i) const {
    Sched s{0, 0};
    detail::check(af_ir_eqn_sched(ptr(), i, &s.level, &s.priority));
    return s;
  }
  bool operator==(const Ir& o) const { return af_ir_equal(ptr(), o.ptr()) != 0; }
  bool operator!=(const Ir& o) const { return !(*this == o); }
  void validate() const { detail::check(af_ir_validate(ptr())); }

  /* Inspection (af.h: af_ir_json and the rest; JSON documents). */
  std::string json() const { return bytes_of(af_ir_json); }
  std::string eqn_json(size_t i) const { return take([&](af_bytes_t* b) { return af_ir_eqn_json(ptr(), i, b); }); }
  std::string var_json(uint32_t var) const {
    return take([&](af_bytes_t* b) { return af_ir_var_json(ptr(), var, b); });
  }
  Ir sub(size_t i, std::string_view path) const {
    af_ir_t* out = nullptr;
    detail::check(af_ir_sub(ptr(), i, path.data(), path.size(), &out));
    return Ir(out);
  }
  /* flags: AF_IR_ANCESTORS or AF_IR_DESCENDANTS, optionally | AF_IR_DEEP. */
  std::string related_json(size_t i, uint32_t flags) const {
    return take([&](af_bytes_t* b) { return af_ir_related_json(ptr(), i, flags, b); });
  }
  /* With the largest answer accepted, in bytes (0 = the default, 64 MiB);
   * past it INVALID_ARGUMENT ("... over the limit of N"), found before
   * anything is built. */
  std::string related_json(size_t i, uint32_t flags, uint64_t max_bytes) const {
    return take([&](af_bytes_t* b) { return af_ir_related_json_with(ptr(), i, flags, max_bytes, b); });
  }
  /* The slice computing `outputs` from ir's own inputs. */
  Ir slice(const std::vector<std::string>& outputs) const { return slice_impl(outputs, nullptr); }
  /* The slice computing `outputs` from `inputs` only. */
  Ir slice(const std::vector<std::string>& outputs, const std::vector<std::string>& inputs) const {
    return slice_impl(outputs, &inputs);
  }
  std::string cost_json(int64_t batch) const {
    return take([&](af_bytes_t* b) { return af_ir_cost_json(ptr(), batch, b); });
  }

  /* Saved graphs (.afg). */
  void save(std::string_view path) const { detail::check(af_ir_save(ptr(), path.data(), path.size())); }
  std::string to_bytes() const { return bytes_of(af_ir_to_bytes); }

 private:
  friend class Context;
  friend class Program;
  friend class Walk;
  explicit Ir(af_ir_t* ir) : h_(ir) {}
  af_ir_t* ptr() const {
    if (!get()) throw detail::empty_handle("Ir");
    return get();
  }
  template <class F>
  static std::string take(F&& f) {
    af_bytes_t b{nullptr, 0};
    detail::check(f(&b));
    return detail::take(b);
  }
  Ir slice_impl(const std::vector<std::string>& outputs, const std::vector<std::string>* inputs) const {
    std::vector<const char*> o, in;
    std::vector<size_t> ol, il;
    for (const std::string& s : outputs) {
      o.push_back(s.data());
      ol.push_back(s.size());
    }
    if (inputs)
      for (const std::string& s : *inputs) {
        in.push_back(s.data());
        il.push_back(s.size());
      }
    af_ir_t* out = nullptr;
    // A non-NULL (possibly empty) input list means "these inputs only".
    static const char* const kNone = "";
    static const size_t kNoLen = 0;
    detail::check(af_ir_slice(ptr(), o.data(), ol.data(), o.size(), inputs ? (in.empty() ? &kNone : in.data()) : nullptr,
                              inputs ? (il.empty() ? &kNoLen : il.data()) : nullptr, in.size(), &out));
    return Ir(out);
  }
  std::string bytes_of(af_error_t* (*f)(const af_ir_t*, af_bytes_t*)) const {
    af_bytes_t b{nullptr, 0};
    detail::check(f(ptr(), &b));
    return detail::take(b);
  }
  detail::Shared<af_ir_t, af_ir_clone, af_ir_free> h_;
};

}  // namespace af

#endif /* AF_HPP_IR_HPP */
