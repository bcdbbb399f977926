// Saved program plans: compile() -> save_plan -> .afg -> program_from_plan
// gives the same program, and every way a hostile plan could mislead the
// executor is refused with FORMAT.
#include "exec/program.h"
#include "expect_error.h"
#include "io_test_util.h"

namespace af {
namespace {

using iotest::S;
using iotest::env;

// x -> concat(a, b) where a and b are the same format (merged by CSE), an
// unused concat (removed by DCE) and a checkpoint (effectful, always runs).
IRPtr dup_dead_effect() {
  return iotest::trace_fn(
      [](std::span<const Value> in) {
        Value a = op_format("{}-{}", std::vector<Value>{in[0], in[0]}, Value(), env());
        Value b = op_format("{}-{}", std::vector<Value>{in[0], in[0]}, Value(), env());
        (void)op_concat(std::vector<Value>{in[0], S("unused")}, env());
        Value c = op_checkpoint(a, "k", "coll", env());
        return op_concat(std::vector<Value>{c, b}, env());
      },
      {S("x")});
}

void expect_same_program(const Program& a, const Program& b) {
  ASSERT_EQ(a.nodes.size(), b.nodes.size());
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    EXPECT_EQ(a.nodes[i].eqn_index, b.nodes[i].eqn_index);
    EXPECT_EQ(a.nodes[i].n_deps, b.nodes[i].n_deps);
    EXPECT_EQ(a.nodes[i].priority, b.nodes[i].priority);
  }
  EXPECT_EQ(a.args, b.args);
  EXPECT_EQ(a.results, b.results);
  EXPECT_EQ(a.consumers, b.consumers);
  EXPECT_EQ(a.roots, b.roots);
  EXPECT_EQ(a.in_slots, b.in_slots);
  EXPECT_EQ(a.out_slots, b.out_slots);
  EXPECT_EQ(a.n_slots, b.n_slots);
  EXPECT_EQ(a.constants, b.constants);
  EXPECT_EQ(a.critical_path, b.critical_path);
  EXPECT_EQ(a.removed_dce, b.removed_dce);
  EXPECT_EQ(a.merged_cse, b.merged_cse);
}

io::PlanData data_of(const SavedPlan& s) {
  return io::PlanData{s.live, s.var_slot, s.priority, s.removed_dce, s.merged_cse};
}

TEST(SavedPlan, RebuildsExactlyWhatCompileMade) {
  IRPtr ir = dup_dead_effect();
  auto compiled = compile(ir);
  EXPECT_EQ(compiled->merged_cse, 1u);
  EXPECT_EQ(compiled->removed_dce, 1u);
  SavedPlan plan = save_plan(*compiled);
  expect_same_program(*compiled, *program_from_plan(ir, plan));
}

TEST(SavedPlan, ThroughBytesIdenticalTwiceAndTheSameProgram) {
  IRPtr ir = dup_dead_effect();
  auto compiled = compile(ir);
  io::PlanData plan = data_of(save_plan(*compiled));
  std::string bytes = io::save_ir(*ir, &plan);
  EXPECT_EQ(bytes, io::save_ir(*compile(ir)->ir, &plan));
  io::Loaded g = io::load(iotest::as_span(bytes));
  ASSERT_TRUE(g.plan);
  EXPECT_EQ(g.plan->live, plan.live);
  EXPECT_EQ(g.plan->var_slot, plan.var_slot);
  auto loaded = program_from_plan(g.ir, SavedPlan{g.plan->live, g.plan->var_slot, g.plan->priority,
                                                  g.plan->removed_dce, g.plan->merged_cse});
  expect_same_program(*compiled, *loaded);
  // The JSON form carries the plan too, exactly.
  std::string json = io::graph_to_json(*g.ir, &*g.plan);
  EXPECT_NE(json.find("\"plan\""), std::string::npos);
  io::Loaded back = io::graph_from_json(json);
  ASSERT_TRUE(back.plan);
  EXPECT_EQ(io::save_ir(*back.ir, &*back.plan), bytes);
}

TEST(SavedPlan, PlanShapeIsCheckedByTheLoader) {
  IRPtr ir = dup_dead_effect();
  io::PlanData plan = data_of(save_plan(*compile(ir)));
  plan.var_slot.pop_back();
  std::string bytes = io::save_ir(*ir, &plan);
  EXPECT_AF_ERROR(io::load(iotest::as_span(bytes)), Code::Format, "var_slot");
  plan = data_of(save_plan(*compile(ir)));
  plan.priority.push_back(1);
  bytes = io::save_ir(*ir, &plan);
  EXPECT_AF_ERROR(io::load(iotest::as_span(bytes)), Code::Format, "priority");
}

TEST(SavedPlan, HostilePlansAreRefused) {
  IRPtr ir = dup_dead_effect();
  const SavedPlan good = save_plan(*compile(ir));
  // Equations: 0 format a, 1 format b (merged into 0), 2 concat unused
  // (dead), 3 checkpoint, 4 concat out. Vars: 0 x, 1 a, 2 b, 3 unused, 4 c, 5 out.
  ASSERT_EQ(ir->eqns.size(), 5u);
  ASSERT_EQ(good.live, (std::vector<uint32_t>{0, 3, 4}));
  ASSERT_EQ(good.var_slot[2], 1u);
  struct Case {
    const char* name;
    std::function<void(SavedPlan&)> edit;
    const char* fragment;
  };
  const std::vector<Case> cases = {
      {"fewer slots", [](SavedPlan& p) { p.var_slot.pop_back(); }, "variable slots"},
      {"unsorted", [](SavedPlan& p) { std::swap(p.live[0], p.live[1]); }, "out of order"},
      {"out of range", [](SavedPlan& p) { p.live.back() = 99; }, "out of range"},
      {"NaN priority", [](SavedPlan& p) { p.priority[0] = std::nan(""); }, "priority"},
      {"negative priority", [](SavedPlan& p) { p.priority[0] = -1; }, "priority"},
      {"drops a needed equation",
       [](SavedPlan& p) {
         p.live.erase(p.live.begin());
         p.priority.erase(p.priority.begin());
       },
       "not an earlier live equation"},
      {"skips an effect",
       [](SavedPlan& p) {
         p.live.erase(p.live.begin() + 1);
         p.priority.erase(p.priority.begin() + 1);
         p.var_slot[4] = 1;
       },
       "has effects"},
      {"reads a slot past the end", [](SavedPlan& p) { p.var_slot[2] = 77; }, "merges"},
      {"never-written slot", [](SavedPlan& p) { p.var_slot[2] = kNoVar; }, "nothing has written"},
      {"merges different equations", [](SavedPlan& p) { p.var_slot[2] = 0; }, "merges"},
      {"aliases a live result", [](SavedPlan& p) { p.var_slot[4] = 1; }, "another slot"},
      {"moves an input", [](SavedPlan& p) { p.var_slot[0] = 1; }, "input"},
      {"dead result read", [](SavedPlan& p) { p.var_slot[3] = 3; }, "merges"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    SavedPlan p = good;
    c.edit(p);
    EXPECT_AF_ERROR(program_from_plan(ir, p), Code::Format, c.fragment);
  }
}

TEST(SavedPlan, MergedChainsAreResolvedThroughMergedInputs) {
  // b = f(x) twice, then g(b) twice: the second g reads the merged second f.
  IRPtr ir = iotest::trace_fn(
      [](std::span<const Value> in) {
        Value a1 = op_concat(std::vector<Value>{in[0], S("1")}, env());
        Value a2 = op_concat(std::vector<Value>{in[0], S("1")}, env());
        Value b1 = op_concat(std::vector<Value>{a1, S("2")}, env());
        Value b2 = op_concat(std::vector<Value>{a2, S("2")}, env());
        return Value::list({b1, b2});
      },
      {S("x")});
  auto compiled = compile(ir);
  EXPECT_EQ(compiled->merged_cse, 2u);
  expect_same_program(*compiled, *program_from_plan(ir, save_plan(*compiled)));
}

}  // namespace
}  // namespace af
