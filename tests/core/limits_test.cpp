// The documented limits (core/io/README.md, af.h) hold where values and
// graphs are made: values nest at most kMaxValueDepth, a loaded graph's
// sub-IRs at most kMaxIrDepth, a format template has at most
// kMaxTemplateFields fields — each refused with a clear code before anything
// too large is built, so no recursive walk can exhaust the stack.
#include <gtest/gtest.h>

#include <string>

#include "exec/context.h"
#include "exec/sequential.h"
#include "io/afg.h"
#include "ir/ir.h"
#include "prims/control_flow.h"
#include "prims/ops.h"
#include "prims/template.h"
#include "trace/trace.h"
#include "transforms/transforms.h"
#include "value/error.h"
#include "value/value.h"

namespace af {
namespace {

template <class F>
std::string error_of(F f, Code want) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(int(e.code()), int(want)) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST(Limits, ValuesNestAtMost512Deep) {
  Value v = Value::integer(1);
  for (uint32_t d = 1; d <= kMaxValueDepth; ++d) {
    v = (d % 2) ? Value::list({v}) : Value::dict({{"k", v}});
    ASSERT_EQ(v.depth(), d);
  }
  std::string json = to_json(v);  // the deepest value still prints and parses
  EXPECT_EQ(from_json(json), v);
  std::string msg = error_of([&] { Value::list({Value::integer(0), v}); }, Code::InvalidArgument);
  EXPECT_NE(msg.find("more than 512 levels deep"), std::string::npos) << msg;
  error_of([&] { Value::dict({{"a", v}}); }, Code::InvalidArgument);
  // JSON deeper than the limit is refused, whatever the parser allows.
  error_of([&] { from_json(std::string(600, '[') + std::string(600, ']')); }, Code::InvalidArgument);
  EXPECT_EQ(Value::str("x").depth(), 0u);
  EXPECT_EQ(Value().depth(), 0u);
  EXPECT_EQ(Value::list({}).depth(), 1u);
}

TEST(Limits, TemplatesHaveAtMost10000Fields) {
  std::string ok;
  for (size_t i = 0; i < kMaxTemplateFields; ++i) ok += "{0}";
  EXPECT_EQ(parse_template(ok).parts.size(), kMaxTemplateFields);
  // 4 MB of fields: refused while parsing, and the message quotes only the
  // template's start.
  std::string huge;
  for (size_t i = 0; i < (4u << 20) / 3; ++i) huge += "{0}";
  std::string msg = error_of([&] { parse_template(huge); }, Code::InvalidArgument);
  EXPECT_NE(msg.find("more than 10000 fields"), std::string::npos) << msg.substr(0, 300);
  EXPECT_NE(msg.find("... (" + std::to_string(huge.size()) + " bytes)"), std::string::npos) << msg.substr(0, 300);
  EXPECT_LT(msg.size(), 400u);
}

// The JSON form of a graph whose top IR nests `depth` switches (as
// fuzz/crafted.py writes it).
std::string nested_switches(size_t depth) {
  std::string s = R"({"afg":1,"irs":[{"vars":["str","str","str"],"in":["%0","%1"],)"
                  R"("eqns":[{"prim":"concat","out":"%2","in":["%1",{"lit":"!"}]}],"out":"%2"})";
  for (size_t k = 1; k <= depth; ++k)
    s += R"(,{"vars":["str","str","str"],"in":["%0","%1"],"eqns":[{"prim":"switch","out":"%2",)"
         R"("in":["%0","%0","%1"],"params":{"branches":{"ir_map":{"a":)" +
         std::to_string(k - 1) + "}}}}],\"out\":\"%2\"}";
  return s + "]}";
}

TEST(Limits, LoadedSubIrsNestAtMost64Deep) {
  // Exactly the limit loads, prints, saves and loads again.
  io::Loaded g = io::graph_from_json(nested_switches(io::kMaxIrDepth));
  EXPECT_NE(to_text(*g.ir).find("switch"), std::string::npos);
  std::string bytes = io::save_ir(*g.ir);
  EXPECT_TRUE(io::load_ir({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}));
  // One more level is FORMAT naming where; 100 000 levels (which crashed
  // the loader's destructors, and printing at 10 000) are refused as fast.
  std::string msg = error_of([&] { io::graph_from_json(nested_switches(io::kMaxIrDepth + 1)); }, Code::Format);
  EXPECT_NE(msg.find("IR 65, equation 0 (switch): sub-IRs nest more than 64 levels deep"), std::string::npos) << msg;
  // (How fast is a measurement, not a test: the point here is that the
  // refusal happens before anything deeper is built, so nothing crashes.)
  error_of([&] { io::graph_from_json(nested_switches(100000)); }, Code::Format);
}

TEST(Limits, TracedSubIrsNestAtMost64Deep) {
  ExecContext ctx;
  RunEnv env{&ctx};
  const Value ex[2] = {Value::str("a"), Value::str("x")};
  const std::vector<std::string> names{"a"};
  IRPtr ir = trace(
      [&](std::span<const Value> in) { return op_concat(std::vector<Value>{in[1], Value::str("!")}, env); }, ex,
      Value());
  auto wrap = [&](const IRPtr& below) {
    const std::vector<IRPtr> branch{below};
    return trace(
        [&](std::span<const Value> in) {
          return op_switch(in[0], names, branch, std::vector<Value>{in[0], in[1]}, env);
        },
        ex, Value());
  };
  IRPtr below_limit;
  for (uint32_t k = 1; k <= kMaxIrDepth; ++k) {
    below_limit = ir;
    ir = wrap(ir);
  }
  // Exactly the limit traces, runs and saves; one more level is refused
  // where it is traced, naming the limit.
  EXPECT_EQ(call(ir, ex, env).as_str(), "x!");
  std::string bytes = io::save_ir(*ir);
  EXPECT_TRUE(io::load_ir({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}));
  std::string msg = error_of([&] { wrap(ir); }, Code::InvalidArgument);
  EXPECT_NE(msg.find("switch: its sub-IRs would nest 65 levels deep, more than the limit of 64"), std::string::npos)
      << msg;
  // while_loop bodies count the same way.
  const Value state[1] = {Value::list({Value::str("x")})};
  IRPtr always = trace([](std::span<const Value>) { return Value::boolean(true); }, state, Value());
  IRPtr body = trace([&](std::span<const Value> in) { return in[0]; }, state, Value());
  for (uint32_t k = 1; k <= kMaxIrDepth; ++k)
    body = trace([&](std::span<const Value> in) { return op_while_loop(always, body, in[0], 1, env); }, state,
                 Value());
  msg = error_of([&] { op_while_loop(always, body, state[0], 1, env); }, Code::InvalidArgument);
  EXPECT_NE(msg.find("while_loop: its sub-IRs would nest 65 levels deep"), std::string::npos) << msg;
  // Transforms that add a level are refused the same way: batch maps each
  // batched equation over the items (map[body={the equation}]), here the
  // whole switch (a batched key) or the innermost concat (a batched x).
  msg = error_of([&] { batch(ir, from_json("[true, false]")); }, Code::InvalidArgument);
  EXPECT_NE(msg.find("map: its sub-IRs would nest 65 levels deep"), std::string::npos) << msg;
  msg = error_of([&] { batch(ir, from_json("[false, true]")); }, Code::InvalidArgument);
  EXPECT_NE(msg.find("switch: its sub-IRs would nest 65 levels deep"), std::string::npos) << msg;
  EXPECT_TRUE(batch(below_limit, from_json("[true, true]")));
}

TEST(Limits, LoadedTemplatesHaveAtMost10000Fields) {
  std::string tmpl;
  for (size_t i = 0; i <= kMaxTemplateFields; ++i) tmpl += "{0}";
  std::string json = R"({"afg":1,"irs":[{"vars":["str","str"],"in":["%0"],"eqns":[{"prim":"format","out":"%1",)"
                     R"("in":["%0"],"params":{"names":{"value":[]},"template":{"value":")" +
                     tmpl + R"("}}}],"out":"%1"}]})";
  std::string msg = error_of([&] { io::graph_from_json(json); }, Code::Format);
  EXPECT_NE(msg.find("more than 10000 fields"), std::string::npos) << msg.substr(0, 300);
}

}  // namespace
}  // namespace af
