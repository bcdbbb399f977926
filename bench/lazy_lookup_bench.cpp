// The lazy evaluator's plan-cache lookup, on its own (numbers in
// docs/PERFORMANCE.md):
//
//  BM_Lazy_Lookup10k/find:    a chain of 10 000 pending concats keyed from its
//                             nodes (lazy::Cut) and confirmed against the
//                             cached program's IR, without building an IR:
//                             what a plan-cache hit costs an evaluation.
//  BM_Lazy_Lookup10k/compile: compiling the IR that chain cuts out, i.e.
//                             what the hit saves. Goal: find <= compile / 5.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "exec/context.h"
#include "exec/program.h"
#include "ir/registry.h"
#include "lazy/cut.h"
#include "lazy/graph.h"

namespace {

void BM_Lazy_Lookup10k(benchmark::State& state) {
  const bool compile_it = state.range(0) == 1;
  af::ExecContext ctx;
  auto graph = std::make_shared<af::lazy::Graph>(ctx);
  const af::Prim& concat = af::prim("concat");
  af::Value v = af::Value::str("x"), e = af::Value::str("e");
  for (int i = 0; i < 10000; ++i) v = graph->record(concat, {}, {v, e}, af::TreeDef::flat_list(2));
  // The batch an evaluation of v would claim: every node of the chain.
  std::vector<std::shared_ptr<af::lazy::Node>> batch;
  for (const af::lazy::Cell* c = af::lazy::cell_of(v); c; c = af::lazy::cell_of(c->node->in[0]))
    batch.push_back(c->node);
  std::reverse(batch.begin(), batch.end());
  auto reset = [&] {
    for (auto& n : batch) n->first_var = af::kNoVar;
  };
  af::IRPtr ir;
  {
    af::lazy::Cut cut(batch);
    ir = cut.build();
    ctx.plans.get(ir, cut.key, {}, cut.code);
    reset();
  }
  for (auto _ : state) {
    if (compile_it) {
      benchmark::DoNotOptimize(af::compile(ir));
      continue;
    }
    af::lazy::Cut cut(batch);
    auto p = ctx.plans.find(cut.key, cut.code);
    if (!p) state.SkipWithError("the lookup missed");
    benchmark::DoNotOptimize(p);
    reset();
  }
  state.counters["eqns"] = 10000;
  graph->close();
}
BENCHMARK(BM_Lazy_Lookup10k)->Arg(0)->Arg(1)->ArgName("compile")->Unit(benchmark::kMicrosecond);

}  // namespace
