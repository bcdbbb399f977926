// Tracing through the C++ API: af::trace with a lambda, operations from
// prims/ops.h. Recorded IRs are compared in their documented text form
// (docs/IR_TEXT.md) and run with af::call.
#include <gtest/gtest.h>

#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "expect_error.h"
#include "exec/sequential.h"
#include "ir/ir.h"
#include "prims/ops.h"
#include "trace/trace.h"
#include "value/error.h"
#include "value/value.h"

namespace af {
namespace {

using Args = std::span<const Value>;

Value S(const char* s) { return Value::str(s); }
Value J(const char* json) { return from_json(json); }

class Trace : public ::testing::Test {
 protected:
  void TearDown() override { EXPECT_FALSE(is_tracing()) << "a trace frame leaked"; }

  Value concat(std::vector<Value> args) { return op_concat(args, env); }
  Value format(const char* tmpl, std::vector<Value> args, const Value& named = Value()) {
    return op_format(tmpl, args, named, env);
  }
  IRPtr trace_of(const TraceFn& fn, std::vector<Value> examples, const Value& mask = Value()) {
    return trace(fn, examples, mask);
  }
  Value run(const IRPtr& ir, std::vector<Value> inputs) { return call(ir, inputs, env); }

  // hello(x) = concat(format("Hello, {}!", x), "?")
  IRPtr hello() {
    return trace_of([&](Args in) { return concat({format("Hello, {}!", {in[0]}), S("?")}); },
                    {S("example")});
  }

