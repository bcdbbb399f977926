// Provider: where LM requests go. submit() queues a Call under the
// provider's limit (max in flight; 0 = unlimited) and starts it when a slot
// is free, highest priority first; start() is each provider's own work and
// must finish the call eventually (complete, fail) or honour its cancel hook.
//
// The limit lives in a Limiter shared with the calls, so a call finishing
// after its provider was freed still releases its slot safely.
#pragma once

#include <condition_variable>
#include <functional>
#include <cstdint>
#include <memory>
#include <mutex>
#include <queue>
#include <string>
#include <vector>

#include "lm/call.h"

namespace af::lm {

class Provider;

class Limiter : public std::enable_shared_from_this<Limiter> {
 public:
  struct Stats {
    uint64_t submitted = 0, started = 0, finished = 0;
    uint32_t in_flight = 0, queued = 0, peak_in_flight = 0;
    uint64_t prompt_tokens = 0, completion_tokens = 0;  // of completed calls
  };
  Limiter(Provider* p, uint32_t max_in_flight) : provider_(p), max_(max_in_flight) {}
  void submit(std::shared_ptr<Call> call);
  void set_max_in_flight(uint32_t n);
  uint32_t max_in_flight() const;
  Stats stats() const;
  // The provider is going away: wait for start() calls in progress, start
  // nothing more, fail the waiting calls and cancel the started ones (their
  // cancel hooks stop the provider's work) with `why`.
  void detach(const Error& why);

 private:
  friend class Call;
  void release(int slot, uint64_t prompt_tokens = 0, uint64_t completion_tokens = 0);
  void pump();
  struct Waiting {
    double priority;
    uint64_t seq;
    std::shared_ptr<Call> call;
    bool operator<(const Waiting& o) const {
      return priority != o.priority ? priority < o.priority : seq > o.seq;
    }
  };
  mutable std::mutex mu_;
  std::condition_variable idle_;
  Provider* provider_;
  uint32_t max_;
  uint32_t in_flight_ = 0;
  uint32_t starting_ = 0;
  bool pumping_ = false;
  uint64_t seq_ = 0;
  // A min-heap: pump() takes the lowest free slot in O(log n) even with
  // 100 000 calls in flight.
  std::priority_queue<int, std::vector<int>, std::greater<int>> free_slots_;
  int next_slot_ = 0;
  std::vector<std::weak_ptr<Call>> started_;  // by slot: the calls in flight
  std::priority_queue<Waiting> waiting_;
  Stats stats_;
};

class Provider {
 public:
  Provider(std::string name, uint32_t max_in_flight);
  virtual ~Provider();
  Provider(const Provider&) = delete;
  Provider& operator=(const Provider&) = delete;

  // Queues the call (any thread). The call finishes through its done hook.
  void submit(std::shared_ptr<Call> call) { limiter_->submit(std::move(call)); }
  const std::string& name() const noexcept { return name_; }
  Limiter& limiter() noexcept { return *limiter_; }

 protected:
  friend class Limiter;
  // Starts the call; must not throw (fail the call instead) and must not
  // block for long. Called without locks held, possibly from many threads.
  virtual void start(std::shared_ptr<Call> call) noexcept = 0;
  // Derived destructors call this first, before their members go away.
  void shutdown();

 private:
  std::string name_;
  std::shared_ptr<Limiter> limiter_;
  bool shut_ = false;
};

using ProviderPtr = std::shared_ptr<Provider>;

}  // namespace af::lm
