// A run of the dataflow executor (exec/executor.cpp): its state in parts,
// each named after who touches it and with what guards it.
//
//   fixed      what the run is: built before it starts, const after; no lock
//   flow       slots and dependency counts; no lock: each slot is written
//              once, before the acquire/release of its consumers' counts
//   finished, timer_id   atomics; done: only the finish() that set finished
//   outcome    what waiters read (Future, run_sync): guarded by mu
//   work       ops in flight, a caller-driven run's ready queue: guarded by mu
//   links      the scheduler's list of active runs: Scheduler::runs_mu_
//   callbacks  the user's progress and stream: each its own lock, held while
//              it is called (RunCallback)
//
// No lock is recursive. mu is innermost: nothing else is taken under it.
// A callback's lock is held while the callback runs, so a callback that
// ends the run holds it while finish() takes the others.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <queue>
#include <vector>

#include "exec/executor.h"
#include "exec/profile.h"
#include "exec/program.h"
#include "rt/async.h"
#include "rt/context.h"
#include "rt/env.h"
#include "value/error.h"
#include "value/value.h"

namespace af {

// The RunCallback calls running on this thread, innermost first (one frame
// per call, on the caller's stack).
struct CallingFrame {
  const void* callback;
  const CallingFrame* up;
};
inline thread_local const CallingFrame* t_calling = nullptr;

inline bool calling_here(const void* callback) noexcept {
  for (const CallingFrame* f = t_calling; f; f = f->up)
    if (f->callback == callback) return true;
  return false;
}

// A user callback a run calls and lets go of (RunOptions::progress,
// RunOptions::stream). It is called under its lock, so never concurrently,
// and released by finish() before the run reports completion: a binding's
// callable or a C caller's user_data may go once the caller has the result
// (af.h: progress_destroy, stream_destroy). Taking the lock to release it
// also waits for a call in progress on another thread.
//
// A call may end the run itself (it cancels the run: finish() on the same
// thread, under the call). finish() must then neither take the lock its
// caller holds nor destroy the callable being called: it finds the call in
// this thread's frames and leaves the release to the call, which releases
// as it returns. A call that reaches its own callback again on the same
// thread (it completes one of the run's equations by hand) likewise goes
// in without taking the lock again. So the lock is a plain mutex: the
// frames, not a recursive lock, tell a re-entry from another thread.
template <class Fn>
class RunCallback {
 public:
  explicit RunCallback(Fn&& fn) : fn_(std::move(fn)), present_(bool(fn_)) {}
  RunCallback(const RunCallback&) = delete;
  RunCallback& operator=(const RunCallback&) = delete;

  // Whether the run was given one: fixed when it was made, read unlocked.
  bool present() const noexcept { return present_; }

  // Calls f(fn) under the lock unless fn was released; when the run has
  // finished by the time f returns (f ended it), releases fn on the way out
  // (outside the lock), as finish() left it to this call. Of nested calls,
  // only the outermost releases: the others return into a call of fn.
  template <class F>
  void call(const std::atomic<bool>& finished, F&& f) noexcept {
    const bool nested = calling_here(this);
    Fn ended;  // destroyed after the lock is released
    std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
    if (!nested) lock.lock();
    if (!fn_) return;
    const CallingFrame frame{this, t_calling};
    t_calling = &frame;
    try {
      f(fn_);
    } catch (...) {
    }
    t_calling = frame.up;
    if (!nested && finished.load(std::memory_order_acquire)) ended.swap(fn_);
  }

  // finish(): lets fn go, unless a call on this thread is under way (then
  // that call releases it as it returns). A run given none has nothing to
  // release and no call to wait for: no lock then.
  void release() noexcept {
    if (!present_ || calling_here(this)) return;
    Fn fn;  // destroyed after the lock is released
    std::lock_guard<std::mutex> lock(mu_);
    fn.swap(fn_);
  }

 private:
  std::mutex mu_;
  Fn fn_;  // guarded by mu_; empty once released
  const bool present_;
};

// A run; a sub-run's handle too (run_sub_async): cancelling it finishes it.
class Run : public SubRun, public std::enable_shared_from_this<Run> {
 public:
  using Progress = std::function<void(uint64_t done, uint64_t total)>;
  using Stream = std::function<void(uint32_t eqn, uint64_t item, const char* data, size_t len)>;

