#include "prims/subrun.h"

#include <mutex>
#include <unordered_map>

#include "exec/program.h"

namespace af {

namespace {

// Compiled sub-IRs, shared by every thread while the IR is alive. Unlike
// sub_program's per-thread cache (lowering is cheap, and the sync path must
// not take a lock per evaluation), a compile is costly and a sub-run's items
// start on any worker, so one locked cache serves them all.
std::shared_ptr<const Program> compiled(const IRPtr& ir) {
  struct Cached {
    std::weak_ptr<const IR> ir;
    std::shared_ptr<const Program> program;
  };
  static std::mutex mu;
  static std::unordered_map<const IR*, Cached> cache;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(ir.get());
    if (it != cache.end() && it->second.ir.lock() == ir) return it->second.program;
  }
  auto program = compile(ir);  // outside the lock: may be slow, may throw
  std::lock_guard<std::mutex> lock(mu);
  if (cache.size() >= 4096) std::erase_if(cache, [](const auto& kv) { return kv.second.ir.expired(); });
  cache[ir.get()] = Cached{ir, program};
  return program;
}

}  // namespace

Future start_sub_run(const IRPtr& ir, std::span<const Value> in, const RunEnv& env,
                     const std::shared_ptr<AsyncOp>& parent, SubRunDone done, int64_t item) {
  std::vector<Value> leaves(in.begin(), in.end());
  for (size_t k = 0; k < ir->in.size() && k < leaves.size(); ++k)
    if (!ir->in[k].is_var()) leaves[k] = ir->in[k].lit;
  RunEnv sub{env.context, env.scopes};  // owned_in belongs to the caller's equation
  sub.item_errors = env.item_errors;
  RunOptions o;
  o.flat_output = true;
  if (parent->profiling()) {
    std::weak_ptr<AsyncOp> weak = parent;
    o.on_span = [weak](const CallSpan& span) {
      if (auto op = weak.lock()) op->record_span(span);
    };
  }
  o.stream_parent = parent;
  o.stream_item = item;
  Future f = run_async(sub, compiled(ir), std::move(leaves), std::move(o));
  f.on_done([f, done = std::move(done)] {
    std::vector<Value> out;
    try {
      Value v = f.wait();  // finished: does not block
      out = v.items();
    } catch (const Error& e) {
      done(nullptr, &e);
      return;
    }
    done(&out, nullptr);
  });
  return f;
}

}  // namespace af
