// Saved plans: what compile() decided (which equations run, which slot each
// variable reads, priorities) as plain data, and the Program rebuilt from it
// without compiling. A plan read from a file is untrusted: every decision is
// checked against the IR so that a run can never read a slot nothing writes,
// skip an effectful equation, or share one result between equations that
// differ.
#include <algorithm>
#include <cmath>

#include "exec/plan_cache.h"
#include "exec/program.h"
#include "io/afg.h"
#include "transforms/builder.h"
#include "value/error.h"

namespace af {

namespace {

[[noreturn]] void bad_plan(const std::string& why) {
  fail(Code::Format, "invalid graph: the program plan " + why);
}

}  // namespace

SavedPlan save_plan(const Program& p) {
  const IR& g = *p.ir;
  SavedPlan s;
  s.var_slot.assign(g.vars.size(), kNoVar);
  std::vector<uint8_t> live(g.eqns.size(), 0);
  for (const Atom& a : g.in)
    if (a.is_var()) s.var_slot[a.var] = a.var;
  for (const Program::Node& n : p.nodes) {
    s.live.push_back(n.eqn_index);
    s.priority.push_back(n.priority);
    live[n.eqn_index] = 1;
    const Eqn& e = *n.eqn;
    for (size_t k = 0; k < e.in.size(); ++k)
      if (e.in[k].is_var()) s.var_slot[e.in[k].var] = p.args[n.in_begin + k];
    for (VarId v : e.out) s.var_slot[v] = v;
  }
  for (size_t k = 0; k < g.out.size(); ++k)
    if (g.out[k].is_var()) s.var_slot[g.out[k].var] = p.out_slots[k];
  // A merged equation whose result is read names its twin; its inputs then
  // read what the twin's read (compile's CSE compared them resolved). Going
  // backwards reaches the merged equations that feed only merged ones.
  std::vector<size_t> def = defining_eqn(g);
  for (size_t i = g.eqns.size(); i-- > 0;) {
    const Eqn& e = g.eqns[i];
    if (live[i]) continue;
    VarId twin_var = kNoVar;
    for (VarId v : e.out)
      if (s.var_slot[v] != kNoVar) twin_var = s.var_slot[v];
    if (twin_var == kNoVar) continue;
    const Eqn& f = g.eqns[def[twin_var]];
    for (size_t k = 0; k < e.out.size(); ++k) s.var_slot[e.out[k]] = f.out[k];
    for (size_t k = 0; k < e.in.size(); ++k)
      if (e.in[k].is_var() && f.in[k].is_var() && s.var_slot[e.in[k].var] == kNoVar)
        s.var_slot[e.in[k].var] = s.var_slot[f.in[k].var];
  }
  s.removed_dce = p.removed_dce;
  s.merged_cse = p.merged_cse;
  if (p.sliced) s.sliced = std::make_shared<const SavedPlan>(save_plan(*p.sliced));
  return s;
}

std::shared_ptr<const Program> program_from_plan(IRPtr ir, const SavedPlan& s, const CompileOptions& options) {
  const IR& g = *ir;
  const size_t n_eqns = g.eqns.size();
  const uint32_t n_vars = uint32_t(g.vars.size());
  if (s.var_slot.size() != n_vars)
    bad_plan("has " + std::to_string(s.var_slot.size()) + " variable slots for an IR of " +
             std::to_string(n_vars) + " variables");
  if (s.priority.size() != s.live.size())
    bad_plan("has " + std::to_string(s.priority.size()) + " priorities for " +
             std::to_string(s.live.size()) + " live equations");
  std::vector<uint8_t> live(n_eqns, 0);
  for (size_t k = 0; k < s.live.size(); ++k) {
    if (s.live[k] >= n_eqns || (k > 0 && s.live[k] <= s.live[k - 1]))
      bad_plan("lists live equations out of order or out of range");
    if (!std::isfinite(s.priority[k]) || s.priority[k] < 0)
      bad_plan("has a priority that is negative or not a number");
    live[s.live[k]] = 1;
  }

  // Forward, in IR order: `ready` marks the slots written so far.
  std::vector<uint8_t> ready(n_vars, 0);
  std::vector<uint8_t> defined(n_vars, 0);
  std::vector<size_t> def(n_vars, SIZE_MAX);
  auto var_name = [](VarId v) { return "%" + std::to_string(v); };
  for (const Atom& a : g.in)
    if (a.is_var()) {
      if (s.var_slot[a.var] != a.var) bad_plan("moves input " + var_name(a.var) + " to another slot");
      ready[a.var] = defined[a.var] = 1;
    }
  auto reads_ready = [&](VarId v, const std::string& where) {
    const VarId slot = s.var_slot[v];
    if (slot == kNoVar || slot >= n_vars || !ready[slot])
      bad_plan("makes " + where + " read " + var_name(v) + " from a slot nothing has written");
  };
  for (size_t i = 0; i < n_eqns; ++i) {
    const Eqn& e = g.eqns[i];
    const std::string where = "equation " + std::to_string(i) + " (" + e.prim->name + ")";
    for (VarId v : e.out) {
      defined[v] = 1;
      def[v] = i;
    }
    if (live[i]) {
      for (const Atom& a : e.in)
        if (a.is_var()) reads_ready(a.var, where);
      for (VarId v : e.out) {
        if (s.var_slot[v] != v) bad_plan("moves " + var_name(v) + ", computed by " + where + ", to another slot");
        ready[v] = 1;
      }
      continue;
    }
    if (eqn_has_effects(e)) bad_plan("skips " + where + ", which has effects and must run");
    size_t aliased = 0;
    for (VarId v : e.out) aliased += s.var_slot[v] != kNoVar;
    if (aliased == 0) continue;  // dead code
    // Merged into an earlier live twin: same primitive, params, structure
    // and inputs (as read), so the twin's results are this one's.
    const VarId first = s.var_slot[e.out[0]];
    const size_t j = first < n_vars ? def[first] : SIZE_MAX;
    if (aliased != e.out.size() || j == SIZE_MAX || j >= i || !live[j])
      bad_plan("merges " + where + " into something that is not an earlier live equation");
    const Eqn& f = g.eqns[j];
    bool same = f.prim == e.prim && f.in.size() == e.in.size() && f.out.size() == e.out.size() &&
                identical(f.in_tree, e.in_tree) && identical(f.out_tree, e.out_tree) && f.params == e.params;
    for (size_t k = 0; same && k < e.out.size(); ++k) same = s.var_slot[e.out[k]] == f.out[k];
    for (size_t k = 0; same && k < e.in.size(); ++k) {
      const Atom &a = e.in[k], &b = f.in[k];
      if (a.is_var() != b.is_var()) same = false;
      else if (a.is_var()) same = s.var_slot[a.var] != kNoVar && s.var_slot[a.var] == s.var_slot[b.var];
      else same = a.lit == b.lit && a.lit.kind() == b.lit.kind();
    }
    if (!same) bad_plan("merges " + where + " into equation " + std::to_string(j) + ", which differs");
  }
  for (VarId v = 0; v < n_vars; ++v)
    if (!defined[v] && s.var_slot[v] != kNoVar) bad_plan("gives a slot to " + var_name(v) + ", which nothing defines");
  for (const Atom& a : g.out)
    if (a.is_var()) reads_ready(a.var, "an output");

  // Lowering, as compile() does it, with the plan's decisions.
  std::shared_ptr<Program> prog = lower(std::move(ir), Lowering{s.live, s.var_slot, s.priority});
  prog->removed_dce = size_t(s.removed_dce);
  prog->merged_cse = size_t(s.merged_cse);
  // The sliced form: its IR derived again (transforms/pipeline.h), its plan
  // the file's; a file from before plans held it compiles the form here.
  if (!s.sliced) {
    attach_sliced(*prog, options);
  } else {
    uint32_t leaf = 0;
    IRPtr form = sliced_form(prog->ir, leaf);
    if (!form) bad_plan("holds a sliced form for a program that has none");
    try {
      prog->sliced = program_from_plan(std::move(form), *s.sliced);
    } catch (const Error& e) {
      bad_plan(std::string("of the sliced form does not fit it: ") + e.what());
    }
    prog->slice_leaf = leaf;
  }
  return prog;
}

std::string save_program(const Program& p) {
  SavedPlan plan = save_plan(p);
  return io::save_ir(*p.ir, &plan);
}

std::shared_ptr<const Program> load_program(std::span<const uint8_t> bytes, PlanCache* plans,
                                            std::atomic<uint64_t>* count) {
  io::Loaded g = io::load(bytes);
  if (g.plan) return program_from_plan(g.ir, *g.plan, CompileOptions{.count = count});
  return plans ? plans->get(g.ir) : compile(g.ir, CompileOptions{.count = count});
}

}  // namespace af
