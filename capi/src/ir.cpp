// IRs: calling, printing, inspecting, walking.
#include "handles.h"
#include "exec/executor.h"
#include "trace/trace.h"

using namespace af;
using namespace af::capi;

namespace af::capi {

af_ir* wrap(IRPtr ir) {
  auto* h = new af_ir();
  h->ir = std::move(ir);
  return h;
}

std::shared_ptr<const Program> program_of(af_context_t* ctx, const af_ir* h) {
  auto* m = const_cast<af_ir*>(h);  // the key is computed once
  std::vector<uint64_t> ids;       // and with it, the equations' identities a compile needs
  std::call_once(m->keyed, [m, &ids] { m->key = plan_key(*m->ir, &ids); });
  return ctx->core.plans.get(h->ir, h->key, ids);
}

}  // namespace af::capi

extern "C" {

af_error_t* af_ir_call(af_context_t* ctx, const af_ir_t* ir, const af_value_t* const* inputs,
                       size_t n, af_value_t** out) {
  if (out) *out = nullptr;
  return guard([&] {
    require(ctx, "af_ir_call", "ctx");
    require(ir, "af_ir_call", "ir");
    require(out, "af_ir_call", "out");
    std::vector<Value> in = unwrap_all(inputs, n, "af_ir_call", "inputs");
    if (recording()) {
      *out = wrap(inline_ir(*ir->ir, in));
      return;
    }
    if (ctx->lazy && !is_tracing()) {
      *out = wrap(ctx->lazy->record_ir(*ir->ir, in));
      return;
    }
    for (Value& v : in) v = resolve(v);
    std::vector<Value> leaves = check_inputs(*ir->ir, in);
    *out = wrap(run_sync(ctx->env, program_of(ctx, ir), std::move(leaves)));
  });
}

af_error_t* af_ir_to_text(const af_ir_t* ir, af_bytes_t* out) {
  if (out) *out = af_bytes_t{nullptr, 0};
  return guard([&] {
    require(ir, "af_ir_to_text", "ir");
    require(out, "af_ir_to_text", "out");
    to_bytes(to_text(*ir->ir), out);
  });
}

af_error_t* af_ir_to_dot(const af_ir_t* ir, af_bytes_t* out) {
  if (out) *out = af_bytes_t{nullptr, 0};
  return guard([&] {
    require(ir, "af_ir_to_dot", "ir");
    require(out, "af_ir_to_dot", "out");
    to_bytes(to_dot(*ir->ir), out);
  });
}

size_t af_ir_eqn_count(const af_ir_t* ir) { return ir ? ir->ir->eqns.size() : 0; }

const char* af_ir_eqn_prim(const af_ir_t* ir, size_t i) {
  if (!ir || i >= ir->ir->eqns.size()) return nullptr;
  return ir->ir->eqns[i].prim->name.c_str();  // registry entries live forever
}

size_t af_ir_input_count(const af_ir_t* ir) { return ir ? ir->ir->num_inputs() : 0; }
uint64_t af_ir_hash(const af_ir_t* ir) { return ir ? ir_hash(*ir->ir) : 0; }
int32_t af_ir_equal(const af_ir_t* a, const af_ir_t* b) {
  if (!a || !b) return a == b ? 1 : 0;
  return ir_equal(*a->ir, *b->ir) ? 1 : 0;
}

af_ir_t* af_ir_clone(const af_ir_t* ir) {
  if (!ir) return nullptr;
  ir->refs.fetch_add(1, std::memory_order_relaxed);
  return const_cast<af_ir_t*>(ir);
}

void af_ir_free(af_ir_t* ir) {
  if (ir && ir->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete ir;
}

af_error_t* af_walk_new(af_context_t* ctx, const af_ir_t* ir, const af_value_t* const* inputs,
                        size_t n, af_walk_t** out) {
  if (out) *out = nullptr;
  return guard([&] {
    require(ctx, "af_walk_new", "ctx");
    require(ir, "af_walk_new", "ir");
    require(out, "af_walk_new", "out");
    std::vector<Value> leaves = check_inputs(*ir->ir, resolved_all(inputs, n, "af_walk_new", "inputs"));
    auto w = std::make_unique<af_walk>();
    w->env = ctx->env;
    w->env.scopes = ctx->core.scopes.current();  // a walk is one run: its starting thread's scopes
    w->walker = std::make_unique<Walker>(ir->ir, std::move(leaves), w->env);
    *out = w.release();
  });
}

af_error_t* af_walk_next(af_walk_t* w, size_t* eqn_index, af_value_t** inputs) {
  if (eqn_index) *eqn_index = AF_WALK_DONE;
  if (inputs) *inputs = nullptr;
  return guard([&] {
    require(w, "af_walk_next", "w");
    require(eqn_index, "af_walk_next", "eqn_index");
    require(inputs, "af_walk_next", "inputs");
    if (w->walker->done()) return;
    Value in = w->walker->inputs();
    *inputs = wrap(std::move(in));
    *eqn_index = w->walker->eqn_index();
  });
}

af_error_t* af_walk_eval(af_walk_t* w) {
  return guard([&] {
    require(w, "af_walk_eval", "w");
    w->walker->eval();
  });
}

af_error_t* af_walk_send(af_walk_t* w, const af_value_t* outputs) {
  return guard([&] {
    require(w, "af_walk_send", "w");
    require(outputs, "af_walk_send", "outputs");
    w->walker->send(unwrap(outputs));
  });
}

af_error_t* af_walk_outputs(af_walk_t* w, af_value_t** out) {
  if (out) *out = nullptr;
  return guard([&] {
    require(w, "af_walk_outputs", "w");
    require(out, "af_walk_outputs", "out");
    *out = wrap(w->walker->outputs());
  });
}

void af_walk_free(af_walk_t* w) { delete w; }

}  // extern "C"
