#include "exec/executor.h"

#include <algorithm>
#include <cstdio>
#include <optional>

#include "rt/async.h"
#include "exec/context.h"
#include "exec/profile.h"
#include "exec/summary.h"
#include "rt/journal.h"
#include "rt/scopes.h"
#include "ir/prim.h"
#include "lm/timer.h"
#include "value/error.h"
#include "value/file.h"
#include "value/hash.h"

namespace af {

constexpr uint32_t kNone = UINT32_MAX;

// A run; a sub-run's handle too (run_sub_async): cancelling it finishes it.
class Run : public SubRun, public std::enable_shared_from_this<Run> {
 public:
  // A run that ends without finishing (nothing will ever complete it) still
  // leaves the scheduler's list of runs.
  ~Run() override {
    if (listed) sched->remove_run(this);
  }
  void cancel() noexcept override;
  std::shared_ptr<const Program> prog;
  std::shared_ptr<Scheduler> sched;
  // The scheduler's list of active runs (Scheduler::runs_mu_), for shutdown
  // to cancel: linked in by begin(), out by finish().
  Run* prev_run = nullptr;
  Run* next_run = nullptr;
  bool listed = false;
  RunEnv env;
  RunOptions opts;
  // Started inside cancel scopes with no token of its own: theirs, each of
  // which cancels it (set by make_run, attached by begin).
  std::vector<std::shared_ptr<CancelToken>> scope_cancels;
  bool caller_driven = false;
  std::vector<Value> slots;
  std::unique_ptr<std::atomic<uint32_t>[]> pending;
  std::atomic<uint32_t> remaining{0};
  std::atomic<bool> finished{false};
  std::unique_ptr<std::shared_ptr<const Error>[]> slot_err;  // keep_going only
  // Inject order: per node, the next node that hits a key an inject scope
  // queues values for (kNone: none); empty when nothing is injected.
  std::vector<uint32_t> after;
  std::unique_ptr<Profile> profile;
  // Written after the timer is scheduled, read by finish() on any thread
  // (possibly the timer's own, before the write is visible): atomic.
  std::atomic<uint64_t> timer_id{0};

