// VarIds: the output variables of an equation. Almost every equation has one
// or two, so those are held inline: no allocation per equation, and nothing
// separate for a pass over a large IR to visit (an equation's `out` was a
// std::vector: 24 bytes plus a 32-byte heap chunk for one id). More than two
// go to the heap. The interface is the part of std::vector the IR's readers
// use; it converts to std::span<const VarId>.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <vector>

namespace af {

using VarId = uint32_t;

class VarIds {
 public:
  VarIds() noexcept {}
  VarIds(std::initializer_list<VarId> ids) { assign(ids.begin(), ids.end()); }
  VarIds(const std::vector<VarId>& ids) { assign(ids.begin(), ids.end()); }  // NOLINT: implicit by design
  VarIds(const VarIds& o) { assign(o.begin(), o.end()); }
  VarIds(VarIds&& o) noexcept { take(o); }
  VarIds& operator=(const VarIds& o) {
    if (this != &o) assign(o.begin(), o.end());
    return *this;
  }
  VarIds& operator=(VarIds&& o) noexcept {
    if (this != &o) {
      release();
      take(o);
    }
    return *this;
  }
  ~VarIds() { release(); }

  size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  VarId* data() noexcept { return on_heap() ? u_.heap : u_.inline_ids; }
  const VarId* data() const noexcept { return on_heap() ? u_.heap : u_.inline_ids; }
  VarId* begin() noexcept { return data(); }
  VarId* end() noexcept { return data() + size_; }
  const VarId* begin() const noexcept { return data(); }
  const VarId* end() const noexcept { return data() + size_; }
  VarId& operator[](size_t i) noexcept { return data()[i]; }
  const VarId& operator[](size_t i) const noexcept { return data()[i]; }
  operator std::span<const VarId>() const noexcept { return {data(), size_}; }  // NOLINT

  void reserve(size_t n) {
    if (n > capacity()) grow(n);
  }
  void push_back(VarId v) {
    if (size_ == capacity()) grow(size_ * 2);
    data()[size_++] = v;
  }
  void clear() noexcept { size_ = 0; }
  template <class It>
  void assign(It first, It last) {
    clear();
    reserve(size_t(std::distance(first, last)));
    for (; first != last; ++first) data()[size_++] = *first;
  }

  friend bool operator==(const VarIds& a, const VarIds& b) noexcept {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  static constexpr uint32_t kInline = 2;
  bool on_heap() const noexcept { return cap_ > kInline; }
  size_t capacity() const noexcept { return cap_; }
  void grow(size_t n) {
    n = std::max<size_t>(n, kInline + 1);
    VarId* bigger = new VarId[n];
    std::copy(begin(), end(), bigger);
    release();
    u_.heap = bigger;
    cap_ = uint32_t(n);
  }
  void release() noexcept {
    if (on_heap()) delete[] u_.heap;
    cap_ = kInline;
  }
  // Takes o's ids (o's heap block, if any); o is left empty. With no block
  // of our own.
  void take(VarIds& o) noexcept {
    u_ = o.u_;
    size_ = o.size_;
    cap_ = o.cap_;
    o.cap_ = kInline;
    o.size_ = 0;
  }

  union {
    VarId inline_ids[kInline];
    VarId* heap;
  } u_{};
  uint32_t size_ = 0;
  uint32_t cap_ = kInline;
};

}  // namespace af