  // What the run is. Built by make_run as the run is constructed, before
  // it starts; const after, so read from any thread without a lock.
  struct Fixed {
    std::shared_ptr<const Program> prog;
    std::shared_ptr<Scheduler> sched;
    // The environment its equations run in; env.stop is `finished`.
    RunEnv env;
    // The caller's options, less progress and stream (in `callbacks`).
    RunOptions opts;
    // Started inside cancel scopes with no token of its own: theirs, each of
    // which cancels it (attached by begin).
    std::vector<std::shared_ptr<CancelToken>> scope_cancels;
    // run_sync: the calling thread drains work.local; else the scheduler's
    // workers run it.
    bool caller_driven = false;
    // Inject order: per node, the next node that hits a key an inject scope
    // queues values for (kNone: none); empty when nothing is injected.
    std::vector<uint32_t> after;
    // Set when the run is profiled; the Profile guards itself.
    std::unique_ptr<Profile> profile;
  };

  // The values and what is left to produce. No lock: each slot (and its
  // slot_err) is written once, by make_run or the equation producing it,
  // before that equation's completion releases its consumers' counts
  // (acq_rel on pending); a consumer reads its inputs only after its count
  // reached zero. The slot a read is the last use of is moved from by that
  // one reader.
  struct Dataflow {
    std::vector<Value> slots;
    // Per node: releases (inputs, inject predecessor) still to come.
    std::unique_ptr<std::atomic<uint32_t>[]> pending;
    // Nodes not yet completed: whoever takes it to zero publishes the result.
    std::atomic<uint32_t> remaining{0};
    // keep_going only: per slot, the error it carries instead of a value.
    std::unique_ptr<std::shared_ptr<const Error>[]> slot_err;
  };

  // What waiters touch (Future::wait / ready / on_done, run_sync): guarded
  // by mu. Published once by finish() (ready); result and error do not
  // change after, so the finishing thread reads them unlocked then.
  struct Outcome {
    bool ready = false;
    Value result;
    std::optional<Error> error;
    std::vector<std::function<void()>> on_done;  // called once by finish()
  };

  // What the scheduling touches: guarded by mu. finish() takes the ops in
  // flight to cancel them and empties the queue; nothing is added once the
  // run is ready (or finished).
  struct Work {
    std::vector<std::shared_ptr<AsyncOp>> inflight;
    struct LocalTask {
      double priority;
      uint64_t seq;
      uint32_t node;
      bool operator<(const LocalTask& o) const {
        return priority != o.priority ? priority < o.priority : seq > o.seq;
      }
    };
    // Caller-driven runs: the ready nodes the calling thread runs.
    std::priority_queue<LocalTask> local;
    uint64_t local_seq = 0;
  };

  // The scheduler's list of active runs, which shutdown cancels: guarded by
  // Scheduler::runs_mu_; linked by begin(), unlinked by finish() or ~Run.
  struct Links {
    Run* prev = nullptr;
    Run* next = nullptr;
    bool listed = false;
  };

  // The user's callbacks, each under its own lock (RunCallback).
  struct Callbacks {
    Callbacks(Progress&& p, Stream&& s) : progress(std::move(p)), stream(std::move(s)) {}
    RunCallback<Progress> progress;
    uint64_t progress_done = 0;  // touched only inside progress.call (its lock)
    RunCallback<Stream> stream;
  };

  // fix(stop) returns the fixed part, built in place (a run is made per
  // sub-run: a move of it would move the environment and the options);
  // stop, for its env.stop, is `finished`.
  template <class Fix>
  Run(Fix&& fix, Progress&& progress, Stream&& stream)
      : fixed(fix(&finished)), callbacks(std::move(progress), std::move(stream)) {}
  // A run that ends without finishing (nothing will ever complete it) still
  // leaves the scheduler's list. `listed` is read unlocked: only this run's
  // own add_run / remove_run write it, and they happen before its last
  // reference goes.
  ~Run() override {
    if (links.listed) fixed.sched->remove_run(this);
  }
  void cancel() noexcept override;

  const Fixed fixed;
  Dataflow flow;

  // The end. Atomics, no lock: `finished` is set once, by the finish() that
  // wins it (compare-exchange), and is the run's stop flag (env.stop);
  // timer_id is written after the timer is scheduled and read by finish()
  // on any thread (possibly the timer's own, before the write is visible).
  std::atomic<bool> finished{false};
  std::atomic<uint64_t> timer_id{0};
  // A sub-run's completion (run_sub_async): set before begin(), then taken
  // and called only by the finish() that set `finished`.
  SubRunDone done;

  std::mutex mu;
  std::condition_variable cv;  // a change of outcome.ready or work.local
  Outcome outcome;             // guarded by mu
  Work work;                   // guarded by mu

  Links links;  // guarded by Scheduler::runs_mu_

  Callbacks callbacks;
};

}  // namespace af
