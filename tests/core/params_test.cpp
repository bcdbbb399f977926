// Params lookups: blocks of up to 8 params are scanned, larger ones searched
// (the items are kept sorted by name); both must find every name and only those.
// Typed params: every primitive that takes params has a builder whose output
// holds exactly what its Prim declares (names, kinds, required ones), the
// check the saved-graph loader makes.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "ir/registry.h"
#include "prims/control_flow.h"
#include "prims/host.h"
#include "prims/lm.h"
#include "prims/ops.h"
#include "transforms/prim_params.h"

namespace af {
namespace {

TEST(Params, FindsEveryNameAtAnySize) {
  for (int n : {0, 1, 8, 9, 40}) {
    SCOPED_TRACE(n);
    Params p;
    for (int i = n - 1; i >= 0; --i) p.set("p" + std::to_string(i), Value::integer(i));  // out of order
    for (int i = 0; i < n; ++i) {
      const Param* found = p.find("p" + std::to_string(i));
      ASSERT_NE(found, nullptr);
      EXPECT_EQ(std::get<Value>(*found), Value::integer(i));
    }
    EXPECT_EQ(p.find("p"), nullptr);  // a prefix of every name
    EXPECT_EQ(p.find("p" + std::to_string(n)), nullptr);
    EXPECT_EQ(p.find(""), nullptr);
  }
}

// What the loader checks against Prim::params (core/io): every param is
// declared, of its declared kind (and value kind), and every required one is
// there. "" when it holds.
std::string declared_check(const Prim& p, const Params& ps) {
  for (const auto& [name, param] : ps.items()) {
    const ParamSpec* spec = nullptr;
    for (const ParamSpec& s : p.params)
      if (s.name == name) spec = &s;
    if (!spec) return "unknown param " + name;
    if (param.index() != size_t(spec->kind))
      return "param " + name + " is " + param_kind_name(ParamKind(param.index()));
    if (spec->kind == ParamKind::Value && spec->value_kind != Kind::Null &&
        std::get<Value>(param).kind() != spec->value_kind)
      return "param " + name + " is a " + kind_name(std::get<Value>(param).kind());
  }
  for (const ParamSpec& s : p.params)
    if (!s.optional && !ps.find(s.name)) return "missing param " + s.name;
  return "";
}

std::set<std::string> names_of(const Params& ps) {
  std::set<std::string> out;
  for (const auto& item : ps.items()) out.insert(item.first);
  return out;
}

// A primitive's builder called with sample arguments; `all` when the call
// sets every param the primitive declares (the LM calls' sampling params are
// set from their table by the operations, not by the builder).
struct Built {
  const char* prim;
  Params params;
  bool all;
};

std::vector<Built> built_samples() {
  const IRPtr ir = std::make_shared<const IR>();
  const Value strs = Value::list({Value::str("a"), Value::str("b")});
  const Value roles = Value::list({Value::str("system"), Value::str("user")});
  const Value parts = Value::list({Value(), Value::list({Value::str("text"), Value::str("url")})});
  const Value axes = Value::list({Value::boolean(true), Value::boolean(false)});
  return {
      {"format", format_params("{} and {x}", {Value::str("x")}), true},
      {"checkpoint", checkpoint_params("tuning", "prompt"), true},
      {"switch", switch_params({{"a", ir}, {"b", ir}}), true},
      {"while_loop", while_loop_params(ir, ir, 5), true},
      {"while_scan", while_scan_params(ir, ir, 5), true},
      {"scan", scan_params(ir, 1, true), true},
      {"host_call", host_call_params("lookup", Value::str("str"), true), true},
      {"host_call", host_call_params("lookup", Value::str("str"), false), false},
      {"map", map_params(axes, ir), true},
      {"batch_check", batch_check_params(strs), true},
      {"pipeline", pipeline_params(axes, ir, 8), true},
      {"zeros_like", zeros_like_params(true), true},
      {"zeros_like", zeros_like_params(false), false},
      {"lm_call", lm_call_params(roles, parts), false},
      {"lm_call", lm_call_params(roles, Value()), false},
      {"lm_schema_call", lm_schema_call_params(roles, Value(), Value::dict({{"type", Value::str("string")}})),
       false},
      {"lm_tool_call", lm_tool_call_params(roles, parts, Value::list({})), false},
  };
}

TEST(Params, EveryBuilderHoldsWhatItsPrimDeclares) {
  std::set<std::string> covered;
  for (const Built& b : built_samples()) {
    SCOPED_TRACE(b.prim);
    const Prim& p = prim(b.prim);
    EXPECT_EQ(declared_check(p, b.params), "");
    if (b.all) {
      std::set<std::string> declared;
      for (const ParamSpec& s : p.params) declared.insert(s.name);
      EXPECT_EQ(names_of(b.params), declared);
    }
    covered.insert(b.prim);
  }
  // Every built-in primitive that takes params has a builder in the table.
  std::vector<Prim> builtins;
  add_builtin_prims(builtins);
  for (const Prim& p : builtins) {
    if (p.params.empty()) continue;
    EXPECT_TRUE(covered.count(p.name)) << p.name << " has params but no builder";
  }
}

// The accessors read back what the builders wrote.
TEST(Params, AccessorsReadWhatBuildersWrite) {
  const IRPtr body = std::make_shared<const IR>(), cond = std::make_shared<const IR>();
  const Value axes = Value::list({Value::boolean(true)});
  Params m = pipeline_params(axes, body, 3);
  EXPECT_EQ(map_axes(m), axes);
  EXPECT_EQ(map_body(m), body);
  EXPECT_EQ(pipeline_chunk(m), 3);
  Params w = while_loop_params(cond, body, 7);
  EXPECT_EQ(loop_cond(w), cond);
  EXPECT_EQ(loop_body(w), body);
  EXPECT_EQ(loop_max_iters(w), Value::integer(7));
  Params s = scan_params(body, 2, true);
  EXPECT_EQ(scan_n_xs(s), 2u);
  EXPECT_TRUE(scan_reverse(s));
  Params f = format_params("{x}", {Value::str("x")});
  EXPECT_EQ(format_template(f), Value::str("{x}"));
  EXPECT_EQ(format_names(f), Value::list({Value::str("x")}));
  Params c = checkpoint_params("col", "k");
  EXPECT_EQ(checkpoint_collection(c), "col");
  EXPECT_EQ(checkpoint_key(c), "k");
  Params h = host_call_params("f", Value::str("int"), false);
  EXPECT_EQ(host_call_name(h), "f");
  EXPECT_EQ(host_call_result(h), Value::str("int"));
  EXPECT_FALSE(host_call_pure(h));
  EXPECT_TRUE(host_call_pure(host_call_params("f", Value::str("int"), true)));
  Params l = lm_tool_call_params(Value::list({Value::str("user")}), Value(), Value::list({}));
  ASSERT_NE(lm_roles(l), nullptr);
  EXPECT_EQ(lm_parts(l), nullptr);
  EXPECT_EQ(lm_schema(l), nullptr);
  ASSERT_NE(lm_tools(l), nullptr);
  EXPECT_EQ(lm_tool_choice(l), nullptr);
  EXPECT_TRUE(zeros_like_text(zeros_like_params(true)));
  EXPECT_FALSE(zeros_like_text(zeros_like_params(false)));
  ASSERT_NE(batch_check_paths(batch_check_params(Value::list({}))), nullptr);
}

}  // namespace
}  // namespace af
