// Execution of an IR: `call` runs an interpreter over a flat slot array
// (lowered once into a Plan), and Walker steps one equation at a time.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "ir/ir.h"
#include "exec/env.h"
#include "ir/prim.h"

namespace af {

// An IR lowered for the interpreter: slot per var, then one slot per literal;
// per equation the slot indices of its inputs and outputs.
struct Plan {
  IRPtr ir;
  size_t n_slots = 0;
  std::vector<Value> constants;       // literal values, slots n_vars..
  std::vector<uint32_t> in_slots;     // input leaf slots of the IR
  std::vector<uint32_t> out_slots;    // output leaf slots of the IR
  struct Step {
    const Eqn* eqn;
    uint32_t in_begin, in_count;      // into args
    uint32_t out_begin, out_count;    // into results
  };
  std::vector<Step> steps;
  std::vector<uint32_t> args;
  std::vector<uint32_t> results;
  // Per args entry: 1 at the last read of a slot that is not an output; the
  // run moves the value out there instead of copying it.
  std::vector<uint8_t> last_use;
  size_t max_arity = 0;
};

std::shared_ptr<const Plan> lower(IRPtr ir);

// Runs the plan on checked flat input leaves; returns the output tree.
Value run(const Plan& plan, std::span<const Value> leaves, RunEnv& env);
// check_inputs + lower + run.
Value call(IRPtr ir, std::span<const Value> inputs, RunEnv& env);
// Calls an IR the way an operation does: inlined into the innermost trace
// when tracing (and not folding), otherwise run.
Value call_ir(IRPtr ir, std::span<const Value> inputs, RunEnv& env);

// A stepper: next() exposes the next equation and its inputs; eval() runs
// it, send() takes caller-supplied outputs; outputs() when done.
class Walker {
 public:
  // `leaves`: inputs already checked with check_inputs.
  Walker(std::shared_ptr<const Plan> plan, std::vector<Value> leaves, RunEnv& env);
  bool done() const noexcept { return pos_ >= plan_->steps.size(); }
  size_t eqn_index() const noexcept { return pos_; }
  const Eqn& eqn() const { return *plan_->steps[pos_].eqn; }
  // Input tree of the current equation.
  Value inputs() const;
  void eval();
  void send(const Value& outputs);
  Value outputs() const;

 private:
  std::shared_ptr<const Plan> plan_;
  std::vector<Value> slots_;
  size_t pos_ = 0;
  RunEnv* env_;
};

}  // namespace af
