/* af/hpp/handle.hpp — part of af.hpp (include <af/af.hpp>): owning what
 * af.h hands out.
 *
 * detail::Unique (the move-only owner of a Future, Walk or CancelToken)
 * and detail::Shared (a reference to a refcounted handle: Value, Ir,
 * Program, Provider; a copy is a new reference, so copies are independent
 * objects that may be used and destroyed on different threads), the error a
 * moved-from handle raises, and bytes taken from libaf. */
#ifndef AF_HPP_HANDLE_HPP
#define AF_HPP_HANDLE_HPP

#include "error.hpp"

#include <string>
#include <utility>

namespace af {

namespace detail {

inline std::string take(af_bytes_t& b) {
  std::string s(reinterpret_cast<const char*>(b.data), b.len);
  af_bytes_free(&b);
  return s;
}

inline Error empty_handle(const char* what) {
  return Error(Code::InvalidArgument, std::string("af::") + what + " is empty (moved from)");
}

/* A unique owner of a C handle freed by Free. */
template <class T, void (*Free)(T*)>
class Unique {
 public:
  Unique() noexcept = default;
  explicit Unique(T* p) noexcept : p_(p) {}
  Unique(Unique&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  Unique& operator=(Unique&& o) noexcept {
    if (this != &o) {
      reset();
      p_ = std::exchange(o.p_, nullptr);
    }
    return *this;
  }
  Unique(const Unique&) = delete;
  Unique& operator=(const Unique&) = delete;
  ~Unique() { reset(); }
  void reset() noexcept {
    if (p_) Free(p_);
    p_ = nullptr;
  }
  T* get() const noexcept { return p_; }
  T* release() noexcept { return std::exchange(p_, nullptr); }

 private:
  T* p_ = nullptr;
};

/* A reference to a refcounted C handle: copying adds a reference. */
template <class T, T* (*Clone)(const T*), void (*Free)(T*)>
class Shared {
 public:
  Shared() noexcept = default;
  explicit Shared(T* p) noexcept : p_(p) {}
  Shared(const Shared& o) noexcept : p_(o.p_ ? Clone(o.p_) : nullptr) {}
  Shared(Shared&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  Shared& operator=(Shared o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }
  ~Shared() {
    if (p_) Free(p_);
  }
  T* get() const noexcept { return p_; }

 private:
  T* p_ = nullptr;
};

}  // namespace detail

}  // namespace af

#endif /* AF_HPP_HANDLE_HPP */