  std::mutex mu;
  std::condition_variable cv;
  bool ready = false;  // result published
  Value result;
  std::optional<Error> error;
  std::vector<std::function<void()>> callbacks;
  // A sub-run's completion (run_sub_async): its flat output leaves or its
  // error, called once by finish() after the result is published.
  SubRunDone done;
  std::vector<std::shared_ptr<AsyncOp>> inflight;
  struct LocalTask {
    double priority;
    uint64_t seq;
    uint32_t node;
    bool operator<(const LocalTask& o) const {
      return priority != o.priority ? priority < o.priority : seq > o.seq;
    }
  };
  std::priority_queue<LocalTask> local;  // caller-driven runs
  uint64_t local_seq = 0;
  // The user's callbacks (opts.progress, opts.stream) are released when the
  // run finishes, before it reports completion (release_callbacks), so they
  // are called and reset only under these locks; the unlocked "is there
  // one" checks read has_progress / has_stream, fixed at make_run. Each
  // lock is held while its callback runs; finish() takes both, so no
  // callback runs after the run finished. Recursive: a callback may end the
  // run (cancel) on its own thread; in_progress / in_stream then tell
  // finish() to leave the release to the callback's caller.
  bool has_progress = false, has_stream = false;
  std::recursive_mutex progress_mu;
  bool in_progress = false;
  uint64_t progress_done = 0;
  std::recursive_mutex stream_mu;
  bool in_stream = false;
};

namespace {

// ---- per-thread scratch for gathering inputs (depth-indexed: an impl may
// run a nested program on the same thread).
struct Scratch {
  std::vector<Value> in, out;
};
thread_local std::vector<std::unique_ptr<Scratch>> t_scratch;
thread_local size_t t_depth = 0;

struct ScratchLease {
  Scratch* s;
  ScratchLease() {
    if (t_scratch.size() <= t_depth) t_scratch.push_back(std::make_unique<Scratch>());
    s = t_scratch[t_depth++].get();
  }
  ~ScratchLease() {
    s->in.clear();
    s->out.clear();
    --t_depth;
  }
};

void finish(const std::shared_ptr<Run>& r, Value* result, const Error* err) noexcept;
uint32_t complete(const std::shared_ptr<Run>& r, uint32_t node, bool can_continue);
void execute(const std::shared_ptr<Run>& r, uint32_t node);

void schedule(const std::shared_ptr<Run>& r, uint32_t node) {
  double prio = r->prog->nodes[node].priority;
  if (r->caller_driven) {
    {
      std::lock_guard<std::mutex> lock(r->mu);
      if (r->ready) return;
      r->local.push(Run::LocalTask{prio, r->local_seq++, node});
    }
    r->cv.notify_one();
    return;
  }
  r->sched->push(Scheduler::Task{prio, 0, r, node});
}

// Gathers a node's inputs: a slot's only read takes the value (see
// Program::last_use), other reads share it.
void gather(Run& r, const Program::Node& n, std::vector<Value>& in) {
  const Program& p = *r.prog;
  in.resize(n.in_count);
  const bool moves = !p.last_use.empty();
  for (uint32_t k = 0; k < n.in_count; ++k) {
    const uint32_t i = n.in_begin + k;
    if (moves && p.last_use[i]) in[k] = std::move(r.slots[p.args[i]]);
    else in[k] = r.slots[p.args[i]];
  }
}

bool input_error(const Run& r, const Program::Node& n, std::shared_ptr<const Error>& err) {
  if (!r.slot_err) return false;
  for (uint32_t k = 0; k < n.in_count; ++k)
    if (const auto& e = r.slot_err[r.prog->args[n.in_begin + k]]) {
      err = e;
      return true;
    }
  return false;
}

void mark_outputs_failed(Run& r, const Program::Node& n, std::shared_ptr<const Error> err) {
  for (uint32_t k = 0; k < n.out_count; ++k) r.slot_err[r.prog->results[n.out_begin + k]] = err;
}

// A failed equation: the run fails (default) or, with keep_going, its
// outputs carry the error. Returns the continuation as complete() does.
// The error names the equation's name path, when it has one.
uint32_t fail_node(const std::shared_ptr<Run>& r, uint32_t node, const Error& cause,
                   bool can_continue) {
  // (Unnamed: the error itself, not a copy, whose message buffer another
  // thread may still share.)
  std::optional<Error> named;
  if (const NamePath& path = r->prog->nodes[node].eqn->name_path())
    named.emplace(named_error(path, cause));
  const Error& err = named ? *named : cause;
  if (r->profile) r->profile->finished(node, int32_t(err.code()));
  if (!r->opts.keep_going) {
    finish(r, nullptr, &err);
    return kNone;
  }
  auto shared = std::make_shared<const Error>(err);
  if (r->opts.on_eqn_error) r->opts.on_eqn_error(r->prog->nodes[node].eqn_index, shared);
  mark_outputs_failed(*r, r->prog->nodes[node], std::move(shared));
  return complete(r, node, can_continue);
}

class ExecOp final : public AsyncOp {
 public:
  ExecOp(std::shared_ptr<Run> r, uint32_t node) : run_(std::move(r)), node_(node) {}
  // Inputs kept to store the result in the open memoize scope (else empty).
  std::optional<std::vector<Value>> memo_in;
  bool profiling() const noexcept override {
    return run_->profile != nullptr || run_->opts.on_span || run_->opts.summary;
  }
  // The span gains this equation's tags and name path (in front of those of
  // the sub-run equations it came through).
  void record_span(const CallSpan& s) noexcept override {
    try {
      const Eqn& e = *run_->prog->nodes[node_].eqn;
      CallSpan span = s;
      span.tags = union_tags(e.tags(), s.tags);
      span.name_path = join_names(e.name_path(), s.name_path);
      if (run_->profile) run_->profile->span(node_, span);
      if (run_->opts.summary) run_->opts.summary->add(span);
      if (run_->opts.on_span) run_->opts.on_span(span);
    } catch (...) {
    }
  }
  void record_event(const HostEvent& ev) noexcept override {
    try {
      if (run_->profile) run_->profile->event(node_, ev);
      if (run_->opts.on_event) run_->opts.on_event(ev);
    } catch (...) {
    }
  }
  bool streams(const Eqn& e) const noexcept override {
    const RunOptions& o = run_->opts;
    if (auto parent = o.stream_parent.lock()) return parent->streams(e);
    if (!run_->has_stream) return false;
    auto tagged = [&o](const Eqn& x) {
      const Tags& t = x.tags();
      return t && std::find(t->begin(), t->end(), o.stream_tag) != t->end();
    };
    return o.stream_tag.empty() || tagged(e) || tagged(*run_->prog->nodes[node_].eqn);
  }
  bool streaming() const noexcept override {
    const RunOptions& o = run_->opts;
    if (auto parent = o.stream_parent.lock()) return parent->streaming();
    return run_->has_stream;
  }
  void stream(uint64_t item, const char* data, size_t len) noexcept override {
    Run& r = *run_;
    if (r.opts.stream_item >= 0) item = uint64_t(r.opts.stream_item);
    if (auto parent = r.opts.stream_parent.lock()) return parent->stream(item, data, len);
    if (!r.has_stream) return;
    std::function<void(uint32_t, uint64_t, const char*, size_t)> ended;  // released after the lock
    std::lock_guard<std::recursive_mutex> lock(r.stream_mu);
    if (r.finished.load(std::memory_order_acquire) || !r.opts.stream) return;
    r.in_stream = true;
    try {
      r.opts.stream(r.prog->nodes[node_].eqn_index, item, data, len);
    } catch (...) {
    }
    r.in_stream = false;
    // The callback ended the run: finish() left its release to us.
    if (r.finished.load(std::memory_order_acquire)) ended.swap(r.opts.stream);
  }

