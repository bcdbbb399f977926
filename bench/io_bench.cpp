// Saved graphs (.afg) on a 1 000 000-equation IR:
//   y_0 = x, y_{2k+1} = concat(y_{2k}, "+"), y_{2k+2} = format[template](y_{2k+1})
// with one of 1 000 templates per format equation (so param sets and strings
// are not all one), built directly (no tracing). Measured:
//   BM_IO_Save        IR -> .afg bytes (encode, flatbuffer, zstd, checksum)
//   BM_IO_SaveTracedVsBuilt  the same IR traced (af::trace over op_concat /
//                     op_format) against built: both saved in turn in one
//                     run; traced_vs_built is the ratio of their save times
//   BM_IO_LoadVerify  .afg bytes -> IR with every check of the loader
//   BM_IO_Decompress  the container + zstd step alone (the floor of a load)
//   BM_IO_JsonForm    IR -> the readable JSON form (the size comparison)
//   BM_IO_LoadPeakMemory  the peak memory a load adds (resident set of a
//                     child process that loads, less one that only reads
//                     the bytes), per byte of decompressed content
// Counters: content_MB (decompressed flatbuffer), file_MB, json_MB,
// file_vs_json (file size / JSON size) and MB/s of decompressed graph.
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "io/afg.h"
#include "ir/ir.h"
#include "ir/registry.h"
#include "prims/ops.h"
#include "trace/trace.h"

namespace {

using namespace af;

IRPtr make_chain(size_t n) {
  auto ir = std::make_shared<IR>();
  ir->vars.assign(n + 1, Aval{Kind::Str, 0});
  ir->in = {Atom::of_var(0)};
  ir->in_tree = TreeDef::flat_list(1);
  const Prim* concat = &prim("concat");
  const Prim* format = &prim("format");
  Value plus = Value::str("+");
  std::vector<Params> templates(1000);
  for (size_t t = 0; t < templates.size(); ++t) {
    templates[t].set("names", Value::list({}));
    templates[t].set("template", Value::str("step " + std::to_string(t) + ": <{}>"));
  }
  ir->eqns.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    Eqn e;
    if (i % 2 == 0) {
      e.prim = concat;
      e.in = {Atom::of_var(VarId(i)), Atom::literal(plus)};
      e.in_tree = TreeDef::flat_list(2);
    } else {
      e.prim = format;
      e.in = {Atom::of_var(VarId(i))};
      e.in_tree = TreeDef::flat_list(1);
      e.params = templates[(i / 2) % templates.size()];
    }
    e.out = {VarId(i + 1)};
    e.out_tree = TreeDef::leaf();
    ir->eqns.push_back(std::move(e));
  }
  ir->out = {Atom::of_var(VarId(n))};
  ir->out_tree = TreeDef::leaf();
  return ir;
}

constexpr size_t kEqns = 1000000;

// make_chain(n) recorded by tracing: the same equations, each with its own
// params and literal as a traced program makes them.
IRPtr trace_chain(size_t n) {
  RunEnv env;
  std::vector<std::string> templates(1000);
  for (size_t t = 0; t < templates.size(); ++t) templates[t] = "step " + std::to_string(t) + ": <{}>";
  Value x = Value::str("x");
  return trace(
      [&](std::span<const Value> in) {
        Value y = in[0];
        for (size_t i = 0; i < n; ++i) {
          if (i % 2 == 0) {
            y = op_concat(std::vector<Value>{y, Value::str("+")}, env);
          } else {
            y = op_format(templates[(i / 2) % templates.size()], std::span<const Value>(&y, 1), Value(), env);
          }
        }
        return y;
      },
      std::span<const Value>(&x, 1), Value());
}

const IRPtr& chain() {
  static IRPtr ir = make_chain(kEqns);
  return ir;
}
const std::string& saved() {
  static std::string b = io::save_ir(*chain());
  return b;
}
std::span<const uint8_t> bytes() {
  return {reinterpret_cast<const uint8_t*>(saved().data()), saved().size()};
}
size_t content_bytes() {
  static size_t n = io::unseal(bytes()).size;
  return n;
}
size_t json_bytes() {
  static size_t n = io::graph_to_json(*chain()).size();
  return n;
}

