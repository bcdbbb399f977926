// Sub-runs: the sub-IRs control flow runs (a switch's branch, one pass of a
// loop's cond or body, one map item), for every control-flow primitive's one
// implementation (its impl_async). Here the executor decides how: a sub-IR
// that makes no async work runs inline with the sequential driver, on the
// thread that reached it; one that does runs on the dataflow scheduler as a
// run of its own, holding no thread while its calls are in flight.
#include "exec/context.h"
#include "exec/executor.h"
#include "exec/sequential.h"

namespace af {

// The compiled sub-IR: compiled with the running program (its params' IRs
// and its forms', exec/program.h). An operation outside any program (control
// flow on a context that is not lazy) has its sub-IRs compiled through the
// context's plan cache, so a loop's passes compile its body once.
std::shared_ptr<const Program> ExecContext::program_for(const IRPtr& ir, const RunEnv& env) {
  if (!env.program) return plans.get(ir);
  if (const std::shared_ptr<const Program>* p = env.program->sub(ir.get())) return *p;
  fail(Code::Internal, "a primitive ran a sub-IR its program did not compile (neither in the params of "
                       "its equation nor among the forms its primitive derives; see ir/prim.h Forms)");
}

const Forms* ExecContext::forms(const Eqn& e, const RunEnv& env) {
  return env.program ? env.program->forms_of(&e) : nullptr;
}

std::shared_ptr<SubRun> ExecContext::run_keyed_form(const Eqn& e, uint64_t key, const std::function<IRPtr()>& build,
                                                    std::span<const Value> in, const RunEnv& env,
                                                    const std::shared_ptr<AsyncOp>& parent, uint64_t index,
                                                    SubRunDone done, int64_t item) {
  std::shared_ptr<const Program> prog;
  try {
    const CompileOptions counted{.count = &compiles};
    prog = env.program ? env.program->keyed_form(e, key, build, counted) : compile(build(), counted);
  } catch (const Error& err) {
    done(nullptr, &err);
    return nullptr;
  }
  return run_program(std::move(prog), in, env, parent, index, std::move(done), item);
}

std::shared_ptr<SubRun> ExecContext::run_sub(const IRPtr& ir, std::span<const Value> in,
                                             const RunEnv& env,
                                             const std::shared_ptr<AsyncOp>& parent, uint64_t index,
                                             SubRunDone done, int64_t item) {
  std::shared_ptr<const Program> prog;
  try {
    prog = program_for(ir, env);
  } catch (const Error& e) {
    done(nullptr, &e);
    return nullptr;
  }
  return run_program(std::move(prog), in, env, parent, index, std::move(done), item);
}

std::shared_ptr<SubRun> ExecContext::run_program(std::shared_ptr<const Program> prog, std::span<const Value> in,
                                                 const RunEnv& env, const std::shared_ptr<AsyncOp>& parent,
                                                 uint64_t index, SubRunDone done, int64_t item) {
  const IR& ir = *prog->ir;
  std::vector<Value> leaves(in.begin(), in.end());
  for (size_t k = 0; k < ir.in.size() && k < leaves.size(); ++k)
    if (!ir.in[k].is_var()) leaves[k] = ir.in[k].lit;
  // The sub-run's environment: the caller's context, scopes, journal, stop
  // flag, per-item errors and batch base, its place in program order (only
  // checkpoint scopes read it: built while one is open); not the caller's
  // owned inputs (they are its equation's).
  RunEnv sub;
  sub.context = env.context;
  sub.scopes = env.scopes;
  sub.journal = env.journal;
  if (const RunScopes* s = scopes_of(env); s && s->any_checkpoint_scope())
    sub.rank = sub_rank(env, index);
  sub.stop = env.stop;
  sub.item_errors = env.item_errors;
  sub.max_value_bytes = env.max_value_bytes;
  sub.batch_base = env.batch_base;
  sub.evaluation = env.evaluation;
  if (prog->n_async == 0) {
    std::vector<Value> out;
    try {
      out = run_sequential(*prog, leaves, sub);
    } catch (const Error& e) {
      done(nullptr, &e);
      return nullptr;
    } catch (const std::exception& e) {
      Error ie = error_from(e);
      done(nullptr, &ie);
      return nullptr;
    }
    done(&out, nullptr);
    return nullptr;
  }
  RunOptions o;
  if (parent && parent->profiling()) {
    std::weak_ptr<AsyncOp> weak = parent;
    o.on_span = [weak](const CallSpan& span) {
      if (auto op = weak.lock()) op->record_span(span);
    };
    o.on_event = [weak](const HostEvent& ev) {
      if (auto op = weak.lock()) op->record_event(ev);
    };
  }
  o.stream_parent = parent;
  o.stream_item = item;
  sub.stop = nullptr;  // a run of its own: it sets its own flag
  return run_sub_async(sub, std::move(prog), std::move(leaves), std::move(o), std::move(done));
}

bool ExecContext::runs_async(const IRPtr& ir, const RunEnv& env) { return program_for(ir, env)->n_async > 0; }

}  // namespace af
