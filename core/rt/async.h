// AsyncOp: one asynchronous equation evaluation in flight (an LM call, an
// async host function). The primitive's impl_async starts the work and
// returns; whoever finishes the work (a provider thread, a host thread, the
// executor itself) calls succeed() or fail() exactly once — later calls are
// ignored, so a cancelled op may still be completed harmlessly.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "value/error.h"
#include "value/value.h"

namespace af {

struct Eqn;
struct Prim;
struct RunEnv;

// One provider request made on behalf of an op, for profiles and run
// summaries. Times are steady-clock nanoseconds (exec/profile.h: now_ns()).
struct CallSpan {
  std::string provider;  // the provider's name: one profile track group
  int slot = -1;         // the provider slot it ran in: one track
  int64_t queued_ns = 0;
  int64_t started_ns = 0;
  int64_t finished_ns = 0;
  std::string model;
  int32_t code = 0;      // 0 = success, else an af::Code
  uint32_t attempts = 1;  // 0: answered from the run's journal, no request made
  // The provider's usage of a successful request (0 when unknown or failed).
  uint64_t prompt_tokens = 0;
  uint64_t completion_tokens = 0;
  // Filled in by each run the span passes through on its way to the run
  // that records it (ir/ir.h Tags and NamePath): the union of the tags and
  // the joined name path of the equations, outermost first.
  std::shared_ptr<const std::vector<std::string>> tags, name_path;
};

// A marker a host function adds to the profile of the run calling it
// (af_profile_event): its name, a JSON object of args ("" = none) and when.
struct HostEvent {
  std::string name;
  std::string args_json;
  int64_t at_ns = 0;
  int thread = 0;  // the engine thread index of the caller (exec/profile.h)
};

class AsyncOp;

// The op of the host_call a host function serves, on the thread running the
// function (its body, or an async function's submit), so the function can
// add events to the run's profile (af_profile_event). Null elsewhere.
class HostCallScope {
 public:
  explicit HostCallScope(AsyncOp* op) noexcept;
  ~HostCallScope();
  HostCallScope(const HostCallScope&) = delete;
  HostCallScope& operator=(const HostCallScope&) = delete;
  static AsyncOp* current() noexcept;

 private:
  AsyncOp* prev_;
};

class AsyncOp {
 public:
  virtual ~AsyncOp() = default;

  // Finishes the op with its flat output leaves (sized as the equation's
  // outputs) or an error. The first finish wins; returns false if the op was
  // already finished (or cancelled). Any thread; never throws.
  bool succeed(std::vector<Value> out) noexcept;
  bool fail(const Error& err) noexcept;
  bool finished() const noexcept { return done_.load(std::memory_order_acquire); }

  // Cancellation. The work registers a hook that stops it (remove a request
  // from a queue, abort a transfer); cancel() finishes the op with `why` and
  // runs the hook once. A hook registered after cancel() runs at once.
  void on_cancel(std::function<void()> hook);
  void cancel(const Error& why) noexcept;
  bool cancel_requested() const noexcept { return cancel_requested_.load(std::memory_order_acquire); }

  // Set by the executor before impl_async: the equation's priority (higher
  // runs first when a provider's limit makes requests wait).
  double priority = 0;

  // Profiles: the work reports each provider request it made.
  virtual bool profiling() const noexcept { return false; }
  virtual void record_span(const CallSpan&) noexcept {}
  // A host function's marker (HostCallScope below), for the run's profile.
  virtual void record_event(const HostEvent&) noexcept {}

  // Streaming (RunOptions::stream): whether the LM equation e, run by this
  // op or inside its sub-runs, streams its reply; and where the pieces of
  // batch item `item` go (data == nullptr: forget what that item streamed
  // so far, a retry starts it over).
  virtual bool streams(const Eqn&) const noexcept { return false; }
  // Whether the run streams at all (a stream callback is set).
  virtual bool streaming() const noexcept { return false; }
  virtual void stream(uint64_t /*item*/, const char* /*data*/, size_t /*len*/) noexcept {}

 protected:
  // Called exactly once: out != nullptr on success, else err != nullptr.
  virtual void on_finish(std::vector<Value>* out, const Error* err) noexcept = 0;

 private:
  bool claim() noexcept { return !done_.exchange(true, std::memory_order_acq_rel); }
  std::atomic<bool> done_{false};
  std::atomic<bool> cancel_requested_{false};
  std::mutex mu_;
  std::function<void()> cancel_hook_;
};

// A copy of e with its own message buffer, for handing an error to another
// thread. std::runtime_error copies share one refcounted buffer whose count
// lives in libstdc++.so, so the last owner's delete races (for
// ThreadSanitizer) with a reader on another thread.
inline Error detached(const Error& e) { return Error(e.code(), std::string(e.what()), e.cause_ptr(), e.payload()); }

// Runs e's impl_async and blocks the calling thread until it finishes,
// writing the outputs into `out` (or throwing its error). The sync `impl`
// of an async-only primitive is this (interpreter, walker, trace-time use).
void run_async_blocking(const Eqn& e, std::span<const Value> in, std::span<Value> out,
                        RunEnv& env);

}  // namespace af
