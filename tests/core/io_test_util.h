// Shared by the saved-graph suites (io_*_test.cpp): a corpus of IRs that
// covers every construct a graph can hold, built by tracing the real
// primitives, plus test primitives that carry sub-IRs in every param kind.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "exec/context.h"
#include "rt/env.h"
#include "exec/sequential.h"
#include "io/afg.h"
#include "io/raw.h"
#include "ir/ir.h"
#include "ir/prim.h"
#include "prims/ops.h"
#include "ir/registry.h"
#include "trace/trace.h"
#include "transforms/batch.h"
#include "transforms/dce.h"
#include "transforms/pullback.h"
#include "transforms/transforms.h"
#include "value/error.h"

namespace af::iotest {

inline Value S(const char* s) { return Value::str(s); }
inline std::span<const uint8_t> as_span(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// "io_test.sub": takes any inputs, returns one str; its params may hold an
// IR ("one"), a list ("many"), a map ("cases") and a str ("label"), all
// declared, so the loader checks them generically.
inline AbstractOut sub_abstract(const Params&, std::span<const Aval>, const TreeDef&) {
  return {{Aval{Kind::Str, 0}}, TreeDef::leaf()};
}
inline void sub_impl(const Eqn& e, std::span<const Value> in, std::span<Value> out, RunEnv&) {
  out[0] = Value::str("sub:" + std::to_string(in.size()));
}
// A test primitive with every rule (the registry refuses one without): the
// shared rules, and no derivative.
inline Prim test_prim(const char* name, uint32_t version, std::vector<ParamSpec> params) {
  return Prim{
      .name = name,
      .version = version,
      .params = std::move(params),
      .impl = sub_impl,
      .abstract_eval = sub_abstract,
      .batch = batch_by_map,
      .pushforward = [](PushCtx&, const Eqn& e) { invalid(e.prim->name + " has no derivative"); },
      .pullback_fwd = pull_fwd_copy,
      .pullback_bwd = [](PullCtx&, const Eqn& e) { invalid(e.prim->name + " has no derivative"); },
      .dce = dce_whole,
  };
}
inline const Prim* sub_prim() {
  static const Prim* p = register_prim(test_prim("io_test.sub", 1,
                                                 {{.name = "cases", .kind = ParamKind::IRMap, .optional = true},
                                                  {.name = "label", .value_kind = Kind::Str, .optional = true},
                                                  {.name = "many", .kind = ParamKind::IRList, .optional = true},
                                                  {.name = "one", .kind = ParamKind::IR, .optional = true}}));
  return p;
}
// "io_test.host": like host_call, its str param "fn" names a host function.
inline const Prim* host_prim() {
  static const Prim* p =
      register_prim(test_prim("io_test.host", 1, {{.name = "fn", .value_kind = Kind::Str, .names_host_function = true}}));
  return p;
}
// "io_test.sub" version 2 exists too, so version lookups are exercised.
inline const Prim* sub_prim_v2() {
  static const Prim* p = register_prim(test_prim("io_test.sub", 2, {}));
  return p;
}

inline IRPtr trace_fn(const std::function<Value(std::span<const Value>)>& fn,
                      std::vector<Value> examples, Value mask = Value()) {
  return trace(fn, examples, mask);
}

// A context where the host function "search" (used by the host_call corpus
// entry) is registered; it answers "found:<its argument>".
inline RunEnv& env() {
  static ExecContext ctx;
  static RunEnv e = [] {
    auto fn = std::make_shared<HostFunction>();
    fn->name = "search";
    fn->call = [](std::span<const Value> args) { return Value::str("found:" + args[0].as_str()); };
    fn->result_kinds = Value::str("str");
    fn->result = parse_result_kinds(fn->result_kinds);
    ctx.hosts.add(fn);
    return RunEnv{&ctx};
  }();
  return e;
}

// hello(x) = concat(format("Hello, {}!", x), "?")
inline IRPtr hello() {
  return trace_fn(
      [](std::span<const Value> in) {
        Value g = op_format("Hello, {}!", std::vector<Value>{in[0]}, Value(), env());
        return op_concat(std::vector<Value>{g, S("?")}, env());
      },
      {S("x")});
}

// An equation of io_test.sub over flat inputs with the given params.
inline Eqn sub_eqn(std::vector<Atom> in, VarId out, Params params, const Prim* p = nullptr) {
  Eqn e;
  e.prim = p ? p : sub_prim();
  e.in_tree = TreeDef::flat_list(in.size());
  e.in = std::move(in);
  e.out = {out};
  e.out_tree = TreeDef::leaf();
  e.params = std::move(params);
  return e;
}

// An IR of one str input and the given equations (vars numbered by caller).
inline IRPtr flat_ir(size_t n_vars, std::vector<Eqn> eqns, Atom out) {
  auto ir = std::make_shared<IR>();
  ir->vars.assign(n_vars, Aval{Kind::Str, 0});
  ir->in = {Atom::of_var(0)};
  ir->in_tree = TreeDef::flat_list(1);
  ir->eqns = std::move(eqns);
  ir->out = {std::move(out)};
  ir->out_tree = TreeDef::leaf();
  return ir;
}

struct NamedIR {
  std::string name;
  IRPtr ir;
};

// Every construct a saved graph can hold.
inline std::vector<NamedIR> corpus() {
  std::vector<NamedIR> out;
  out.push_back({"hello", hello()});
  out.push_back({"identity", trace_fn([](std::span<const Value> in) { return in[0]; }, {S("x")})});
  out.push_back({"no_inputs", trace_fn([](std::span<const Value>) {
                   return op_concat(std::vector<Value>{S("a"), S("b")}, env());
                 }, {})});
  // Static inputs become literal atoms of every scalar kind, and trees with
  // dicts (insertion order kept), nulls and nested lists.
  out.push_back({"static_and_trees",
                 trace_fn(
                     [](std::span<const Value> in) {
                       Value f = op_format("{} {} {} {}",
                                           std::vector<Value>{in[0], in[1], in[2], in[3]}, Value(), env());
                       Value m = op_match(in[4].items()[0], S("k"), env());
                       return Value::dict({{"z", f}, {"a", Value::list({m, Value(), in[4]})}});
                     },
                     {Value::integer(-7), Value::floating(-0.0), Value::boolean(true), S("s"),
                      Value::list({S("q"), Value::dict({{"y", S("1")}, {"b", Value::integer(2)}})})},
                     Value::list({Value::boolean(true), Value::boolean(true), Value::boolean(false),
                                  Value::boolean(false), Value::boolean(false)}))});
  out.push_back({"tags_checkpoint_depends", trace_fn(
                                                [](std::span<const Value> in) {
                                                  push_tag("outer");
                                                  Value c = op_checkpoint(in[0], "key", "coll", env());
                                                  push_tag("inner");
                                                  Value s = op_stop_gradient(c, env());
                                                  pop_tag();
                                                  pop_tag();
                                                  return op_depends(s, std::vector<Value>{in[1]}, env());
                                                },
                                                {S("x"), S("y")})});
  // Literal values JSON cannot hold and values that look like the JSON
  // form's escapes.
  {
    double nan = std::numeric_limits<double>::quiet_NaN();
    double odd_nan;
    uint64_t bits = 0x7ff8000000000123ull;
    std::memcpy(&odd_nan, &bits, sizeof bits);
    Value lit = Value::list({Value::floating(nan), Value::floating(odd_nan),
                             Value::floating(INFINITY), Value::floating(-INFINITY),
                             Value::floating(1e300), Value::integer(std::numeric_limits<int64_t>::min()),
                             Value::dict({{"$float", S("nan")}}), Value::dict({{"$dict", Value::dict({})}}),
                             Value::dict({}), Value::list({}), Value(), S(""), S("\xc3\xa9\n\"\\")});
    Params ps;
    ps.set("label", S("odd values"));
    Eqn e = sub_eqn({Atom::of_var(0), Atom::literal(lit)}, 1, ps);
    out.push_back({"odd_literals", flat_ir(2, {e}, Atom::of_var(1))});
  }
  // Sub-IRs in every param kind; one sub-IR shared by several params.
  {
    IRPtr leaf = hello();
    Params inner;
    inner.set("one", leaf);
    IRPtr mid = flat_ir(2, {sub_eqn({Atom::of_var(0)}, 1, inner)}, Atom::of_var(1));
    Params ps;
    ps.set("one", mid);
    ps.set("many", IRList{leaf, mid, leaf});
    ps.set("cases", IRMap{{"a", leaf}, {"b", mid}});
    Params v2;
    Eqn e1 = sub_eqn({Atom::of_var(0)}, 1, ps);
    e1.set_sched(EqnSched{2, 3.5});  // what sched annotates survives saving
    Eqn e2 = sub_eqn({Atom::of_var(1), Atom::literal(S("lit"))}, 2, v2, sub_prim_v2());
    e2.set_tags(std::make_shared<const std::vector<std::string>>(std::vector<std::string>{"t"}));
    out.push_back({"sub_irs", flat_ir(3, {e1, e2}, Atom::of_var(2))});
  }
  // A host function, by name: the graph lists the names it calls.
  {
    Params ps;
    ps.set("name", S("search"));
    ps.set("result", S("str"));
    Eqn e = sub_eqn({Atom::of_var(0)}, 1, ps, &prim("host_call"));
    Params fn;
    fn.set("fn", S("lookup"));
    Eqn e2 = sub_eqn({Atom::of_var(1)}, 2, fn, host_prim());
    Eqn e3 = sub_eqn({Atom::of_var(2)}, 3, fn, host_prim());
    Params fn2;
    fn2.set("fn", S("calc"));
    Eqn e4 = sub_eqn({Atom::of_var(3)}, 4, fn2, host_prim());
    out.push_back({"host_call", flat_ir(5, {e, e2, e3, e4}, Atom::of_var(4))});
  }
  // Output trees: a literal output, a null node, an empty list.
  out.push_back({"literal_outputs", trace_fn(
                                        [](std::span<const Value> in) {
                                          return Value::list({S("const"), Value(), Value::list({}), in[0]});
                                        },
                                        {S("x")})});
  // Input roles: the tangent and cotangent inputs of transformed IRs.
  out.push_back({"pullback_roles", pullback(*hello())});
  out.push_back({"pushforward_of_pullback_roles", pushforward(*pullback(*hello()))});
  return out;
}

inline std::string save(const IRPtr& ir) { return io::save_ir(*ir); }

}  // namespace af::iotest
