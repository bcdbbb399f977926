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
  std::lock_guard<std::mutex> lock(s.mu);
  uint64_t id = s.next_id++;
  s.fns.emplace(id, std::move(fn));
  bool earliest = s.heap.empty() || at_ns < s.heap.top().at;
  s.heap.push(Item{at_ns, id});
  if (!thread_.joinable()) thread_ = std::thread([st = st_] { loop(st); });
  if (earliest) s.cv.notify_one();
  return id;
}

bool TimerQueue::cancel(uint64_t id) {
  std::lock_guard<std::mutex> lock(st_->mu);
  return st_->fns.erase(id) > 0;
}

size_t TimerQueue::pending() const {
  std::lock_guard<std::mutex> lock(st_->mu);
  return st_->fns.size();
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
      auto it = s.fns.find(s.heap.top().id);
      s.heap.pop();
      if (it == s.fns.end()) continue;  // cancelled
      due.push_back(std::move(it->second));
      s.fns.erase(it);
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
  auto fns = std::move(s.fns);
  lock.unlock();
}

}  // namespace af::lm