void sizes(benchmark::State& state) {
  state.counters["eqns"] = double(kEqns);
  state.counters["content_MB"] = double(content_bytes()) / 1e6;
  state.counters["file_MB"] = double(saved().size()) / 1e6;
  state.counters["json_MB"] = double(json_bytes()) / 1e6;
  state.counters["file_vs_json"] = double(saved().size()) / double(json_bytes());
  state.counters["content_MB_per_s"] =
      benchmark::Counter(double(content_bytes()) / 1e6, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["eqn_per_s"] =
      benchmark::Counter(double(kEqns), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_IO_Save(benchmark::State& state) {
  const IRPtr& ir = chain();
  for (auto _ : state) {
    std::string b = io::save_ir(*ir);
    benchmark::DoNotOptimize(b.data());
  }
  if (io::save_ir(*ir) != saved()) state.SkipWithError("save is not deterministic");
  sizes(state);
}
BENCHMARK(BM_IO_Save)->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_IO_SaveTracedVsBuilt(benchmark::State& state) {
  const IRPtr& built = chain();
  static const IRPtr traced = trace_chain(kEqns);
  if (!ir_equal(*traced, *built)) state.SkipWithError("the traced IR differs from the built one");
  using Clock = std::chrono::steady_clock;
  double built_s = 0, traced_s = 0;
  for (auto _ : state) {
    for (const auto& [ir, total] : {std::pair{built.get(), &built_s}, std::pair{traced.get(), &traced_s}}) {
      auto t0 = Clock::now();
      std::string b = io::save_ir(*ir);
      benchmark::DoNotOptimize(b.data());
      *total += std::chrono::duration<double>(Clock::now() - t0).count();
    }
  }
  state.counters["built_ms"] = 1e3 * built_s / double(state.iterations());
  state.counters["traced_ms"] = 1e3 * traced_s / double(state.iterations());
  state.counters["traced_vs_built"] = traced_s / built_s;
}
BENCHMARK(BM_IO_SaveTracedVsBuilt)->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_IO_LoadVerify(benchmark::State& state) {
  auto b = bytes();
  for (auto _ : state) {
    IRPtr ir = io::load_ir(b);
    benchmark::DoNotOptimize(ir.get());
    state.PauseTiming();
    ir.reset();  // freeing a million equations is not part of a load
    state.ResumeTiming();
  }
  if (!ir_equal(*io::load_ir(b), *chain())) state.SkipWithError("the loaded IR differs");
  sizes(state);
}
BENCHMARK(BM_IO_LoadVerify)->Unit(benchmark::kMillisecond)->Iterations(5);

void BM_IO_Decompress(benchmark::State& state) {
  auto b = bytes();
  for (auto _ : state) {
    io::Unsealed u = io::unseal(b);
    benchmark::DoNotOptimize(u.data());
  }
  sizes(state);
}
BENCHMARK(BM_IO_Decompress)->Unit(benchmark::kMillisecond)->Iterations(5);

void BM_IO_JsonForm(benchmark::State& state) {
  for (auto _ : state) {
    std::string j = io::graph_to_json(*chain());
    benchmark::DoNotOptimize(j.data());
  }
  sizes(state);
}
BENCHMARK(BM_IO_JsonForm)->Unit(benchmark::kMillisecond)->Iterations(2);

// The peak resident set (KiB) of a child that reads the saved bytes and,
// when `load`, loads them.
long child_peak_kib(bool load) {
  const pid_t pid = fork();
  if (pid == 0) {
    volatile uint8_t sum = 0;
    for (char c : saved()) sum = uint8_t(sum + uint8_t(c));
    if (load) benchmark::DoNotOptimize(io::load_ir(bytes()).get());
    _exit(0);
  }
  int status = 0;
  struct rusage ru {};
  if (pid < 0 || wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status)) return -1;
  return ru.ru_maxrss;
}

void BM_IO_LoadPeakMemory(benchmark::State& state) {
  (void)content_bytes();  // made before the children fork
  long base = 0, peak = 0;
  for (auto _ : state) {
    base = child_peak_kib(false);
    peak = child_peak_kib(true);
  }
  if (base < 0 || peak < 0) state.SkipWithError("a child process failed");
  state.counters["load_peak_MB"] = double(peak - base) * 1024 / 1e6;
  state.counters["peak_per_content"] = double(peak - base) * 1024 / double(content_bytes());
  sizes(state);
}
BENCHMARK(BM_IO_LoadPeakMemory)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace
