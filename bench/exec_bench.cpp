// The dataflow executor and the LM layer, measured through the C API with
// the echo provider (deterministic, offline, optional fixed latency).
//
//  BM_Exec_RandomDag1000   a random DAG of 1 000 lm_calls with mixed
//                          latencies (5/10/20/40 ms by model). Reports the
//                          makespan, the critical-path lower bound (the
//                          longest latency-weighted path), their ratio, and
//                          the makespan of the same DAG run level by level
//                          (every node of level L+1 made to depend on every
//                          node of level L with `depends`: autoform's gather
//                          schedule, measured in the same process).
//  BM_Exec_InFlight10k     10 000 independent lm_calls of 200 ms each in one
//                          run: makespan, peak requests in flight, threads in
//                          the process while they are in flight.
//  BM_Exec_Overhead        engine overhead per LM call with a zero-latency
//                          echo (the reply is made inline), for 1 000
//                          independent calls and for a chain of 1 000.
//  BM_Exec_BatchedTriage   the triage example (examples/triage: a schema
//                          call, a switch whose branches call an LM, a
//                          review call) batched over N tickets, L ms per
//                          call (args N, L): makespan against the 3 L
//                          critical path; engine memory per ticket in
//                          flight and threads at the peak; CPU per call
//                          and the floor it puts under the makespan. The
//                          third arg splits the tickets into that many
//                          concurrent calls (af_program_call_async). The
//                          100 000-ticket rows add the steady state
//                          (steady_*: the median of three more runs in
//                          the same process) beside the first run.
//  BM_Exec_BatchedLoop     a loop around an LM call (three passes, each
//                          asks model "m" to revise the last answer) batched
//                          over N items, L ms per call (args N, L): every
//                          item runs its loop on its own (a map over the
//                          while_loop: a sub-run per item and per pass), so
//                          this measures control flow's sub-runs at scale;
//                          reported as BatchedTriage is.
//
// Scenario benchmarks run one iteration each (manual time = the makespan).
#include <af/af.h>
#include <benchmark/benchmark.h>
#include <dirent.h>
#include <malloc.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "triage_program.h"

namespace {

struct Ctx {
  af_context_t* ctx = nullptr;
  Ctx() { af_error_free(af_context_new(&ctx)); }
  ~Ctx() { af_context_free(ctx); }
};

bool ok(benchmark::State& state, af_error_t* e, const char* what) {
  if (!e) return true;
  state.SkipWithError((std::string(what) + ": " + af_error_message(e)).c_str());
  af_error_free(e);
  return false;
}

af_value_t* str(af_context_t* c, const std::string& s) {
  af_value_t* v = nullptr;
  af_error_free(af_value_str(c, s.data(), s.size(), &v));
  return v;
}

af_provider_t* echo(const std::string& opts) {
  af_provider_t* p = nullptr;
  af_error_free(af_provider_echo_new(opts.data(), opts.size(), &p));
  return p;
}

// An echo provider answering after latency_ms, routed for every model.
af_provider_t* echo_routed(af_context_t* ctx, int64_t latency_ms) {
  af_provider_t* p = echo("{\"latency_ms\":" + std::to_string(latency_ms) + "}");
  af_error_free(af_context_route(ctx, "*", 1, p));
  return p;
}

long stat(const af_provider_t* p, const char* field) {
  af_bytes_t b{nullptr, 0};
  if (af_provider_stats(p, &b)) return -1;
  std::string s(reinterpret_cast<char*>(b.data), b.len);
  af_bytes_free(&b);
  size_t at = s.find(std::string("\"") + field + "\":");
  return at == std::string::npos ? -1 : std::stol(s.substr(at + std::strlen(field) + 3));
}

// CPU time of the whole process (every thread), in ms.
double process_cpu_ms() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto ms = [](const timeval& t) { return double(t.tv_sec) * 1e3 + double(t.tv_usec) / 1e3; };
  return ms(u.ru_utime) + ms(u.ru_stime);
}

double rss_bytes() {
  long pages = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return double(resident) * double(sysconf(_SC_PAGESIZE));
}

// The cores this process may run on (its affinity: `taskset -c 0` gives 1),
// which bound what any schedule of its CPU can reach.
int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return int(std::max(1u, std::thread::hardware_concurrency()));
}

