// RunEnv: what an impl rule may need from its surroundings while running:
// the context (rt/context.h), the run's scopes, its stop flag, the program it
// belongs to.
#pragma once

#include <atomic>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "value/error.h"

namespace af {

class Journal;

class Context;
class RunScopes;
// A compiled program (core/exec/program.h): opaque below core/exec, which
// finds the compiled sub-IRs of the running program through it.
struct Program;

// Where the operations made outside any trace go on a lazy context
// (core/lazy): recorded into its pending graph, answered with promises.
class Recorder {
 public:
  // Records prim applied to flat input leaves (concrete values or promises)
  // shaped by in_tree; returns the output tree of promises. Throws
  // INVALID_ARGUMENT at once for inputs the primitive does not accept.
  virtual Value record(const Prim& p, Params params, std::vector<Value> leaves, TreeDef in_tree) = 0;

 protected:
  ~Recorder() = default;
};

// A lazy evaluation (core/lazy), as the runs it starts carry it: its id and
// the evaluation whose host function started it (a host function may read a
// pending promise, which evaluates it, nested).
struct Evaluation {
  uint64_t id = 0;
  std::shared_ptr<const Evaluation> outer;
  bool within(uint64_t eval_id) const noexcept {
    for (const Evaluation* e = this; e; e = e->outer.get())
      if (e->id == eval_id) return true;
    return false;
  }
};

// The evaluation whose run called the host function this thread is in (null
// outside one): set by prims/host.cpp around each call, read by the lazy
// evaluator so that a read of a promise that very evaluation runs fails
// instead of waiting for itself.
const std::shared_ptr<const Evaluation>& serving_evaluation() noexcept;
class ServingScope {
 public:
  explicit ServingScope(const std::shared_ptr<const Evaluation>& e) noexcept;
  ~ServingScope();
  ServingScope(const ServingScope&) = delete;
  ServingScope& operator=(const ServingScope&) = delete;

 private:
  const std::shared_ptr<const Evaluation>* prev_;
};

struct RunEnv {
  Context* context = nullptr;
  // The program this equation belongs to while a run executes it (its
  // compiled sub-IRs are what control flow runs); null outside a run.
  const Program* program = nullptr;
  // The collect / inject / memoize scopes of the thread that started the
  // run, captured at its start and inherited by its sub-runs
  // (rt/scopes.h). Null outside a run: the calling thread's then apply.
  std::shared_ptr<RunScopes> scopes = nullptr;
  // Set on a lazy context's own environment only (never inside a run): the
  // operations it makes outside a trace are recorded there.
  Recorder* recorder = nullptr;
  // The inputs of the equation being run when the interpreter owns them:
  // values moved out of their slots at their last use, held nowhere else by
  // the run. Set only around one impl call (empty otherwise).
  std::span<Value> owned_in = {};
  // The run's "finished" flag, set by the executor: an impl that loops
  // (while_loop, scan, map) polls it through check_stop() every iteration,
  // so a deadline, a cancel or a failure elsewhere stops the run's thread
  // too. nullptr outside a run (nothing to poll).
  const std::atomic<bool>* stop = nullptr;

  // CANCELLED once the run this impl works for has ended (its result, e.g.
  // TIMEOUT, is already decided; this only frees the thread).
  void check_stop() const {
    if (stop && stop->load(std::memory_order_relaxed))
      fail(Code::Cancelled, "the run ended (deadline, cancel or a failure) while a loop was running");
  }

  // Where the equation being run stands in program order, the order of the
  // checkpoint hits collect returns and inject serves (docs/SEMANTICS.md §4):
  // `rank` is the path of the run and of the control flow around this level
  // (rt/scopes.h: run_rank, sub_rank), `eqn` the equation's index in the IR
  // this level runs. Set by the drivers; only checkpoint scopes read rank,
  // so it may stay null where none is open (and is outside any run).
  std::shared_ptr<const std::vector<uint64_t>> rank = nullptr;
  uint32_t eqn = 0;

  // The largest value (a string's bytes) one equation may build
  // (RunOptions::max_value_bytes); a primitive whose output can be larger
  // than its inputs checks it before it allocates. Inherited by sub-runs.
  uint64_t max_value_bytes = kDefaultMaxValueBytes;
  static constexpr uint64_t kDefaultMaxValueBytes = uint64_t(1) << 30;
  // OUT_OF_MEMORY when `bytes` is over max_value_bytes: what `prim` was about
  // to build, named with the limit and how to raise it.
  void check_value_bytes(const char* prim, uint64_t bytes) const {
    if (bytes > max_value_bytes)
      fail(Code::OutOfMemory, std::string(prim) + ": the result would be " + std::to_string(bytes) +
                                  " bytes, over the run's max_value_bytes of " + std::to_string(max_value_bytes) +
                                  " (a run option: raise it, or check the program builds what you meant)");
  }

  // How long an operation run eagerly (outside any run: af_host_call,
  // af_lm_call on an eager context) waits for an asynchronous result; 0 = no
  // limit. Past it the request is cancelled and the operation fails with
  // TIMEOUT (the context option "eager_timeout_ms").
  int64_t eager_timeout_ms = 0;

  // Per-item errors (RunOptions::item_errors): a batch item that fails
  // becomes an error value in map's outputs instead of failing the equation.
  // Inherited by the sub-runs control flow and map start.
  bool item_errors = false;

  // The lazy evaluation this run serves (null for other runs); inherited by
  // sub-runs. Host functions called by the run mark their thread with it.
  std::shared_ptr<const Evaluation> evaluation = nullptr;

  // The place, in the whole batch, of the first item of the batched lists
  // this level runs on: a pipeline runs its body on consecutive slices of
  // the batch (prims/pipeline.cpp), and an error names a batch item by its
  // place in the whole batch (base + index in the slice). Inherited by
  // sub-runs.
  uint64_t batch_base = 0;

  // The run's journal (RunOptions::journal_path, rt/journal.h), null for
  // none; inherited by sub-runs.
  std::shared_ptr<Journal> journal = nullptr;

  // in[k] as a value the impl may consume (e.g. append to a string nothing
  // else shares), or nullptr when `in` is not the owned input list.
  Value* owned(std::span<const Value> in, size_t k) const noexcept {
    return !in.empty() && in.data() == owned_in.data() && k < owned_in.size() ? &owned_in[k] : nullptr;
  }
};

}  // namespace af
