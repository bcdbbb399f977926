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
  if (!fn) fn = [] {};  // an empty callback would read as a free slot
  return enqueue(at_ns, Callback{std::move(fn), nullptr, nullptr});
}

void TimerQueue::schedule(std::span<const int64_t> at_ns, std::span<std::shared_ptr<Call>> calls,
                          void (*fn)(Call&)) {
  std::lock_guard<std::mutex> lock(st_->mu);
  start_locked();
  bool earliest = false;
  for (size_t k = 0; k < calls.size(); ++k) st_->add(at_ns[k], Callback{nullptr, std::move(calls[k]), fn}, earliest);
  if (earliest) st_->cv.notify_one();
}

uint64_t TimerQueue::enqueue(int64_t at_ns, Callback cb) {
  std::lock_guard<std::mutex> lock(st_->mu);
  start_locked();
  bool earliest = false;
  const uint64_t id = st_->add(at_ns, std::move(cb), earliest);
  if (earliest) st_->cv.notify_one();
  return id;
}

void TimerQueue::start_locked() {
  if (!thread_.joinable()) thread_ = std::thread([st = st_] { loop(st); });
}

uint64_t TimerQueue::State::add(int64_t at_ns, Callback cb, bool& earliest) {
  earliest = earliest || due.empty() || at_ns < due.top().at;
  uint32_t index;
  if (!free_slots.empty()) {
    index = free_slots.back();
    free_slots.pop_back();
  } else {
    index = uint32_t(slots.size());
    slots.emplace_back();
  }
  Slot& slot = slots[index];
  slot.cb = std::move(cb);
  const uint64_t id = uint64_t(slot.generation) << 32 | index;
  due.push(Item{at_ns, next_seq++, id});
  return id;
}

bool TimerQueue::cancel(uint64_t id) {
  Callback cb;  // destroyed outside the lock: it may own what frees other queues
  {
    std::lock_guard<std::mutex> lock(st_->mu);
    Slot* slot = st_->find(id);
    if (!slot) return false;
    cb = st_->take(*slot);
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
  std::vector<Callback> run;
  while (!s.stop) {
    if (s.due.empty()) {
      s.cv.wait(lock);
      continue;
    }
    int64_t now = now_ns();
    if (s.due.top().at > now) {
      s.cv.wait_for(lock, std::chrono::nanoseconds(s.due.top().at - now));
      continue;
    }
    while (!s.due.empty() && s.due.top().at <= now) {
      Slot* slot = s.find(s.due.pop().id);
      if (!slot) continue;  // cancelled
      run.push_back(s.take(*slot));
    }
    lock.unlock();
    for (auto& cb : run) {
      try {
        cb();
      } catch (...) {
      }
    }
    run.clear();
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
