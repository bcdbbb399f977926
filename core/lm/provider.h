// Provider: where LM requests go. submit() queues a Call under the
// provider's limits and starts it when they allow, highest priority first;
// start() is each provider's own work and must finish the call eventually
// (complete, fail) or honour its cancel hook.
//
// Limits: max in flight (0 = unlimited), requests per minute and tokens per
// minute (0 = unlimited), and a pause (a server's 429 Retry-After slows the
// whole provider). Rates are token buckets refilled continuously, holding at
// most one second's worth, so starts are spread evenly; a request's tokens
// are estimated when it starts (Request::estimated_tokens) and corrected by
// the reply's usage when it finishes. Requests wait for the limits; they
// never fail because of them.
//
// The limits live in a Limiter shared with the calls, so a call finishing
// after its provider was freed still releases its slot safely.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "lm/call.h"
#include "lm/ordered_queue.h"
#include "value/small_vec.h"

namespace af::lm {

class Provider;

class Limiter : public std::enable_shared_from_this<Limiter> {
 public:
  struct Stats {
    uint64_t submitted = 0, started = 0, finished = 0;
    uint32_t in_flight = 0, queued = 0, peak_in_flight = 0;
    uint64_t prompt_tokens = 0, completion_tokens = 0;  // of completed calls
    uint64_t rate_waits = 0;  // starts held back by a rate limit or a pause
  };
  Limiter(Provider* p, uint32_t max_in_flight) : provider_(p), max_(max_in_flight) {}
  void submit(std::shared_ptr<Call> call);
  // Queues every call (moved from `calls`) under one lock: a batch's
  // requests pay for the limiter's lock once, not once each.
  void submit(std::span<std::shared_ptr<Call>> calls);
  void set_max_in_flight(uint32_t n);
  uint32_t max_in_flight() const;
  // 0 = unlimited.
  void set_rates(uint64_t requests_per_minute, uint64_t tokens_per_minute);
  uint64_t requests_per_minute() const;
  uint64_t tokens_per_minute() const;
  // Nothing starts for ms milliseconds from now (a server's Retry-After);
  // an earlier end never shortens a pause already set.
  void pause(int64_t ms);
  Stats stats() const;
  // The provider is going away: wait for start() calls in progress, start
  // nothing more, fail the waiting calls and cancel the started ones (their
  // cancel hooks stop the provider's work) with `why`.
  void detach(const Error& why);

 private:
  friend class Call;
  void release(Call& call, bool completed);
  void pump();
  struct Starting;
  // With mu_ held: a slot for `call`, which starts now, counted.
  Starting take_slot(std::shared_ptr<Call> call, uint64_t tokens);
  // Starts the calls `taken` (moved into `going`) outside the lock, which
  // is held again when it returns; frees the slots of those that finished
  // before they could start.
  template <class Taken, class Going>
  void start_taken(Taken& taken, Going& going, std::unique_lock<std::mutex>& lock);
  // With mu_ held: refills the buckets to now; returns 0 when `call` may
  // start now, else the time to try again.
  int64_t rate_wait_until(const Call& call);
  void wake_at(int64_t at);  // with mu_ held
  struct Waiting {
    double priority;
    uint64_t seq;
    std::shared_ptr<Call> call;
    struct Before {  // higher priority first, then submission order
      bool operator()(const Waiting& a, const Waiting& b) const {
        return a.priority != b.priority ? a.priority > b.priority : a.seq < b.seq;
      }
    };
  };
  // The free slots: a bit each (set = free), and a bit per word of them
  // (set = that word has a free slot). take() finds the lowest free slot
  // in a few word scans with 100 000 calls in flight, where a min-heap
  // paid a full-depth sift per start (lowest first keeps profile tracks
  // compact).
  class FreeSlots {
   public:
    bool empty() const noexcept { return free_ == 0; }
    void put(int slot);
    int take();  // the lowest; !empty()

