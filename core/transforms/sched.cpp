// sched (SEMANTICS.md §4): annotates every equation (and those of sub-IRs)
// with its dependency level and its priority — the cost-weighted longest
// path from it to an output, each primitive weighing its cost hint plus the
// longest path of its heaviest sub-IR. The text printer and DOT show them;
// execution never depends on them (it is dataflow, DESIGN.md §3).
#include <algorithm>
#include <variant>

#include "transforms/builder.h"
#include "transforms/transforms.h"

namespace af {

namespace {

// Longest cost-weighted path through an (already scheduled) IR.
double critical_path(const IR& ir) {
  double best = 0;
  for (const Eqn& e : ir.eqns)
    if (e.sched) best = std::max(best, e.sched->priority);
  return best;
}

// Schedules sub-IRs in place; returns the heaviest sub-IR path.
double sched_params(Params& params) {
  double heaviest = 0;
  Params out;
  for (const auto& [name, p] : params.items()) {
    if (auto* one = std::get_if<IRPtr>(&p)) {
      IRPtr s = *one ? sched(**one) : *one;
      if (s) heaviest = std::max(heaviest, critical_path(*s));
      out.set(name, s);
    } else if (auto* list = std::get_if<IRList>(&p)) {
      IRList l;
      for (const IRPtr& x : *list) {
        l.push_back(x ? sched(*x) : x);
        if (l.back()) heaviest = std::max(heaviest, critical_path(*l.back()));
      }
      out.set(name, std::move(l));
    } else if (auto* map = std::get_if<IRMap>(&p)) {
      IRMap m;
      for (const auto& [k, x] : *map) {
        m.emplace_back(k, x ? sched(*x) : x);
        if (m.back().second) heaviest = std::max(heaviest, critical_path(*m.back().second));
      }
      out.set(name, std::move(m));
    } else {
      out.set(name, p);
    }
  }
  params = std::move(out);
  return heaviest;
}

}  // namespace

IRPtr sched(const IR& ir) {
  auto res = std::make_shared<IR>(ir);
  const size_t n = res->eqns.size();
  std::vector<size_t> def = defining_eqn(*res);
  std::vector<double> cost(n, 0.0);
  std::vector<uint32_t> level(n, 0);
  std::vector<std::vector<size_t>> consumers(n);
  std::vector<size_t> order = topological_order(*res);
  for (size_t i : order) {
    Eqn& e = res->eqns[i];
    cost[i] = e.prim->cost + sched_params(e.params);
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
  for (size_t i = 0; i < n; ++i) res->eqns[i].sched = EqnSched{level[i], priority[i]};
  return res;
}

}  // namespace af
