// TimerQueue: runs callbacks at given times on one thread of its own
// (started on first use). Used for simulated latency, retry backoff and run
// deadlines. Callbacks must be short; they run without the queue's lock. A
// queue may be destroyed from one of its own callbacks: its thread then
// finishes on its own (the queue's state lives as long as the thread).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <queue>
#include <thread>
#include <vector>

namespace af::lm {

class TimerQueue {
 public:
  TimerQueue();
  ~TimerQueue();  // joins; pending callbacks are dropped unrun
  TimerQueue(const TimerQueue&) = delete;
  TimerQueue& operator=(const TimerQueue&) = delete;

  // Runs fn at steady-clock time `at_ns` (lm::now_ns()). Returns an id for
  // cancel(), never 0 (callers may keep 0 for "none"). Never runs fn on the
  // calling thread.
  uint64_t schedule(int64_t at_ns, std::function<void()> fn);
  // Drops a pending callback; false if it already ran or is running.
  bool cancel(uint64_t id);
  size_t pending() const;

 private:
  struct Item {
    int64_t at;
    uint64_t seq;  // schedule order: callbacks due at one time run in it
    uint64_t id;
    bool operator>(const Item& o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };
  // Callbacks live in reused slots (no allocation per schedule beyond the
  // callback's own): an id is the slot's index and its generation, so an
  // id of a callback that ran or was cancelled never matches a later one.
  struct Slot {
    std::function<void()> fn;  // empty: free
    uint32_t generation = 1;  // never 0: no id is 0
  };
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    std::priority_queue<Item, std::vector<Item>, std::greater<Item>> heap;
    std::vector<Slot> slots;
    std::vector<uint32_t> free_slots;  // pending callbacks: slots.size() - free_slots.size()
    uint64_t next_seq = 0;
    bool stop = false;
    // The slot of a pending id, or null.
    Slot* find(uint64_t id) {
      const auto index = uint32_t(id);
      if (index >= slots.size()) return nullptr;
      Slot& slot = slots[index];
      return slot.fn && slot.generation == uint32_t(id >> 32) ? &slot : nullptr;
    }
    // Empties a slot and returns its callback.
    std::function<void()> take(Slot& slot) {
      std::function<void()> fn = std::move(slot.fn);
      slot.fn = nullptr;
      if (++slot.generation == 0) slot.generation = 1;
      free_slots.push_back(uint32_t(&slot - slots.data()));
      return fn;
    }
  };
  static void loop(const std::shared_ptr<State>& st);
  std::shared_ptr<State> st_;
  std::thread thread_;  // guarded by st_->mu until it is joined
};

}  // namespace af::lm
