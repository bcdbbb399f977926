// SubProgram: a sub-IR (a switch branch, a loop's cond or body, a map's
// body) lowered once for the impl rules that run it: a slot per var and per
// literal, per equation the slots it reads and writes. Inputs and outputs
// are flat leaves. Every equation runs through invoke() (exec/scopes.h), so
// memoize scopes reach inside control flow.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "exec/env.h"
#include "ir/ir.h"

namespace af {

class SubProgram {
 public:
  explicit SubProgram(const IR& ir);

  size_t n_in() const noexcept { return in_slots_.size(); }
  size_t n_out() const noexcept { return out_slots_.size(); }

  // Scratch for one run at a time; reuse it across runs (map items, loop
  // iterations) to avoid reallocating the slots.
  struct Frame {
    std::vector<Value> slots;
    std::vector<Value> in, out;
  };
  Frame frame() const;

  // Runs on flat input leaves (values for static input slots are ignored),
  // writing the flat output leaves.
  void run(Frame& f, std::span<const Value> in, std::span<Value> out, RunEnv& env) const;

 private:
  struct Step {
    const Eqn* eqn;
    uint32_t in_begin, in_count, out_begin, out_count;
  };
  std::vector<Step> steps_;
  std::vector<uint32_t> args_, results_;
  std::vector<int64_t> in_slots_;  // -1 for a static (literal) input
  std::vector<uint32_t> out_slots_;
  std::vector<Value> constants_;
  size_t n_vars_ = 0;
};

// The SubProgram of ir, lowered on first use and cached (per thread) while
// ir is alive.
std::shared_ptr<const SubProgram> sub_program(const IRPtr& ir);

}  // namespace af