 protected:
  void on_finish(std::vector<Value>* out, const Error* err) noexcept override {
    const std::shared_ptr<Run>& r = run_;
    if (r->finished.load(std::memory_order_acquire)) return;
    try {
      const Program::Node& n = r->prog->nodes[node_];
      if (err) {
        fail_node(r, node_, *err, false);
        return;
      }
      if (out->size() != n.out_count) {
        fail_node(r, node_, Error(Code::Internal, n.eqn->prim->name + ": produced " + std::to_string(out->size()) +
                                                      " outputs, expected " + std::to_string(n.out_count)),
                  false);
        return;
      }
      if (memo_in) r->env.scopes->memo_store(*n.eqn, *memo_in, *out);
      for (uint32_t k = 0; k < n.out_count; ++k) r->slots[r->prog->results[n.out_begin + k]] = std::move((*out)[k]);
      if (r->profile) r->profile->finished(node_, 0);
      complete(r, node_, false);
    } catch (const Error& e) {
      finish(r, nullptr, &e);
    } catch (const std::exception& e) {
      Error ie = error_from(e);
      finish(r, nullptr, &ie);
    }
  }

 private:
  std::shared_ptr<Run> run_;
  uint32_t node_;
};

void start_async(const std::shared_ptr<Run>& r, uint32_t node) {
  const Program::Node& n = r->prog->nodes[node];
  auto op = std::make_shared<ExecOp>(r, node);
  op->priority = n.priority;
  {
    std::lock_guard<std::mutex> lock(r->mu);
    if (r->ready || r->finished.load()) return;
    r->inflight.push_back(op);
  }
  ScratchLease lease;
  std::vector<Value>& in = lease.s->in;
  gather(*r, n, in);
  if (r->profile) r->profile->started(node, engine_thread_index());
  if (r->env.scopes->memo_open() && memoizable(*n.eqn)) {
    std::vector<Value>& out = lease.s->out;
    out.assign(n.out_count, Value());
    if (r->env.scopes->memo_find(*n.eqn, in, out)) {
      op->succeed(std::move(out));  // a memo hit: done without a request
      return;
    }
    op->memo_in.emplace(in.begin(), in.end());
  }
  try {
    RunEnv env = r->env;
    env.eqn = n.eqn_index;
    n.eqn->prim->impl_async(*n.eqn, in, op, env);
  } catch (const Error& e) {
    op->fail(e);
  } catch (const std::exception& e) {
    op->fail(error_from(e));
  }
}

// Node finished: release its consumers. On an engine thread
// (can_continue), async consumers start at once and the best synchronous
// one is returned for the caller to run next; everything else is queued.
uint32_t complete(const std::shared_ptr<Run>& r, uint32_t node, bool can_continue) {
  const Program& p = *r->prog;
  const Program::Node& n = p.nodes[node];
  uint32_t best = kNone;
  auto release = [&](uint32_t c) {
    // The last release needs no read-modify-write: a count of 1 means no
    // other producer of c is left to race with (most nodes have one input
    // producer). The acquire load still sees what earlier producers wrote.
    std::atomic<uint32_t>& pending = r->pending[c];
    if (pending.load(std::memory_order_acquire) == 1)
      pending.store(0, std::memory_order_relaxed);
    else if (pending.fetch_sub(1, std::memory_order_acq_rel) != 1)
      return;
    if (r->profile) r->profile->queued(c);
    if (!can_continue) {
      schedule(r, c);
    } else if (p.nodes[c].async && !r->slot_err) {
      start_async(r, c);
    } else if (best == kNone) {
      best = c;
    } else if (p.nodes[c].priority > p.nodes[best].priority) {
      schedule(r, best);
      best = c;
    } else {
      schedule(r, c);
    }
  };
  for (uint32_t k = 0; k < n.cons_count; ++k) release(p.consumers[n.cons_begin + k]);
  if (!r->after.empty() && r->after[node] != kNone) release(r->after[node]);
  if (r->has_progress) {
    std::function<void(uint64_t, uint64_t)> ended;  // released after the lock
    std::lock_guard<std::recursive_mutex> lock(r->progress_mu);
    if (r->opts.progress) {
      r->in_progress = true;
      try {
        r->opts.progress(++r->progress_done, p.nodes.size());
      } catch (...) {
      }
      r->in_progress = false;
      // The callback ended the run: finish() left its release to us.
      if (r->finished.load(std::memory_order_acquire)) ended.swap(r->opts.progress);
    }
  }
  if (r->remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    std::vector<Value> outs;
    outs.reserve(p.out_slots.size());
    for (size_t k = 0; k < p.out_slots.size(); ++k) {
      const uint32_t s = p.out_slots[k];
      if (r->slot_err && r->slot_err[s]) {
        if (r->opts.on_output_error) r->opts.on_output_error(k, r->slot_err[s]);
        outs.push_back(error_value(*r->slot_err[s]));
      } else {
        outs.push_back(r->slots[s]);
      }
    }
    Value v = r->opts.flat_output ? Value::list(std::move(outs)) : p.ir->out_tree.unflatten(outs);
    finish(r, &v, nullptr);
  }
  return best;
}

void execute(const std::shared_ptr<Run>& r, uint32_t node) {
  ScratchLease lease;
  std::vector<Value>& in = lease.s->in;
  std::vector<Value>& out = lease.s->out;
  const Program& p = *r->prog;
  // One copy of the run's environment for the nodes this thread runs in a
  // row (as the sequential interpreter keeps one): a copy per node wrote
  // two shared counts. No impl changes the environment it is given (those
  // that run sub-IRs change their own copy, or restore what they set).
  RunEnv env = r->env;
  while (node != kNone) {
    if (r->finished.load(std::memory_order_acquire)) return;
    const Program::Node& n = p.nodes[node];
    std::shared_ptr<const Error> upstream;
    if (input_error(*r, n, upstream)) {
      mark_outputs_failed(*r, n, upstream);
      node = complete(r, node, true);
      continue;
    }
    if (n.async) {
      start_async(r, node);
      return;
    }
    gather(*r, n, in);
    out.assign(n.out_count, Value());
    if (r->profile) r->profile->started(node, engine_thread_index());
    try {
      env.eqn = n.eqn_index;
      env.owned_in = {};
      if (env.scopes->memo_open()) {
        invoke(*n.eqn, in, out, env);  // through memoize scopes (rt/scopes.h)
      } else {
        env.owned_in = in;  // the impl may consume the inputs the run owns
        run_eqn(*n.eqn, in, out, env);
      }
    } catch (const Error& e) {
      node = fail_node(r, node, e, true);
      continue;
    } catch (const std::exception& e) {
      node = fail_node(r, node, error_from(e), true);
      continue;
    }
    for (uint32_t k = 0; k < n.out_count; ++k) r->slots[p.results[n.out_begin + k]] = std::move(out[k]);
    if (r->profile) r->profile->finished(node, 0);
    node = complete(r, node, true);
  }
}

// The user's callbacks go when the run finishes, before it reports
// completion: a binding's callable or a C caller's user_data is released by
// the time the caller has the result (af.h: progress_destroy,
// stream_destroy). Taking each lock also waits for a callback running on
// another thread; one running on this thread (it ended the run) is
// released by its caller when it returns.
void release_callbacks(Run& r) noexcept {
  std::function<void(uint64_t, uint64_t)> progress;
  std::function<void(uint32_t, uint64_t, const char*, size_t)> stream;
  {
    std::lock_guard<std::recursive_mutex> lock(r.progress_mu);
    if (!r.in_progress) progress.swap(r.opts.progress);
  }
  {
    std::lock_guard<std::recursive_mutex> lock(r.stream_mu);
    if (!r.in_stream) stream.swap(r.opts.stream);
  }
}

// A finished sub-run reports to the equation that started it. Its result
// and error are fixed once published, so they are read without the lock.
void sub_run_done(Run& r) noexcept {
  SubRunDone done;
  done.swap(r.done);
  if (!done) return;
  try {
    if (r.error) {
      done(nullptr, &*r.error);
    } else {
      std::vector<Value> out = r.result.items();
      done(&out, nullptr);
    }
  } catch (const Error& e) {
    done(nullptr, &e);
  } catch (...) {
    Error oom(Code::OutOfMemory, "out of memory while finishing a sub-run");
    done(nullptr, &oom);
  }
}

void finish(const std::shared_ptr<Run>& r, Value* result, const Error* err) noexcept {
  bool expected = false;
  if (!r->finished.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) return;
  release_callbacks(*r);
  if (r->opts.summary) r->opts.summary->stop();
  try {
    if (uint64_t id = r->timer_id.load(std::memory_order_acquire)) r->sched->cancel_timer(id);
    std::vector<std::shared_ptr<AsyncOp>> ops;
    {
      std::lock_guard<std::mutex> lock(r->mu);
      ops.swap(r->inflight);
      r->local = {};
    }
    std::optional<Error> error;
    if (err) error.emplace(detached(*err));
    if (err) {
      Error why(Code::Cancelled, std::string("the run ended before this finished: ") + err->what());
      for (auto& op : ops) op->cancel(why);
    }
    ops.clear();
    // The run that opened the journal lets it go (sub-runs share it): by
    // now every reply the result holds is committed, and a caller may
    // resume on the file as soon as this run reports completion.
    if (!r->opts.journal_path.empty() && r->env.journal) r->env.journal->close();
    if (r->profile && !r->opts.profile_path.empty()) {
      try {
        r->profile->write(r->opts.profile_path, *r->prog);
      } catch (const Error& e) {
        if (!error) error.emplace(e);
      }
    }
    std::vector<std::function<void()>> cbs;
    {
      std::lock_guard<std::mutex> lock(r->mu);
      if (error) r->error = std::move(error);
      else if (result) r->result = std::move(*result);
      r->ready = true;
      cbs.swap(r->callbacks);
    }
    r->cv.notify_all();
    for (auto& cb : cbs) {
      try {
        cb();
      } catch (...) {
      }
    }
  } catch (...) {
    std::lock_guard<std::mutex> lock(r->mu);
    if (!r->ready) {
      r->error.emplace(Code::OutOfMemory, "out of memory while finishing a run");
      r->ready = true;
    }
    r->cv.notify_all();
  }
  sub_run_done(*r);
  r->sched->remove_run(r.get());
}

// While an inject scope queues values for a key, the equations that hit it
// run one after another in program order, each once the previous one has
// finished, so that the queued values reach the hits in program order
// (docs/SEMANTICS.md §4 inject). Chain edges follow program order, as
// dataflow edges do, so they never close a cycle.
void chain_injected(Run& r) {
  const InjectedKeys keys = r.env.scopes->injected();
  if (keys.empty()) return;
  const Program& p = *r.prog;
  uint32_t prev = kNone;
  for (uint32_t i = 0; i < p.nodes.size(); ++i) {
    if (!keys.hit_by(*p.nodes[i].eqn)) continue;
    if (prev != kNone) {
      if (r.after.empty()) r.after.assign(p.nodes.size(), kNone);
      r.after[prev] = i;
      r.pending[i].fetch_add(1, std::memory_order_relaxed);
    }
    prev = i;
  }
}

std::shared_ptr<Run> make_run(RunEnv env, std::shared_ptr<const Program> prog, std::vector<Value> leaves,
                              RunOptions opts, bool caller_driven) {
  if (!env.context) fail(Code::Internal, "run: no context");
  if (leaves.size() != prog->in_slots.size())
    fail(Code::Internal, "run: " + std::to_string(leaves.size()) + " input leaves for " +
                             std::to_string(prog->in_slots.size()) + " slots");
  if (opts.timeout_ms < 0) invalid("run options: timeout must be >= 0 ms");
  // Fail before running when the profile could not be written.
  if (!opts.profile_path.empty()) {
    make_parent_dirs(opts.profile_path, "profile");
    check_writable(opts.profile_path, "profile");
  }
  auto r = std::make_shared<Run>();
  r->prog = prog;
  r->sched = exec_context(env).scheduler();
  r->env = env;
  r->env.owned_in = {};  // the caller's inputs are not this run's
  r->env.stop = &r->finished;  // loops inside impls stop when the run ends
  r->env.program = prog.get();  // control flow runs its compiled sub-IRs
  // The starting thread's scopes, fixed for the run (sub-runs pass theirs);
  // started inside cancel scopes with no token of its own, the run is
  // cancelled by each of theirs.
  if (!r->env.scopes) {
    r->env.scopes = env.context->scopes.current();
    if (!opts.cancel)
      for (const auto& flag : r->env.scopes->cancels())
        if (auto token = std::dynamic_pointer_cast<CancelToken>(flag)) r->scope_cancels.push_back(std::move(token));
  }
  // A path in program order (a sub-run has its parent's) while a checkpoint
  // scope is open: only those read it (as in the sequential driver).
  if (!r->env.rank)
    if (const RunScopes* scopes = scopes_of(r->env); scopes && scopes->any_checkpoint_scope())
      r->env.rank = run_rank();
  r->env.item_errors = env.item_errors || opts.item_errors;
  if (opts.max_value_bytes) r->env.max_value_bytes = opts.max_value_bytes;
  r->opts = std::move(opts);
  r->has_progress = bool(r->opts.progress);
  r->has_stream = bool(r->opts.stream);
  r->caller_driven = caller_driven;
  const Program& p = *prog;
  r->slots.resize(p.n_slots);
  const size_t n_vars = p.n_slots - p.constants.size();
  for (size_t i = 0; i < p.constants.size(); ++i) r->slots[n_vars + i] = p.constants[i];
  for (size_t i = 0; i < leaves.size(); ++i) r->slots[p.in_slots[i]] = std::move(leaves[i]);
  r->pending.reset(new std::atomic<uint32_t>[p.nodes.size()]);
  for (size_t i = 0; i < p.nodes.size(); ++i) r->pending[i].store(p.nodes[i].n_deps, std::memory_order_relaxed);
  r->remaining.store(uint32_t(p.nodes.size()));
  chain_injected(*r);
  if (r->opts.keep_going) r->slot_err.reset(new std::shared_ptr<const Error>[p.n_slots]);
  if (r->opts.profile || !r->opts.profile_path.empty()) r->profile = std::make_unique<Profile>(p.nodes.size());
  return r;
}

void begin(const std::shared_ptr<Run>& r) {
  r->sched->add_run(r.get());
  const Program& p = *r->prog;
  if (p.nodes.empty()) {
    std::vector<Value> outs;
    for (uint32_t s : p.out_slots) outs.push_back(r->slots[s]);
    Value v = r->opts.flat_output ? Value::list(std::move(outs)) : p.ir->out_tree.unflatten(outs);
    finish(r, &v, nullptr);
    return;
  }
  if (r->opts.timeout_ms > 0) {
    std::weak_ptr<Run> weak = r;
    int64_t ms = r->opts.timeout_ms;
    uint64_t id = r->sched->timer().schedule(now_ns() + ms * 1000000, [weak, ms] {
      if (auto run = weak.lock()) {
        Error e(Code::Timeout, "the run did not finish within its timeout of " + std::to_string(ms) + " ms");
        finish(run, nullptr, &e);
      }
    });
    r->timer_id.store(id, std::memory_order_release);
  }
  if (r->opts.cancel) r->opts.cancel->attach(r);
  for (const auto& token : r->scope_cancels) token->attach(r);
  if (r->finished.load(std::memory_order_acquire)) return;
  // The roots an inject chain holds back are released by their predecessor:
  // pick the others before any root runs (and could release one).
  const std::vector<uint32_t>* roots = &p.roots;
  std::vector<uint32_t> free_roots;
  if (!r->after.empty()) {
    for (uint32_t root : p.roots)
      if (r->pending[root].load(std::memory_order_relaxed) == 0) free_roots.push_back(root);
    roots = &free_roots;
  }
  for (uint32_t root : *roots) {
    if (r->profile) r->profile->queued(root);
    schedule(r, root);
  }
}

}  // namespace

// ---- Scheduler

namespace {
thread_local Scheduler* t_worker_of = nullptr;
}

Scheduler::Scheduler() {
  unsigned hw = std::thread::hardware_concurrency();
  max_workers_ = std::clamp<size_t>(hw ? hw : 2, 2, 4);
}

Scheduler::~Scheduler() { shutdown(); }

lm::TimerQueue& Scheduler::timer() {
  std::call_once(timer_once_, [this] { timer_ = std::make_unique<lm::TimerQueue>(); });
  return *timer_;
}

size_t Scheduler::worker_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return workers_.size();
}

