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
#include <unordered_map>
#include <vector>

namespace af::lm {

class TimerQueue {
 public:
  TimerQueue();
  ~TimerQueue();  // joins; pending callbacks are dropped unrun
  TimerQueue(const TimerQueue&) = delete;
  TimerQueue& operator=(const TimerQueue&) = delete;

  // Runs fn at steady-clock time `at_ns` (lm::now_ns()). Returns an id for
  // cancel(). Never runs fn on the calling thread.
  uint64_t schedule(int64_t at_ns, std::function<void()> fn);
  // Drops a pending callback; false if it already ran or is running.
  bool cancel(uint64_t id);
  size_t pending() const;

 private:
  struct Item {
    int64_t at;
    uint64_t id;
    bool operator>(const Item& o) const { return at != o.at ? at > o.at : id > o.id; }
  };
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    std::priority_queue<Item, std::vector<Item>, std::greater<Item>> heap;
    std::unordered_map<uint64_t, std::function<void()>> fns;
    uint64_t next_id = 1;
    bool stop = false;
  };
  static void loop(const std::shared_ptr<State>& st);
  std::shared_ptr<State> st_;
  std::thread thread_;  // guarded by st_->mu until it is joined
};

}  // namespace af::lm