int threads_now() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') ++n;
    closedir(d);
  }
  return n;
}

// messages = [{"role":"user","content": c} for c in contents]
af_value_t* messages(af_context_t* c, const std::vector<af_value_t*>& contents) {
  af_value_t* role = str(c, "user");
  std::vector<af_value_t*> ms;
  const char* keys[] = {"role", "content"};
  size_t lens[] = {4, 7};
  for (af_value_t* content : contents) {
    const af_value_t* vals[] = {role, content};
    af_value_t* m = nullptr;
    af_error_free(af_value_dict(c, keys, lens, vals, 2, &m));
    ms.push_back(m);
  }
  af_value_t* list = nullptr;
  af_error_free(af_value_list(c, ms.data(), ms.size(), &list));
  for (af_value_t* m : ms) af_value_free(m);
  af_value_free(role);
  return list;
}

// ---- the random DAG

struct Dag {
  std::vector<std::vector<int>> parents;
  std::vector<int> latency_ms;  // by model
  std::vector<int> level;
  double critical_ms = 0;
  int critical_hops = 0;  // LM calls on that longest path
  double levels_ms = 0;   // sum over levels of the slowest node
};

Dag random_dag(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const int lat[] = {5, 10, 20, 40};
  Dag d;
  d.parents.resize(size_t(n));
  d.latency_ms.resize(size_t(n));
  d.level.resize(size_t(n));
  std::vector<double> finish(static_cast<size_t>(n));
  std::vector<int> hops(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    d.latency_ms[size_t(i)] = lat[rng() % 4];
    int k = i == 0 ? 0 : int(rng() % 4);  // 0..3 parents among the last 60 nodes
    for (int j = 0; j < k; ++j) {
      int p = i - 1 - int(rng() % uint64_t(std::min(i, 60)));
      if (std::find(d.parents[size_t(i)].begin(), d.parents[size_t(i)].end(), p) == d.parents[size_t(i)].end())
        d.parents[size_t(i)].push_back(p);
    }
    double start = 0;
    int lvl = 0;
    int h = 0;
    for (int p : d.parents[size_t(i)]) {
      if (finish[size_t(p)] > start) {
        start = finish[size_t(p)];
        h = hops[size_t(p)];
      }
      lvl = std::max(lvl, d.level[size_t(p)] + 1);
    }
    finish[size_t(i)] = start + d.latency_ms[size_t(i)];
    hops[size_t(i)] = h + 1;
    d.level[size_t(i)] = lvl;
    if (finish[size_t(i)] > d.critical_ms) {
      d.critical_ms = finish[size_t(i)];
      d.critical_hops = hops[size_t(i)];
    }
  }
  int max_level = *std::max_element(d.level.begin(), d.level.end());
  for (int l = 0; l <= max_level; ++l) {
    int worst = 0;
    for (int i = 0; i < n; ++i)
      if (d.level[size_t(i)] == l) worst = std::max(worst, d.latency_ms[size_t(i)]);
    d.levels_ms += worst;
  }
  return d;
}

struct DagTrace {
  const Dag* dag;
  bool barriers;  // level by level
};

// Node i: lm_call(model "lat-<ms>", [parent outputs..., "node i"]).
af_error_t* trace_dag(void* ud, af_context_t* c, const af_value_t* const*, size_t, af_value_t** out) {
  auto* t = static_cast<DagTrace*>(ud);
  const Dag& d = *t->dag;
  const size_t n = d.parents.size();
  std::vector<af_value_t*> outs(n, nullptr);
  std::vector<std::vector<af_value_t*>> by_level;
  af_error_t* e = nullptr;
  // Level order (parents always sit on lower levels), so that a level's
  // barrier sees every node of the level before it.
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return d.level[a] < d.level[b]; });
  for (size_t i : order) {
    if (e) break;
    std::vector<af_value_t*> contents;
    for (int p : d.parents[i]) contents.push_back(af_value_clone(outs[size_t(p)]));
    af_value_t* own = str(c, "node " + std::to_string(i));
    if (t->barriers && d.level[i] > 0) {
      // own = depends(own, every output of the previous level)
      const auto& prev = by_level[size_t(d.level[i] - 1)];
      af_value_t* gated = nullptr;
      e = af_depends(c, own, prev.data(), prev.size(), &gated);
      af_value_free(own);
      own = gated;
    }
    contents.push_back(own);
    af_value_t* msgs = messages(c, contents);
    for (af_value_t* v : contents) af_value_free(v);
    af_value_t* model = str(c, "lat-" + std::to_string(d.latency_ms[i]));
    if (!e) e = af_lm_call(c, msgs, model, &outs[i]);
    af_value_free(msgs);
    af_value_free(model);
    if (by_level.size() <= size_t(d.level[i])) by_level.resize(size_t(d.level[i]) + 1);
    by_level[size_t(d.level[i])].push_back(outs[i]);
  }
  if (!e) e = af_value_list(c, outs.data(), n, out);
  for (af_value_t* v : outs) af_value_free(v);
  return e;
}