void Scheduler::push(Task t) {
  std::unique_lock<std::mutex> lock(mu_);
  if (stop_) {
    lock.unlock();
    return;  // t.run released here, outside the lock
  }
  t.seq = seq_++;
  queue_.push(std::move(t));
  if (idle_ > 0) {
    cv_.notify_one();
  } else if (workers_.size() < max_workers_) {
    int index = int(workers_.size()) + 1;
    workers_.emplace_back([this, index] { worker(index); });
  }
}

void Scheduler::cancel_timer(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (timer_) timer_->cancel(id);
}

void Scheduler::worker(int index) {
  set_engine_thread_index(index);
  t_worker_of = this;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    while (!stop_ && queue_.empty()) {
      ++idle_;
      cv_.wait(lock);
      --idle_;
    }
    if (stop_) return;
    Task t = queue_.top();
    queue_.pop();
    lock.unlock();
    execute(t.run, t.node);
    t.run.reset();
    lock.lock();
  }
}

// The list of active runs has a lock of its own: a map of LM calls starts
// and finishes a sub-run per item, and under the queue's lock these
// registrations contended with every push and pop of a task.
void Scheduler::add_run(Run* r) {
  std::lock_guard<std::mutex> lock(runs_mu_);
  if (runs_closed_) fail(Code::Cancelled, "the context is being freed; no new run can start");
  r->prev_run = nullptr;
  r->next_run = runs_;
  if (runs_) runs_->prev_run = r;
  runs_ = r;
  r->listed = true;
}

