// sched (docs/SEMANTICS.md §4): annotates every equation (and those of sub-IRs)
// with its dependency level and its priority — the cost-weighted longest
// path from it to an output, each equation weighing eqn_cost (ir/ir.h: its
// cost hint plus its heaviest sub-IR's path). The text printer and DOT show them;
// execution never depends on them (it is dataflow, core/exec/README.md).
#include <algorithm>
#include <variant>

#include "transforms/builder.h"
#include "transforms/memo.h"
#include "transforms/transforms.h"

namespace af {

namespace {

// A sub-IR shared by several equations is scheduled once (transforms/memo.h).
IRPtr sched_sub(const IRPtr& ir) {
  if (!ir) return ir;
  return memoized<IRPtr>(MemoOp::Sched, ir, {}, {}, [&] { return sched(*ir); });
}

// Schedules the sub-IRs in place.
void sched_params(Params& params) {
  Params out;
  for (const auto& [name, p] : params.items()) {
    if (auto* one = std::get_if<IRPtr>(&p)) {
      out.set(name, sched_sub(*one));
    } else if (auto* list = std::get_if<IRList>(&p)) {
      IRList l;
      for (const IRPtr& x : *list) l.push_back(sched_sub(x));
      out.set(name, std::move(l));
    } else if (auto* map = std::get_if<IRMap>(&p)) {
      IRMap m;
      for (const auto& [k, x] : *map) m.emplace_back(k, sched_sub(x));
      out.set(name, std::move(m));
    } else {
      out.set(name, p);
    }
  }
  params = std::move(out);
}

}  // namespace

IRPtr sched(const IR& ir) {
  TransformScope scope(ir);
  auto res = std::make_shared<IR>(ir);
  const size_t n = res->eqns.size();
  std::vector<size_t> def = defining_eqn(*res);
  std::vector<double> cost(n, 0.0);
  std::vector<uint32_t> level(n, 0);
  std::vector<std::vector<size_t>> consumers(n);
  std::vector<size_t> order = topological_order(*res);
  for (size_t i : order) {
    Eqn& e = res->eqns[i];
    cost[i] = eqn_cost(e);
    sched_params(e.params);
    for (const Atom& a : e.in) {
      if (!a.is_var() || def[a.var] == SIZE_MAX) continue;
      size_t j = def[a.var];
      level[i] = std::max(level[i], level[j] + 1);
      consumers[j].push_back(i);
    }
  }
  std::vector<double> priority(n, 0.0);
  for (size_t r = order.size(); r-- > 0;) {
    size_t i = order[r];
    double after = 0;
    for (size_t j : consumers[i]) after = std::max(after, priority[j]);
    priority[i] = cost[i] + after;
  }
  for (size_t i = 0; i < n; ++i) res->eqns[i].set_sched(EqnSched{level[i], priority[i]});
  return res;
}

}  // namespace af
