#include "exec/executor.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <utility>

#include "rt/async.h"
#include "exec/context.h"
#include "exec/profile.h"
#include "exec/run.h"
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
  double prio = r->fixed.prog->nodes[node].priority;
  if (r->fixed.caller_driven) {
    {
      std::lock_guard<std::mutex> lock(r->mu);
      if (r->outcome.ready) return;
      r->work.local.push(Run::Work::LocalTask{prio, r->work.local_seq++, node});
    }
    r->cv.notify_one();
    return;
  }
  r->fixed.sched->push(Scheduler::Task{prio, 0, r, node});
}

// Gathers a node's inputs: a slot's only read takes the value (see
// Program::last_use), other reads share it.
void gather(Run& r, const Program::Node& n, std::vector<Value>& in) {
  const Program& p = *r.fixed.prog;
  in.resize(n.in_count);
  const bool moves = !p.last_use.empty();
  for (uint32_t k = 0; k < n.in_count; ++k) {
    const uint32_t i = n.in_begin + k;
    if (moves && p.last_use[i]) in[k] = std::move(r.flow.slots[p.args[i]]);
    else in[k] = r.flow.slots[p.args[i]];
  }
}

bool input_error(const Run& r, const Program::Node& n, std::shared_ptr<const Error>& err) {
  if (!r.flow.slot_err) return false;
  for (uint32_t k = 0; k < n.in_count; ++k)
    if (const auto& e = r.flow.slot_err[r.fixed.prog->args[n.in_begin + k]]) {
      err = e;
      return true;
    }
  return false;
}

void mark_outputs_failed(Run& r, const Program::Node& n, std::shared_ptr<const Error> err) {
  for (uint32_t k = 0; k < n.out_count; ++k) r.flow.slot_err[r.fixed.prog->results[n.out_begin + k]] = err;
}

// A failed equation: the run fails (default) or, with keep_going, its
// outputs carry the error. Returns the continuation as complete() does.
// The error names the equation's name path, when it has one.
uint32_t fail_node(const std::shared_ptr<Run>& r, uint32_t node, const Error& cause,
                   bool can_continue) {
  // (Unnamed: the error itself, not a copy, whose message buffer another
  // thread may still share.)
  std::optional<Error> named;
  if (const NamePath& path = r->fixed.prog->nodes[node].eqn->name_path())
    named.emplace(named_error(path, cause));
  const Error& err = named ? *named : cause;
  if (r->fixed.profile) r->fixed.profile->finished(node, int32_t(err.code()));
  if (!r->fixed.opts.keep_going) {
    finish(r, nullptr, &err);
    return kNone;
  }
  auto shared = std::make_shared<const Error>(err);
  if (r->fixed.opts.on_eqn_error) r->fixed.opts.on_eqn_error(r->fixed.prog->nodes[node].eqn_index, shared);
  mark_outputs_failed(*r, r->fixed.prog->nodes[node], std::move(shared));
  return complete(r, node, can_continue);
}