void Scheduler::remove_run(Run* r) {
  std::lock_guard<std::mutex> lock(runs_mu_);
  if (!r->listed) return;
  (r->prev_run ? r->prev_run->next_run : runs_) = r->next_run;
  if (r->next_run) r->next_run->prev_run = r->prev_run;
  r->prev_run = r->next_run = nullptr;
  r->listed = false;
}

void Scheduler::shutdown() noexcept {
  std::vector<std::shared_ptr<Run>> live;
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return;
    stop_ = true;
  }
  {
    std::lock_guard<std::mutex> lock(runs_mu_);
    runs_closed_ = true;
    // A run being destroyed (its count at zero) waits on this lock to
    // unlink itself: lock() gives nothing for it.
    for (Run* r = runs_; r; r = r->next_run)
      if (auto sp = r->weak_from_this().lock()) live.push_back(std::move(sp));
  }
  Error why(Code::Cancelled, "the context was freed while the run was in flight");
  for (auto& r : live) finish(r, nullptr, &why);
  live.clear();
  std::priority_queue<Task> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    threads.swap(workers_);
    dropped.swap(queue_);
  }
  cv_.notify_all();
  for (auto& t : threads) {
    if (t.get_id() == std::this_thread::get_id()) t.detach();
    else t.join();
  }
  std::unique_ptr<lm::TimerQueue> timer;
  {
    std::lock_guard<std::mutex> lock(mu_);
    timer.swap(timer_);
  }
}

