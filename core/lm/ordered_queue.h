// OrderedQueue: a priority queue for items that mostly arrive in the order
// they leave — replies due a fixed latency after their requests, requests
// of one priority. Those wait in a FIFO, O(1) each way; an item that would
// leave before the FIFO's last goes to a heap instead. With 100 000 items
// waiting, a heap alone pays a full-depth sift (17 levels of cache misses)
// for every item that leaves.
#pragma once

#include <algorithm>
#include <deque>
#include <vector>

namespace af::lm {

// Before()(a, b): a leaves before b (a strict weak order).
template <class T, class Before>
class OrderedQueue {
 public:
  bool empty() const noexcept { return fifo_.empty() && heap_.empty(); }
  size_t size() const noexcept { return fifo_.size() + heap_.size(); }

  void push(T v) {
    if (fifo_.empty() || !Before{}(v, fifo_.back())) {
      fifo_.push_back(std::move(v));
    } else {
      heap_.push_back(std::move(v));
      std::push_heap(heap_.begin(), heap_.end(), After{});
    }
  }
  // The next to leave; the queue must not be empty.
  const T& top() const { return from_heap() ? heap_.front() : fifo_.front(); }
  T pop() {
    if (from_heap()) {
      std::pop_heap(heap_.begin(), heap_.end(), After{});
      T v = std::move(heap_.back());
      heap_.pop_back();
      return v;
    }
    T v = std::move(fifo_.front());
    fifo_.pop_front();
    return v;
  }

 private:
  // The std heap functions keep the greatest first: "greatest" is the one
  // every other leaves after.
  struct After {
    bool operator()(const T& a, const T& b) const { return Before{}(b, a); }
  };
  bool from_heap() const { return !heap_.empty() && (fifo_.empty() || Before{}(heap_.front(), fifo_.front())); }
  std::deque<T> fifo_;   // in leaving order
  std::vector<T> heap_;  // the others
};

}  // namespace af::lm
