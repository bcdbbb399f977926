// cse (trace-time memoize, docs/SEMANTICS.md §4): identical pure equations —
// same primitive, params, input atoms, input structure and tags — are
// merged into the first. Effectful and no-merge equations (checkpoint, and
// control flow holding one) are never merged; nondeterministic ones (LM
// calls, host functions) only when the caller asks. Sub-IRs are CSE'd too.
#include <unordered_map>
#include <variant>

#include "transforms/builder.h"
#include "transforms/transforms.h"

namespace af {

namespace {

Params cse_params(const Params& params, bool merge_nondeterministic) {
  Params out;
  for (const auto& [name, p] : params.items()) {
    if (auto* one = std::get_if<IRPtr>(&p)) {
      out.set(name, *one ? cse(**one, merge_nondeterministic) : *one);
    } else if (auto* list = std::get_if<IRList>(&p)) {
      IRList l;
      for (const IRPtr& x : *list) l.push_back(x ? cse(*x, merge_nondeterministic) : x);
      out.set(name, std::move(l));
    } else if (auto* map = std::get_if<IRMap>(&p)) {
      IRMap m;
      for (const auto& [k, x] : *map) m.emplace_back(k, x ? cse(*x, merge_nondeterministic) : x);
      out.set(name, std::move(m));
    } else {
      out.set(name, p);
    }
  }
  return out;
}

bool has_sub_irs(const Params& params) {
  for (const auto& [name, p] : params.items())
    if (!std::holds_alternative<Value>(p)) return true;
  return false;
}

}  // namespace

IRPtr cse(const IR& ir, bool merge_nondeterministic) {
  std::vector<Atom> map(ir.vars.size());
  for (const Atom& a : ir.in)
    if (a.is_var()) map[a.var] = a;
  auto remap = [&](const Atom& a) { return a.is_var() ? map[a.var] : a; };
  std::vector<Eqn> kept;
  kept.reserve(ir.eqns.size());
  std::unordered_multimap<uint64_t, size_t> seen;
  for (const Eqn& src : ir.eqns) {
    Eqn e = src;
    for (Atom& a : e.in) a = remap(a);
    if (has_sub_irs(e.params)) e.params = cse_params(e.params, merge_nondeterministic);
    if (mergeable(e, merge_nondeterministic)) {
      uint64_t h = eqn_hash(e);
      bool merged = false;
      auto [lo, hi] = seen.equal_range(h);
      for (auto it = lo; it != hi && !merged; ++it) {
        const Eqn& prev = kept[it->second];
        if (!eqn_same(prev, e)) continue;
        for (size_t k = 0; k < e.out.size(); ++k) map[e.out[k]] = Atom::of_var(prev.out[k]);
        merged = true;
      }
      if (merged) continue;
      seen.emplace(h, kept.size());
    }
    for (VarId v : e.out) map[v] = Atom::of_var(v);
    kept.push_back(std::move(e));
  }
  std::vector<Atom> out;
  for (const Atom& a : ir.out) out.push_back(remap(a));
  Builder b;
  b.ir().vars = ir.vars;
  b.ir().eqns = std::move(kept);
  return b.finish(ir.in, ir.in_tree, std::move(out), ir.out_tree, ir.in_roles);
}

}  // namespace af