std::shared_ptr<Scheduler> make_scheduler() { return std::make_shared<Scheduler>(); }

ExecContext::~ExecContext() {
  if (scheduler_) scheduler_->shutdown();
}

// ---- runs

void Run::cancel() noexcept {
  Error e(Code::Cancelled, "the run was cancelled");
  finish(shared_from_this(), nullptr, &e);
}

std::shared_ptr<SubRun> run_sub_async(RunEnv env, std::shared_ptr<const Program> prog, std::vector<Value> leaves,
                                      RunOptions options, SubRunDone done) {
  std::shared_ptr<Run> r;
  try {
    options.flat_output = true;
    r = make_run(env, std::move(prog), std::move(leaves), std::move(options), false);
    r->done = std::move(done);
    begin(r);
  } catch (const Error& e) {
    // Nothing ran (begin fails only before the first node): report here.
    if (r) done.swap(r->done);
    if (done) done(nullptr, &e);
    return nullptr;
  }
  return r;
}

namespace {

// A batched program over more items than a slice holds runs in its sliced
// form (Program::sliced: its LM stages overlap across slices), unless the
// run streams (pieces are reported per equation of the program as
// written), keeps going past failures (the outputs a failure does not
// reach come back) or a collect or inject scope is open (checkpoint hits in
// program order).
std::shared_ptr<const Program> form_to_run(std::shared_ptr<const Program> prog, const std::vector<Value>& leaves,
                                           const RunEnv& env, const RunOptions& o) {
  if (!prog->sliced || o.stream || o.keep_going || prog->slice_leaf >= leaves.size()) return prog;
  const Value& batch = leaves[prog->slice_leaf];
  if (batch.kind() != Kind::List || batch.size() <= uint64_t(prog->ir->slice_items)) return prog;
  if (const RunScopes* scopes = scopes_of(env); scopes && scopes->any_checkpoint_scope()) return prog;
  return prog->sliced;
}

// The journal a run names (RunOptions::journal_path) into env, bound to the
// program as given (not the form that runs) and the input leaves.
void open_journal(RunEnv& env, const Program& p, const std::vector<Value>& leaves, const RunOptions& o) {
  if (o.journal_path.empty()) return;
  uint64_t inputs = leaves.size();
  for (const Value& v : leaves) inputs = hash_mix(inputs, v.hash());
  env.journal = Journal::open(o.journal_path, ir_hash(*p.ir), inputs);
}

}  // namespace

