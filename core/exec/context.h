// ExecContext: the context of one af_context_t as core/exec runs it. Adds
// to rt's Context (routes, host functions, scopes) the dataflow scheduler
// every run of the context shares and the cache of compiled programs, and
// implements sub-runs (exec/subrun.cpp).
//
// Thread safety: members synchronize themselves; the context is shared by
// every run started from it.
#pragma once

#include <atomic>
#include <memory>

#include "exec/plan_cache.h"
#include "rt/context.h"

namespace af {

class Scheduler;
std::shared_ptr<Scheduler> make_scheduler();  // exec/executor.cpp

class ExecContext final : public Context {
 public:
  ExecContext() = default;
  // Cancels the runs still in flight and joins the scheduler's threads
  // (exec/executor.cpp). Never call it from a libaf callback.
  ~ExecContext() override;

  // The dataflow scheduler shared by every run of this context
  // (exec/executor.h); its threads start with the first run that needs them.
  const std::shared_ptr<Scheduler>& scheduler() const noexcept { return scheduler_; }
  // Every compile() done for this context (af_context_stats' `compiles`):
  // its plan cache's, a run's keyed forms', walks', loaded programs'.
  std::atomic<uint64_t> compiles{0};
  // Compiled programs of this context: af_compile, af_ir_call and the lazy
  // evaluator share it (exec/plan_cache.h).
  PlanCache plans{PlanCacheOptions{}, &compiles};

  std::shared_ptr<SubRun> run_sub(const IRPtr& ir, std::span<const Value> in, const RunEnv& env,
                                  const std::shared_ptr<AsyncOp>& parent, uint64_t index,
                                  SubRunDone done, int64_t item) override;
  bool runs_async(const IRPtr& ir, const RunEnv& env) override;
  const Forms* forms(const Eqn& e, const RunEnv& env) override;
  std::shared_ptr<SubRun> run_keyed_form(const Eqn& e, uint64_t key, const std::function<IRPtr()>& build,
                                         std::span<const Value> in, const RunEnv& env,
                                         const std::shared_ptr<AsyncOp>& parent, uint64_t index,
                                         SubRunDone done, int64_t item) override;

 private:
  std::shared_ptr<const Program> program_for(const IRPtr& ir, const RunEnv& env);
  std::shared_ptr<SubRun> run_program(std::shared_ptr<const Program> prog, std::span<const Value> in,
                                      const RunEnv& env, const std::shared_ptr<AsyncOp>& parent,
                                      uint64_t index, SubRunDone done, int64_t item);

  std::shared_ptr<Scheduler> scheduler_ = make_scheduler();
};

// The ExecContext a run's environment belongs to: every context a run is
// given is one (core/exec makes them all).
inline ExecContext& exec_context(const RunEnv& env) { return static_cast<ExecContext&>(*env.context); }

}  // namespace af