class ExecOp final : public AsyncOp {
 public:
  ExecOp(std::shared_ptr<Run> r, uint32_t node) : run_(std::move(r)), node_(node) {}
  // Inputs kept to store the result in the open memoize scope (else empty).
  std::optional<std::vector<Value>> memo_in;
  bool profiling() const noexcept override {
    return run_->fixed.profile != nullptr || run_->fixed.opts.on_span || run_->fixed.opts.summary;
  }
  // The span gains this equation's tags and name path (in front of those of
  // the sub-run equations it came through).
  void record_span(const CallSpan& s) noexcept override {
    try {
      const Eqn& e = *run_->fixed.prog->nodes[node_].eqn;
      CallSpan span = s;
      span.tags = union_tags(e.tags(), s.tags);
      span.name_path = join_names(e.name_path(), s.name_path);
      if (run_->fixed.profile) run_->fixed.profile->span(node_, span);
      if (run_->fixed.opts.summary) run_->fixed.opts.summary->add(span);
      if (run_->fixed.opts.on_span) run_->fixed.opts.on_span(span);
    } catch (...) {
    }
  }
  void record_event(const HostEvent& ev) noexcept override {
    try {
      if (run_->fixed.profile) run_->fixed.profile->event(node_, ev);
      if (run_->fixed.opts.on_event) run_->fixed.opts.on_event(ev);
    } catch (...) {
    }
  }
  bool streams(const Eqn& e) const noexcept override {
    const RunOptions& o = run_->fixed.opts;
    if (auto parent = o.stream_parent.lock()) return parent->streams(e);
    if (!run_->callbacks.stream.present()) return false;
    auto tagged = [&o](const Eqn& x) {
      const Tags& t = x.tags();
      return t && std::find(t->begin(), t->end(), o.stream_tag) != t->end();
    };
    return o.stream_tag.empty() || tagged(e) || tagged(*run_->fixed.prog->nodes[node_].eqn);
  }
  bool streaming() const noexcept override {
    const RunOptions& o = run_->fixed.opts;
    if (auto parent = o.stream_parent.lock()) return parent->streaming();
    return run_->callbacks.stream.present();
  }
  void stream(uint64_t item, const char* data, size_t len) noexcept override {
    Run& r = *run_;
    if (r.fixed.opts.stream_item >= 0) item = uint64_t(r.fixed.opts.stream_item);
    if (auto parent = r.fixed.opts.stream_parent.lock()) return parent->stream(item, data, len);
    if (!r.callbacks.stream.present()) return;
    const uint32_t eqn = r.fixed.prog->nodes[node_].eqn_index;
    r.callbacks.stream.call(r.finished, [&](const Run::Stream& fn) {
      // Nothing streams once the run has finished (RunOptions::stream).
      if (!r.finished.load(std::memory_order_acquire)) fn(eqn, item, data, len);
    });
  }

