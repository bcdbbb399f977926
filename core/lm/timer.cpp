#include "lm/timer.h"

#include <chrono>

#include "lm/call.h"

namespace af::lm {

TimerQueue::TimerQueue() : st_(std::make_shared<State>()) {}

TimerQueue::~TimerQueue() {
  std::thread t;
  {
    std::lock_guard<std::mutex> lock(st_->mu);
    st_->stop = true;
    t.swap(thread_);
  }
  st_->cv.notify_all();
  if (t.joinable()) {
    if (t.get_id() == std::this_thread::get_id())
      t.detach();  // freed from one of its own callbacks: the loop holds st_
    else
      t.join();
  }
}

uint64_t TimerQueue::schedule(int64_t at_ns, std::function<void()> fn) {
  State& s = *st_;
  if (!fn) fn = [] {};  // an empty callback would read as a free slot
  std::lock_guard<std::mutex> lock(s.mu);
  uint32_t index;
  if (!s.free_slots.empty()) {
    index = s.free_slots.back();
    s.free_slots.pop_back();
  } else {
    index = uint32_t(s.slots.size());
    s.slots.emplace_back();
  }
  Slot& slot = s.slots[index];
  slot.fn = std::move(fn);
  const uint64_t id = uint64_t(slot.generation) << 32 | index;
  bool earliest = s.heap.empty() || at_ns < s.heap.top().at;
  s.heap.push(Item{at_ns, s.next_seq++, id});
  if (!thread_.joinable()) thread_ = std::thread([st = st_] { loop(st); });
  if (earliest) s.cv.notify_one();
  return id;
}

bool TimerQueue::cancel(uint64_t id) {
  std::function<void()> fn;  // destroyed outside the lock: it may own what frees other queues
  {
    std::lock_guard<std::mutex> lock(st_->mu);
    Slot* slot = st_->find(id);
    if (!slot) return false;
    fn = st_->take(*slot);
  }
  return true;
}

size_t TimerQueue::pending() const {
  std::lock_guard<std::mutex> lock(st_->mu);
  return st_->slots.size() - st_->free_slots.size();
}

void TimerQueue::loop(const std::shared_ptr<State>& st) {
  State& s = *st;
  std::unique_lock<std::mutex> lock(s.mu);
  std::vector<std::function<void()>> due;
  while (!s.stop) {
    if (s.heap.empty()) {
      s.cv.wait(lock);
      continue;
    }
    int64_t now = now_ns();
    if (s.heap.top().at > now) {
      s.cv.wait_for(lock, std::chrono::nanoseconds(s.heap.top().at - now));
      continue;
    }
    while (!s.heap.empty() && s.heap.top().at <= now) {
      Slot* slot = s.find(s.heap.top().id);
      s.heap.pop();
      if (!slot) continue;  // cancelled
      due.push_back(s.take(*slot));
    }
    lock.unlock();
    for (auto& fn : due) {
      try {
        fn();
      } catch (...) {
      }
    }
    due.clear();
    lock.lock();
  }
  // Pending callbacks are dropped unrun (outside the lock: they may own
  // what frees other queues).
  auto slots = std::move(s.slots);
  s.slots.clear();
  s.free_slots.clear();
  lock.unlock();
}

}  // namespace af::lm
