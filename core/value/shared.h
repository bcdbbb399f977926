// Shared<T>: a reference-counted pointer to an immutable T in one pointer's
// width. The IR holds several shared blocks per equation (its trees, params
// and notes) and a million-equation IR holds millions of equations: a
// std::shared_ptr costs 16 bytes per field (object + control block) where
// the count can live beside the object. No weak references, no aliasing, no
// custom deleters: only what the IR's shared blocks need.
//
// A block made by `immortal` lives until the process ends and is never
// counted: the IR's most common blocks (a leaf tree, small flat lists) are
// copied into nearly every equation, and counting them would make every
// copy an atomic write to one cache line that all threads share.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <utility>

namespace af {

template <class T>
class Shared {
 public:
  Shared() noexcept = default;
  Shared(std::nullptr_t) noexcept {}  // NOLINT: implicit, like a pointer
  template <class... Args>
  static Shared make(Args&&... args) {
    Shared s;
    s.box_ = new Box{{1}, T(std::forward<Args>(args)...)};
    return s;
  }
  // A block that is never freed. Hold it in a static that is never destroyed
  // either (a `new`ed holder), so that leak checkers see it reachable at exit.
  template <class... Args>
  static Shared immortal(Args&&... args) {
    Shared s;
    s.box_ = new Box{{kImmortal}, T(std::forward<Args>(args)...)};
    return s;
  }
  Shared(const Shared& o) noexcept : box_(o.box_) { retain(); }
  Shared(Shared&& o) noexcept : box_(std::exchange(o.box_, nullptr)) {}
  Shared& operator=(const Shared& o) noexcept {
    Shared(o).swap(*this);
    return *this;
  }
  Shared& operator=(Shared&& o) noexcept {
    Shared(std::move(o)).swap(*this);
    return *this;
  }
  ~Shared() { release(); }

  const T* get() const noexcept { return box_ ? &box_->value : nullptr; }
  const T& operator*() const noexcept { return box_->value; }
  const T* operator->() const noexcept { return &box_->value; }
  explicit operator bool() const noexcept { return box_ != nullptr; }
  // True when this is the only reference: its owner may change the value
  // in place (copy-on-write) since nobody else can see it.
  bool unique() const noexcept { return box_ && box_->refs.load(std::memory_order_acquire) == 1; }
  // The value to change in place; only when unique().
  T& mutable_value() noexcept { return box_->value; }
  void swap(Shared& o) noexcept { std::swap(box_, o.box_); }

  friend bool operator==(const Shared& a, const Shared& b) noexcept { return a.box_ == b.box_; }
  friend bool operator==(const Shared& a, std::nullptr_t) noexcept { return a.box_ == nullptr; }

 private:
  static constexpr uint32_t kImmortal = 0;  // a counted block has at least 1
  struct Box {
    std::atomic<uint32_t> refs;
    T value;
  };
  void retain() const noexcept {
    if (box_ && box_->refs.load(std::memory_order_relaxed) != kImmortal)
      box_->refs.fetch_add(1, std::memory_order_relaxed);
  }
  void release() noexcept {
    if (box_ && box_->refs.load(std::memory_order_relaxed) != kImmortal &&
        box_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1)
      destroy(box_);
    box_ = nullptr;
  }
  // Out of line, so that release stays small enough to inline everywhere.
  [[gnu::noinline]] static void destroy(Box* box) noexcept { delete box; }
  Box* box_ = nullptr;
};

}  // namespace af
