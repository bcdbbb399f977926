#include "transform_test_util.h"

#include <cctype>

namespace af::testing {

namespace {

Value upper(std::span<const Value> args) {
  std::string s = args[0].as_str();
  for (char& c : s) c = char(std::toupper(static_cast<unsigned char>(c)));
  ++test_context().upper_calls;
  return Value::str(std::move(s));
}

Value pair(std::span<const Value> args) {
  return Value::dict({{"a", Value::str(args[0].as_str() + "+" + args[1].as_str())},
                      {"n", Value::integer(int64_t(args[0].as_str().size()))}});
}

void add_host(ExecContext& ctx, const char* name, const char* kinds,
              std::function<Value(std::span<const Value>)> fn, bool pure = false) {
  auto f = std::make_shared<HostFunction>();
  f->name = name;
  f->pure = pure;
  f->result_kinds = J(kinds);
  f->result = parse_result_kinds(f->result_kinds);
  f->call = std::move(fn);
  ctx.hosts.add(std::move(f));
}

}  // namespace

TestContext::TestContext() {
  add_host(ctx, "upper", "\"str\"", upper);
  add_host(ctx, "upper_pure", "\"str\"", upper, true);
  add_host(ctx, "pair", "{\"a\":\"str\",\"n\":\"int\"}", pair);
}

TestContext& test_context() {
  static TestContext* c = new TestContext();
  return *c;
}

IRPtr trace_json(const std::function<Value(std::span<const Value>)>& fn, const char* examples,
                 const char* static_mask) {
  Value ex = J(examples);
  return trace(fn, ex.items(), static_mask ? J(static_mask) : Value());
}

size_t count_prim(const IR& ir, const std::string& prim, bool recursive) {
  size_t n = 0;
  for (const Eqn& e : ir.eqns) {
    if (e.prim->name == prim) ++n;
    if (!recursive) continue;
    for (const auto& [name, p] : e.params.items()) {
      if (auto* one = std::get_if<IRPtr>(&p)) n += count_prim(**one, prim, true);
      if (auto* map = std::get_if<IRMap>(&p))
        for (const auto& [k, x] : *map) n += count_prim(*x, prim, true);
      if (auto* list = std::get_if<IRList>(&p))
        for (const auto& x : *list) n += count_prim(*x, prim, true);
    }
  }
  return n;
}

std::vector<Program> programs() {
  RunEnv& env = test_context().env;
  std::vector<Program> ps;
  auto add = [&](std::string name, IRPtr ir, const char* a, const char* b) {
    ps.push_back(Program{std::move(name), std::move(ir), J(a).items(), J(b).items()});
  };

  add("format",
      trace_json([&](auto in) { return op_format("<{}|{a}>", in.subspan(0, 1), Value::dict({{"a", in[1]}}), env); },
                 R"(["x","y"])"),
      R"(["p","q"])", R"(["r","s"])");
  add("concat",
      trace_json([&](auto in) { return op_concat(std::vector<Value>{in[0], S("-"), in[1]}, env); }, R"(["x","y"])"),
      R"(["p","q"])", R"(["r","s"])");
  add("match",
      trace_json([&](auto in) { return Value::list({op_match(in[0], in[1], env), in[0]}); }, R"(["x","y"])"),
      R"(["p","p"])", R"(["r","s"])");
  add("stop_gradient",
      trace_json([&](auto in) { return op_concat(std::vector<Value>{op_stop_gradient(in[0], env), in[1]}, env); },
                 R"(["x","y"])"),
      R"(["p","q"])", R"(["r","s"])");
  add("depends",
      trace_json(
          [&](auto in) {
            Value v = op_concat(std::vector<Value>{in[0], S("1")}, env);
            return op_depends(v, in.subspan(1, 1), env);
          },
          R"(["x","y"])"),
      R"(["p","q"])", R"(["r","s"])");
  add("checkpoint",
      trace_json([&](auto in) { return op_checkpoint(op_concat(std::vector<Value>{in[0], in[1]}, env), "k", "c", env); },
                 R"(["x","y"])"),
      R"(["p","q"])", R"(["r","s"])");
  add("multi_consumer",
      trace_json(
          [&](auto in) {
            Value f = op_format("{}{}", std::vector<Value>{in[0], in[0]}, Value(), env);
            return op_concat(std::vector<Value>{in[0], f}, env);
          },
          R"(["x"])"),
      R"(["p"])", R"(["r"])");
  add("static_input",
      trace_json([&](auto in) { return op_format("{}{}", in, Value(), env); }, R"(["P","x"])", "[true,false]"),
      R"(["P","q"])", R"(["P","s"])");
  add("trees",
      trace_json(
          [&](auto in) {
            const Value& d = in[0];
            Value f = op_format("{}{}{}", std::vector<Value>{*d.find("a"), d.find("b")->items()[0], d.find("b")->items()[1]},
                                Value(), env);
            return Value::dict({{"out", f}, {"m", op_match(*d.find("a"), d.find("b")->items()[0], env)}, {"z", Value()}});
          },
          R"([{"a":"x","b":["y",1]}])"),
      R"([{"a":"p","b":["q",2]}])", R"([{"a":"r","b":["r",3]}])");

  IRPtr br_a = trace_json([&](auto in) { return op_format("A{}", in, Value(), env); }, R"(["x"])");
  IRPtr br_b = trace_json([&](auto in) { return op_concat(std::vector<Value>{in[0], in[0]}, env); }, R"(["x"])");
  std::vector<std::string> ab{"a", "b"};
  add("switch",
      trace_json(
          [&](auto in) {
            std::vector<IRPtr> brs{br_a, br_b};
            return op_switch(in[0], ab, brs, in.subspan(1), env);
          },
          R"(["a","x"])"),
      R"(["a","p"])", R"(["b","q"])");

  IRPtr t_a = trace_json(
      [&](auto in) {
        return Value::dict({{"s", op_concat(std::vector<Value>{in[0], in[1]}, env)}, {"m", op_match(in[0], in[1], env)}});
      },
      R"(["x","y"])");
  IRPtr t_b = trace_json([&](auto) { return Value::dict({{"s", S("lit")}, {"m", Value::boolean(true)}}); }, R"(["x","y"])");
  add("switch_trees",
      trace_json(
          [&](auto in) {
            std::vector<IRPtr> brs{t_a, t_b};
            return op_switch(in[0], ab, brs, in.subspan(1), env);
          },
          R"(["a","x","y"])"),
      R"(["a","p","q"])", R"(["b","r","s"])");

  // A counter loop whose trip count depends on the data: state [s, c],
  // c in "0".."3"; it appends "!" and steps c until c is "3".
  std::vector<std::string> digits{"0", "1", "2", "3"};
  auto lit_branch = [&](Value v) { return trace_json([v](auto) { return v; }, R"(["0"])"); };
  std::vector<IRPtr> go{lit_branch(Value::boolean(true)), lit_branch(Value::boolean(true)),
                        lit_branch(Value::boolean(true)), lit_branch(Value::boolean(false))};
  std::vector<IRPtr> step{lit_branch(S("1")), lit_branch(S("2")), lit_branch(S("3")), lit_branch(S("3"))};
  IRPtr cond = trace_json(
      [&](auto in) {
        Value c = in[0].items()[1];
        return op_switch(c, digits, go, std::vector<Value>{c}, env);
      },
      R"([["x","0"]])");
  IRPtr body = trace_json(
      [&](auto in) {
        Value s = in[0].items()[0], c = in[0].items()[1];
        return Value::list({op_concat(std::vector<Value>{s, S("!")}, env), op_switch(c, digits, step, std::vector<Value>{c}, env)});
      },
      R"([["x","0"]])");
  add("while_loop",
      trace_json([&](auto in) { return op_while_loop(cond, body, Value::list({in[0], in[1]}), 10, env); },
                 R"(["x","0"])"),
      R"(["p","1"])", R"(["q","0"])");

  // The same loop whose body routes s by the key c: the backward of each
  // iteration needs that iteration's key (the recorded trajectory).
  std::vector<IRPtr> route{
      trace_json([&](auto in) { return op_concat(std::vector<Value>{in[0], S("!")}, env); }, R"(["x"])"),
      trace_json([&](auto in) { return op_format("({})", in, Value(), env); }, R"(["x"])"),
      trace_json([&](auto in) { return op_concat(std::vector<Value>{in[0], in[0]}, env); }, R"(["x"])"),
      trace_json([&](auto in) { return in[0]; }, R"(["x"])")};
  IRPtr routed_body = trace_json(
      [&](auto in) {
        Value s = in[0].items()[0], c = in[0].items()[1];
        return Value::list({op_switch(c, digits, route, std::vector<Value>{s}, env),
                            op_switch(c, digits, step, std::vector<Value>{c}, env)});
      },
      R"([["x","0"]])");
  add("routed_loop",
      trace_json([&](auto in) { return op_while_loop(cond, routed_body, Value::list({in[0], in[1]}), 10, env); },
                 R"(["x","0"])"),
      R"(["p","0"])", R"(["q","2"])");

  IRPtr always = trace_json([&](auto in) { return op_match(in[0], in[0], env); }, R"(["x"])");
  IRPtr wrap = trace_json([&](auto in) { return op_format("({}{})", std::vector<Value>{in[0], S("")}, Value(), env); },
                          R"(["x"])");
  add("while_max_iters",
      trace_json([&](auto in) { return op_while_loop(always, wrap, in[0], 2, env); }, R"(["x"])"), R"(["p"])",
      R"(["q"])");

  add("host_function",
      trace_json(
          [&](auto in) {
            Value h = op_host_call("upper", std::vector<Value>{op_stop_gradient(in[0], env)}, env);
            return op_concat(std::vector<Value>{op_stop_gradient(h, env), in[1]}, env);
          },
          R"(["x","y"])"),
      R"(["p","q"])", R"(["r","s"])");
  return ps;
}

}  // namespace af::testing
