// Dependency queries over an IR's equations. Edges run through variables: eqn
// j depends on eqn i when one of j's input atoms is a var i defines. These
// functions also accept IRs whose equations are out of order (that is what
// topological_order is for), so none of them assumes the stored order.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <queue>
#include <string>

#include "ir/ir.h"
#include "ir/prim.h"
#include "value/error.h"

namespace af {

namespace {

constexpr size_t kInput = SIZE_MAX;

std::string var_name(VarId v) { return "%" + std::to_string(v); }

std::string eqn_name(const IR& ir, size_t i) {
  const Prim* p = ir.eqns[i].prim;
  return "equation " + std::to_string(i) + " (" + (p ? p->name : "?") + ")";
}

void check_index(const IR& ir, size_t i, const char* op) {
  if (i >= ir.eqns.size())
    invalid(std::string(op) + ": equation index " + std::to_string(i) + " is out of range (the IR has " +
            std::to_string(ir.eqns.size()) + " equations)");
}

// Marks every equation reachable from `start` through `next(i)` (excluding
// `start` itself unless a cycle leads back to it) and returns them sorted.
template <class Next>
std::vector<size_t> reach(size_t n, size_t start, Next next) {
  std::vector<bool> seen(n, false);
  std::vector<size_t> stack{start};
  while (!stack.empty()) {
    size_t i = stack.back();
    stack.pop_back();
    next(i, [&](size_t j) {
      if (!seen[j]) {
        seen[j] = true;
        stack.push_back(j);
      }
    });
  }
  std::vector<size_t> out;
  for (size_t j = 0; j < n; ++j)
    if (seen[j] && j != start) out.push_back(j);
  return out;
}

}  // namespace

std::vector<size_t> defining_eqn(const IR& ir) {
  // Vars out of range or defined twice are validate()'s to report; here the
  // first definition wins and out-of-range ids are ignored.
  std::vector<size_t> def(ir.vars.size(), kInput);
  for (size_t i = ir.eqns.size(); i-- > 0;)
    for (VarId v : ir.eqns[i].out)
      if (v < def.size()) def[v] = i;
  return def;
}

std::vector<size_t> ancestors(const IR& ir, size_t i) {
  check_index(ir, i, "ancestors");
  std::vector<size_t> def = defining_eqn(ir);
  return reach(ir.eqns.size(), i, [&](size_t k, auto visit) {
    for (const Atom& a : ir.eqns[k].in)
      if (a.is_var() && a.var < def.size() && def[a.var] != kInput) visit(def[a.var]);
  });
}

std::vector<size_t> descendants(const IR& ir, size_t i) {
  check_index(ir, i, "descendants");
  std::vector<std::vector<size_t>> users(ir.vars.size());
  for (size_t j = 0; j < ir.eqns.size(); ++j)
    for (const Atom& a : ir.eqns[j].in)
      if (a.is_var() && a.var < users.size()) users[a.var].push_back(j);
  return reach(ir.eqns.size(), i, [&](size_t k, auto visit) {
    for (VarId v : ir.eqns[k].out)
      if (v < users.size())
        for (size_t j : users[v]) visit(j);
  });
}

std::vector<size_t> topological_order(const IR& ir) {
  const size_t n = ir.eqns.size();
  std::vector<size_t> def = defining_eqn(ir);
  std::vector<bool> is_input(ir.vars.size(), false);
  for (const Atom& a : ir.in)
    if (a.is_var() && a.var < is_input.size()) is_input[a.var] = true;

  auto check_defined = [&](VarId v, const std::string& where) {
    if (v >= def.size() || (def[v] == kInput && !is_input[v]))
      invalid("topological_order: " + where + " uses " + var_name(v) +
              ", which is neither an IR input nor the output of an equation");
  };

  // One count per input use, so a var read twice is released twice.
  std::vector<size_t> pending(n, 0);
  std::vector<std::vector<size_t>> consumers(n);
  for (size_t j = 0; j < n; ++j)
    for (const Atom& a : ir.eqns[j].in) {
      if (!a.is_var()) continue;
      check_defined(a.var, eqn_name(ir, j));
      if (def[a.var] == kInput) continue;
      ++pending[j];
      consumers[def[a.var]].push_back(j);
    }
  for (size_t k = 0; k < ir.out.size(); ++k)
    if (ir.out[k].is_var()) check_defined(ir.out[k].var, "output " + std::to_string(k));

  // Kahn's algorithm with a min-heap: the lowest-index ready equation goes
  // first, so an already valid order comes back unchanged.
  std::priority_queue<size_t, std::vector<size_t>, std::greater<size_t>> ready;
  for (size_t j = 0; j < n; ++j)
    if (pending[j] == 0) ready.push(j);
  std::vector<size_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    size_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (size_t j : consumers[i])
      if (--pending[j] == 0) ready.push(j);
  }
  if (order.size() == n) return order;

  // Every left-over equation waits on a left-over producer, so following
  // those links from any of them must come back around: report that loop.
  auto stuck_input = [&](size_t j) {
    for (const Atom& a : ir.eqns[j].in)
      if (a.is_var() && def[a.var] != kInput && pending[def[a.var]] != 0) return a.var;
    return kNoVar;  // unreachable: pending[j] != 0 implies a stuck producer
  };
  std::vector<size_t> step(n, SIZE_MAX);
  std::vector<size_t> path;
  size_t j = 0;
  while (pending[j] == 0) ++j;
  while (step[j] == SIZE_MAX) {
    step[j] = path.size();
    path.push_back(j);
    j = def[stuck_input(j)];
  }
  std::string loop = eqn_name(ir, j);
  for (size_t k = step[j]; k < path.size(); ++k) {
    size_t next = k + 1 < path.size() ? path[k + 1] : j;
    loop += " uses " + var_name(stuck_input(path[k])) + " from " + eqn_name(ir, next);
  }
  invalid("topological_order: the equations form a cycle: " + loop);
}

double eqn_cost(const Eqn& e) {
  double inner = 0;
  e.params.any_ir([&](const IR& ir) {
    inner = std::max(inner, ir.facts.path_cost([&] { return ir_path_cost(ir); }));
    return false;
  });
  return std::max(0.0, e.prim->cost) + inner;
}

double ir_path_cost(const IR& ir) {
  std::vector<double> done(ir.vars.size(), 0.0);  // when each var exists
  double longest = 0;
  for (size_t i : topological_order(ir)) {
    const Eqn& e = ir.eqns[i];
    double start = 0;
    for (const Atom& a : e.in)
      if (a.is_var()) start = std::max(start, done[a.var]);
    const double end = start + eqn_cost(e);
    for (VarId v : e.out) done[v] = end;
    longest = std::max(longest, end);
  }
  return longest;
}

}  // namespace af
