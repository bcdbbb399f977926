// The dataflow executor. Every run of a context goes through its one
// Scheduler: an equation starts the moment its inputs exist (no level
// barriers); ready work is taken highest priority first; cheap primitives
// run inline on the thread that made them ready; async primitives (LM
// calls, async host functions) are submitted and finish later from any
// thread without holding one. Provider limits are shared by every run.
//
// Two ways to drive a run:
//   run_sync  — the calling thread runs the program's synchronous
//               equations itself and sleeps while only async work is in
//               flight (af_program_call, af_ir_call);
//   run_async — the scheduler's workers (at most 4) run it; the Future
//               waits, polls, cancels, or calls back when done.
// Errors cancel the run's outstanding work (in-flight requests included)
// unless keep_going, which completes everything that does not depend on a
// failure and returns each failed output leaf as an error value:
//   {"error": {"code": 6, "name": "PROVIDER", "message": "..."}}
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <queue>
#include <string>
#include <thread>
#include <vector>

#include "rt/async.h"
#include "rt/context.h"
#include "rt/env.h"
#include "rt/scopes.h"
#include "exec/program.h"
#include "value/error_value.h"
#include "value/error.h"

namespace af {

namespace lm {
class TimerQueue;
}

class Run;
class RunSummary;

// Cancels the runs started with it (RunOptions::cancel), from any thread:
// the way to stop a run driven by run_sync, which has no Future. Once
// cancelled it stays cancelled; a run started with it later ends at once.
class CancelToken final : public CancelFlag {
 public:
  void cancel() noexcept;
  bool cancelled() const noexcept override;
  // Registers r, or finishes it with CANCELLED if the token already fired.
  void attach(const std::shared_ptr<Run>& r);

 private:
  mutable std::mutex mu_;
  // Guarded by mu_.
  bool cancelled_ = false;
  std::vector<std::weak_ptr<Run>> runs_;
  size_t prune_at_ = 16;
};

struct RunOptions {
  int64_t timeout_ms = 0;  // 0 = none; TIMEOUT when exceeded
  std::shared_ptr<CancelToken> cancel;  // null = none
  bool keep_going = false;
  // Per-item errors in batched programs: an item of a `map` that fails (any
  // code but CANCELLED / TIMEOUT) becomes error_value(e) in each of that
  // item's outputs, later maps pass it through without running the item,
  // and the other items complete.
  bool item_errors = false;
  // The largest value one equation may build (RunEnv::max_value_bytes);
  // 0 = the caller's environment's (1 GiB unless a run set another).
  uint64_t max_value_bytes = 0;
  // Called after each equation finishes (never concurrently for one run),
  // from whichever engine or provider thread finished it.
  std::function<void(uint64_t done, uint64_t total)> progress;
  // When set, the run's profile is written there (Chrome trace JSON) before
  // the run reports completion.
  std::string profile_path;
  bool profile = false;  // record a profile even without a path
  // When set, the run keeps its LM calls' replies in this journal and
  // answers from it those an earlier run of the same program on the same
  // inputs recorded (rt/journal.h); top-level runs only.
  std::string journal_path;
  // The result is the list of flat output leaves rather than the output tree
  // (runs of sub-IRs started by control flow, whose leaves may be lists).
  bool flat_output = false;
  // When set, every provider request the run's equations make is reported
  // here too (a sub-run hands its LM calls to the profile of the run that
  // started it).
  std::function<void(const CallSpan&)> on_span;
  // Likewise for the events host functions add (af_profile_event).
  std::function<void(const HostEvent&)> on_event;
  // When set, every provider request the run's equations make (sub-runs'
  // included) is added to it, and its clock stops when the run finishes.
  std::shared_ptr<RunSummary> summary;
  // keep_going only: called with the index of each failed flat output leaf
  // and its error (cause chain intact) before the run reports completion.
  std::function<void(size_t leaf, const std::shared_ptr<const Error>&)> on_output_error;
  // keep_going only: called with the IR index of each equation that failed
  // itself (not through a failed input) and its error, the very object its
  // dependents' outputs then carry; from engine threads, possibly at once
  // for different equations, before the run reports completion.
  std::function<void(uint32_t eqn, const std::shared_ptr<const Error>&)> on_eqn_error;
  // Streaming: pieces of LM replies as they arrive, with the index of the
  // equation in the program's IR (for a call inside control flow, of the
  // equation holding it), its batch item (a map item for calls inside a
  // map), and the text; data == nullptr: forget what that equation and item
  // streamed so far (a retry, re-ask or fallback starts over). Only LM
  // equations carrying stream_tag — or inside an equation carrying it —
  // stream (every one when empty). Never called concurrently for one run,
  // nor once the run has finished (finishing waits for a call in progress).
  std::function<void(uint32_t eqn, uint64_t item, const char* data, size_t len)> stream;
  std::string stream_tag;
  // Sub-runs: their LM calls stream through this op of the run that started
  // them, as batch item stream_item when >= 0.
  std::weak_ptr<AsyncOp> stream_parent;
  int64_t stream_item = -1;
};

class Future {
 public:
  Future() = default;
  explicit Future(std::shared_ptr<Run> r) : run_(std::move(r)) {}
  bool valid() const noexcept { return run_ != nullptr; }
  bool ready() const noexcept;
  // Blocks until the run finishes; returns its output tree or throws its
  // error (CANCELLED after cancel(), TIMEOUT after the deadline).
  Value wait() const;
  // Finishes the run with CANCELLED and cancels its in-flight work. No-op
  // once it finished.
  void cancel() const noexcept;
  // fn runs once when the run finishes (at once, here, if it already has).
  void on_done(std::function<void()> fn) const;
  // The profile JSON ("" unless the run was profiled).
  std::string profile_json() const;

