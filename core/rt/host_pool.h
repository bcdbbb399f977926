// HostPool: the threads that run a context's blocking host functions, apart
// from the scheduler's workers so that slow tools never starve the engine.
// Bounded: at most max_threads run at once, started on demand; the rest wait
// in FIFO order. A call whose run gave up before it started is skipped.
#pragma once

#include <condition_variable>
#include <cstddef>
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
  // Fails the waiting calls with CANCELLED and joins the threads (a call
  // already running is waited for).
  ~HostPool();
  HostPool(const HostPool&) = delete;
  HostPool& operator=(const HostPool&) = delete;

  // INVALID_ARGUMENT outside 1..kMaxThreads. Threads already running stay
  // until the pool goes; new ones start only below the new bound.
  void set_max_threads(size_t n);
  size_t max_threads() const;

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
  void loop();

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  std::vector<std::thread> threads_;
  size_t idle_ = 0;
  size_t max_ = kDefaultThreads;
  bool stop_ = false;
};

}  // namespace af
