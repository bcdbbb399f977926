// Structural primitives: stop_gradient, depends, checkpoint. Each is an
// identity on (part of) its inputs; what distinguishes them is how
// transforms treat them (see SEMANTICS.md §3).
#include "prims/ops.h"
#include "prims/registry.h"
#include "trace/trace.h"
#include "value/error.h"

namespace af {

namespace {

// Output = the first positional input tree, unchanged.
AbstractOut first_input_abstract(const Params&, std::span<const Aval> in, const TreeDef& in_tree) {
  TreeDef first = in_tree.child(0);
  return AbstractOut{std::vector<Aval>(in.begin(), in.begin() + long(first.num_leaves())), first};
}

void first_input_impl(const Eqn& e, std::span<const Value> in, std::span<Value> out, RunEnv&) {
  for (size_t i = 0; i < out.size(); ++i) out[i] = in[i];
}

Prim identity_like(const char* name, uint32_t flags) {
  Prim p;
  p.name = name;
  p.flags = flags;
  p.cost = 0.0;
  p.impl = first_input_impl;
  p.abstract_eval = first_input_abstract;
  return p;
}

}  // namespace

void add_control_prims(std::vector<Prim>& out) {
  // stop_gradient(tree) -> tree
  out.push_back(identity_like("stop_gradient", kPure));
  // depends(value, deps...) -> value, once every dep exists
  out.push_back(identity_like("depends", kPure));
  // checkpoint(value; key P, collection P) -> value: never removed or merged
  out.push_back(identity_like("checkpoint", kEffectful | kNoMerge));
}

Value op_stop_gradient(const Value& v, RunEnv& env) {
  static const Prim& p = prim("stop_gradient");
  return bind(p, Params(), Value::list({v}), env);
}

Value op_depends(const Value& value, std::span<const Value> deps, RunEnv& env) {
  static const Prim& p = prim("depends");
  std::vector<Value> in{value};
  in.insert(in.end(), deps.begin(), deps.end());
  return bind(p, Params(), Value::list(std::move(in)), env);
}

Value op_checkpoint(const Value& v, std::string_view key, std::string_view collection,
                    RunEnv& env) {
  if (!valid_utf8(key) || !valid_utf8(collection))
    invalid("checkpoint: key and collection must be valid UTF-8");
  static const Prim& p = prim("checkpoint");
  Params params;
  params.set("collection", Value::str(std::string(collection)));
  params.set("key", Value::str(std::string(key)));
  return bind(p, std::move(params), Value::list({v}), env);
}

}  // namespace af
