// SmallVec<T, N>: a vector whose first N elements live inside it. An IR
// equation has one or two inputs and one or two outputs almost always; as
// std::vectors each cost a heap chunk and an allocation per equation, and a
// pass over a large IR visits those chunks as well as the equation. More
// than N elements go to the heap. The interface is the part of std::vector
// the IR's readers use; it converts to std::span<const T>.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <new>
#include <span>
#include <utility>
#include <vector>

namespace af {

template <class T, uint32_t N>
class SmallVec {
  static_assert(N > 0);

 public:
  SmallVec() noexcept {}
  SmallVec(std::initializer_list<T> xs) { assign(xs.begin(), xs.end()); }
  SmallVec(const std::vector<T>& xs) { assign(xs.begin(), xs.end()); }  // NOLINT: implicit by design
  SmallVec(std::vector<T>&& xs) {  // NOLINT: implicit by design
    reserve(xs.size());
    for (T& x : xs) new (data() + size_++) T(std::move(x));
  }
  SmallVec(const SmallVec& o) { assign(o.begin(), o.end()); }
  SmallVec(SmallVec&& o) noexcept { take(o); }
  SmallVec& operator=(const SmallVec& o) {
    if (this != &o) assign(o.begin(), o.end());
    return *this;
  }
  SmallVec& operator=(SmallVec&& o) noexcept {
    if (this != &o) {
      clear();
      release();
      take(o);
    }
    return *this;
  }
  ~SmallVec() {
    clear();
    release();
  }

  size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  T* data() noexcept { return on_heap() ? heap_ : reinterpret_cast<T*>(inline_); }
  const T* data() const noexcept { return on_heap() ? heap_ : reinterpret_cast<const T*>(inline_); }
  T* begin() noexcept { return data(); }
  T* end() noexcept { return data() + size_; }
  const T* begin() const noexcept { return data(); }
  const T* end() const noexcept { return data() + size_; }
  T& operator[](size_t i) noexcept { return data()[i]; }
  const T& operator[](size_t i) const noexcept { return data()[i]; }
  T& back() noexcept { return data()[size_ - 1]; }
  const T& back() const noexcept { return data()[size_ - 1]; }
  operator std::span<const T>() const noexcept { return {data(), size_}; }  // NOLINT

  void reserve(size_t n) {
    if (n > cap_) grow(n);
  }
  void push_back(const T& x) { emplace_back(x); }
  void push_back(T&& x) { emplace_back(std::move(x)); }
  template <class... Args>
  T& emplace_back(Args&&... args) {
    if (size_ == cap_) {
      // x may be an element of this vector: made before the old storage goes.
      T x(std::forward<Args>(args)...);
      grow(size_t(size_) * 2);
      return *new (data() + size_++) T(std::move(x));
    }
    return *new (data() + size_++) T(std::forward<Args>(args)...);
  }
  void pop_back() noexcept { std::destroy_at(data() + --size_); }
  void clear() noexcept {
    std::destroy_n(data(), size_);
    size_ = 0;
  }
  template <class It>
  void assign(It first, It last) {
    clear();
    reserve(size_t(std::distance(first, last)));
    for (; first != last; ++first) new (data() + size_++) T(*first);
  }

  friend bool operator==(const SmallVec& a, const SmallVec& b) noexcept {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  bool on_heap() const noexcept { return cap_ > N; }
  void grow(size_t n) {
    n = std::max<size_t>(n, N + 1);
    T* bigger = static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(alignof(T))));
    std::uninitialized_move_n(data(), size_, bigger);
    std::destroy_n(data(), size_);
    release();
    heap_ = bigger;
    cap_ = uint32_t(n);
  }
  // Frees the heap block (its elements are already destroyed or moved).
  void release() noexcept {
    if (on_heap()) ::operator delete(heap_, std::align_val_t(alignof(T)));
    cap_ = N;
  }
  // Takes o's elements (o's heap block, if any); o is left empty. With no
  // elements or block of our own.
  void take(SmallVec& o) noexcept {
    if (o.on_heap()) {
      heap_ = o.heap_;
      cap_ = o.cap_;
      o.cap_ = N;
    } else {
      std::uninitialized_move_n(o.data(), o.size_, data());
      std::destroy_n(o.data(), o.size_);
    }
    size_ = o.size_;
    o.size_ = 0;
  }

  union {
    alignas(T) unsigned char inline_[N * sizeof(T)];
    T* heap_;
  };
  uint32_t size_ = 0;
  uint32_t cap_ = N;
};

}  // namespace af