double run_ms(af_context_t* c, const af_program_t* p) {
  af_value_t* out = nullptr;
  auto t0 = std::chrono::steady_clock::now();
  af_error_t* e = af_program_call(c, p, nullptr, 0, &out);
  auto t1 = std::chrono::steady_clock::now();
  af_error_free(e);
  af_value_free(out);
  return e ? -1 : std::chrono::duration<double, std::milli>(t1 - t0).count();
}

void BM_Exec_RandomDag1000(benchmark::State& state) {
  Ctx c;
  std::vector<af_provider_t*> providers;
  for (int ms : {5, 10, 20, 40}) {
    af_provider_t* p = echo("{\"latency_ms\":" + std::to_string(ms) + "}");
    std::string pat = "lat-" + std::to_string(ms);
    af_error_free(af_context_route(c.ctx, pat.data(), pat.size(), p));
    providers.push_back(p);
  }
  Dag dag = random_dag(1000, uint64_t(state.range(0)));
  DagTrace flow{&dag, false}, levels{&dag, true};
  af_ir_t *ir_flow = nullptr, *ir_levels = nullptr;
  af_program_t *p_flow = nullptr, *p_levels = nullptr;
  if (!ok(state, af_trace(c.ctx, trace_dag, &flow, nullptr, 0, nullptr, &ir_flow), "trace") ||
      !ok(state, af_trace(c.ctx, trace_dag, &levels, nullptr, 0, nullptr, &ir_levels), "trace levels") ||
      !ok(state, af_compile(c.ctx, ir_flow, &p_flow), "compile") ||
      !ok(state, af_compile(c.ctx, ir_levels, &p_levels), "compile levels"))
    return;
  double makespan = 0, level_ms = 0;
  for (auto _ : state) {
    makespan = run_ms(c.ctx, p_flow);
    level_ms = run_ms(c.ctx, p_levels);
    state.SetIterationTime(makespan / 1000.0);
  }
  state.counters["makespan_ms"] = makespan;
  state.counters["critical_path_ms"] = dag.critical_ms;
  state.counters["ratio"] = makespan / dag.critical_ms;
  // What the engine adds per LM call on the critical path (completion ->
  // dependent request issued), thread wake-ups included.
  state.counters["critical_hops"] = dag.critical_hops;
  state.counters["excess_ms_per_hop"] = (makespan - dag.critical_ms) / dag.critical_hops;
  state.counters["level_by_level_ms"] = level_ms;
  state.counters["level_bound_ms"] = dag.levels_ms;
  state.counters["speedup_vs_levels"] = level_ms / makespan;
  af_program_free(p_flow);
  af_program_free(p_levels);
  af_ir_free(ir_flow);
  af_ir_free(ir_levels);
  for (af_provider_t* p : providers) af_provider_free(p);
}
BENCHMARK(BM_Exec_RandomDag1000)->Arg(1)->Arg(2)->Arg(3)->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);

// ---- 10 000 in flight

struct Fan {
  int n;
};

