// Contexts: creation (eager or lazy, plan cache options), the lazy
// evaluator's af_eval / af_value_ready, and the context's counters.
#include "handles.h"
#include "lm/options.h"
#include "option_readers.h"
#include "run_options.h"

using namespace af;
using namespace af::capi;

namespace af::capi {

ContextOptions read_context_options(const Value& v) {
  lm::Options o(v, "af_context_new_with");
  ContextOptions c;
  c.lazy = o.boolean("lazy", false,
                     "Operations outside a trace record promises, evaluated when read or by af_eval "
                     "(docs/SEMANTICS.md, lazy evaluation).");
  {
    lm::Options pc = o.sub("plan_cache", "The lazy evaluator's plan cache.");
    PlanCacheOptions& d = c.cache;
    d.max_entries = size_t(pc.integer("max_entries", int64_t(d.max_entries), 1, INT64_MAX,
                                      "Compiled plans kept in memory (least recently used go first)."));
    d.max_bytes = size_t(pc.integer("max_bytes", int64_t(d.max_bytes), 0, INT64_MAX,
                                    "Bytes of compiled plans kept in memory; a larger plan is not kept."));
    d.dir = pc.str("dir", "", "A directory (created 0700) where plans are also kept across processes (\"\" = none).");
    d.max_disk_bytes = uint64_t(pc.integer("max_disk_bytes", int64_t(d.max_disk_bytes), 0, INT64_MAX,
                                           "Bytes of plan files kept in dir (least recently used removed)."));
    pc.finish();
  }
  c.host_threads = o.integer("host_threads", int64_t(HostPool::kDefaultThreads), 1, int64_t(HostPool::kMaxThreads),
                             "Blocking host functions run at once on the context's host pool.");
  c.eager_timeout_ms = o.integer("eager_timeout_ms", 0, 0, INT64_MAX / 1000000,
                                 "The longest an operation made eagerly, outside any run, waits for an "
                                 "asynchronous result (async or blocking host calls, LM calls on an eager "
                                 "context; 0 = no limit), then TIMEOUT.");
  c.host_wait_ms = o.integer("host_wait_ms", 0, 0, INT64_MAX / 1000000,
                             "The longest af_context_free waits for blocking host functions still running "
                             "(0 = no limit); past it, their threads are abandoned.");
  c.eval_timeout_ms = o.integer("eval_timeout_ms", 0, 0, INT64_MAX / 1000000,
                                "Lazy contexts: each evaluation's deadline (0 = none); af_eval_with's "
                                "options override it.");
  o.finish();
  return c;
}

}  // namespace af::capi

namespace {

void configure(af_context* ctx, std::string_view json) {
  const ContextOptions c =
      read_context_options(lm::options_from_json(json, "af_context_new_with"));
  ctx->env.eager_timeout_ms = c.eager_timeout_ms;
  ctx->core.hosts.pool().set_wait_ms(c.host_wait_ms);
  ctx->core.hosts.pool().set_max_threads(size_t(c.host_threads));
  ctx->core.plans.configure(c.cache);
  if (c.lazy) {
    ctx->lazy = std::make_shared<lazy::Graph>(ctx->core);
    ctx->lazy->set_eval_timeout_ms(c.eval_timeout_ms);
    ctx->env.recorder = ctx->lazy.get();
  }
}

}  // namespace

namespace af::capi {

std::vector<Value> resolved_all(const af_value_t* const* items, size_t n, const char* fn,
                                const char* name) {
  std::vector<Value> in = unwrap_all(items, n, fn, name);
  for (Value& v : in) v = resolve(v);
  return in;
}

}  // namespace af::capi

extern "C" {

af_error_t* af_context_new(af_context_t** out) { return af_context_new_with(nullptr, 0, out); }

af_error_t* af_context_new_with(const char* options_json, size_t len, af_context_t** out) {
  if (out) *out = nullptr;
  return guard([&] {
    require(out, "af_context_new_with", "out");
    std::string_view json = options_json ? text(options_json, len, "af_context_new_with", "options_json")
                                         : std::string_view();
    auto ctx = std::make_unique<af_context>();
    configure(ctx.get(), json);
    *out = ctx.release();
  });
}

void af_context_free(af_context_t* ctx) {
  if (!ctx) return;
  // Evaluations in progress on other threads stop, and stop touching ctx,
  // before it goes.
  if (ctx->lazy) ctx->lazy->close();
  delete ctx;
}

af_error_t* af_eval(af_context_t* ctx, af_value_t* const* values, size_t n) {
  return af_eval_with(ctx, values, n, nullptr);
}

af_error_t* af_eval_with(af_context_t* ctx, af_value_t* const* values, size_t n,
                         const af_run_options_t* options) {
  const char* fn = options ? "af_eval_with" : "af_eval";
  af_bytes_t* summary_out = nullptr;
  return guard([&] {
    require(ctx, fn, "ctx");
    std::vector<Value> vs = unwrap_all(values, n, fn, "values");
    RunOptions opts = run_options(options, fn, &summary_out);
    if (!opts.journal_path.empty())
      invalid(std::string(fn) + ": options.journal_path is for program runs (af_program_call_with, "
              "af_program_call_async_with): a journal resumes one program on one list of inputs, and lazy "
              "evaluations run many");
    if (ctx->lazy) {
      std::shared_ptr<RunSummary> summary = opts.summary;
      try {
        ctx->lazy->eval(vs, /*strict=*/true, std::move(opts));
      } catch (...) {
        write_summary(summary.get(), summary_out);
        throw;
      }
      write_summary(summary.get(), summary_out);
      return;
    }
    // An eager context holds no pending work; promises of lazy contexts
    // passed here are evaluated by their own contexts.
    for (const Value& v : vs) resolve(v);
  });
}

int32_t af_value_ready(const af_value_t* v) { return v && is_ready(v->v) ? 1 : 0; }

af_error_t* af_context_stats(const af_context_t* ctx, af_bytes_t* out) {
  if (out) *out = af_bytes_t{nullptr, 0};
  return guard([&] {
    require(ctx, "af_context_stats", "ctx");
    require(out, "af_context_stats", "out");
    PlanCacheStats c = ctx->core.plans.stats();
    lazy::GraphStats l = ctx->lazy ? ctx->lazy->stats() : lazy::GraphStats{};
    auto n = [](uint64_t x) { return Value::integer(int64_t(x)); };
    Value stats = Value::dict(
        {{"programs", Value::dict({{"compiles", n(ctx->core.compiles.load(std::memory_order_relaxed))}})},
         {"plan_cache", Value::dict({{"hits", n(c.hits)},
                                     {"misses", n(c.misses)},
                                     {"disk_hits", n(c.disk_hits)},
                                     {"evictions", n(c.evictions)},
                                     {"entries", n(c.entries)},
                                     {"bytes", n(c.bytes)},
                                     {"not_kept", n(c.not_kept)},
                                     {"disk_files", n(c.disk_files)},
                                     {"disk_bytes", n(c.disk_bytes)},
                                     {"disk_evictions", n(c.disk_evictions)}})},
         {"lazy", Value::dict({{"recorded", n(l.recorded)},
                               {"evaluated", n(l.evaluated)},
                               {"dropped", n(l.dropped)},
                               {"pending", n(l.pending)},
                               {"evaluations", n(l.evaluations)},
                               {"timed_out", n(l.timed_out)},
                               {"cancelled", n(l.cancelled)}})}});
    to_bytes(to_json(stats), out);
  });
}

}  // extern "C"
