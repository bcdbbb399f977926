// Program: an IR compiled to run — the one lowered form of an IR, run by the
// dataflow executor (exec/executor.h) and by the sequential driver
// (exec/sequential.h). compile() validates, drops dead equations (DCE),
// merges identical pure equations (CSE), then lowers to a flat plan: a slot
// per value, per equation its input/output slots, dependency count and
// consumer list, and a priority = the longest cost-weighted path from the
// equation to an output (Prim::cost; LM calls dominate). The sub-IRs its
// equations hold (branches, loop bodies, map bodies) are compiled with it.
// Immutable once built (but for its keyed forms, behind their own lock);
// shared by every run of it.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "io/plan_data.h"
#include "ir/ir.h"
#include "ir/prim.h"

namespace af {

struct CompileOptions {
  bool dce = true;
  bool cse = true;
  // Merge identical LM calls too (they may be sampled; off by default).
  bool cse_nondeterministic = false;
  // Where compile() counts itself (a context's compiles, af_context_stats),
  // or nullptr. Not part of what is compiled.
  std::atomic<uint64_t>* count = nullptr;
};

struct Program {
  IRPtr ir;  // the IR as given (equations are referenced by index into it)
  uint32_t n_slots = 0;
  std::vector<Value> constants;     // literal values: slots n_vars..
  std::vector<uint32_t> in_slots;   // the IR's flat input leaves
  std::vector<uint32_t> out_slots;  // the IR's flat output leaves

  struct Node {
    const Eqn* eqn;
    uint32_t eqn_index;              // into ir->eqns
    uint32_t in_begin, in_count;     // into args
    uint32_t out_begin, out_count;   // into results
    uint32_t cons_begin, cons_count; // into consumers (one entry per use)
    uint32_t n_deps;                 // inputs produced by other nodes
    double priority;
    bool async;                      // eqn_runs_async
  };
  std::vector<Node> nodes;           // live equations, in IR order
  std::vector<uint32_t> args, results, consumers;
  // Per args entry: 1 when it is the only read of its slot and the slot is
  // not an output, so a run moves the value out instead of copying it (a
  // uniquely owned string can then grow in place). Empty = copy every read.
  std::vector<uint8_t> last_use;
  std::vector<uint32_t> roots;       // nodes with no dependency, best first
  double critical_path = 0;          // max priority (cost units)
  size_t n_async = 0;                // nodes that run async (0: the program never waits)
  size_t removed_dce = 0, merged_cse = 0;

  // A batched program (af_batch's output) over more than
  // `ir->slice_items` items may run as this instead: the same program in
  // its sliced form (transforms/pipeline.h), whose pipeline equation runs
  // the batch in slices whose LM stages overlap. Null when the program has
  // no sliced form. `slice_leaf`: the input leaf whose length is the batch's.
  std::shared_ptr<const Program> sliced;
  uint32_t slice_leaf = 0;

  // The compiled program of each sub-IR the live equations hold (their
  // params' IRs and their forms' IRs), by IR object, sorted by address: what
  // control flow runs (ExecContext::run_sub). A sub-IR held by several
  // equations or levels is compiled once.
  std::vector<std::pair<const IR*, std::shared_ptr<const Program>>> subs;
  // The compiled sub-IR `ir` of this program, or nullptr.
  const std::shared_ptr<const Program>* sub(const IR* ir) const noexcept;

  // The forms (ir/prim.h Forms) of the live equations whose primitive
  // derives some, by equation, sorted by address; their IRs are in subs.
  std::vector<std::pair<const Eqn*, std::shared_ptr<const Forms>>> forms;
  const Forms* forms_of(const Eqn* e) const noexcept;

  // Forms that depend on a run's values (rt/context.h run_keyed_form), by
  // equation and key, compiled on first use: the one part of a program a
  // run adds to, behind its own lock. At most kMaxKeyedPerEqn keys per
  // equation (a scan's count comes from its data), least recently used out
  // first. Compiled with `options` (a call that races another for the same
  // form compiles too, and keeps the other's).
  static constexpr size_t kMaxKeyedPerEqn = 4;
  std::shared_ptr<const Program> keyed_form(const Eqn& e, uint64_t key, const std::function<IRPtr()>& build,
                                            const CompileOptions& options) const;

 private:
  // A copy of a program starts with none: it compiles its own again.
  struct KeyedForms {
    struct Entry {
      const Eqn* eqn;
      uint64_t key;
      std::shared_ptr<const Program> prog;
    };
    KeyedForms() = default;
    KeyedForms(const KeyedForms&) {}
    KeyedForms& operator=(const KeyedForms&) { return *this; }
    std::mutex mu;
    std::vector<Entry> entries;  // most recently used last; guarded by mu
  };
  mutable KeyedForms keyed_;
};

// Sets p.sliced (and slice_leaf) when p's IR has a sliced
// form. compile() and program_from_plan() call it on the programs they
// return (not on sub-IRs': only a run of its own slices).
void attach_sliced(Program& p, const CompileOptions& options = {});
// The sliced form of `ir` (transforms/pipeline.h), or null; sets
// `slice_leaf` to the input leaf whose length is the batch's.
IRPtr sliced_form(const IRPtr& ir, uint32_t& slice_leaf);

// INVALID_ARGUMENT if the IR does not validate.
// `eqn_ids`: each equation's identity (ir_hash's ids) when known, else
// empty; compile's CSE then hashes the equations itself.
std::shared_ptr<const Program> compile(IRPtr ir, const CompileOptions& options = {},
                                       std::span<const uint64_t> eqn_ids = {});

// What compile() decides, as the lowering takes it: the equations that run
// (increasing indices), per variable the variable whose slot it reads (CSE
// aliases; kNoVar for one never computed), and optionally each live
// equation's priority (computed from costs when empty).
struct Lowering {
  std::vector<uint32_t> live;
  std::vector<VarId> var_slot;
  std::vector<double> priority;
};
// The one lowering of an IR into a Program (compile and program_from_plan).
// FORMAT when a live equation has no implementation (a saved plan naming a
// primitive that cannot run).
std::shared_ptr<Program> lower(IRPtr ir, const Lowering& l);

// ---- Saved programs (core/exec/saved_plan.cpp). What compile() decided, as
// the plain data a .afg program holds (core/io/plan_data.h).
using SavedPlan = io::PlanData;
SavedPlan save_plan(const Program& p);
// Rebuilds the program of a saved plan over `ir` (already validated, as the
// graph loader does) without compiling. FORMAT if the plan does not fit the
// IR or could make a run read a value nothing computes, skip an effect or
// merge equations that differ.
// A plan without the sliced form's (a file from before plans held it)
// compiles that form, with `options`.
std::shared_ptr<const Program> program_from_plan(IRPtr ir, const SavedPlan& plan, const CompileOptions& options = {});
// A program as .afg bytes (IR + plan), and back through every loader check;
// a graph saved from a bare IR (no plan) is compiled: through `plans` when
// given (a context's plan cache), and counted in `count` when given.
class PlanCache;
std::string save_program(const Program& p);
std::shared_ptr<const Program> load_program(std::span<const uint8_t> bytes, PlanCache* plans = nullptr,
                                            std::atomic<uint64_t>* count = nullptr);

}  // namespace af
