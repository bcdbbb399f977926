// HostPool: the threads that run a context's blocking host functions, apart
// from the scheduler's workers so that slow tools never starve the engine.
// Bounded: at most max_threads run at once, started on demand; the rest wait
// in FIFO order. A call whose run gave up before it started is skipped.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "rt/async.h"

namespace af {

class HostPool {
 public:
  static constexpr size_t kDefaultThreads = 8;
  static constexpr size_t kMaxThreads = 256;

  HostPool() = default;
  // Fails the waiting calls with CANCELLED, then waits for the calls still
  // running — without limit, or at most wait_ms (set_wait_ms) — and joins
  // their threads; past the limit it abandons the threads of calls that are
  // still running: each finishes its call on its own, holding what the call
  // uses (its host function, whose destroy then runs when the call returns,
  // and the pool's state), and ends.
  ~HostPool();
  HostPool(const HostPool&) = delete;
  HostPool& operator=(const HostPool&) = delete;

  // INVALID_ARGUMENT outside 1..kMaxThreads. Threads already running stay
  // until the pool goes; new ones start only below the new bound.
  void set_max_threads(size_t n);
  size_t max_threads() const;
  // How long the destructor waits for running calls (0 = without limit).
  void set_wait_ms(int64_t ms);

  // Runs work(), which finishes op, on a pool thread. Skipped when op is
  // already finished by the time a thread takes it.
  void submit(std::shared_ptr<AsyncOp> op, std::function<void()> work);
  // Whether the calling thread is one of this pool's: a blocking function
  // that calls another runs it inline rather than wait for a thread it may
  // itself be holding (a pool of one would never finish).
  bool on_pool_thread() const noexcept;

 private:
  struct Job {
    std::shared_ptr<AsyncOp> op;
    std::function<void()> work;
  };
  // What the pool's threads use: shared with them, so that a thread the
  // destructor abandoned still finds it when its call returns.
  struct State {
    std::mutex mu;
    std::condition_variable work;    // a job queued, or stop
    std::condition_variable exited;  // a thread left its loop
    std::deque<Job> queue;
    size_t idle = 0;  // threads waiting for a job
    size_t live = 0;  // threads not yet out of their loop
    size_t max = kDefaultThreads;
    int64_t wait_ms = 0;
    bool stop = false;
  };
  static void loop(const std::shared_ptr<State>& s);

  std::shared_ptr<State> s_ = std::make_shared<State>();
  std::vector<std::thread> threads_;  // guarded by s_->mu
};

}  // namespace af