af_error_t* trace_fan(void* ud, af_context_t* c, const af_value_t* const* in, size_t, af_value_t** out) {
  int n = static_cast<Fan*>(ud)->n;
  std::vector<af_value_t*> outs(size_t(n), nullptr);
  af_value_t* model = str(c, "m");
  af_error_t* e = nullptr;
  for (int i = 0; i < n && !e; ++i) {
    af_value_t* own = str(c, std::to_string(i));
    const af_value_t* parts[] = {in[0], own};
    af_value_t* content = nullptr;
    e = af_concat(c, parts, 2, &content);
    af_value_t* msgs = messages(c, {content});
    if (!e) e = af_lm_call(c, msgs, model, &outs[size_t(i)]);
    af_value_free(own);
    af_value_free(content);
    af_value_free(msgs);
  }
  if (!e) e = af_value_list(c, outs.data(), outs.size(), out);
  for (af_value_t* v : outs) af_value_free(v);
  af_value_free(model);
  return e;
}

void BM_Exec_InFlight10k(benchmark::State& state) {
  const bool async = state.range(0) == 1;
  Ctx c;
  af_provider_t* p = echo("{\"latency_ms\":200}");
  af_error_free(af_context_route(c.ctx, "*", 1, p));
  Fan fan{10000};
  af_value_t* ex = str(c.ctx, "q");
  af_ir_t* ir = nullptr;
  af_program_t* prog = nullptr;
  if (!ok(state, af_trace(c.ctx, trace_fan, &fan, &ex, 1, nullptr, &ir), "trace") ||
      !ok(state, af_compile(c.ctx, ir, &prog), "compile"))
    return;
  int base_threads = threads_now();
  double makespan = 0;
  std::atomic<int> peak_threads{0};
  for (auto _ : state) {
    std::atomic<bool> done{false};
    std::thread watch([&] {
      while (!done) {
        peak_threads = std::max(peak_threads.load(), threads_now() - 1 /* this watcher */);
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    });
    auto t0 = std::chrono::steady_clock::now();
    af_value_t* out = nullptr;
    af_error_t* e;
    if (async) {
      af_future_t* f = nullptr;
      e = af_program_call_async(c.ctx, prog, &ex, 1, &f);
      if (!e) e = af_future_wait(f, &out);
      af_future_free(f);
    } else {
      e = af_program_call(c.ctx, prog, &ex, 1, &out);
    }
    makespan = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    done = true;
    watch.join();
    af_value_free(out);
    if (!ok(state, e, "call")) break;
    state.SetIterationTime(makespan / 1000.0);
  }
  state.counters["makespan_ms"] = makespan;
  state.counters["peak_in_flight"] = double(stat(p, "peak_in_flight"));
  state.counters["threads_before"] = base_threads;
  state.counters["threads_peak"] = peak_threads.load();
  af_program_free(prog);
  af_ir_free(ir);
  af_value_free(ex);
  af_provider_free(p);
}
BENCHMARK(BM_Exec_InFlight10k)->Arg(0)->Arg(1)->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);

// ---- overhead per LM call

af_error_t* trace_chain(void* ud, af_context_t* c, const af_value_t* const* in, size_t, af_value_t** out) {
  int n = static_cast<Fan*>(ud)->n;
  af_value_t* model = str(c, "m");
  af_value_t* cur = af_value_clone(in[0]);
  af_error_t* e = nullptr;
  for (int i = 0; i < n && !e; ++i) {
    af_value_t* msgs = messages(c, {cur});
    af_value_t* next = nullptr;
    e = af_lm_call(c, msgs, model, &next);
    af_value_free(msgs);
    af_value_free(cur);
    cur = next;
  }
  // Echo prefixes "m|" each time; the result is 2n + 1 bytes: small.
  *out = cur;
  af_value_free(model);
  return e;
}

