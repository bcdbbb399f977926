// Large batches run in slices (transforms/pipeline.h, prims/pipeline.cpp):
// batch marks its output, compile keeps the program's sliced form, a run
// over more items than a slice takes it and returns what the whole run
// returns; the other transforms drop the mark; the pipeline primitive's own
// rules and checks.
#include <gtest/gtest.h>

#include "exec/context.h"
#include "exec/executor.h"
#include "exec/program.h"
#include "expect_error.h"
#include "ir/registry.h"
#include "lm/providers.h"
#include "prims/host.h"
#include "prims/lm.h"
#include "prims/ops.h"
#include "value/error_value.h"
#include "trace/trace.h"
#include "transforms/batch.h"
#include "transforms/builder.h"
#include "transforms/dce.h"
#include "transforms/pipeline.h"
#include "transforms/pullback.h"
#include "transforms/pushforward.h"
#include "io/afg.h"

namespace af {
namespace {

// A context whose models all answer with echo (at once).
struct Env {
  Env() { ctx.router().route("*", lm::make_echo(from_json("{}"))); }
  ExecContext ctx;
  RunEnv env{&ctx};
};

Value user_turn(const Value& content) {
  return Value::list({Value::dict({{"role", Value::str("user")}, {"content", content}})});
}

// f(q, model) = two LM stages: lm_call([user: lm_call([user: "Q: {q}"],
// model)], model); batched over q when `shared_model`, else over both.
IRPtr ask(Env& e, bool shared_model = true) {
  IRPtr one = trace(
      [&](std::span<const Value> in) {
        Value prompt = op_format("Q: {}", std::vector<Value>{in[0]}, Value(), e.env);
        Value draft = op_lm_call(user_turn(prompt), in[1], Value(), e.env);
        return op_lm_call(user_turn(draft), in[1], Value(), e.env);
      },
      std::vector<Value>{Value::str("q"), Value::str("m")}, Value());
  return batch(one, from_json(shared_model ? "[true, false]" : "[true, true]"));
}

Value items(size_t n, const char* prefix) {
  std::vector<Value> v;
  for (size_t i = 0; i < n; ++i) v.push_back(Value::str(prefix + std::to_string(i)));
  return Value::list(std::move(v));
}

// A run's result and the number of equations its progress counted.
struct Ran {
  Value out;
  uint64_t total = 0;
};
Ran run_counted(Env& e, const std::shared_ptr<const Program>& p, std::vector<Value> in, RunOptions o = {}) {
  Ran r;
  o.progress = [&r](uint64_t, uint64_t total) { r.total = total; };
  r.out = run_sync(e.env, p, std::move(in), std::move(o));
  return r;
}

TEST(Pipeline, BatchMarksItsOutputAndCompileKeepsTheSlicedForm) {
  Env e;
  IRPtr b = ask(e);
  EXPECT_EQ(b->eqns[0].prim->name, "batch_check");
  EXPECT_EQ(b->slice_items, kSliceItems);
  IRPtr form = pipeline_form(b);
  ASSERT_TRUE(form);
  // [batch_check (unmarked: the form is final), pipeline[body = the rest]]
  ASSERT_EQ(form->eqns.size(), 2u);
  EXPECT_EQ(form->slice_items, 0);
  EXPECT_EQ(form->eqns[1].prim->name, "pipeline");
  EXPECT_EQ(form->eqns[1].params.value("chunk").as_int(), kSliceItems);
  EXPECT_EQ(to_json(form->eqns[1].params.value("axes")), "[true,false]");  // the model is shared
  auto p = compile(b);
  ASSERT_TRUE(p->sliced);
  EXPECT_EQ(p->slice_leaf, 0u);
  EXPECT_EQ(p->ir->slice_items, kSliceItems);  // what a run reads to choose the sliced form
  EXPECT_FALSE(p->sliced->sliced);
}

TEST(Pipeline, ALargeBatchRunsInSlicesAndReturnsWhatTheWholeRunReturns) {
  Env e;
  auto p = compile(ask(e));
  const size_t n = 2500;  // three slices
  Ran sliced = run_counted(e, p, {items(n, "q"), Value::str("m")});
  RunOptions whole;
  whole.keep_going = true;  // keeps the program as written
  Ran plain = run_counted(e, p, {items(n, "q"), Value::str("m")}, whole);
  EXPECT_EQ(sliced.total, p->sliced->nodes.size());
  EXPECT_EQ(plain.total, p->nodes.size());
  EXPECT_LT(sliced.total, plain.total);
  ASSERT_EQ(sliced.out.size(), n);
  EXPECT_EQ(to_json(sliced.out), to_json(plain.out));
  for (size_t i : {size_t(0), size_t(1023), size_t(1024), n - 1})
    EXPECT_NE(sliced.out.items()[i].as_str().find("Q: q" + std::to_string(i)), std::string::npos) << i;
  // A batch that fits in one slice runs as written.
  EXPECT_EQ(run_counted(e, p, {items(10, "q"), Value::str("m")}).total, p->nodes.size());
  // So does a run that streams (pieces are named by the equations as written).
  RunOptions streamed;
  streamed.stream = [](uint32_t, uint64_t, const char*, size_t) {};
  Ran s = run_counted(e, p, {items(n, "q"), Value::str("m")}, streamed);
  EXPECT_EQ(s.total, p->nodes.size());
  EXPECT_EQ(to_json(s.out), to_json(plain.out));
}

TEST(Pipeline, AFailingItemIsNamedByItsPlaceInTheWholeBatch) {
  Env e;
  ExecContext only_m;  // routes "m" alone
  only_m.router().route("m", lm::make_echo(from_json("{}")));
  RunEnv env{&only_m};
  auto p = compile(ask(e, /*shared_model=*/false));
  ASSERT_TRUE(p->sliced);
  std::vector<Value> models(2500, Value::str("m"));
  models[1500] = Value::str("nowhere");
  RunOptions o;
  o.item_errors = true;
  Value out = run_sync(env, p, {items(2500, "q"), Value::list(models)}, o);
  ASSERT_EQ(out.size(), 2500u);
  EXPECT_FALSE(is_error_value(out.items()[1499]));
  ASSERT_TRUE(is_error_value(out.items()[1500]));
  EXPECT_NE(to_json(out.items()[1500]).find("(batch item 1500)"), std::string::npos) << to_json(out.items()[1500]);
}

TEST(Pipeline, WhatIsNotSlicedStaysAsWritten) {
  Env e;
  // One stage (a single LM call): nothing to overlap.
  IRPtr one_stage = batch(trace(
                              [&](std::span<const Value> in) {
                                return op_lm_call(user_turn(in[0]), Value::str("m"), Value(), e.env);
                              },
                              std::vector<Value>{Value::str("q")}, Value()),
                          Value());
  EXPECT_EQ(one_stage->slice_items, kSliceItems);
  EXPECT_FALSE(pipeline_form(one_stage));
  // No LM call, no host function: slicing would only add work.
  IRPtr text = batch(trace([&](std::span<const Value> in) { return op_format("<{}>", in, Value(), e.env); },
                           std::vector<Value>{Value::str("q")}, Value()),
                     Value());
  EXPECT_EQ(text->slice_items, kSliceItems);
  EXPECT_FALSE(pipeline_form(text));
  EXPECT_FALSE(compile(text)->sliced);
  // An LM call that does not depend on the batch: the pipeline would wait
  // for it before its first stage.
  IRPtr shared_call = batch(
      trace(
          [&](std::span<const Value> in) {
            Value intro = op_lm_call(user_turn(Value::str("intro")), Value::str("m"), Value(), e.env);
            Value prompt = op_format("{} {}", std::vector<Value>{intro, in[0]}, Value(), e.env);
            return op_lm_call(user_turn(prompt), Value::str("m"), Value(), e.env);
          },
          std::vector<Value>{Value::str("q")}, Value()),
      Value());
  EXPECT_FALSE(pipeline_form(shared_call));
  // Cheap work that does not depend on the batch runs once, before the
  // pipeline.
  IRPtr shared_text = batch(
      trace(
          [&](std::span<const Value> in) {
            Value intro = op_format("[{}]", std::vector<Value>{in[1]}, Value(), e.env);
            Value prompt = op_format("{} {}", std::vector<Value>{intro, in[0]}, Value(), e.env);
            Value draft = op_lm_call(user_turn(prompt), Value::str("m"), Value(), e.env);
            return op_lm_call(user_turn(draft), Value::str("m"), Value(), e.env);
          },
          std::vector<Value>{Value::str("q"), Value::str("ctx")}, Value()),
      from_json("[true, false]"));
  IRPtr form = pipeline_form(shared_text);
  ASSERT_TRUE(form);
  ASSERT_EQ(form->eqns.size(), 3u);
  EXPECT_EQ(form->eqns[1].prim->name, "format");
  EXPECT_EQ(form->eqns[2].prim->name, "pipeline");
}

// [pipeline[axes, body, chunk](inputs...)]: body wrapped as a hand-edited
// saved graph could wrap it.
IRPtr wrapped(const IRPtr& body, const char* axes, int64_t chunk) {
  Builder b;
  std::vector<Atom> in;
  for (Aval a : in_avals(*body)) in.push_back(Atom::of_var(b.var(a)));
  Params p;
  p.set("axes", from_json(axes));
  p.set("body", body);
  p.set("chunk", Value::integer(chunk));
  std::vector<Atom> out = b.emit(prim("pipeline"), std::move(p), in);
  return b.finish(in, TreeDef::flat_list(in.size()), out, body->out_tree);
}

// "<{}>" formatted, batched: differentiable (an LM call over a batch is not:
// pullback comes before batch).
IRPtr batched_text(Env& e) {
  return batch(trace([&](std::span<const Value> in) { return op_format("<{}>", in, Value(), e.env); },
                     std::vector<Value>{Value::str("q")}, Value()),
               Value());
}

TEST(Pipeline, WhatCopiesTheEquationsElsewhereDropsTheMark) {
  Env e;
  // A pullback sums the items' feedback for shared inputs: not item by item.
  EXPECT_EQ(pullback(*batched_text(e))->slice_items, 0);
  IRPtr b = ask(e);
  EXPECT_EQ(pushforward(*b)->slice_items, 0);
  EXPECT_FALSE(compile(pushforward(*b))->sliced);
  EXPECT_EQ(dce(*b, Value())->slice_items, 0);
  // A traced program that calls the batched program records its equations,
  // then may do with the lists what it likes (a host function could rank
  // them): it is not marked.
  IRPtr traced = trace([&](std::span<const Value> in) { return inline_ir(*b, in); },
                       std::vector<Value>{Value::list({Value::str("q")}), Value::str("m")}, Value(),
                       from_json("[true, false]"));
  EXPECT_EQ(traced->eqns[0].prim->name, "batch_check");
  EXPECT_EQ(traced->slice_items, 0);
  EXPECT_FALSE(compile(traced)->sliced);
  // The mark is saved and loaded; it is not part of the IR's value (it is
  // a fact about the equations, which the traced program shares).
  const std::string saved = io::save_ir(*b);
  EXPECT_EQ(io::load({reinterpret_cast<const uint8_t*>(saved.data()), saved.size()}).ir->slice_items, kSliceItems);
  EXPECT_EQ(io::graph_from_json(io::graph_to_json(*b)).ir->slice_items, kSliceItems);
  EXPECT_TRUE(ir_equal(*traced, *b));
  EXPECT_NE(to_text(*b).find(") @slices=1024 {"), std::string::npos);
}

TEST(Pipeline, UnderATransformAPipelineIsItsBody) {
  Env e;
  auto same = [&](const IRPtr& x, const IRPtr& y, std::vector<Value> in) {
    EXPECT_EQ(to_json(run_sync(e.env, compile(x), check_inputs(*x, in))),
              to_json(run_sync(e.env, compile(y), check_inputs(*y, in))));
  };
  const Value qs = items(3, "q");
  IRPtr text = batched_text(e);
  same(pullback(*wrapped(text, "[true]", 2)), pullback(*text),
       {Value::list({qs}), Value::list({Value::str("a"), Value::str(""), Value::str("c")})});
  IRPtr b = ask(e);
  IRPtr form = pipeline_form(b);
  ASSERT_TRUE(form);
  same(pushforward(*form), pushforward(*b),
       {Value::list({qs, Value::str("m")}), Value::list({items(3, "t"), Value::str("")})});
  same(batch(form, from_json("[true, false]")), batch(b, from_json("[true, false]")),
       {Value::list({qs, items(3, "r")}), Value::str("m")});
}

TEST(Pipeline, DceDropsTheBodysUnreadOutputs) {
  Env e;
  IRPtr two = batch(trace(
                        [&](std::span<const Value> in) {
                          Value a = op_lm_call(user_turn(in[0]), Value::str("m"), Value(), e.env);
                          Value b = op_lm_call(user_turn(in[1]), Value::str("m"), Value(), e.env);
                          return Value::list({a, b});
                        },
                        std::vector<Value>{Value::str("x"), Value::str("y")}, Value()),
                    Value());
  IRPtr form = pipeline_form(two);
  ASSERT_TRUE(form);
  IRPtr kept = dce(*form, from_json("[true, false]"));
  const Eqn& pipe = kept->eqns.back();
  ASSERT_EQ(pipe.prim->name, "pipeline");
  EXPECT_EQ(pipe.out.size(), 1u);
  EXPECT_EQ(pipe.in.size(), 1u);  // y is no longer read
  EXPECT_EQ(pipe.params.ir("body")->eqns.size(), 1u);
}

// pipeline[axes, body, chunk](x, y) with body(x, y) = [lm_call over x, y].
IRPtr hand_pipeline(Env& e, const char* axes, int64_t chunk, Aval y_aval = Aval{Kind::Str, 1}) {
  Builder inner;
  VarId x = inner.var(Aval{Kind::Str, 1}), y = inner.var(y_aval);
  IRPtr call = trace(
      [&](std::span<const Value> in) { return op_lm_call(user_turn(in[0]), Value::str("m"), Value(), e.env); },
      std::vector<Value>{Value::str("q")}, Value());
  std::vector<Atom> o = inline_into(inner, *batch(call, Value()), std::vector<Atom>{Atom::of_var(x)});
  return wrapped(inner.finish({Atom::of_var(x), Atom::of_var(y)}, TreeDef::flat_list(2), {o[0], Atom::of_var(y)},
                              TreeDef::flat_list(2)),
                 axes, chunk);
}

TEST(Pipeline, ChecksItsShapeWhenBuiltAndWhenRun) {
  Env e;
  EXPECT_AF_ERROR(hand_pipeline(e, "[true]", 4), Code::InvalidArgument, "axes has 1");
  EXPECT_AF_ERROR(hand_pipeline(e, "[false, false]", 4), Code::InvalidArgument, "no input is batched");
  EXPECT_AF_ERROR(hand_pipeline(e, "[true, false]", 0), Code::InvalidArgument, "chunk must be at least 1");
  EXPECT_AF_ERROR(hand_pipeline(e, "[true, false]", 4, Aval{Kind::Str, 0}), Code::InvalidArgument,
                  "output 1 is str, not a list of items");
  // y is shared, yet returned as if it held one item per batch item: its
  // slices' outputs do not fit the batch, and the run says so.
  IRPtr ir = hand_pipeline(e, "[true, false]", 1);
  EXPECT_AF_ERROR(run_sync(e.env, compile(ir), {items(3, "x"), items(5, "y")}), Code::InvalidArgument,
                  "is not a list of 1 items");
  // Whole (one slice), the body's outputs are returned as they are.
  IRPtr whole = hand_pipeline(e, "[true, false]", 8);
  EXPECT_EQ(run_sync(e.env, compile(whole), {items(3, "x"), items(5, "y")}).items()[1].size(), 5u);
}

}  // namespace
}  // namespace af