   private:
    std::vector<uint64_t> words_, summary_;
    size_t first_ = 0;  // no summary word below it is non-zero
    size_t free_ = 0;
  };
  mutable std::mutex mu_;
  std::condition_variable idle_;
  Provider* provider_;
  uint32_t max_;
  uint32_t in_flight_ = 0;
  uint32_t starting_ = 0;
  bool pumping_ = false;
  uint64_t seq_ = 0;
  FreeSlots free_slots_;
  int next_slot_ = 0;
  std::vector<std::weak_ptr<Call>> started_;  // by slot: the calls in flight
  // A call that starts (a slot taken for it). The calls one round of pump()
  // starts outside the lock: touched only by the pumping thread
  // (pumping_), kept for their capacity.
  struct Starting {
    std::shared_ptr<Call> call;
    int slot;
    uint64_t tokens;
  };
  std::vector<Starting> round_;
  std::vector<std::shared_ptr<Call>> going_;  // the round's calls that start
  OrderedQueue<Waiting, Waiting::Before> waiting_;
  Stats stats_;
  // Rates: token buckets (level may go below 0 when a request costs more
  // than the bucket holds or its usage exceeded the estimate).
  uint64_t rpm_ = 0, tpm_ = 0;
  double requests_level_ = 0, tokens_level_ = 0;
  int64_t refilled_ns_ = 0;
  int64_t paused_until_ns_ = 0;
  int64_t wake_ns_ = 0;  // a pump is scheduled then (0 = none)
};

class Provider {
 public:
  Provider(std::string name, uint32_t max_in_flight);
  virtual ~Provider();
  Provider(const Provider&) = delete;
  Provider& operator=(const Provider&) = delete;

  // Queues the call (any thread). The call finishes through its done hook.
  void submit(std::shared_ptr<Call> call) { limiter_->submit(std::move(call)); }
  void submit(std::span<std::shared_ptr<Call>> calls) { limiter_->submit(calls); }
  const std::string& name() const noexcept { return name_; }
  Limiter& limiter() noexcept { return *limiter_; }
  // How many times a schema call re-asks this provider after a reply that
  // fails validation (the invalid reply and the error go back to the model
  // as a correction turn). 0 = off.
  uint32_t schema_retries() const noexcept {
    return schema_retries_.load(std::memory_order_relaxed);
  }
  void set_schema_retries(uint32_t n) noexcept {
    schema_retries_.store(n, std::memory_order_relaxed);
  }
  // The options every provider takes: "max_in_flight", "requests_per_minute",
  // "tokens_per_minute", "schema_retries". Keys absent keep their value;
  // unknown keys are INVALID_ARGUMENT (af_provider_set_options).
  void configure(const Value& options);

 protected:
  friend class Limiter;
  // Starts the call; must not throw (fail the call instead) and must not
  // block for long. Called without locks held, possibly from many threads.
  virtual void start(std::shared_ptr<Call> call) noexcept = 0;
  // Starts a round of calls the limiter lets go together (moved from, in
  // order); each one, unless a provider does it for less at once (echo
  // queues a round's replies under one lock).
  virtual void start_all(std::span<std::shared_ptr<Call>> calls) noexcept {
    for (auto& call : calls) start(std::move(call));
  }
  // Derived destructors call this first, before their members go away.
  void shutdown();

 private:
  std::string name_;
  std::shared_ptr<Limiter> limiter_;
  std::atomic<uint32_t> schema_retries_{0};
  bool shut_ = false;
};

class Options;
// The options every provider takes (Provider::configure), read along with a
// provider's own options; applied once the provider exists.
struct CommonOptions {
  uint32_t max_in_flight = 0;
  uint64_t requests_per_minute = 0, tokens_per_minute = 0;
  uint32_t schema_retries = 0;
  void apply(Provider& p) const;
};
CommonOptions read_common_options(Options& o, const CommonOptions& defaults);
// The options af_provider_set_options takes (the common ones), with the
// provider's current settings as defaults.
CommonOptions read_provider_set_options(const Value& options, const CommonOptions& current,
                                        std::string what = "af_provider_set_options");

using ProviderPtr = std::shared_ptr<Provider>;

}  // namespace af::lm