 private:
  std::shared_ptr<Run> run_;
};

class Scheduler : public std::enable_shared_from_this<Scheduler> {
 public:
  Scheduler();
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Cancels every active run, stops and joins the workers. Idempotent.
  void shutdown() noexcept;
  size_t worker_count() const;
  size_t max_workers() const noexcept { return max_workers_; }

  struct Task {
    double priority;
    uint64_t seq;
    std::shared_ptr<Run> run;
    uint32_t node;
    bool operator<(const Task& o) const {
      return priority != o.priority ? priority < o.priority : seq > o.seq;
    }
  };

  // Used by runs (exec/executor.cpp).
  void push(Task t);
  void add_run(Run* r);
  void remove_run(Run* r);
  lm::TimerQueue& timer();
  void cancel_timer(uint64_t id);

 private:
  void worker(int index);

  // The task queue and its workers: guarded by mu_ (cv_: a task or stop_).
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::priority_queue<Task> queue_;
  uint64_t seq_ = 0;
  std::vector<std::thread> workers_;
  size_t idle_ = 0;
  bool stop_ = false;
  size_t max_workers_;  // set by the constructor, read-only after
  // The active runs (linked through Run::links), for shutdown to cancel:
  // guarded by runs_mu_ (its own lock: see add_run).
  std::mutex runs_mu_;
  Run* runs_ = nullptr;
  bool runs_closed_ = false;
  // Made by the first timer() (timer_once_); cancel_timer uses it and
  // shutdown takes it under mu_.
  std::once_flag timer_once_;
  std::unique_ptr<lm::TimerQueue> timer_;
};

// Runs prog on flat input leaves (already checked with check_inputs).
Future run_async(RunEnv env, std::shared_ptr<const Program> prog, std::vector<Value> leaves,
                 RunOptions options = {});
Value run_sync(RunEnv env, std::shared_ptr<const Program> prog, std::vector<Value> leaves,
               RunOptions options = {});
// A sub-run of control flow (ExecContext::run_sub) on the scheduler: `done`
// gets its flat output leaves, or its error, once, from whichever thread
// finishes it (also when it cannot start: then here, and nullptr is
// returned). The handle cancels it.
std::shared_ptr<SubRun> run_sub_async(RunEnv env, std::shared_ptr<const Program> prog, std::vector<Value> leaves,
                                      RunOptions options, SubRunDone done);

}  // namespace af
