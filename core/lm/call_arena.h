// Memory for the calls a batch makes together: carved in turn from one
// block, handed back one by one (a call's memory goes back when its last
// reference does, as with make_shared), the block freed with the last.
//
// Why: a call is made on the thread that issues it and freed on the
// provider's thread that answers it. glibc's per-thread caches do not
// serve that, and each such free of a call's ~0.5 kB chunk also merged it
// with its freed neighbours and then swept the arena's small-chunk bins
// (malloc_consolidate): a third of echo's reply thread went to freeing.
// From a block, the reply thread frees one chunk per kCallsPerArena calls.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>

#include "lm/call.h"

namespace af::lm {

class CallArena {
 public:
  // An arena with room for `calls` calls (each with its shared count);
  // the maker holds it until drop().
  static CallArena* make(size_t calls) {
    const size_t bytes = calls * kBytesPerCall;
    void* p = ::operator new(sizeof(CallArena) + bytes);
    return new (p) CallArena(bytes);
  }
  CallArena(const CallArena&) = delete;
  CallArena& operator=(const CallArena&) = delete;

  // The maker's hold: the arena goes when that and every block are gone.
  void drop() noexcept { give_back(); }

  // An allocator for std::allocate_shared from `arena`: blocks come from
  // the arena while it has room, else from operator new; either way a
  // block holds the arena until it is given back. Only the maker's thread
  // allocates; any thread deallocates.
  template <class T>
  struct Allocator {
    using value_type = T;
    CallArena* arena;
    explicit Allocator(CallArena* a) noexcept : arena(a) {}
    template <class U>
    Allocator(const Allocator<U>& o) noexcept : arena(o.arena) {}
    T* allocate(size_t n) {
      void* p = arena->take(n * sizeof(T), alignof(T));
      if (!p) p = ::operator new(n * sizeof(T));
      arena->holds_.fetch_add(1, std::memory_order_relaxed);
      return static_cast<T*>(p);
    }
    void deallocate(T* p, size_t) noexcept {
      if (!arena->owns(p)) ::operator delete(p);
      arena->give_back();
    }
    template <class U>
    bool operator==(const Allocator<U>& o) const noexcept {
      return arena == o.arena;
    }
  };

 private:
  // A call and its shared count (std::allocate_shared puts them in one
  // block: a vtable pointer, two counts, the allocator), with room for
  // alignment.
  static constexpr size_t kBytesPerCall = sizeof(Call) + 48;

  explicit CallArena(size_t bytes) noexcept : end_(data() + bytes), next_(data()) {}
  std::byte* data() noexcept { return reinterpret_cast<std::byte*>(this + 1); }
  bool owns(const void* p) noexcept {
    auto* b = static_cast<const std::byte*>(p);
    return b >= data() && b < end_;
  }
  void* take(size_t size, size_t align) noexcept {
    auto at = (reinterpret_cast<uintptr_t>(next_) + align - 1) & ~uintptr_t(align - 1);
    if (at + size > reinterpret_cast<uintptr_t>(end_)) return nullptr;
    next_ = reinterpret_cast<std::byte*>(at + size);
    return reinterpret_cast<void*>(at);
  }
  void give_back() noexcept {
    if (holds_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      this->~CallArena();
      ::operator delete(static_cast<void*>(this));
    }
  }

  std::byte* const end_;
  std::byte* next_;                // the maker's: where the next block goes
  std::atomic<size_t> holds_{1};  // the maker's, plus one per block
};
static_assert(alignof(CallArena) <= alignof(std::max_align_t));

// The maker's hold on an arena, dropped however the making ends.
struct CallArenaDrop {
  void operator()(CallArena* a) const noexcept { a->drop(); }
};
using CallArenaHold = std::unique_ptr<CallArena, CallArenaDrop>;

// How many calls an arena holds at most: its block stays until the last
// of them is gone, and stays below glibc's threshold for mapping a block
// of its own.
inline constexpr size_t kCallsPerArena = 64;

}  // namespace af::lm
