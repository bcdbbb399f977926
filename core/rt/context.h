// Context: what the primitives of a running program may use of the
// af_context_t it belongs to — LM routes (lm/router.h), host functions
// (rt/hosts.h), the run scopes of each thread (rt/scopes.h) — and the one
// service of core/exec they need: running a sub-IR for a control-flow
// equation. core/exec implements it (ExecContext, exec/context.h) with its
// scheduler and plan cache; nothing below core/exec knows the executor.
//
// Thread safety: members synchronize themselves; a context is shared by every
// run started from it.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "ir/ir.h"
#include "lm/router.h"
#include "rt/async.h"
#include "rt/env.h"
#include "rt/hosts.h"
#include "rt/scopes.h"
#include "value/error.h"

namespace af {

// Called once when a sub-run finishes: its flat output leaves, or the error.
using SubRunDone = std::function<void(std::vector<Value>* out, const Error* err)>;

// A sub-run still in flight, to cancel it (its `done` then gets CANCELLED).
class SubRun {
 public:
  virtual ~SubRun() = default;
  virtual void cancel() noexcept = 0;
};

class Context {
 public:
  virtual ~Context() = default;
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  // LM providers by model pattern.
  lm::Router& router() noexcept { return router_; }
  // Host functions registered by name.
  HostRegistry hosts;
  // collect / inject / memoize scopes open on this context, per thread.
  ThreadScopes scopes;

  // Runs sub-IR `ir` (a switch's branch, a loop's cond or body, one map
  // item) on flat input leaves for the equation whose op is `parent`; values
  // for static inputs are ignored (the IR's own literal is used). When the IR
  // makes no async work the executor runs it here, on this thread, and
  // `done` has been called when this returns (the result is null);
  // otherwise the sub-run goes to the scheduler, holds no thread while its
  // calls are in flight, and is returned so that it can be cancelled. Run
  // failures reach `done`, never the caller. The sub-run inherits env's
  // scopes, stop flag and per-item-errors setting; its LM calls appear in
  // the parent's profile, and they stream through the parent (as batch item
  // `item` when >= 0: a map item; -1 keeps the parent's item). `index`
  // places the sub-run in program order among those of its equation (the
  // item of a map, the pass of a loop; rt/scopes.h sub_rank): collect and
  // inject order checkpoint hits by it.
  virtual std::shared_ptr<SubRun> run_sub(const IRPtr& ir, std::span<const Value> in,
                                          const RunEnv& env, const std::shared_ptr<AsyncOp>& parent,
                                          uint64_t index, SubRunDone done, int64_t item) = 0;
  // Whether sub-IR `ir` waits on async work (LM calls, host functions) when
  // it runs: what sends a run_sub to the scheduler rather than inline.
  virtual bool runs_async(const IRPtr& ir, const RunEnv& env) = 0;
  // The forms compile() built for equation e (ir/prim.h Forms) of the
  // program env runs, or nullptr when e runs outside a compiled program (an
  // operation on a context that is not lazy).
  virtual const Forms* forms(const Eqn& e, const RunEnv& env) = 0;
  // Runs the form of equation e for `key` that `build` makes, like run_sub:
  // a form that depends on a run's values (a scan unrolled for its count).
  // Built and compiled the first time the program running e needs it for
  // this key, then kept with that program (a few keys per equation, the
  // least recently used out first), so later runs compile nothing.
  virtual std::shared_ptr<SubRun> run_keyed_form(const Eqn& e, uint64_t key, const std::function<IRPtr()>& build,
                                                 std::span<const Value> in, const RunEnv& env,
                                                 const std::shared_ptr<AsyncOp>& parent, uint64_t index,
                                                 SubRunDone done, int64_t item) = 0;

 protected:
  Context() = default;

 private:
  lm::Router router_;
};

}  // namespace af