Future run_async(RunEnv env, std::shared_ptr<const Program> prog, std::vector<Value> leaves, RunOptions options) {
  open_journal(env, *prog, leaves, options);
  prog = form_to_run(std::move(prog), leaves, env, options);
  auto r = make_run(env, std::move(prog), std::move(leaves), std::move(options), false);
  begin(r);
  return Future(r);
}

Value run_sync(RunEnv env, std::shared_ptr<const Program> prog, std::vector<Value> leaves, RunOptions options) {
  open_journal(env, *prog, leaves, options);
  prog = form_to_run(std::move(prog), leaves, env, options);
  auto r = make_run(env, std::move(prog), std::move(leaves), std::move(options), true);
  begin(r);
  for (;;) {
    uint32_t node;
    {
      std::unique_lock<std::mutex> lock(r->mu);
      r->cv.wait(lock, [&] { return r->ready || !r->local.empty(); });
      if (r->ready) {
        if (r->error) throw detached(*r->error);
        return r->result;
      }
      node = r->local.top().node;
      r->local.pop();
    }
    execute(r, node);
  }
}

// ---- CancelToken

namespace {
Error cancelled_by_token() { return Error(Code::Cancelled, "the run was cancelled through its cancel token"); }
}  // namespace

void CancelToken::cancel() noexcept {
  std::vector<std::weak_ptr<Run>> runs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_ = true;
    runs.swap(runs_);
  }
  const Error why = cancelled_by_token();
  for (auto& w : runs)
    if (auto r = w.lock()) finish(r, nullptr, &why);
}

