#include "lm/timer.h"

#include <chrono>

#include "lm/call.h"

namespace af::lm {

TimerQueue::~TimerQueue() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) {
    if (thread_.get_id() == std::this_thread::get_id())
      thread_.detach();  // freed from one of its own callbacks
    else
      thread_.join();
  }
}

uint64_t TimerQueue::schedule(int64_t at_ns, std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t id = next_id_++;
  fns_.emplace(id, std::move(fn));
  bool earliest = heap_.empty() || at_ns < heap_.top().at;
  heap_.push(Item{at_ns, id});
  if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
  if (earliest) cv_.notify_one();
  return id;
}

bool TimerQueue::cancel(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  return fns_.erase(id) > 0;
}

size_t TimerQueue::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return fns_.size();
}

void TimerQueue::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  std::vector<std::function<void()>> due;
  while (!stop_) {
    if (heap_.empty()) {
      cv_.wait(lock);
      continue;
    }
    int64_t now = now_ns();
    if (heap_.top().at > now) {
      cv_.wait_for(lock, std::chrono::nanoseconds(heap_.top().at - now));
      continue;
    }
    while (!heap_.empty() && heap_.top().at <= now) {
      auto it = fns_.find(heap_.top().id);
      heap_.pop();
      if (it == fns_.end()) continue;  // cancelled
      due.push_back(std::move(it->second));
      fns_.erase(it);
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
}

}  // namespace af::lm
