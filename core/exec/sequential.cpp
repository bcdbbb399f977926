#include "exec/sequential.h"

#include <utility>

#include "exec/context.h"
#include "rt/scopes.h"
#include "trace/trace.h"
#include "value/error.h"

namespace af {

namespace {

// Per-thread scratch, one per nesting depth (an inline sub-run may run
// another program on the same thread): slots and an equation's inputs and
// outputs, reused across runs so that a loop or a map over cheap sub-IRs
// allocates no slot array per iteration.
struct Frame {
  std::vector<Value> slots, in, out;
};
thread_local std::vector<std::unique_ptr<Frame>> t_frames;
thread_local size_t t_depth = 0;

struct FrameLease {
  Frame* f;
  FrameLease() {
    if (t_frames.size() <= t_depth) t_frames.push_back(std::make_unique<Frame>());
    f = t_frames[t_depth++].get();
  }
  ~FrameLease() {
    f->slots.clear();  // releases the run's values
    f->in.clear();
    f->out.clear();
    --t_depth;
  }
};

void init_slots(const Program& p, std::span<const Value> leaves, std::vector<Value>& slots) {
  if (leaves.size() != p.in_slots.size())
    fail(Code::Internal, "run: " + std::to_string(leaves.size()) + " input leaves for " +
                             std::to_string(p.in_slots.size()) + " slots");
  slots.assign(p.n_slots, Value());
  const size_t n_vars = p.n_slots - p.constants.size();
  for (size_t i = 0; i < p.constants.size(); ++i) slots[n_vars + i] = p.constants[i];
  for (size_t i = 0; i < leaves.size(); ++i) slots[p.in_slots[i]] = leaves[i];
}

// Sets a field of the run environment for a scope and puts the old value
// back however the scope ends (nested runs share one environment).
template <class T>
class Restore {
 public:
  Restore(T& field, T value) : field_(field), saved_(std::exchange(field, std::move(value))) {}
  ~Restore() { field_ = std::move(saved_); }
  Restore(const Restore&) = delete;
  Restore& operator=(const Restore&) = delete;

 private:
  T& field_;
  T saved_;
};

// Runs node n: gathers its inputs (a slot's only read takes the value),
// evaluates it, scatters its outputs. env.program is p.
void step(const Program& p, const Program::Node& n, std::vector<Value>& slots, std::vector<Value>& in,
          std::vector<Value>& out, RunEnv& env) {
  in.resize(n.in_count);
  out.assign(n.out_count, Value());
  for (uint32_t k = 0; k < n.in_count; ++k) {
    const uint32_t i = n.in_begin + k;
    if (p.last_use[i]) in[k] = std::move(slots[p.args[i]]);
    else in[k] = slots[p.args[i]];
  }
  env.eqn = n.eqn_index;
  RunScopes* scopes = scopes_of(env);
  try {
    if (scopes && scopes->memo_open()) {
      invoke(*n.eqn, in, out, env);  // memoize scopes keep the inputs as the key
    } else {
      // The impl may consume the inputs the run owns.
      Restore<std::span<Value>> owned(env.owned_in, std::span<Value>(in));
      run_eqn(*n.eqn, in, out, env);
    }
  } catch (const Error& e) {
    if (!n.eqn->name_path()) throw;
    throw named_error(n.eqn->name_path(), e);  // the failing equation's place in the program
  }
  for (uint32_t k = 0; k < n.out_count; ++k) slots[p.results[n.out_begin + k]] = std::move(out[k]);
}

std::vector<Value> gather_outputs(const Program& p, const std::vector<Value>& slots) {
  std::vector<Value> outs;
  outs.reserve(p.out_slots.size());
  for (uint32_t s : p.out_slots) outs.push_back(slots[s]);
  return outs;
}

}  // namespace

std::vector<Value> run_sequential(const Program& p, std::span<const Value> leaves, RunEnv& env) {
  FrameLease lease;
  Frame& f = *lease.f;
  init_slots(p, leaves, f.slots);
  Restore<const Program*> program(env.program, &p);
  // A run of its own gets a path in program order (a sub-run has its
  // parent's) while a checkpoint scope is open: only those read it.
  const RunScopes* scopes = scopes_of(env);
  const bool own_rank = !env.rank && scopes && scopes->any_checkpoint_scope();
  Restore<decltype(env.rank)> rank(env.rank, own_rank ? run_rank() : env.rank);
  for (const Program::Node& n : p.nodes) {
    env.check_stop();
    step(p, n, f.slots, f.in, f.out, env);
  }
  return gather_outputs(p, f.slots);
}

Value call(IRPtr ir, std::span<const Value> inputs, RunEnv& env) {
  std::vector<Value> leaves = check_inputs(*ir, inputs);
  std::shared_ptr<const Program> p = compile(std::move(ir));
  return p->ir->out_tree.unflatten(run_sequential(*p, leaves, env));
}

Value call_ir(IRPtr ir, std::span<const Value> inputs, RunEnv& env) {
  if (recording()) return inline_ir(*ir, inputs);
  return call(std::move(ir), inputs, env);
}

// ---- Walker

Walker::Walker(IRPtr ir, std::vector<Value> leaves, RunEnv& env)
    : prog_(compile(std::move(ir), CompileOptions{.dce = false,
                                                  .cse = false,
                                                  .count = env.context ? &exec_context(env).compiles : nullptr})),
      env_(&env) {
  init_slots(*prog_, leaves, slots_);
  if (!env.rank) env.rank = run_rank();  // a walk is one run
}

Value Walker::inputs() const {
  const Program::Node& n = prog_->nodes[pos_];
  std::vector<Value> in;
  for (uint32_t k = 0; k < n.in_count; ++k) in.push_back(slots_[prog_->args[n.in_begin + k]]);
  return n.eqn->in_tree.unflatten(in);
}

void Walker::eval() {
  if (done()) invalid("walk: no equation left to evaluate");
  std::vector<Value> in, out;
  {
    Restore<const Program*> program(env_->program, prog_.get());
    step(*prog_, prog_->nodes[pos_], slots_, in, out, *env_);
  }
  ++pos_;
}

void Walker::send(const Value& outputs) {
  if (done()) invalid("walk: no equation left to send outputs for");
  const Program::Node& n = prog_->nodes[pos_];
  const Eqn& e = *n.eqn;
  check_structure(outputs, e.out_tree, "walk: outputs of " + e.prim->name);
  auto [leaves, tree] = flatten(outputs);
  for (size_t k = 0; k < leaves.size(); ++k) {
    Aval want = prog_->ir->vars[e.out[k]];
    if (leaves[k].kind() == Kind::Placeholder)
      invalid("walk: outputs of " + e.prim->name + " must be concrete values");
    if (!(aval_of(leaves[k]) == want))
      invalid("walk: output " + std::to_string(k) + " of " + e.prim->name + ": expected " +
              aval_name(want) + ", found " + aval_name(aval_of(leaves[k])));
    slots_[prog_->results[n.out_begin + k]] = leaves[k];
  }
  ++pos_;
}

Value Walker::outputs() const {
  if (!done())
    invalid("walk: " + std::to_string(prog_->nodes.size() - pos_) +
            " equation(s) are still to run before the outputs exist");
  return prog_->ir->out_tree.unflatten(gather_outputs(*prog_, slots_));
}

}  // namespace af