void BM_Exec_Overhead(benchmark::State& state) {
  const bool chain = state.range(0) == 1;
  Ctx c;
  af_provider_t* p = echo("{}");
  af_error_free(af_context_route(c.ctx, "*", 1, p));
  Fan n{1000};
  af_value_t* ex = str(c.ctx, "q");
  af_ir_t* ir = nullptr;
  af_program_t* prog = nullptr;
  if (!ok(state, af_trace(c.ctx, chain ? trace_chain : trace_fan, &n, &ex, 1, nullptr, &ir), "trace") ||
      !ok(state, af_compile(c.ctx, ir, &prog), "compile"))
    return;
  for (auto _ : state) {
    af_value_t* out = nullptr;
    if (!ok(state, af_program_call(c.ctx, prog, &ex, 1, &out), "call")) break;
    af_value_free(out);
  }
  state.counters["us_per_lm_call"] =
      benchmark::Counter(double(n.n) / 1e6, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  af_program_free(prog);
  af_ir_free(ir);
  af_value_free(ex);
  af_provider_free(p);
}
BENCHMARK(BM_Exec_Overhead)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

// ---- control flow around LM calls, batched

// Runs `prog` (a batched program of three dependent LM calls per item, on
// echo with `latency_ms` per call) on n items, as `splits` concurrent calls
// on consecutive slices of them (1: one call): the makespan against the
// 3 L critical path, the CPU the run took, engine memory per item in flight
// and threads at the peak. The first run comes after malloc_trim (its heap
// grows as it goes: what a program's first large batch pays); then
// `steady_runs` more in the same process, whose median is the steady state.
void run_batched(benchmark::State& state, af_context_t* ctx, const af_program_t* prog, const af_provider_t* p,
                 const std::string& item_prefix, int n, int64_t latency_ms, int splits = 1, int steady_runs = 0) {
  std::vector<af_value_t*> items;
  for (int i = 0; i < n; ++i) items.push_back(str(ctx, item_prefix + std::to_string(i)));
  std::vector<af_value_t*> lists(size_t(splits), nullptr);
  for (size_t k = 0; k < lists.size(); ++k) {
    const size_t from = items.size() * k / lists.size(), to = items.size() * (k + 1) / lists.size();
    af_error_free(af_value_list(ctx, items.data() + from, to - from, &lists[k]));
  }
  // One run: its makespan and the CPU it took (ms), or false after an error.
  auto run_once = [&](double& makespan, double& cpu_ms) {
    auto t0 = std::chrono::steady_clock::now();
    const double cpu0 = process_cpu_ms();
    af_error_t* e = nullptr;
    std::vector<af_future_t*> runs(lists.size() > 1 ? lists.size() : 0, nullptr);
    if (runs.empty()) {  // one call: the calling thread runs it (af_program_call)
      af_value_t* out = nullptr;
      e = af_program_call(ctx, prog, &lists[0], 1, &out);
      af_value_free(out);
    }
    for (size_t k = 0; k < runs.size() && !e; ++k) e = af_program_call_async(ctx, prog, &lists[k], 1, &runs[k]);
    for (af_future_t* f : runs) {
      af_value_t* out = nullptr;
      af_error_t* w = f ? af_future_wait(f, &out) : nullptr;
      if (!e) e = w;
      else af_error_free(w);
      af_value_free(out);
      af_future_free(f);
    }
    makespan = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    cpu_ms = process_cpu_ms() - cpu0;
    return ok(state, e, "call");
  };
  double makespan = 0, rss0 = 0, cpu_ms = 0;
  std::atomic<double> rss_peak{0};
  std::atomic<int> peak_threads{0};
  std::vector<double> steady, steady_cpu;
  for (auto _ : state) {
    malloc_trim(0);  // what earlier runs freed goes back: the delta is this run's
    rss0 = rss_bytes();
    std::atomic<bool> done{false};
    std::thread watch([&] {
      while (!done) {
        rss_peak = std::max(rss_peak.load(), rss_bytes());
        peak_threads = std::max(peak_threads.load(), threads_now() - 1 /* this watcher */);
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    });
    const bool good = run_once(makespan, cpu_ms);
    done = true;
    watch.join();
    if (!good) break;
    state.SetIterationTime(makespan / 1000.0);
    for (int k = 0; k < steady_runs; ++k) {
      double m = 0, c = 0;
      if (!run_once(m, c)) break;
      steady.push_back(m);
      steady_cpu.push_back(c);
    }
  }
  const double critical_ms = 3.0 * double(latency_ms);  // three dependent calls per item
  state.counters["makespan_ms"] = makespan;
  state.counters["over_critical_path"] = makespan / critical_ms;
  // The CPU the run took, all threads: no schedule on the cores it may use
  // can finish in less than cpu / cores, so `cpu_floor` (that bound over the
  // critical path) is the least over_critical_path could be at this cost
  // per call.
  const double cores = usable_cores();
  state.counters["cores"] = cores;
  state.counters["cpu_ms"] = cpu_ms;
  state.counters["cpu_us_per_call"] = cpu_ms * 1e3 / (3.0 * n);
  state.counters["cpu_floor"] = cpu_ms / cores / critical_ms;
  // A tighter bound, from the program's three stages: no second-stage reply
  // is due before 2 L, and the last third-stage request can go only once
  // every item's second reply is read and its third request made — about a
  // third of the run's CPU (one LM call's worth per item) on `cores` cores;
  // its reply is due L later. So no schedule finishes much before
  // 3 L + cpu / 3 / cores: `stage_floor` is that over the critical path.
  auto stage_floor = [&](double cpu) { return (critical_ms + cpu / 3.0 / cores) / critical_ms; };
  state.counters["stage_floor"] = stage_floor(cpu_ms);
  if (!steady.empty()) {
    auto median = [](std::vector<double> xs) {
      std::sort(xs.begin(), xs.end());
      return xs[xs.size() / 2];
    };
    state.counters["steady_over_critical_path"] = median(steady) / critical_ms;
    state.counters["steady_cpu_us_per_call"] = median(steady_cpu) * 1e3 / (3.0 * n);
    state.counters["steady_stage_floor"] = stage_floor(median(steady_cpu));
  }
  state.counters["peak_in_flight"] = double(stat(p, "peak_in_flight"));
  // Resident memory sampled every 10 ms during the first run, less the
  // state before it (the items and the program exist already): what the
  // engine holds per item in flight, requests, replies and outputs
  // included. (mallinfo2 would count heap bytes exactly, but it walks every
  // arena under its lock and slowed the run it measured.)
  state.counters["rss_bytes_per_item"] = (rss_peak - rss0) / n;
  state.counters["threads_peak"] = peak_threads.load();
  for (af_value_t* v : items) af_value_free(v);
  for (af_value_t* l : lists) af_value_free(l);
}

void BM_Exec_BatchedTriage(benchmark::State& state) {
  const int n = int(state.range(0));
  const int64_t latency_ms = state.range(1);
  Ctx c;
  af_provider_t* p = echo_routed(c.ctx, latency_ms);
  af_ir_t* ir = nullptr;
  af_program_t* prog = nullptr;
  if (!ok(state, triage_batched_trace(c.ctx, &ir), "trace") || !ok(state, af_compile(c.ctx, ir, &prog), "compile"))
    return;
  // The 100 000-ticket rows report the steady state too (3 more runs).
  run_batched(state, c.ctx, prog, p, "ticket ", n, latency_ms, state.range(2), n >= 100000 ? 3 : 0);
  af_program_free(prog);
  af_ir_free(ir);
  af_provider_free(p);
}
// The saved triage program (af_demo's), loaded and run over its three sample
// tickets with a zero-latency echo: what a run costs a host that loaded a
// program, CPU per run, and `compiles_per_run` (af_context_stats; -1 for a
// libaf without the counter). First: the first run after the load.
void BM_Exec_SavedTriage(benchmark::State& state) {
  Ctx c;
  af_provider_t* p = echo_routed(c.ctx, 0);
  af_ir_t* ir = nullptr;
  af_program_t *prog = nullptr, *loaded = nullptr;
  const std::string path = "/tmp/af_bench_saved_triage_" + std::to_string(getpid()) + ".afg";
  if (!ok(state, triage_batched_trace(c.ctx, &ir), "trace") || !ok(state, af_compile(c.ctx, ir, &prog), "compile") ||
      !ok(state, af_program_save(prog, path.data(), path.size()), "save"))
    return;
  Ctx run;
  af_provider_t* rp = echo_routed(run.ctx, 0);
  auto compiles = [&] {
    af_bytes_t b{nullptr, 0};
    if (af_context_stats(run.ctx, &b)) return -1L;
    std::string s(reinterpret_cast<char*>(b.data), b.len);
    af_bytes_free(&b);
    size_t at = s.find("\"compiles\":");
    return at == std::string::npos ? -1L : std::stol(s.substr(at + 11));
  };
  std::vector<af_value_t*> tickets;
  for (const char* t : triage_sample_tickets) tickets.push_back(str(run.ctx, t));
  af_value_t* list = nullptr;
  af_error_free(af_value_list(run.ctx, tickets.data(), tickets.size(), &list));
  const double t0 = process_cpu_ms();
  if (!ok(state, af_program_load(run.ctx, path.data(), path.size(), &loaded), "load")) return;
  af_value_t* out = nullptr;
  if (!ok(state, af_program_call(run.ctx, loaded, &list, 1, &out), "first run")) return;
  af_value_free(out);
  state.counters["first_cpu_us"] = (process_cpu_ms() - t0) * 1e3;
  const long before = compiles();
  for (auto _ : state) {
    if (!ok(state, af_program_call(run.ctx, loaded, &list, 1, &out), "run")) break;
    af_value_free(out);
  }
  const long after = compiles();
  state.counters["compiles_per_run"] =
      before < 0 ? -1.0 : double(after - before) / double(std::max<int64_t>(1, state.iterations()));
  std::remove(path.c_str());
  for (af_value_t* v : tickets) af_value_free(v);
  af_value_free(list);
  af_program_free(loaded);
  af_program_free(prog);
  af_ir_free(ir);
  af_provider_free(rp);
  af_provider_free(p);
}
BENCHMARK(BM_Exec_SavedTriage)->Unit(benchmark::kMicrosecond);

BENCHMARK(BM_Exec_BatchedTriage)
    ->ArgNames({"tickets", "latency_ms", "calls"})
    ->Args({1, 50, 1})
    ->Args({16, 50, 1})
    ->Args({256, 50, 1})
    ->Args({2000, 50, 1})
    ->Args({10000, 100, 1})
    ->Args({100000, 100, 1})
    ->Args({100000, 100, 100})  // the same tickets as 100 concurrent calls of 1 000
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

// ---- a loop around an LM call, batched

// looped(q) = while (true, 3 passes) q = lm_call(model "m", [user: q])
af_error_t* always_true(void*, af_context_t* c, const af_value_t* const*, size_t, af_value_t** out) {
  return af_value_bool(c, 1, out);
}
af_error_t* revise(void*, af_context_t* c, const af_value_t* const* in, size_t, af_value_t** out) {
  af_value_t* model = str(c, "m");
  af_value_t* msgs = messages(c, {const_cast<af_value_t*>(in[0])});
  af_error_t* e = af_lm_call(c, msgs, model, out);
  af_value_free(msgs);
  af_value_free(model);
  return e;
}
af_error_t* looped(void*, af_context_t* c, const af_value_t* const* in, size_t, af_value_t** out) {
  af_ir_t *cond = nullptr, *body = nullptr;
  af_error_t* e = af_trace(c, always_true, nullptr, in, 1, nullptr, &cond);
  if (!e) e = af_trace(c, revise, nullptr, in, 1, nullptr, &body);
  if (!e) e = af_while_loop(c, cond, body, in[0], 3, out);
  af_ir_free(cond);
  af_ir_free(body);
  return e;
}

void BM_Exec_BatchedLoop(benchmark::State& state) {
  const int n = int(state.range(0));
  const int64_t latency_ms = state.range(1);
  Ctx c;
  af_provider_t* p = echo_routed(c.ctx, latency_ms);
  af_value_t* ex = str(c.ctx, "q");
  af_ir_t *one = nullptr, *ir = nullptr;
  af_program_t* prog = nullptr;
  if (!ok(state, af_trace(c.ctx, looped, nullptr, &ex, 1, nullptr, &one), "trace") ||
      !ok(state, af_batch(c.ctx, one, nullptr, &ir), "batch") ||
      !ok(state, af_compile(c.ctx, ir, &prog), "compile"))
    return;
  run_batched(state, c.ctx, prog, p, "draft ", n, latency_ms);
  af_value_free(ex);
  af_program_free(prog);
  af_ir_free(ir);
  af_ir_free(one);
  af_provider_free(p);
}

BENCHMARK(BM_Exec_BatchedLoop)
    ->ArgNames({"items", "latency_ms"})
    ->Args({1000, 100})
    ->Args({10000, 100})
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
