// Structural primitives: stop_gradient, depends, checkpoint. Each is an
// identity on (part of) its inputs; what distinguishes them is how
// transforms treat them (see docs/SEMANTICS.md §3).
#include "rt/context.h"
#include "prims/ops.h"
#include "ir/registry.h"
#include "prims/builtins.h"
#include "trace/trace.h"
#include "transforms/batch.h"
#include "transforms/dce.h"
#include "transforms/pullback.h"
#include "transforms/pushforward.h"
#include "value/error.h"

namespace af {

// ---- params (prims/ops.h): each name spelled once

namespace {
constexpr const char* kParamCollection = "collection";
constexpr const char* kParamKey = "key";
}  // namespace

Params checkpoint_params(std::string collection, std::string key) {
  Params p;
  p.set(kParamCollection, Value::str(std::move(collection)));
  p.set(kParamKey, Value::str(std::move(key)));
  return p;
}
std::vector<ParamSpec> checkpoint_param_specs() {
  return {{.name = kParamCollection, .value_kind = Kind::Str}, {.name = kParamKey, .value_kind = Kind::Str}};
}
const std::string& checkpoint_collection(const Params& p) { return p.value(kParamCollection).as_str(); }
const std::string& checkpoint_key(const Params& p) { return p.value(kParamKey).as_str(); }

namespace {

// Output = the first positional input tree, unchanged.
AbstractOut first_input_abstract(const Params&, std::span<const Aval> in, const TreeDef& in_tree) {
  if (in_tree.root().n_children == 0) invalid("the primitive takes a value as its first argument; none is given");
  TreeDef first = in_tree.child(0);
  return AbstractOut{std::vector<Aval>(in.begin(), in.begin() + long(first.num_leaves())), first};
}

void first_input_impl(const Eqn& e, std::span<const Value> in, std::span<Value> out, RunEnv&) {
  for (size_t i = 0; i < out.size(); ++i) out[i] = in[i];
}


// ---- checkpoint: the hook of collect / inject (rt/scopes.h), which order
// its hits by their place in the program (hit_rank), not by when they run

void checkpoint_impl(const Eqn& e, std::span<const Value> in, std::span<Value> out, RunEnv& env) {
  RunScopes* scopes = scopes_of(env);
  if (!scopes || !scopes->any_checkpoint_scope()) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = in[i];
    return;
  }
  const TreeDef value_tree = e.in_tree.child(0);
  const Value value = value_tree.unflatten(in.first(value_tree.num_leaves()));
  const std::string& key = checkpoint_key(e.params);
  auto check = [&](const Value& injected) {
    check_structure(injected, value_tree, "inject: the value for checkpoint \"" + key + "\"",
                    [&](size_t k, const Value& got, const std::string& path) {
                      if (got.is_leaf() && !(aval_of(got) == aval_of(in[k])))
                        invalid(path + ": expected " + aval_name(aval_of(in[k])) + ", found " +
                                aval_name(aval_of(got)));
                    });
  };
  Value result =
      scopes->checkpoint(checkpoint_collection(e.params), key, value, hit_rank(env), check);
  std::vector<Value> leaves;
  flatten_into(result, leaves);
  for (size_t i = 0; i < out.size(); ++i) out[i] = leaves[i];
}

// ---- transform rules
//
// stop_gradient: batch as is; tangents and cotangents are Zero.
// depends:       batch as is; the value's tangents / cotangents pass
//                through, the deps get Zero (dce keeps the deps: the default
//                rule reads every input of a kept equation).
// checkpoint:    batch maps over the items (one checkpoint hit per item);
//                push / pull apply the checkpoint again to the (materialized)
//                tangents / cotangents, so collectors see both; dce never
//                removes it (effectful), cse never merges it (no-merge).

void zero_push(PushCtx& ctx, const Eqn&) {
  std::vector<Atom> o = ctx.emit_primal();
  for (size_t k = 0; k < o.size(); ++k) ctx.tangent_out(k, std::nullopt);
}

void zero_pull_bwd(PullCtx&, const Eqn&) {}

void pass_push(PushCtx& ctx, const Eqn&) {
  std::vector<Atom> o = ctx.emit_primal();
  for (size_t k = 0; k < o.size(); ++k) ctx.tangent_out(k, ctx.tangent(k));
}

void pass_pull_bwd(PullCtx& ctx, const Eqn&) {
  for (size_t k = 0; k < ctx.n_out(); ++k)
    if (ctx.cotangent(k)) ctx.add_cotangent(k, *ctx.cotangent(k));
}

void checkpoint_push(PushCtx& ctx, const Eqn& e) {
  std::vector<Atom> o = ctx.emit_primal();
  std::vector<Atom> t;
  for (size_t k = 0; k < o.size(); ++k) t.push_back(ctx.tangent_or_zero(k));
  std::vector<Atom> to = ctx.b.emit(*e.prim, e.params, std::move(t), e.in_tree);
  for (size_t k = 0; k < to.size(); ++k) ctx.tangent_out(k, to[k]);
}

void checkpoint_pull_bwd(PullCtx& ctx, const Eqn& e) {
  std::vector<Atom> c;
  for (size_t k = 0; k < ctx.n_out(); ++k) c.push_back(ctx.cotangent_or_zero(k));
  std::vector<Atom> co = ctx.b.emit(*e.prim, e.params, std::move(c), e.in_tree);
  for (size_t k = 0; k < co.size(); ++k) ctx.add_cotangent(k, co[k]);
}

}  // namespace

void add_control_prims(std::vector<Prim>& out) {
  // stop_gradient(tree) -> tree
  out.push_back(Prim{
      .name = "stop_gradient",
      .cost = 0.0,
      .params = {},
      .impl = first_input_impl,
      .abstract_eval = first_input_abstract,
      .batch = batch_identity,
      .pushforward = zero_push,
      .pullback_fwd = pull_fwd_copy,
      .pullback_bwd = zero_pull_bwd,
      .dce = dce_whole,
  });
  // depends(value, deps...) -> value, once every dep exists
  out.push_back(Prim{
      .name = "depends",
      .flags = kObservable,
      .cost = 0.0,
      .params = {},
      .impl = first_input_impl,
      .abstract_eval = first_input_abstract,
      .batch = batch_identity,
      .pushforward = pass_push,
      .pullback_fwd = pull_fwd_copy,
      .pullback_bwd = pass_pull_bwd,
      .dce = dce_whole,  // keeps the deps alive while the result is read
  });
  // checkpoint(value; key P, collection P) -> value: never removed or merged
  out.push_back(Prim{
      .name = "checkpoint",
      .flags = kEffectful | kNoMerge | kObservable,
      .cost = 0.0,
      .params = checkpoint_param_specs(),
      .impl = checkpoint_impl,
      .abstract_eval = first_input_abstract,
      .batch = batch_by_map,
      .pushforward = checkpoint_push,
      .pullback_fwd = pull_fwd_copy,
      .pullback_bwd = checkpoint_pull_bwd,
      .dce = dce_whole,  // and never removed: it is effectful
  });
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
  // Injecting while tracing turns the value into a literal (docs/SEMANTICS.md §4).
  RunScopes* scopes = recording() ? scopes_of(env) : nullptr;
  if (scopes) {
    if (std::optional<Value> injected = scopes->take_injected(std::string(collection), std::string(key))) {
      check_structure(*injected, TreeDef::of(v), "inject: the value for checkpoint \"" + std::string(key) + "\"");
      return *injected;
    }
  }
  static const Prim& p = prim("checkpoint");
  return bind(p, checkpoint_params(std::string(collection), std::string(key)), Value::list({v}), env);
}

}  // namespace af
