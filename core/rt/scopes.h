// RunScopes: the run-time scopes one thread has open on a context — collect
// and inject (the hooks of checkpoint), memoize (identical calls run once)
// and cancel (what the thread runs ends when a token fires). ThreadScopes (below, held by the Context) keeps one RunScopes per
// thread that pushed a scope; a run captures the starting thread's set in
// RunEnv::scopes and keeps it for its whole life, sub-runs of control flow
// included, so concurrent runs on one context never see each other's
// scopes. The checkpoint impl rule and invoke() below are the only readers.
// Checkpoint hits are ordered by their place in the program (Rank, below),
// never by when they run. docs/SEMANTICS.md §4 (collect / inject / memoize).
//
// Thread safety: every member function may be called from any thread (a
// run's workers read and fill the set its starting thread pushed).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "rt/env.h"
#include "ir/ir.h"
#include "value/value.h"

namespace af {

// Program order (docs/SEMANTICS.md §4 collect / inject): a path, compared
// lexicographically. A run's path starts with its serial number (a run
// started later comes after); a sub-run of control flow extends the path of
// the level that runs it with the control-flow equation's index and its own
// index (the item of a map, the pass of a loop); a checkpoint hit is its
// level's path plus its equation's index.
using Rank = std::vector<uint64_t>;
using RankPtr = std::shared_ptr<const Rank>;
// The path of a run that starts now.
RankPtr run_rank();
// The path of sub-run `index` of the equation env runs (env.eqn at
// env.rank; under a new run's path when env has none, outside any run).
RankPtr sub_rank(const RunEnv& env, uint64_t index);
// The rank of a checkpoint hit by the equation env runs.
Rank hit_rank(const RunEnv& env);

// The (collection, key) pairs the open inject scopes queue values for. The
// equations they hit run one after another in program order, so that the
// queued values reach the hits in that order (the executor chains them,
// map runs such items one at a time).
class InjectedKeys {
 public:
  bool empty() const noexcept { return keys_.empty(); }
  // Whether e is a checkpoint of one of the keys or holds a sub-IR (branch,
  // loop or map body) that has one, at any depth.
  bool hit_by(const Eqn& e) const;
  bool hit_by(const IR& ir) const;

 private:
  friend class RunScopes;
  std::vector<std::pair<std::string, std::string>> keys_;
};

// What a cancel scope holds: a token that, once fired, stays fired (the
// executor's CancelToken, which also cancels the runs attached to it).
class CancelFlag {
 public:
  virtual ~CancelFlag() = default;
  virtual bool cancelled() const noexcept = 0;
};

class RunScopes {
 public:
  // collect(collection): from push to pop, every checkpoint of `collection`
  // that runs appends its value under its key. pop returns {key: [values...]}
  // of the innermost collect scope, each list in program order (Rank) and
  // the keys in the order of their first hit; INVALID_ARGUMENT if none is
  // open.
  void push_collect(std::string collection);
  Value pop_collect();

  // inject(collection, {key: [values...]}): a checkpoint of `collection`
  // whose key has a queued value yields the next queued value instead of
  // its input (one value per hit); an empty queue lets the checkpoint run
  // normally. The innermost scope with a queued value wins. INVALID_ARGUMENT
  // if `values` is not a dict of lists.
  void push_inject(std::string collection, const Value& values);
  void pop_inject();

  // memoize: from push to pop, an equation that is neither effectful nor a
  // no-merge primitive (checkpoint) and holds no sub-IR runs once per
  // distinct (primitive, params, input values); later identical calls get
  // the stored outputs. Scopes nest; the innermost cache is used.
  void push_memo();
  void pop_memo();

  // cancel(token): from push to pop, what the thread runs on the context —
  // a run it starts without a cancel token of its own, an operation outside
  // a run waiting for an asynchronous result — ends with CANCELLED once the
  // token fires. Scopes nest, and each open scope's token stops it (an
  // inner scope never shields from an outer one). pop: INVALID_ARGUMENT if
  // none is open.
  void push_cancel(std::shared_ptr<CancelFlag> token);
  void pop_cancel();
  // The tokens of the open cancel scopes, outermost first (empty without a
  // lock when none is open).
  std::vector<std::shared_ptr<CancelFlag>> cancels() const;

  // The checkpoint hook: the value a checkpoint (collection, key) yields for
  // `value` (an injected one if queued, else `value`), recorded at `rank` by
  // every open collect scope of the collection. `check` validates an
  // injected value (structure and kinds) before it is used. Queued values go
  // to hits in the order they come here; InjectedKeys makes that the
  // program order.
  Value checkpoint(const std::string& collection, const std::string& key, const Value& value,
                   Rank rank, const std::function<void(const Value&)>& check = nullptr);
  // While tracing: the injected value for (collection, key) if one is queued
  // (it is consumed), else nothing.
  std::optional<Value> take_injected(const std::string& collection, const std::string& key);

