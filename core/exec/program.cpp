// compile(): IR -> Program. DCE and CSE act on the plan (which equations
// run, which slot a var reads), so the IR itself is kept as given and the
// program's equation indices still name equations of that IR.
#include "exec/program.h"

#include <algorithm>
#include <unordered_map>

#include "transforms/builder.h"
#include "value/error.h"

namespace af {

namespace {

// Above any cost-weighted path a program can have (an LM call weighs 1000).
constexpr double kUrgentPriority = 1e12;

bool is_urgent(const Eqn& e) {
  return e.tags && std::binary_search(e.tags->begin(), e.tags->end(), std::string("urgent"));
}

bool mergeable(const Eqn& e, const CompileOptions& o) {
  uint32_t f = e.prim->flags;
  if (eqn_has_effects(e)) return false;  // also a switch / loop / map holding a checkpoint
  if ((f & kNondeterministic) && !o.cse_nondeterministic) return false;
  return true;
}

uint64_t eqn_key(const Eqn& e, const std::vector<Atom>& in) {
  uint64_t h = std::hash<const void*>()(e.prim) * 0x9e3779b97f4a7c15ULL;
  auto mix = [&](uint64_t x) { h = (h ^ x) * 0x100000001b3ULL; };
  for (const Atom& a : in) mix(a.is_var() ? a.var : a.lit.hash() ^ 0x5555);
  mix(e.in_tree.hash());
  mix(e.params.hash());
  return h;
}

}  // namespace

bool eqn_runs_async(const Eqn& e) {
  if (!e.prim->impl_async) return false;
  bool holds_irs = false;
  bool async = e.params.any_ir([&](const IR& ir) {
    holds_irs = true;
    // Kept with the sub-IR (IRFacts): asked once however many paths reach it.
    return ir.facts.flag(IRFacts::kAsyncWork, [&] { return ir_has_async_work(ir); });
  });
  return async || !holds_irs;
}

bool ir_has_async_work(const IR& ir) {
  for (const Eqn& e : ir.eqns)
    if (eqn_runs_async(e)) return true;
  return false;
}

void mark_last_uses(Program& p) {
  // Only single reads move: consumers of one slot may run concurrently, so
  // which read comes last is not known before the run.
  std::vector<uint32_t> reads(p.n_slots, 0);
  for (uint32_t s : p.args) ++reads[s];
  for (uint32_t s : p.out_slots) reads[s] += 2;
  p.last_use.resize(p.args.size());
  for (size_t i = 0; i < p.args.size(); ++i) p.last_use[i] = reads[p.args[i]] == 1;
}

std::shared_ptr<const Program> compile(IRPtr ir, const CompileOptions& o) {
  validate(*ir);
  auto prog = std::make_shared<Program>();
  const IR& g = *ir;
  const size_t n_eqns = g.eqns.size();
  const uint32_t n_vars = uint32_t(g.vars.size());

  // Var -> the var whose slot it reads (CSE aliases).
  std::vector<VarId> alias(n_vars);
  for (VarId v = 0; v < n_vars; ++v) alias[v] = v;
  auto resolve = [&](const Atom& a) {
    return a.is_var() ? Atom::of_var(alias[a.var]) : a;
  };

  std::vector<bool> live(n_eqns, true);
  if (o.cse) {
    std::unordered_map<uint64_t, std::vector<size_t>> seen;
    for (size_t i = 0; i < n_eqns; ++i) {
      const Eqn& e = g.eqns[i];
      if (!mergeable(e, o)) continue;
      std::vector<Atom> in;
      in.reserve(e.in.size());
      for (const Atom& a : e.in) in.push_back(resolve(a));
      auto& bucket = seen[eqn_key(e, in)];
      bool merged = false;
      for (size_t j : bucket) {
        const Eqn& f = g.eqns[j];
        if (f.prim != e.prim || !(f.in_tree == e.in_tree) || !(f.params == e.params) ||
            f.out.size() != e.out.size() || f.in.size() != in.size())
          continue;
        bool same = true;
        for (size_t k = 0; k < in.size() && same; ++k) same = resolve(f.in[k]) == in[k];
        if (!same) continue;
        for (size_t k = 0; k < e.out.size(); ++k) alias[e.out[k]] = f.out[k];
        live[i] = false;
        merged = true;
        ++prog->merged_cse;
        break;
      }
      if (!merged) bucket.push_back(i);
    }
  }

  if (o.dce) {
    std::vector<bool> used(n_vars, false);
    for (const Atom& a : g.out)
      if (a.is_var()) used[alias[a.var]] = true;
    for (size_t i = n_eqns; i-- > 0;) {
      if (!live[i]) continue;
      const Eqn& e = g.eqns[i];
      bool needed = eqn_has_effects(e);  // transforms/builder.h: sub-IRs included
      for (VarId v : e.out) needed = needed || used[v];
      if (!needed) {
        live[i] = false;
        ++prog->removed_dce;
        continue;
      }
      for (const Atom& a : e.in)
        if (a.is_var()) used[alias[a.var]] = true;
    }
  }

  // Slots: one per var, then one per literal.
  auto slot_of = [&](const Atom& a) -> uint32_t {
    if (a.is_var()) return alias[a.var];
    prog->constants.push_back(a.lit);
    return n_vars + uint32_t(prog->constants.size() - 1);
  };
  for (const Atom& a : g.in) prog->in_slots.push_back(slot_of(a));

  std::vector<uint32_t> producer(n_vars, UINT32_MAX);  // var -> node
  std::vector<std::vector<uint32_t>> cons;
  for (size_t i = 0; i < n_eqns; ++i) {
    if (!live[i]) continue;
    const Eqn& e = g.eqns[i];
    Program::Node n{};
    n.eqn = &e;
    n.eqn_index = uint32_t(i);
    n.in_begin = uint32_t(prog->args.size());
    n.in_count = uint32_t(e.in.size());
    n.out_begin = uint32_t(prog->results.size());
    n.out_count = uint32_t(e.out.size());
    n.async = eqn_runs_async(e);
    if (!e.prim->impl && !n.async)
      invalid("compile: primitive " + e.prim->name + " has no implementation");
    const uint32_t id = uint32_t(prog->nodes.size());
    cons.emplace_back();
    for (const Atom& a : e.in) {
      uint32_t s = slot_of(a);
      prog->args.push_back(s);
      if (a.is_var() && producer[alias[a.var]] != UINT32_MAX) {
        ++n.n_deps;
        cons[producer[alias[a.var]]].push_back(id);
      }
    }
    for (VarId v : e.out) {
      prog->results.push_back(v);
      producer[v] = id;
    }
    prog->max_arity = std::max({prog->max_arity, e.in.size(), e.out.size()});
    prog->n_async += n.async;
    prog->nodes.push_back(n);
  }
  for (const Atom& a : g.out) prog->out_slots.push_back(slot_of(a));
  prog->n_slots = n_vars + uint32_t(prog->constants.size());
  mark_last_uses(*prog);

  // Consumer lists, then priorities in reverse order (nodes are topological).
  for (size_t id = 0; id < prog->nodes.size(); ++id) {
    Program::Node& n = prog->nodes[id];
    n.cons_begin = uint32_t(prog->consumers.size());
    n.cons_count = uint32_t(cons[id].size());
    prog->consumers.insert(prog->consumers.end(), cons[id].begin(), cons[id].end());
  }
  for (size_t id = prog->nodes.size(); id-- > 0;) {
    Program::Node& n = prog->nodes[id];
    double below = 0;
    for (uint32_t k = 0; k < n.cons_count; ++k)
      below = std::max(below, prog->nodes[prog->consumers[n.cons_begin + k]].priority);
    // The priority hint: an equation tagged "urgent" (a call a person waits
    // for) outranks any untagged path, and so does everything it needs.
    n.priority = eqn_cost(*n.eqn) + std::max(below, is_urgent(*n.eqn) ? kUrgentPriority : 0.0);
    prog->critical_path = std::max(prog->critical_path, n.priority);
    if (n.n_deps == 0) prog->roots.push_back(uint32_t(id));
  }
  std::stable_sort(prog->roots.begin(), prog->roots.end(), [&](uint32_t a, uint32_t b) {
    return prog->nodes[a].priority > prog->nodes[b].priority;
  });
  prog->ir = std::move(ir);
  return prog;
}

}  // namespace af
