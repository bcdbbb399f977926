// Transforms (IR -> IR) and IR inspection of sched annotations.
#include "handles.h"
#include "lm/options.h"
#include "option_readers.h"
#include "transforms/transforms.h"

using namespace af;
using namespace af::capi;

namespace {

// Common shape of a transform: check ctx, ir and out, transform, wrap.
template <class F>
af_error_t* transform(const char* fn, af_context_t* ctx, const af_ir_t* ir, af_ir_t** out, F&& f) {
  if (out) *out = nullptr;
  return guard([&] {
    require(ctx, fn, "ctx");
    require(ir, fn, "ir");
    require(out, fn, "out");
    *out = wrap(f(ir->ir));
  });
}

}  // namespace

bool af::capi::read_cse_options(const Value& v) {
  lm::Options o(v, "af_cse_with");
  const bool merge = o.boolean("merge_nondeterministic", false,
                               "Merge identical LM calls too (they then share one answer); pure equations "
                               "merge anyway, effectful host calls and checkpoints never.");
  o.finish();
  return merge;
}

extern "C" {

af_error_t* af_batch(af_context_t* ctx, const af_ir_t* ir, const af_value_t* in_axes, af_ir_t** out) {
  return transform("af_batch", ctx, ir, out,
                   [&](const IRPtr& p) { return batch(p, in_axes ? unwrap(in_axes) : Value()); });
}

af_error_t* af_pushforward(af_context_t* ctx, const af_ir_t* ir, af_ir_t** out) {
  return transform("af_pushforward", ctx, ir, out, [](const IRPtr& p) { return pushforward(*p); });
}

af_error_t* af_pullback(af_context_t* ctx, const af_ir_t* ir, af_ir_t** out) {
  return transform("af_pullback", ctx, ir, out, [](const IRPtr& p) { return pullback(*p); });
}

af_error_t* af_dce(af_context_t* ctx, const af_ir_t* ir, const af_value_t* out_used, af_ir_t** out) {
  return transform("af_dce", ctx, ir, out,
                   [&](const IRPtr& p) { return dce(*p, out_used ? unwrap(out_used) : Value()); });
}

af_error_t* af_cse(af_context_t* ctx, const af_ir_t* ir, af_ir_t** out) {
  return transform("af_cse", ctx, ir, out, [](const IRPtr& p) { return cse(*p, false); });
}

af_error_t* af_cse_with(af_context_t* ctx, const af_ir_t* ir, const char* options_json, size_t len,
                        af_ir_t** out) {
  return transform("af_cse_with", ctx, ir, out, [&](const IRPtr& p) {
    std::string_view json = options_json ? text(options_json, len, "af_cse_with", "options_json") : "";
    return cse(*p, read_cse_options(lm::options_from_json(json, "af_cse_with")));
  });
}

af_error_t* af_cse_ex(af_context_t* ctx, const af_ir_t* ir, const af_cse_options_t* options,
                      af_ir_t** out) {
  return transform("af_cse_ex", ctx, ir, out, [&](const IRPtr& p) {
    bool merge = false;
    if (options) {
      if (options->struct_size < sizeof(uint32_t) * 2)
        invalid("af_cse_ex: options->struct_size is " + std::to_string(options->struct_size) +
                "; set it to sizeof(af_cse_options_t)");
      merge = options->merge_nondeterministic != 0;
    }
    return cse(*p, merge);
  });
}

af_error_t* af_sched(af_context_t* ctx, const af_ir_t* ir, af_ir_t** out) {
  return transform("af_sched", ctx, ir, out, [](const IRPtr& p) { return sched(*p); });
}

af_error_t* af_ir_eqn_sched(const af_ir_t* ir, size_t i, uint32_t* level, double* priority) {
  if (level) *level = 0;
  if (priority) *priority = 0;
  return guard([&] {
    require(ir, "af_ir_eqn_sched", "ir");
    require(level, "af_ir_eqn_sched", "level");
    require(priority, "af_ir_eqn_sched", "priority");
    const auto& eqns = ir->ir->eqns;
    if (i >= eqns.size())
      invalid("af_ir_eqn_sched: equation " + std::to_string(i) + " is out of range (the IR has " +
              std::to_string(eqns.size()) + ")");
    if (!eqns[i].sched())
      fail(Code::NotFound, "af_ir_eqn_sched: equation " + std::to_string(i) +
                               " has no schedule (run af_sched on the IR first)");
    *level = eqns[i].sched()->level;
    *priority = eqns[i].sched()->priority;
  });
}

af_error_t* af_ir_validate(const af_ir_t* ir) {
  return guard([&] {
    require(ir, "af_ir_validate", "ir");
    validate(*ir->ir);
  });
}

}  // extern "C"
