// Control flow, host functions, the helper primitives transforms emit, and
// the run-time scopes, at the C++ level (the C API suites cover the same
// behaviour end to end through af.h).
#include <atomic>
#include <gtest/gtest.h>

#include "rt/scopes.h"
#include "ir/registry.h"
#include "transform_test_util.h"

namespace af::testing {
namespace {

RunEnv& env() { return test_context().env; }

IRPtr lit_ir(Value v) {
  return trace_json([v](auto) { return v; }, R"(["x"])");
}

TEST(Switch, EvaluatesOutsideATraceAndNamesUnknownKeys) {
  std::vector<std::string> names{"b", "a"};  // any order: stored sorted
  std::vector<IRPtr> brs{lit_ir(S("B")), lit_ir(S("A"))};
  std::vector<Value> ops{S("x")};
  EXPECT_EQ(to_json(op_switch(S("a"), names, brs, ops, env())), R"("A")");
  EXPECT_EQ(to_json(op_switch(S("b"), names, brs, ops, env())), R"("B")");
  EXPECT_AF_ERROR(op_switch(S("c"), names, brs, ops, env()), Code::NotFound,
                  R"(no branch is named "c"; the branches are "a", "b")");
}

TEST(Switch, TraceTimeChecks) {
  std::vector<std::string> names{"a", "b"};
  std::vector<Value> ops{S("x")};
  std::vector<IRPtr> kinds{lit_ir(S("A")), lit_ir(Value::integer(1))};
  EXPECT_AF_ERROR(op_switch(S("a"), names, kinds, ops, env()), Code::InvalidArgument,
                  R"(output leaf 0 is str in branch "a" but int in branch "b")");
  std::vector<IRPtr> shapes{lit_ir(S("A")), lit_ir(J(R"(["A","B"])"))};
  EXPECT_AF_ERROR(op_switch(S("a"), names, shapes, ops, env()), Code::InvalidArgument,
                  "the branches return different structures");
  std::vector<IRPtr> ok{lit_ir(S("A")), lit_ir(S("B"))};
  std::vector<Value> two{S("x"), S("y")};
  EXPECT_AF_ERROR(op_switch(S("a"), names, ok, two, env()), Code::InvalidArgument, "takes 1 input(s) but 2 operand(s)");
  EXPECT_AF_ERROR(op_switch(Value::integer(1), names, ok, ops, env()), Code::InvalidArgument, "key must be a str");
}

TEST(WhileLoop, MaxItersAndStateChecks) {
  IRPtr always = trace_json([&](auto in) { return op_match(in[0], in[0], env()); }, R"(["x"])");
  IRPtr bang = trace_json([&](auto in) { return op_concat(std::vector<Value>{in[0], S("!")}, env()); }, R"(["x"])");
  EXPECT_EQ(to_json(op_while_loop(always, bang, S("a"), 3, env())), R"("a!!!")");
  EXPECT_EQ(to_json(op_while_loop(always, bang, S("a"), 0, env())), R"("a")");
  IRPtr to_int = lit_ir(Value::integer(1));
  EXPECT_AF_ERROR(op_while_loop(always, to_int, S("a"), 3, env()), Code::InvalidArgument,
                  "the body changes the kind of state leaf 0 from str to int");
  IRPtr to_pair = trace_json([&](auto in) { return Value::list({in[0], in[0]}); }, R"(["x"])");
  EXPECT_AF_ERROR(op_while_loop(always, to_pair, S("a"), 3, env()), Code::InvalidArgument,
                  "the body changes the state structure: it takes * and returns [*, *]");
  EXPECT_AF_ERROR(op_while_loop(bang, bang, S("a"), 3, env()), Code::InvalidArgument, "the cond must return one bool");
}

TEST(HostFunctions, ResultKindsAreParsedAndChecked) {
  AbstractOut out = parse_result_kinds(J(R"({"b":"list<int>","a":["str","bool"]})"));
  ASSERT_EQ(out.out.size(), 3u);
  EXPECT_EQ(aval_name(out.out[0]), "str");
  EXPECT_EQ(aval_name(out.out[1]), "bool");
  EXPECT_EQ(aval_name(out.out[2]), "list<int>");
  EXPECT_AF_ERROR(parse_result_kinds(J(R"("text")")), Code::InvalidArgument, "not a kind");
  EXPECT_AF_ERROR(parse_result_kinds(J("[1]")), Code::InvalidArgument, "not a kind name");
  EXPECT_EQ(to_json(op_host_call("pair", std::vector<Value>{S("ab"), S("c")}, env())), R"({"a":"ab+c","n":2})");
  EXPECT_AF_ERROR(op_host_call("missing", std::vector<Value>{}, env()), Code::NotFound,
                  R"(host function "missing" is not registered on this context (registered: "pair", "upper", "upper_pure"))");
  IRPtr ir = trace_json([&](auto in) { return op_host_call("pair", in, env()); }, R"(["x","y"])");
  EXPECT_EQ(to_text(*ir).find("host_call[name=\"pair\", result={\"a\":\"str\",\"n\":\"int\"}]") != std::string::npos,
            true)
      << to_text(*ir);
  // Without a context (no host functions): NOT_FOUND when it runs.
  RunEnv bare;
  EXPECT_AF_ERROR(call(ir, J(R"(["a","b"])").items(), bare), Code::NotFound, "not registered");
}

TEST(HelperPrims, AccumulateZerosAndBroadcast) {
  RunEnv& e = env();
  auto eval = [&](const char* name, const char* in_json) {
    Value in = J(in_json);
    return to_json(bind_flat(prim(name), Params(), in.items(), e));
  };
  EXPECT_EQ(eval("accumulate", R"(["a","b","c"])"), R"("abc")");
  EXPECT_EQ(eval("accumulate", "[1,2,3]"), "6");
  EXPECT_EQ(eval("accumulate", "[1.5,2.0]"), "3.5");
  EXPECT_EQ(eval("accumulate", "[false,true]"), "true");
  EXPECT_EQ(eval("accumulate", R"([["a","b"],["c","d"]])"), R"(["ac","bd"])");
  EXPECT_EQ(eval("accumulate_items", R"([["a","b","c"]])"), R"("abc")");
  EXPECT_EQ(eval("zeros_like", R"([[["a"],["b","c"]]])"), R"([[""],["",""]])");
  EXPECT_EQ(eval("broadcast", R"(["x",[1,2,3]])"), R"(["x","x","x"])");
  EXPECT_AF_ERROR(eval("accumulate", R"(["a",1])"), Code::InvalidArgument, "different kinds");
  EXPECT_AF_ERROR(eval("accumulate", R"([["a"],["b","c"]])"), Code::InvalidArgument, "different lengths");
}

TEST(HelperPrims, ScanWalksForwardOrBackwardAndKeepsItemOrder) {
  // body: [x_i, carry] -> [carry + x_i, carry + x_i]
  IRPtr body = trace_json(
      [&](auto in) {
        Value c = op_concat(std::vector<Value>{in[1], in[0]}, env());
        return Value::list({c, c});
      },
      R"(["x","c"])");
  auto run_scan = [&](bool reverse) {
    Params p;
    p.set("body", flat_signature(body));
    p.set("n_xs", Value::integer(1));
    p.set("reverse", Value::boolean(reverse));
    return to_json(bind_flat(prim("scan"), p, J(R"([3,["a","b","c"],">"])").items(), env()));
  };
  EXPECT_EQ(run_scan(false), R"([">abc",[">a",">ab",">abc"]])");
  EXPECT_EQ(run_scan(true), R"([">cba",[">cba",">cb",">c"]])");
}

TEST(Scopes, CollectInjectMemoDirectly) {
  RunScopes s;
  s.push_collect("c");
  EXPECT_EQ(to_json(s.checkpoint("c", "k", S("v1"), {0, 1})), R"("v1")");
  EXPECT_EQ(to_json(s.checkpoint("other", "k", S("v2"), {0, 2})), R"("v2")");
  s.push_inject("c", J(R"({"k":["i1","i2"]})"));
  EXPECT_EQ(to_json(s.checkpoint("c", "k", S("v3"), {0, 3})), R"("i1")");
  EXPECT_EQ(to_json(s.checkpoint("c", "k", S("v4"), {0, 4})), R"("i2")");
  EXPECT_EQ(to_json(s.checkpoint("c", "k", S("v5"), {0, 5})), R"("v5")");
  s.pop_inject();
  EXPECT_EQ(to_json(s.pop_collect()), R"({"k":["v1","i1","i2","v5"]})");
  EXPECT_FALSE(s.any_checkpoint_scope());
  EXPECT_AF_ERROR(s.pop_collect(), Code::InvalidArgument, "without a matching push");
  EXPECT_AF_ERROR(s.push_inject("c", J("[1]")), Code::InvalidArgument, "must be a dict");
}

TEST(Scopes, CollectOrdersHitsByRankNotArrival) {
  RunScopes s;
  s.push_collect("c");
  // Run 1's hits arrive first, out of order; inside control flow (equation
  // 2, items 1 and 0) a hit ranks after equation 1 and before equation 3.
  s.checkpoint("c", "b", S("run2"), {2, 0});
  s.checkpoint("c", "a", S("eq3"), {1, 3});
  s.checkpoint("c", "b", S("eq2 item1"), {1, 2, 1, 0});
  s.checkpoint("c", "a", S("eq2 item0"), {1, 2, 0, 0});
  s.checkpoint("c", "b", S("eq1"), {1, 1});
  EXPECT_EQ(to_json(s.pop_collect()),
            R"({"b":["eq1","eq2 item1","run2"],"a":["eq2 item0","eq3"]})");
}

TEST(Scopes, MemoizeInsideBatchedAndControlFlowPrograms) {
  ExecContext ctx;
  RunEnv e{&ctx};
  std::atomic<int> calls{0};  // a batch's items may run at once
  auto f = std::make_shared<HostFunction>();
  f->name = "count";
  f->pure = true;  // memoize answers only pure functions' calls
  f->result_kinds = S("str");
  f->result = parse_result_kinds(f->result_kinds);
  f->call = [&](std::span<const Value> args) {
    ++calls;
    return args[0];
  };
  ctx.hosts.add(f);
  IRPtr ir = trace([&](std::span<const Value> in) { return op_host_call("count", in, e); },
                   J(R"(["x"])").items(), Value());
  IRPtr b = batch(ir, Value());
  // Memoize answers a call once an identical one has finished (equal calls
  // in flight together may each run): the items' calls run first unbatched.
  ctx.scopes.push_memo();
  call(ir, J(R"(["a"])").items(), e);
  call(ir, J(R"(["b"])").items(), e);
  EXPECT_EQ(to_json(call(b, J(R"([["a","b","a","a"]])").items(), e)), R"(["a","b","a","a"])");
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(ctx.scopes.memo_hits(), 4u);
  ctx.scopes.pop_memo();
  call(b, J(R"([["a","a"]])").items(), e);
  EXPECT_EQ(calls, 4);
}

}  // namespace
}  // namespace af::testing