 protected:
  void on_finish(std::vector<Value>* out, const Error* err) noexcept override {
    const std::shared_ptr<Run>& r = run_;
    if (r->finished.load(std::memory_order_acquire)) return;
    try {
      const Program::Node& n = r->fixed.prog->nodes[node_];
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
      if (memo_in) r->fixed.env.scopes->memo_store(*n.eqn, *memo_in, *out);
      const Program& p = *r->fixed.prog;
      for (uint32_t k = 0; k < n.out_count; ++k) r->flow.slots[p.results[n.out_begin + k]] = std::move((*out)[k]);
      if (r->fixed.profile) r->fixed.profile->finished(node_, 0);
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
  const Program::Node& n = r->fixed.prog->nodes[node];
  auto op = std::make_shared<ExecOp>(r, node);
  op->priority = n.priority;
  {
    std::lock_guard<std::mutex> lock(r->mu);
    if (r->outcome.ready || r->finished.load()) return;
    r->work.inflight.push_back(op);
  }
  ScratchLease lease;
  std::vector<Value>& in = lease.s->in;
  gather(*r, n, in);
  if (r->fixed.profile) r->fixed.profile->started(node, engine_thread_index());
  if (r->fixed.env.scopes->memo_open() && memoizable(*n.eqn)) {
    std::vector<Value>& out = lease.s->out;
    out.assign(n.out_count, Value());
    if (r->fixed.env.scopes->memo_find(*n.eqn, in, out)) {
      op->succeed(std::move(out));  // a memo hit: done without a request
      return;
    }
    op->memo_in.emplace(in.begin(), in.end());
  }
  try {
    RunEnv env = r->fixed.env;
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
  const Program& p = *r->fixed.prog;
  const Program::Node& n = p.nodes[node];
  uint32_t best = kNone;
  auto release = [&](uint32_t c) {
    // The last release needs no read-modify-write: a count of 1 means no
    // other producer of c is left to race with (most nodes have one input
    // producer). The acquire load still sees what earlier producers wrote.
    std::atomic<uint32_t>& pending = r->flow.pending[c];
    if (pending.load(std::memory_order_acquire) == 1)
      pending.store(0, std::memory_order_relaxed);
    else if (pending.fetch_sub(1, std::memory_order_acq_rel) != 1)
      return;
    if (r->fixed.profile) r->fixed.profile->queued(c);
    if (!can_continue) {
      schedule(r, c);
    } else if (p.nodes[c].async && !r->flow.slot_err) {
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
  if (!r->fixed.after.empty() && r->fixed.after[node] != kNone) release(r->fixed.after[node]);
  if (r->callbacks.progress.present()) {
    Run::Callbacks& cb = r->callbacks;
    cb.progress.call(r->finished,
                     [&](const Run::Progress& fn) { fn(++cb.progress_done, p.nodes.size()); });
  }
  if (r->flow.remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    std::vector<Value> outs;
    outs.reserve(p.out_slots.size());
    for (size_t k = 0; k < p.out_slots.size(); ++k) {
      const uint32_t s = p.out_slots[k];
      if (r->flow.slot_err && r->flow.slot_err[s]) {
        if (r->fixed.opts.on_output_error) r->fixed.opts.on_output_error(k, r->flow.slot_err[s]);
        outs.push_back(error_value(*r->flow.slot_err[s]));
      } else {
        outs.push_back(r->flow.slots[s]);
      }
    }
    Value v = r->fixed.opts.flat_output ? Value::list(std::move(outs)) : p.ir->out_tree.unflatten(outs);
    finish(r, &v, nullptr);
  }
  return best;
}

void execute(const std::shared_ptr<Run>& r, uint32_t node) {
  ScratchLease lease;
  std::vector<Value>& in = lease.s->in;
  std::vector<Value>& out = lease.s->out;
  const Program& p = *r->fixed.prog;
  // One copy of the run's environment for the nodes this thread runs in a
  // row (as the sequential interpreter keeps one): a copy per node wrote
  // two shared counts. No impl changes the environment it is given (those
  // that run sub-IRs change their own copy, or restore what they set).
  RunEnv env = r->fixed.env;
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
    if (r->fixed.profile) r->fixed.profile->started(node, engine_thread_index());
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
    for (uint32_t k = 0; k < n.out_count; ++k) r->flow.slots[p.results[n.out_begin + k]] = std::move(out[k]);
    if (r->fixed.profile) r->fixed.profile->finished(node, 0);
    node = complete(r, node, true);
  }
}

// The user's callbacks go when the run finishes, before it reports
// completion (RunCallback: one being called on this thread, which ended the
// run, is released by its call as it returns).
void release_callbacks(Run& r) noexcept {
  r.callbacks.progress.release();
  r.callbacks.stream.release();
}

// A finished sub-run reports to the equation that started it. Its result
// and error are fixed once published, so they are read without the lock.
void sub_run_done(Run& r) noexcept {
  SubRunDone done;
  done.swap(r.done);
  if (!done) return;
  try {
    if (r.outcome.error) {
      done(nullptr, &*r.outcome.error);
    } else {
      std::vector<Value> out = r.outcome.result.items();
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
  if (r->fixed.opts.summary) r->fixed.opts.summary->stop();
  try {
    if (uint64_t id = r->timer_id.load(std::memory_order_acquire)) r->fixed.sched->cancel_timer(id);
    std::vector<std::shared_ptr<AsyncOp>> ops;
    {
      std::lock_guard<std::mutex> lock(r->mu);
      ops.swap(r->work.inflight);
      r->work.local = {};
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
    if (!r->fixed.opts.journal_path.empty() && r->fixed.env.journal) r->fixed.env.journal->close();
    if (r->fixed.profile && !r->fixed.opts.profile_path.empty()) {
      try {
        r->fixed.profile->write(r->fixed.opts.profile_path, *r->fixed.prog);
      } catch (const Error& e) {
        if (!error) error.emplace(e);
      }
    }
    std::vector<std::function<void()>> cbs;
    {
      std::lock_guard<std::mutex> lock(r->mu);
      if (error) r->outcome.error = std::move(error);
      else if (result) r->outcome.result = std::move(*result);
      r->outcome.ready = true;
      cbs.swap(r->outcome.on_done);
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
    if (!r->outcome.ready) {
      r->outcome.error.emplace(Code::OutOfMemory, "out of memory while finishing a run");
      r->outcome.ready = true;
    }
    r->cv.notify_all();
  }
  sub_run_done(*r);
  r->fixed.sched->remove_run(r.get());
}

// While an inject scope queues values for a key, the equations that hit it
// run one after another in program order, each once the previous one has
// finished, so that the queued values reach the hits in program order
// (docs/SEMANTICS.md §4 inject): Run::Fixed::after, whose edges each add a
// release to wait for (make_run). Chain edges follow program order, as
// dataflow edges do, so they never close a cycle.
std::vector<uint32_t> inject_order(const RunEnv& env, const Program& p) {
  std::vector<uint32_t> after;
  const InjectedKeys keys = env.scopes->injected();
  if (keys.empty()) return after;
  uint32_t prev = kNone;
  for (uint32_t i = 0; i < p.nodes.size(); ++i) {
    if (!keys.hit_by(*p.nodes[i].eqn)) continue;
    if (prev != kNone) {
      if (after.empty()) after.assign(p.nodes.size(), kNone);
      after[prev] = i;
    }
    prev = i;
  }
  return after;
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
  const Program& p = *prog;
  // The callbacks the run releases when it finishes leave the options.
  Run::Progress progress = std::exchange(opts.progress, nullptr);
  Run::Stream stream = std::exchange(opts.stream, nullptr);
  auto fix = [&](const std::atomic<bool>* stop) {
    Run::Fixed f;
    f.prog = prog;
    f.sched = exec_context(env).scheduler();
    f.env = env;
    f.env.owned_in = {};  // the caller's inputs are not this run's
    f.env.stop = stop;  // loops inside impls stop when the run ends
    f.env.program = prog.get();  // control flow runs its compiled sub-IRs
    // The starting thread's scopes, fixed for the run (sub-runs pass
    // theirs); started inside cancel scopes with no token of its own, the
    // run is cancelled by each of theirs.
    if (!f.env.scopes) {
      f.env.scopes = env.context->scopes.current();
      if (!opts.cancel)
        for (const auto& flag : f.env.scopes->cancels())
          if (auto token = std::dynamic_pointer_cast<CancelToken>(flag)) f.scope_cancels.push_back(std::move(token));
    }
    // A path in program order (a sub-run has its parent's) while a
    // checkpoint scope is open: only those read it (as in the sequential
    // driver).
    if (!f.env.rank)
      if (const RunScopes* scopes = scopes_of(f.env); scopes && scopes->any_checkpoint_scope())
        f.env.rank = run_rank();
    f.env.item_errors = env.item_errors || opts.item_errors;
    if (opts.max_value_bytes) f.env.max_value_bytes = opts.max_value_bytes;
    f.opts = std::move(opts);
    f.caller_driven = caller_driven;
    f.after = inject_order(f.env, p);
    if (f.opts.profile || !f.opts.profile_path.empty())
      f.profile = std::make_unique<Profile>(p.nodes.size());
    return f;
  };
  auto r = std::make_shared<Run>(fix, std::move(progress), std::move(stream));
  Run::Dataflow& d = r->flow;
  d.slots.resize(p.n_slots);
  const size_t n_vars = p.n_slots - p.constants.size();
  for (size_t i = 0; i < p.constants.size(); ++i) d.slots[n_vars + i] = p.constants[i];
  for (size_t i = 0; i < leaves.size(); ++i) d.slots[p.in_slots[i]] = std::move(leaves[i]);
  d.pending.reset(new std::atomic<uint32_t>[p.nodes.size()]);
  for (size_t i = 0; i < p.nodes.size(); ++i) d.pending[i].store(p.nodes[i].n_deps, std::memory_order_relaxed);
  for (uint32_t next : r->fixed.after)
    if (next != kNone) d.pending[next].fetch_add(1, std::memory_order_relaxed);
  d.remaining.store(uint32_t(p.nodes.size()));
  if (r->fixed.opts.keep_going) d.slot_err.reset(new std::shared_ptr<const Error>[p.n_slots]);
  return r;
}

void begin(const std::shared_ptr<Run>& r) {
  r->fixed.sched->add_run(r.get());
  const Program& p = *r->fixed.prog;
  if (p.nodes.empty()) {
    std::vector<Value> outs;
    for (uint32_t s : p.out_slots) outs.push_back(r->flow.slots[s]);
    Value v = r->fixed.opts.flat_output ? Value::list(std::move(outs)) : p.ir->out_tree.unflatten(outs);
    finish(r, &v, nullptr);
    return;
  }
  if (r->fixed.opts.timeout_ms > 0) {
    std::weak_ptr<Run> weak = r;
    int64_t ms = r->fixed.opts.timeout_ms;
    uint64_t id = r->fixed.sched->timer().schedule(now_ns() + ms * 1000000, [weak, ms] {
      if (auto run = weak.lock()) {
        Error e(Code::Timeout, "the run did not finish within its timeout of " + std::to_string(ms) + " ms");
        finish(run, nullptr, &e);
      }
    });
    r->timer_id.store(id, std::memory_order_release);
  }
  if (r->fixed.opts.cancel) r->fixed.opts.cancel->attach(r);
  for (const auto& token : r->fixed.scope_cancels) token->attach(r);
  if (r->finished.load(std::memory_order_acquire)) return;
  // The roots an inject chain holds back are released by their predecessor:
  // pick the others before any root runs (and could release one).
  const std::vector<uint32_t>* roots = &p.roots;
  std::vector<uint32_t> free_roots;
  if (!r->fixed.after.empty()) {
    for (uint32_t root : p.roots)
      if (r->flow.pending[root].load(std::memory_order_relaxed) == 0) free_roots.push_back(root);
    roots = &free_roots;
  }
  for (uint32_t root : *roots) {
    if (r->fixed.profile) r->fixed.profile->queued(root);
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
  r->links.prev = nullptr;
  r->links.next = runs_;
  if (runs_) runs_->links.prev = r;
  runs_ = r;
  r->links.listed = true;
}

void Scheduler::remove_run(Run* r) {
  std::lock_guard<std::mutex> lock(runs_mu_);
  if (!r->links.listed) return;
  (r->links.prev ? r->links.prev->links.next : runs_) = r->links.next;
  if (r->links.next) r->links.next->links.prev = r->links.prev;
  r->links.prev = r->links.next = nullptr;
  r->links.listed = false;
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
    for (Run* r = runs_; r; r = r->links.next)
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
      r->cv.wait(lock, [&] { return r->outcome.ready || !r->work.local.empty(); });
      if (r->outcome.ready) {
        if (r->outcome.error) throw detached(*r->outcome.error);
        return r->outcome.result;
      }
      node = r->work.local.top().node;
      r->work.local.pop();
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
  return run_->outcome.ready;
}

Value Future::wait() const {
  if (!run_) invalid("wait: the future is empty");
  std::unique_lock<std::mutex> lock(run_->mu);
  run_->cv.wait(lock, [&] { return run_->outcome.ready; });
  if (run_->outcome.error) throw detached(*run_->outcome.error);
  return run_->outcome.result;
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
    if (!run_->outcome.ready) {
      run_->outcome.on_done.push_back(std::move(fn));
      return;
    }
  }
  fn();
}

std::string Future::profile_json() const {
  if (!run_ || !run_->fixed.profile) return "";
  return run_->fixed.profile->to_json(*run_->fixed.prog);
}

}  // namespace af
