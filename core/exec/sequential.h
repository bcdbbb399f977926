// The sequential driver: runs a Program's nodes one after another on the
// calling thread, for walks, calls from C++ code and tests, eager
// operations, and the sub-IRs control flow runs when they make no async work
// (exec/subrun.cpp). An async node is started and waited for
// (run_async_blocking). The dataflow driver is exec/executor.h; both run the
// same Program (exec/program.h).
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "exec/program.h"
#include "ir/ir.h"
#include "rt/env.h"

namespace af {

// Runs p on flat input leaves (checked with check_inputs); returns the flat
// output leaves. Throws the first error.
std::vector<Value> run_sequential(const Program& p, std::span<const Value> leaves, RunEnv& env);
// check_inputs + compile + run_sequential: the output tree.
Value call(IRPtr ir, std::span<const Value> inputs, RunEnv& env);
// Calls an IR the way an operation does: inlined into the innermost trace
// when tracing (and not folding), otherwise run.
Value call_ir(IRPtr ir, std::span<const Value> inputs, RunEnv& env);

// A stepper over every equation of an IR, in order (compiled without DCE or
// CSE, so each equation is stepped as written): next() exposes the next
// equation and its inputs; eval() runs it, send() takes caller-supplied
// outputs; outputs() when done.
class Walker {
 public:
  // `leaves`: inputs already checked with check_inputs.
  Walker(IRPtr ir, std::vector<Value> leaves, RunEnv& env);
  bool done() const noexcept { return pos_ >= prog_->nodes.size(); }
  size_t eqn_index() const noexcept { return prog_->nodes[pos_].eqn_index; }
  const Eqn& eqn() const { return *prog_->nodes[pos_].eqn; }
  // Input tree of the current equation.
  Value inputs() const;
  void eval();
  void send(const Value& outputs);
  Value outputs() const;

 private:
  std::shared_ptr<const Program> prog_;
  std::vector<Value> slots_;
  size_t pos_ = 0;
  RunEnv* env_;
};

}  // namespace af
