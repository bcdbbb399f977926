#include <unordered_set>

#include "ir/prim.h"
#include "value/error.h"

namespace af {

namespace {

// Sub-IRs already validated in this call: a DAG of shared sub-IRs is
// checked once per distinct sub-IR, not once per path to it. (Not kept with
// the IR: an abstract rule may depend on what the host registered.)
using Validated = std::unordered_set<const IR*>;

void validate_at(const IR& ir, const std::string& where, Validated& done) {
  auto bad = [&](const std::string& why) { invalid("invalid IR" + where + ": " + why); };
  const size_t n = ir.vars.size();
  std::vector<bool> defined(n, false);
  auto define = [&](VarId v, const std::string& by) {
    if (v >= n) bad(by + " defines %" + std::to_string(v) + ", beyond the " + std::to_string(n) + " vars");
    if (defined[v]) bad("%" + std::to_string(v) + " is defined twice (" + by + ")");
    defined[v] = true;
  };
  auto use = [&](const Atom& a, const std::string& by) {
    if (!a.is_var()) return;
    if (a.var >= n || !defined[a.var]) bad(by + " uses %" + std::to_string(a.var) + " before it is defined");
  };
  if (ir.in_tree.root().type != TreeDef::NodeType::List) bad("the inputs are not a list");
  if (ir.in.size() != ir.in_tree.num_leaves()) bad("input leaves do not match the input structure");
  if (!ir.in_roles.empty() && ir.in_roles.size() != ir.in.size()) bad("input roles do not match the input leaves");
  for (InputRole r : ir.in_roles)
    if (uint8_t(r) > uint8_t(InputRole::Cotangent)) bad("an input role is not primal, tangent or cotangent");
  if (ir.out.size() != ir.out_tree.num_leaves()) bad("output leaves do not match the output structure");
  for (const Atom& a : ir.in)
    if (a.is_var()) define(a.var, "an input");
  for (size_t i = 0; i < ir.eqns.size(); ++i) {
    const Eqn& e = ir.eqns[i];
    std::string by = "equation " + std::to_string(i);
    if (!e.prim) bad(by + " has no primitive");
    by += " (" + e.prim->name + ")";
    if (e.in.size() != e.in_tree.num_leaves()) bad(by + ": inputs do not match the input structure");
    if (e.out.size() != e.out_tree.num_leaves()) bad(by + ": outputs do not match the output structure");
    std::vector<Aval> in;
    for (const Atom& a : e.in) {
      use(a, by);
      in.push_back(a.is_var() ? ir.vars[a.var] : aval_of(a.lit));
    }
    // Sub-IRs first: a primitive's abstract rule may look inside them.
    for (const auto& item : e.params.items()) {
      // Named, not a structured binding: lambdas capture it (clang 14).
      const std::string& name = item.first;
      const Param& p = item.second;
      std::string sub = where + " > " + by + " param " + name;
      auto check = [&](const IRPtr& x, const std::string& at) {
        if (!x) bad(by + ": param " + name + " holds a null IR");
        if (done.insert(x.get()).second) validate_at(*x, at, done);
      };
      if (auto* one = std::get_if<IRPtr>(&p)) {
        check(*one, sub);
      } else if (auto* list = std::get_if<IRList>(&p)) {
        for (const auto& x : *list) check(x, sub);
      } else if (auto* map = std::get_if<IRMap>(&p)) {
        for (const auto& [k, x] : *map) check(x, sub + "[" + k + "]");
      }
    }
    AbstractOut shape;
    try {
      shape = e.prim->abstract_eval(e.params, in, e.in_tree);
    } catch (const Error& err) {
      // Keep the rule's code (NOT_FOUND for an unregistered host function, ...).
      throw Error(err.code(), "invalid IR" + where + ": " + by + ": " + err.what(), err.cause_ptr());
    }
    if (!(shape.out_tree == e.out_tree)) bad(by + ": output structure differs from the primitive's rule");
    for (size_t k = 0; k < e.out.size(); ++k) {
      define(e.out[k], by);
      if (!(ir.vars[e.out[k]] == shape.out[k]))
        bad(by + ": output " + std::to_string(k) + " is declared " + aval_name(ir.vars[e.out[k]]) +
            " but the primitive produces " + aval_name(shape.out[k]));
    }
  }
  for (const Atom& a : ir.out) use(a, "the output");
}

}  // namespace

void validate(const IR& ir) {
  Validated done;
  validate_at(ir, "", done);
}

}  // namespace af
