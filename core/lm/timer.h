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
#include <span>
#include <thread>
#include <vector>

#include "lm/ordered_queue.h"

namespace af::lm {

class Call;

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
  // The same for a provider's calls (not null), many under one lock: runs
  // fn(*calls[k]) at at_ns[k], holding each call until then. Nothing is
  // allocated per call (a std::function that holds a shared_ptr is). Moves
  // each call it schedules: after an exception (out of memory) the calls
  // left in `calls` were not, and the one being added was dropped (a
  // dropped call fails: lm/call.h).
  void schedule(std::span<const int64_t> at_ns, std::span<std::shared_ptr<Call>> calls, void (*fn)(Call&));
  // Drops a pending callback; false if it already ran or is running.
  bool cancel(uint64_t id);
  size_t pending() const;

 private:
  struct Item {
    int64_t at;
    uint64_t seq;  // schedule order: callbacks due at one time run in it
    uint64_t id;
    struct Before {
      bool operator()(const Item& a, const Item& b) const { return a.at != b.at ? a.at < b.at : a.seq < b.seq; }
    };
  };
  // A pending callback: fn, or on_call(*call).
  struct Callback {
    std::function<void()> fn;
    std::shared_ptr<Call> call;
    void (*on_call)(Call&) = nullptr;
    explicit operator bool() const noexcept { return fn || call; }
    void operator()() const {
      if (call) on_call(*call);
      else fn();
    }
  };
  // Callbacks live in reused slots (no allocation per schedule beyond the
  // callback's own): an id is the slot's index and its generation, so an
  // id of a callback that ran or was cancelled never matches a later one.
  struct Slot {
    Callback cb;  // empty: free
    uint32_t generation = 1;  // never 0: no id is 0
  };
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    OrderedQueue<Item, Item::Before> due;  // mostly scheduled in time order
    std::vector<Slot> slots;
    std::vector<uint32_t> free_slots;  // pending callbacks: slots.size() - free_slots.size()
    uint64_t next_seq = 0;
    bool stop = false;
    // The slot of a pending id, or null.
    Slot* find(uint64_t id) {
      const auto index = uint32_t(id);
      if (index >= slots.size()) return nullptr;
      Slot& slot = slots[index];
      return slot.cb && slot.generation == uint32_t(id >> 32) ? &slot : nullptr;
    }
    // Empties a slot and returns its callback.
    Callback take(Slot& slot) {
      Callback cb = std::move(slot.cb);
      slot.cb = Callback{};
      if (++slot.generation == 0) slot.generation = 1;
      free_slots.push_back(uint32_t(&slot - slots.data()));
      return cb;
    }
    // With mu held: adds cb; sets `earliest` when it is due before every
    // other pending callback (the loop must wake for it).
    uint64_t add(int64_t at_ns, Callback cb, bool& earliest);
  };
  uint64_t enqueue(int64_t at_ns, Callback cb);
  // With st_->mu held, before adding (a thread that cannot start fails
  // the schedule with nothing added): the loop's thread, on first use.
  void start_locked();
  static void loop(const std::shared_ptr<State>& st);
  std::shared_ptr<State> st_;
  std::thread thread_;  // guarded by st_->mu until it is joined
};

}  // namespace af::lm