  RunEnv env;
};

std::vector<std::string> tags_of(const Eqn& e) {
  return e.tags() ? *e.tags() : std::vector<std::string>{};
}

// ---- recording and calling

TEST_F(Trace, HelloRecordsTwoEquationsAndRuns) {
  IRPtr ir = hello();
  ASSERT_EQ(ir->eqns.size(), 2u);
  EXPECT_EQ(ir->eqns[0].prim->name, "format");
  EXPECT_EQ(ir->eqns[1].prim->name, "concat");
  EXPECT_EQ(ir->num_inputs(), 1u);
  EXPECT_EQ(to_text(*ir),
            "ir (%0:str) {\n"
            "  %1:str = format[names=[], template=\"Hello, {}!\"](%0)\n"
            "  %2:str = concat(%1, \"?\")\n"
            "  return %2\n"
            "}\n");
  EXPECT_NO_THROW(validate(*ir));
  EXPECT_EQ(run(ir, {S("World")}), S("Hello, World!?"));
  EXPECT_EQ(run(ir, {S("")}), S("Hello, !?"));
}

TEST_F(Trace, ExamplesGiveOnlyKindsAndStructure) {
  IRPtr a = trace_of([&](Args in) { return concat({in[0], in[1]}); }, {S("a"), S("b")});
  IRPtr b = trace_of([&](Args in) { return concat({in[0], in[1]}); }, {S("zz"), S("")});
  EXPECT_TRUE(ir_equal(*a, *b));
  EXPECT_EQ(ir_hash(*a), ir_hash(*b));
}

TEST_F(Trace, InputsOfEveryLeafKindAndTreeShape) {
  IRPtr ir = trace_of(
      [&](Args in) {
        const Value& d = in[1];
        return format("{} {} {} {}", {in[0], d.find("n")->items()[0], *d.find("f"), *d.find("b")});
      },
      {S("s"), J(R"({"n": [1, null], "f": 0.5, "b": true})")});
  EXPECT_EQ(to_text(*ir),
            "ir (%0:str, {\"b\": %1:bool, \"f\": %2:float, \"n\": [%3:int, null]}) {\n"
            "  %4:str = format[names=[], template=\"{} {} {} {}\"](%0, %3, %2, %1)\n"
            "  return %4\n"
            "}\n");
  EXPECT_EQ(run(ir, {S("x"), J(R"({"f": 2.0, "b": false, "n": [7, null]})")}),
            S("x 7 2.0 false"));
}

TEST_F(Trace, NamedFormatArgumentsAreSortedByName) {
  IRPtr ir = trace_of(
      [&](Args in) {
        return format("{greet}, {name}{}", {S("!")},
                      Value::dict({{"name", in[0]}, {"greet", in[1]}}));
      },
      {S("n"), S("g")});
  EXPECT_EQ(to_text(*ir),
            "ir (%0:str, %1:str) {\n"
            "  %2:str = format[names=[\"greet\",\"name\"], template=\"{greet}, {name}{}\"](\"!\", "
            "%1, %0)\n"
            "  return %2\n"
            "}\n");
  EXPECT_EQ(run(ir, {S("Ann"), S("Hi")}), S("Hi, Ann!"));
}

TEST_F(Trace, FormatArityIsCheckedAtTraceTime) {
  EXPECT_AF_ERROR(trace_of([&](Args in) { return format("{} {}", {in[0]}); }, {S("x")}),
                  Code::InvalidArgument, "uses 2 positional argument(s) but 1 were given");
  EXPECT_AF_ERROR(trace_of([&](Args in) { return format("{who}", {in[0]}); }, {S("x")}),
                  Code::InvalidArgument, "uses the named argument {who}");
  EXPECT_AF_ERROR(trace_of([&](Args in) { return concat({in[0], in[1]}); }, {S("x"), Value::integer(1)}),
                  Code::InvalidArgument, "concat: argument 1 is int");
}

TEST_F(Trace, LiteralOnlyOperationsAreRecorded) {
  IRPtr ir = trace_of([&](Args in) { return concat({in[0], concat({S("a"), S("b")})}); }, {S("x")});
  EXPECT_EQ(to_text(*ir),
            "ir (%0:str) {\n"
            "  %1:str = concat(\"a\", \"b\")\n"
            "  %2:str = concat(%0, %1)\n"
            "  return %2\n"
            "}\n");
  EXPECT_EQ(run(ir, {S("x")}), S("xab"));
}

TEST_F(Trace, ZeroInputs) {
  IRPtr ir = trace_of([&](Args in) { return concat({S("a"), S("b")}); }, {});
  EXPECT_EQ(ir->num_inputs(), 0u);
  EXPECT_EQ(to_text(*ir),
            "ir () {\n"
            "  %0:str = concat(\"a\", \"b\")\n"
            "  return %0\n"
            "}\n");
  EXPECT_EQ(run(ir, {}), S("ab"));
  EXPECT_AF_ERROR(run(ir, {S("extra")}), Code::InvalidArgument,
                  "the program takes 0 input(s), got 1");
}

TEST_F(Trace, OutputsWithLiteralsAndDicts) {
  IRPtr ir = trace_of(
      [&](Args in) {
        return Value::dict({{"z", concat({in[0], S("!")})},
                            {"a", S("lit")},
                            {"m", Value::list({in[0], Value(), Value::integer(3)})}});
      },
      {S("x")});
  EXPECT_EQ(to_text(*ir),
            "ir (%0:str) {\n"
            "  %1:str = concat(%0, \"!\")\n"
            "  return {\"a\": \"lit\", \"m\": [%0, null, 3], \"z\": %1}\n"
            "}\n");
  // The caller gets the dict in the order the traced function wrote it.
  EXPECT_EQ(to_json(run(ir, {S("hey")})), R"({"z":"hey!","a":"lit","m":["hey",null,3]})");
}

TEST_F(Trace, IdentityAndConstantPrograms) {
  IRPtr id = trace_of([&](Args in) { return in[0]; }, {J(R"({"b": "x", "a": ["y"]})")});
  EXPECT_TRUE(id->eqns.empty());
  EXPECT_EQ(to_json(run(id, {J(R"({"b": "1", "a": ["2"]})")})), R"({"b":"1","a":["2"]})");
  IRPtr constant = trace_of([&](Args) { return Value(); }, {S("x")});
  EXPECT_TRUE(run(constant, {S("y")}).is_null());
}

// ---- static inputs

TEST_F(Trace, StaticMaskMakesLiterals) {
  IRPtr ir = trace_of([&](Args in) { return concat({in[0], in[1]}); }, {S("a"), S("b")},
                      J("[false, true]"));
  EXPECT_EQ(to_text(*ir),
            "ir (%0:str, \"b\") {\n"
            "  %1:str = concat(%0, \"b\")\n"
            "  return %1\n"
            "}\n");
  EXPECT_EQ(ir->vars.size(), 2u);
  EXPECT_EQ(run(ir, {S("x"), S("b")}), S("xb"));
  EXPECT_AF_ERROR(run(ir, {S("x"), S("c")}), Code::InvalidArgument,
                  "static input mismatch at input[1]: expected \"b\", got \"c\"");
}

TEST_F(Trace, StaticValuesAreConcreteWhileTracing) {
  // A static input can be read (here: branched on in host code) while tracing.
  auto fn = [&](Args in) {
    const Value* mode = in[1].find("mode");
    return mode->as_str() == "loud" ? concat({in[0], S("!")}) : in[0];
  };
  IRPtr loud = trace_of(fn, {S("x"), J(R"({"mode": "loud"})")}, J("[false, true]"));
  IRPtr quiet = trace_of(fn, {S("x"), J(R"({"mode": "quiet"})")}, J(R"([false, {"mode": true}])"));
  EXPECT_EQ(loud->eqns.size(), 1u);
  EXPECT_EQ(quiet->eqns.size(), 0u);
  EXPECT_EQ(run(loud, {S("hi"), J(R"({"mode": "loud"})")}), S("hi!"));
  EXPECT_EQ(run(quiet, {S("hi"), J(R"({"mode": "quiet"})")}), S("hi"));
}

TEST_F(Trace, AllStatic) {
  IRPtr ir = trace_of([&](Args in) { return concat({in[0], in[1]}); }, {S("a"), S("b")},
                      Value::boolean(true));
  EXPECT_EQ(to_text(*ir),
            "ir (\"a\", \"b\") {\n"
            "  %0:str = concat(\"a\", \"b\")\n"
            "  return %0\n"
            "}\n");
  EXPECT_EQ(run(ir, {S("a"), S("b")}), S("ab"));
}

TEST_F(Trace, BadStaticMasks) {
  auto fn = [&](Args in) { return in[0]; };
  EXPECT_AF_ERROR(trace_of(fn, {S("a"), S("b")}, J("[true]")), Code::InvalidArgument,
                  "the static mask is not a prefix");
  EXPECT_AF_ERROR(trace_of(fn, {J("[1, 2]")}, J("[[true]]")), Code::InvalidArgument,
                  "the static mask is not a prefix");
  EXPECT_AF_ERROR(trace_of(fn, {S("a")}, J("[1]")), Code::InvalidArgument,
                  "the static mask must hold bools, found int");
  EXPECT_AF_ERROR(trace_of(fn, {S("a")}, J("[\"yes\"]")), Code::InvalidArgument,
                  "found str");
}

// ---- reading placeholders

TEST_F(Trace, ReadingAPlaceholderNamesTheFix) {
  const std::vector<std::function<void(const Value&)>> reads = {
      [](const Value& v) { (void)to_json(v); }, [](const Value& v) { (void)stringify(v); }};
  for (const auto& read : reads)
    for (const char* fragment : {"switch", "while_loop", "static", "cannot read the content"})
      EXPECT_AF_ERROR(trace_of(
                          [&](Args in) {
                            read(in[0]);
                            return in[0];
                          },
                          {S("x")}),
                      Code::InvalidArgument, fragment);
}

TEST_F(Trace, AnExceptionInTheTracedFunctionPopsTheFrame) {
  EXPECT_THROW(trace_of([&](Args) -> Value { throw std::runtime_error("boom"); }, {S("x")}),
               std::runtime_error);
  EXPECT_FALSE(is_tracing());
  EXPECT_FALSE(recording());
}

// ---- fold

TEST_F(Trace, FoldEvaluatesAndRecordsNothing) {
  bool recording_inside = true, tracing_inside = false;
  IRPtr ir = trace_of(
      [&](Args in) {
        push_fold();
        recording_inside = recording();
        tracing_inside = is_tracing();
        Value folded = concat({S("a"), format("{}", {Value::integer(1)})});
        pop_fold();
        EXPECT_EQ(folded, S("a1"));
        return concat({in[0], folded});
      },
      {S("x")});
  EXPECT_FALSE(recording_inside);
  EXPECT_TRUE(tracing_inside);
  EXPECT_EQ(to_text(*ir),
            "ir (%0:str) {\n"
            "  %1:str = concat(%0, \"a1\")\n"
            "  return %1\n"
            "}\n");
}

TEST_F(Trace, FoldNests) {
  IRPtr ir = trace_of(
      [&](Args in) {
        push_fold();
        push_fold();
        Value a = concat({S("a")});
        pop_fold();
        Value b = concat({a, S("b")});
        pop_fold();
        return b;
      },
      {S("x")});
  EXPECT_TRUE(ir->eqns.empty());
  EXPECT_EQ(run(ir, {S("x")}), S("ab"));
}

TEST_F(Trace, FoldErrors) {
  EXPECT_AF_ERROR(trace_of(
                      [&](Args in) {
                        push_fold();
                        return concat({in[0]});
                      },
                      {S("x")}),
                  Code::InvalidArgument, "cannot fold concat: it depends on a traced value");
  EXPECT_AF_ERROR(trace_of(
                      [&](Args in) {
                        push_fold();
                        return format("{}", {in[0]});
                      },
                      {S("x")}),
                  Code::InvalidArgument, "cannot fold format");
  EXPECT_AF_ERROR(trace_of(
                      [&](Args in) {
                        push_fold();
                        return in[0];
                      },
                      {S("x")}),
                  Code::InvalidArgument, "fold scope still open");
  EXPECT_AF_ERROR(trace_of(
                      [&](Args in) {
                        pop_fold();
                        return in[0];
                      },
                      {S("x")}),
                  Code::InvalidArgument, "fold pop without a matching push");
  // Outside a trace everything runs at once: fold is a no-op there.
  EXPECT_NO_THROW(push_fold());
  EXPECT_NO_THROW(pop_fold());
}

TEST_F(Trace, CallingAProgramInsideFoldWithATracedValueCannotFold) {
  IRPtr inner = trace_of([&](Args in) { return concat({in[0], S("!")}); }, {S("x")});
  EXPECT_AF_ERROR(trace_of(
                      [&](Args in) {
                        push_fold();
                        std::vector<Value> args{in[0]};
                        Value v = call_ir(inner, args, env);
                        pop_fold();
                        return v;
                      },
                      {S("x")}),
                  Code::InvalidArgument, "input[0]: a traced value (placeholder) cannot be run");
}

TEST_F(Trace, CallingAProgramInsideFoldWithLiteralsRunsIt) {
  IRPtr inner = trace_of([&](Args in) { return concat({in[0], S("!")}); }, {S("x")});
  IRPtr ir = trace_of(
      [&](Args in) {
        push_fold();
        std::vector<Value> args{S("lit")};
        Value v = call_ir(inner, args, env);
        pop_fold();
        return concat({in[0], v});
      },
      {S("x")});
  EXPECT_EQ(to_text(*ir),
            "ir (%0:str) {\n"
            "  %1:str = concat(%0, \"lit!\")\n"
            "  return %1\n"
            "}\n");
}

// ---- tags

TEST_F(Trace, EquationsCarryTheUnionOfOpenTags) {
  IRPtr ir = trace_of(
      [&](Args in) {
        Value v = in[0];
        push_tag("outer");
        v = concat({v, S("1")});
        push_tag("inner");
        v = concat({v, S("2")});
        push_tag("a-first");
        v = concat({v, S("3")});
        pop_tag();
        pop_tag();
        v = concat({v, S("4")});
        pop_tag();
        return concat({v, S("5")});
      },
      {S("x")});
  ASSERT_EQ(ir->eqns.size(), 5u);
  using Tags_ = std::vector<std::string>;
  EXPECT_EQ(tags_of(ir->eqns[0]), (Tags_{"outer"}));
  EXPECT_EQ(tags_of(ir->eqns[1]), (Tags_{"inner", "outer"}));
  EXPECT_EQ(tags_of(ir->eqns[2]), (Tags_{"a-first", "inner", "outer"}));
  EXPECT_EQ(tags_of(ir->eqns[3]), (Tags_{"outer"}));
  EXPECT_EQ(tags_of(ir->eqns[4]), (Tags_{}));
  EXPECT_EQ(run(ir, {S("x")}), S("x12345"));
}

TEST_F(Trace, SameTagTwiceStaysUntilBothArePopped) {
  IRPtr ir = trace_of(
      [&](Args in) {
        push_tag("t");
        push_tag("t");
        Value a = concat({in[0]});
        pop_tag();
        Value b = concat({a});
        pop_tag();
        return concat({b});
      },
      {S("x")});
  ASSERT_EQ(ir->eqns.size(), 3u);
  EXPECT_EQ(tags_of(ir->eqns[0]), (std::vector<std::string>{"t"}));
  EXPECT_EQ(tags_of(ir->eqns[1]), (std::vector<std::string>{"t"}));
  EXPECT_EQ(tags_of(ir->eqns[2]), (std::vector<std::string>{}));
}

TEST_F(Trace, UnbalancedTagsAreErrors) {
  EXPECT_AF_ERROR(trace_of(
                      [&](Args in) {
                        pop_tag();
                        return in[0];
                      },
                      {S("x")}),
                  Code::InvalidArgument, "tag pop without a matching push");
  EXPECT_AF_ERROR(trace_of(
                      [&](Args in) {
                        push_tag("a");
                        push_tag("b");
                        return in[0];
                      },
                      {S("x")}),
                  Code::InvalidArgument, "returned with 2 tag scope(s) still open");
  EXPECT_AF_ERROR(push_tag("x"), Code::InvalidArgument, "only valid inside a trace");
  EXPECT_AF_ERROR(pop_tag(), Code::InvalidArgument, "only valid inside a trace");
}

// ---- calling programs inside a trace

TEST_F(Trace, CallIrInsideATraceInlinesWithTagsMerged) {
  IRPtr inner = trace_of(
      [&](Args in) {
        push_tag("inner");
        Value v = concat({in[0], S("!")});
        pop_tag();
        return concat({v, S("?")});
      },
      {S("x")});
  IRPtr outer = trace_of(
      [&](Args in) {
        push_tag("outer");
        std::vector<Value> args{format("<{}>", {in[0]})};
        Value v = call_ir(inner, args, env);
        pop_tag();
        return v;
      },
      {S("x")});
  EXPECT_EQ(to_text(*outer),
            "ir (%0:str) {\n"
            "  %1:str = format[names=[], template=\"<{}>\"](%0) #outer\n"
            "  %2:str = concat(%1, \"!\") #inner,outer\n"
            "  %3:str = concat(%2, \"?\") #outer\n"
            "  return %3\n"
            "}\n");
  EXPECT_NO_THROW(validate(*outer));
  EXPECT_EQ(run(outer, {S("a")}), S("<a>!?"));
}

TEST_F(Trace, CallIrWithLiteralAndStaticInputs) {
  // inner(x, s static) = [concat(x, s), x]
  IRPtr inner = trace_of([&](Args in) { return Value::list({concat({in[0], in[1]}), in[0]}); },
                         {S("x"), S("-")}, J("[false, true]"));
  IRPtr outer = trace_of(
      [&](Args in) {
        std::vector<Value> args{S("lit"), S("-")};
        Value a = call_ir(inner, args, env);
        std::vector<Value> args2{in[0], S("-")};
        Value b = call_ir(inner, args2, env);
        return Value::list({a, b});
      },
      {S("x")});
  EXPECT_EQ(to_text(*outer),
            "ir (%0:str) {\n"
            "  %1:str = concat(\"lit\", \"-\")\n"
            "  %2:str = concat(%0, \"-\")\n"
            "  return [[%1, \"lit\"], [%2, %0]]\n"
            "}\n");
  EXPECT_EQ(to_json(run(outer, {S("y")})), R"([["lit-","lit"],["y-","y"]])");
}

TEST_F(Trace, CallIrChecksInputsInsideATrace) {
  IRPtr inner = hello();
  EXPECT_AF_ERROR(trace_of(
                      [&](Args in) {
                        std::vector<Value> args{in[0]};
                        return call_ir(inner, args, env);
                      },
                      {Value::integer(1)}),
                  Code::InvalidArgument, "input[0]: expected str, found int");
  IRPtr with_static = trace_of([&](Args in) { return concat({in[0]}); }, {S("s")},
                               Value::boolean(true));
  EXPECT_AF_ERROR(trace_of(
                      [&](Args in) {
                        std::vector<Value> args{in[0]};
                        return call_ir(with_static, args, env);
                      },
                      {S("x")}),
                  Code::InvalidArgument, "static input mismatch at input[0]: expected \"s\", got a traced value");
}

TEST_F(Trace, CallIrOutsideATraceRuns) {
  IRPtr ir = hello();
  std::vector<Value> args{S("you")};
  EXPECT_EQ(call_ir(ir, args, env), S("Hello, you!?"));
}

TEST_F(Trace, InlineIrOutsideATraceIsAnError) {
  IRPtr ir = hello();
  std::vector<Value> args{S("you")};
  EXPECT_AF_ERROR(inline_ir(*ir, args), Code::InvalidArgument, "only valid inside a trace");
}

// ---- nesting and leaked placeholders

TEST_F(Trace, NestedTracesAreIndependent) {
  IRPtr inner;
  bool tracing_after_inner = false;
  IRPtr outer = trace_of(
      [&](Args in) {
        Value before = concat({in[0], S("1")});
        inner = trace_of([&](Args in2) { return concat({in2[0], S("2")}); }, {S("y")});
        tracing_after_inner = recording();
        std::vector<Value> args{before};
        return call_ir(inner, args, env);
      },
      {S("x")});
  EXPECT_TRUE(tracing_after_inner);
  EXPECT_EQ(to_text(*inner),
            "ir (%0:str) {\n"
            "  %1:str = concat(%0, \"2\")\n"
            "  return %1\n"
            "}\n");
  EXPECT_EQ(to_text(*outer),
            "ir (%0:str) {\n"
            "  %1:str = concat(%0, \"1\")\n"
            "  %2:str = concat(%1, \"2\")\n"
            "  return %2\n"
            "}\n");
  EXPECT_EQ(run(outer, {S("x")}), S("x12"));
}

TEST_F(Trace, ANestedTraceMayTakeEnclosingPlaceholdersAsExamples) {
  IRPtr inner;
  trace_of(
      [&](Args in) {
        inner = trace_of([&](Args in2) { return concat({in2[0], in2[1]}); }, {in[0], in[1]});
        EXPECT_AF_ERROR(trace_of([&](Args in2) { return in2[0]; }, {in[0]}, Value::boolean(true)),
                        Code::InvalidArgument, "input[0]: a static input must be a concrete value");
        return in[0];
      },
      {S("x"), S("y")});
  EXPECT_EQ(to_text(*inner),
            "ir (%0:str, %1:str) {\n"
            "  %2:str = concat(%0, %1)\n"
            "  return %2\n"
            "}\n");
}

TEST_F(Trace, EnclosingTracePlaceholderInsideANestedTraceIsRejected) {
  EXPECT_AF_ERROR(trace_of(
                      [&](Args in) {
                        Value outer_x = in[0];
                        trace_of([&](Args in2) { return concat({in2[0], outer_x}); }, {S("y")});
                        return outer_x;
                      },
                      {S("x")}),
                  Code::InvalidArgument, "traced value of another (enclosing or finished) trace");
  EXPECT_AF_ERROR(trace_of(
                      [&](Args in) {
                        Value outer_x = in[0];
                        trace_of([&](Args) { return outer_x; }, {S("y")});
                        return outer_x;
                      },
                      {S("x")}),
                  Code::InvalidArgument, "the traced output");
}

TEST_F(Trace, FinishedTracePlaceholdersAreRejected) {
  Value leaked;
  trace_of(
      [&](Args in) {
        leaked = in[0];
        return in[0];
      },
      {S("x")});
  ASSERT_EQ(leaked.kind(), Kind::Placeholder);
  // Outside any trace.
  EXPECT_AF_ERROR(concat({leaked, S("a")}), Code::InvalidArgument,
                  "an argument is a traced value whose trace has finished");
  EXPECT_AF_ERROR(op_match(leaked, S("a"), env), Code::InvalidArgument, "trace has finished");
  EXPECT_AF_ERROR(op_stop_gradient(Value::list({leaked}), env), Code::InvalidArgument,
                  "trace has finished");
  // Inside another trace.
  EXPECT_AF_ERROR(trace_of([&](Args in) { return concat({in[0], leaked}); }, {S("y")}),
                  Code::InvalidArgument, "another (enclosing or finished) trace");
  EXPECT_AF_ERROR(trace_of([&](Args) { return leaked; }, {S("y")}), Code::InvalidArgument,
                  "another (enclosing or finished) trace");
}

TEST_F(Trace, FinishedTracePlaceholderPassedToCallIsRejected) {
  Value leaked;
  trace_of(
      [&](Args in) {
        leaked = in[0];
        return in[0];
      },
      {S("x")});
  IRPtr ir = trace_of([&](Args in) { return concat({in[0], S("!")}); }, {S("x")});
  // Running a program on a placeholder must not silently compute with an
  // empty string in its place.
  EXPECT_AF_ERROR(run(ir, {leaked}), Code::InvalidArgument,
                  "input[0]: a traced value (placeholder) cannot be run");
}

}  // namespace
}  // namespace af
