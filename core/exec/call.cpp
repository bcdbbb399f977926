// The interpreter: an IR lowered once into a Plan (slot indices per
// equation), then run over a flat slot array with no lookups per equation.
#include "exec/exec.h"
#include "exec/context.h"
#include "exec/scopes.h"
#include "trace/trace.h"
#include <algorithm>
#include <utility>

#include "value/error.h"

namespace af {

std::shared_ptr<const Plan> lower(IRPtr ir) {
  auto plan = std::make_shared<Plan>();
  const uint32_t n_vars = uint32_t(ir->vars.size());
  auto slot_of = [&](const Atom& a) -> uint32_t {
    if (a.is_var()) return a.var;
    plan->constants.push_back(a.lit);
    return n_vars + uint32_t(plan->constants.size() - 1);
  };
  for (const Atom& a : ir->in) plan->in_slots.push_back(slot_of(a));
  plan->steps.reserve(ir->eqns.size());
  for (const Eqn& e : ir->eqns) {
    Plan::Step s{&e, uint32_t(plan->args.size()), uint32_t(e.in.size()),
                 uint32_t(plan->results.size()), uint32_t(e.out.size())};
    for (const Atom& a : e.in) plan->args.push_back(slot_of(a));
    for (VarId v : e.out) plan->results.push_back(v);
    plan->max_arity = std::max({plan->max_arity, e.in.size(), e.out.size()});
    plan->steps.push_back(s);
  }
  for (const Atom& a : ir->out) plan->out_slots.push_back(slot_of(a));
  plan->n_slots = n_vars + plan->constants.size();
  std::vector<uint8_t> seen(plan->n_slots, 0);
  for (uint32_t s : plan->out_slots) seen[s] = 1;
  plan->last_use.assign(plan->args.size(), 0);
  for (size_t i = plan->args.size(); i-- > 0;) {
    plan->last_use[i] = !seen[plan->args[i]];
    seen[plan->args[i]] = 1;
  }
  plan->ir = std::move(ir);
  return plan;
}

namespace {

std::vector<Value> initial_slots(const Plan& plan, std::span<const Value> leaves) {
  std::vector<Value> slots(plan.n_slots);
  const size_t n_vars = plan.n_slots - plan.constants.size();
  for (size_t i = 0; i < plan.constants.size(); ++i) slots[n_vars + i] = plan.constants[i];
  for (size_t i = 0; i < leaves.size(); ++i) slots[plan.in_slots[i]] = leaves[i];
  return slots;
}

// Runs one step: gathers inputs from slots, scatters outputs into slots.
void run_step(const Plan& plan, const Plan::Step& s, std::vector<Value>& slots,
              std::vector<Value>& in, std::vector<Value>& out, RunEnv& env) {
  in.resize(s.in_count);
  out.assign(s.out_count, Value());
  for (uint32_t k = 0; k < s.in_count; ++k) {
    const uint32_t i = s.in_begin + k;
    if (plan.last_use[i]) in[k] = std::move(slots[plan.args[i]]);
    else in[k] = slots[plan.args[i]];
  }
  try {
    if (RunScopes* scopes = scopes_of(env); scopes && scopes->memo_open()) {
      invoke(*s.eqn, in, out, env);  // memoize scopes keep the inputs as the key
    } else {
      // The impl may consume the inputs the run owns (restored after: nested
      // runs share env).
      std::span<Value> outer = std::exchange(env.owned_in, std::span<Value>(in));
      try {
        s.eqn->prim->impl(*s.eqn, in, out, env);
      } catch (...) {
        env.owned_in = outer;
        throw;
      }
      env.owned_in = outer;
    }
  } catch (const Error& e) {
    if (!s.eqn->name_path) throw;
    throw named_error(s.eqn->name_path, e);
  }
  for (uint32_t k = 0; k < s.out_count; ++k) slots[plan.results[s.out_begin + k]] = std::move(out[k]);
}

Value gather_outputs(const Plan& plan, const std::vector<Value>& slots) {
  std::vector<Value> outs;
  outs.reserve(plan.out_slots.size());
  for (uint32_t s : plan.out_slots) outs.push_back(slots[s]);
  return plan.ir->out_tree.unflatten(outs);
}

}  // namespace

Value run(const Plan& plan, std::span<const Value> leaves, RunEnv& env) {
  std::vector<Value> slots = initial_slots(plan, leaves);
  std::vector<Value> in, out;
  in.reserve(plan.max_arity);
  out.reserve(plan.max_arity);
  for (const Plan::Step& s : plan.steps) run_step(plan, s, slots, in, out, env);
  return gather_outputs(plan, slots);
}

Value call(IRPtr ir, std::span<const Value> inputs, RunEnv& env) {
  std::vector<Value> leaves = check_inputs(*ir, inputs);
  auto plan = lower(std::move(ir));
  return run(*plan, leaves, env);
}

Value call_ir(IRPtr ir, std::span<const Value> inputs, RunEnv& env) {
  if (recording()) return inline_ir(*ir, inputs);
  return call(std::move(ir), inputs, env);
}

// ---- Walker

Walker::Walker(std::shared_ptr<const Plan> plan, std::vector<Value> leaves, RunEnv& env)
    : plan_(std::move(plan)), slots_(initial_slots(*plan_, leaves)), env_(&env) {}

Value Walker::inputs() const {
  const Plan::Step& s = plan_->steps[pos_];
  std::vector<Value> in;
  for (uint32_t k = 0; k < s.in_count; ++k) in.push_back(slots_[plan_->args[s.in_begin + k]]);
  return s.eqn->in_tree.unflatten(in);
}

void Walker::eval() {
  if (done()) invalid("walk: no equation left to evaluate");
  std::vector<Value> in, out;
  run_step(*plan_, plan_->steps[pos_], slots_, in, out, *env_);
  ++pos_;
}

void Walker::send(const Value& outputs) {
  if (done()) invalid("walk: no equation left to send outputs for");
  const Plan::Step& s = plan_->steps[pos_];
  const Eqn& e = *s.eqn;
  check_structure(outputs, e.out_tree, "walk: outputs of " + e.prim->name);
  auto [leaves, tree] = flatten(outputs);
  for (size_t k = 0; k < leaves.size(); ++k) {
    Aval want = plan_->ir->vars[e.out[k]];
    if (leaves[k].kind() == Kind::Placeholder)
      invalid("walk: outputs of " + e.prim->name + " must be concrete values");
    if (!(aval_of(leaves[k]) == want))
      invalid("walk: output " + std::to_string(k) + " of " + e.prim->name + ": expected " +
              aval_name(want) + ", found " + aval_name(aval_of(leaves[k])));
    slots_[plan_->results[s.out_begin + k]] = leaves[k];
  }
  ++pos_;
}

Value Walker::outputs() const {
  if (!done())
    invalid("walk: " + std::to_string(plan_->steps.size() - pos_) +
            " equation(s) are still to run before the outputs exist");
  return gather_outputs(*plan_, slots_);
}

}  // namespace af