  // The keys the open inject scopes queue values for.
  InjectedKeys injected() const;

  // True when no scope is open (the set may be dropped).
  bool empty() const;

  bool any_checkpoint_scope() const noexcept { return checkpoint_scopes_.load(std::memory_order_acquire) != 0; }
  bool memo_open() const noexcept { return memo_scopes_.load(std::memory_order_acquire) != 0; }

  // The memo cache of the innermost scope: true and `out` filled on a hit.
  bool memo_find(const Eqn& e, std::span<const Value> in, std::span<Value> out);
  void memo_store(const Eqn& e, std::span<const Value> in, std::span<const Value> out);
  // Number of memo hits since the innermost memo scope opened (for tests).
  uint64_t memo_hits() const;

 private:
  struct Hit {
    Rank rank;
    std::string key;
    Value value;
  };
  struct Collect {
    std::string collection;
    std::vector<Hit> hits;  // as they came; sorted by rank at pop
  };
  struct Inject {
    std::string collection;
    std::unordered_map<std::string, std::vector<Value>> queues;
    std::unordered_map<std::string, size_t> next;  // per key: index of the next value
  };
  struct MemoEntry {
    const Prim* prim;
    Params params;
    std::vector<Value> in;
    std::vector<Value> out;
  };
  struct Memo {
    std::unordered_multimap<uint64_t, MemoEntry> entries;
    uint64_t hits = 0;
  };
  std::optional<Value> take_locked(const std::string& collection, const std::string& key);

  mutable std::mutex mu_;
  std::vector<Collect> collects_;
  std::vector<Inject> injects_;
  std::vector<Memo> memos_;
  std::vector<std::shared_ptr<CancelFlag>> cancels_;
  std::atomic<uint32_t> checkpoint_scopes_{0};
  std::atomic<uint32_t> memo_scopes_{0};
  std::atomic<uint32_t> cancel_scopes_{0};
};

// The scopes of each thread of one context. Pushes and pops act on the
// calling thread's own set; runs capture it with current().
class ThreadScopes {
 public:
  void push_collect(std::string collection) { mine().push_collect(std::move(collection)); }
  Value pop_collect();
  void push_inject(std::string collection, const Value& values) {
    mine().push_inject(std::move(collection), values);
  }
  void pop_inject();
  void push_memo() { mine().push_memo(); }
  void pop_memo();
  uint64_t memo_hits();
  void push_cancel(std::shared_ptr<CancelFlag> token) { mine().push_cancel(std::move(token)); }
  void pop_cancel();

  // The calling thread's set, captured by a run at its start: never null
  // (an empty shared set when the thread has no scope open).
  std::shared_ptr<RunScopes> current();
  // The calling thread's set, or nullptr: for what runs outside a run
  // (operations outside a trace, walks), on the thread that asked for it.
  RunScopes* of_this_thread();

 private:
  RunScopes& mine();
  // After a pop: forgets the calling thread's set once nothing is open in
  // it (runs that captured it keep it alive).
  void release_if_empty();

  std::mutex mu_;
  std::unordered_map<std::thread::id, std::shared_ptr<RunScopes>> by_thread_;
  std::atomic<size_t> threads_{0};  // by_thread_.size(), read without the lock
  const std::shared_ptr<RunScopes> none_ = std::make_shared<RunScopes>();
};

// The scopes an equation running in env sees: the set its run captured, or
// (outside a run) the calling thread's; nullptr when there is none.
RunScopes* scopes_of(const RunEnv& env);

// What a memoize scope may cache: an equation that is neither effectful nor
// a no-merge primitive (checkpoint) and holds no sub-IR (sub-IRs memoize
// their own equations).
bool memoizable(const Eqn& e);

// Evaluates one equation on this thread: its impl rule, or for a primitive
// that has only the asynchronous form (LM calls, host functions, control
// flow) impl_async, waited for (run_async_blocking).
void run_eqn(const Eqn& e, std::span<const Value> in, std::span<Value> out, RunEnv& env);

// run_eqn through the memo cache of env's scopes when a memoize scope is
// open. The sequential driver, the walker and the executor's inline path
// run equations through this.
void invoke(const Eqn& e, std::span<const Value> in, std::span<Value> out, RunEnv& env);

}  // namespace af