bool CancelToken::cancelled() const noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  return cancelled_;
}

void CancelToken::attach(const std::shared_ptr<Run>& r) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!cancelled_) {
      // Finished runs leave expired entries; drop them now and then so a
      // token reused for many runs stays small (amortized O(1) per run).
      if (runs_.size() >= prune_at_) {
        std::erase_if(runs_, [](const std::weak_ptr<Run>& w) { return w.expired(); });
        prune_at_ = std::max<size_t>(16, 2 * runs_.size());
      }
      runs_.push_back(r);
      return;
    }
  }
  const Error why = cancelled_by_token();
  finish(r, nullptr, &why);
}

// ---- Future

bool Future::ready() const noexcept {
  if (!run_) return false;
  std::lock_guard<std::mutex> lock(run_->mu);
  return run_->ready;
}

Value Future::wait() const {
  if (!run_) invalid("wait: the future is empty");
  std::unique_lock<std::mutex> lock(run_->mu);
  run_->cv.wait(lock, [&] { return run_->ready; });
  if (run_->error) throw detached(*run_->error);
  return run_->result;
}

void Future::cancel() const noexcept {
  if (!run_) return;
  Error e(Code::Cancelled, "the run was cancelled");
  finish(run_, nullptr, &e);
}

void Future::on_done(std::function<void()> fn) const {
  if (!run_) invalid("on_done: the future is empty");
  {
    std::lock_guard<std::mutex> lock(run_->mu);
    if (!run_->ready) {
      run_->callbacks.push_back(std::move(fn));
      return;
    }
  }
  fn();
}

std::string Future::profile_json() const {
  if (!run_ || !run_->profile) return "";
  return run_->profile->to_json(*run_->prog);
}

}  // namespace af
