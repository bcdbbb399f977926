#include "transforms/pipeline.h"

#include <algorithm>
#include <unordered_map>

#include "ir/registry.h"
#include "transforms/builder.h"
#include "transforms/prim_params.h"

namespace af {

namespace {

// Whether running e waits on work outside the engine: an LM call or a host
// function (a primitive with only an asynchronous implementation and no
// sub-IR), or control flow around one. Each distinct sub-IR is looked at
// once (`seen`).
using Seen = std::unordered_map<const IR*, bool>;
bool eqn_waits(const Eqn& e, Seen& seen);
bool ir_waits(const IR& ir, Seen& seen) {
  if (auto it = seen.find(&ir); it != seen.end()) return it->second;
  const bool w = std::any_of(ir.eqns.begin(), ir.eqns.end(), [&](const Eqn& e) { return eqn_waits(e, seen); });
  return seen[&ir] = w;
}
bool eqn_waits(const Eqn& e, Seen& seen) {
  bool has_sub = false, sub_waits = false;
  e.params.any_ir([&](const IR& s) {
    has_sub = true;
    sub_waits = sub_waits || ir_waits(s, seen);
    return false;
  });
  return has_sub ? sub_waits : e.prim->impl_async && !e.prim->impl;
}

}  // namespace

IRPtr pipeline_form(const IRPtr& ir) {
  static const Prim& pipeline = prim("pipeline");
  static const Prim& batch_check = prim("batch_check");
  const IR& src = *ir;
  const int64_t chunk = src.slice_items;
  if (chunk < 1 || src.eqns.empty() || src.eqns[0].prim != &batch_check) return nullptr;
  std::vector<bool> batched(src.vars.size(), false), in_body(src.vars.size(), false);
  for (VarId v : src.eqns[0].out) batched[v] = true;
  std::vector<bool> eqn_in_body(src.eqns.size(), false);
  Seen seen;
  size_t body_waits = 0;  // stages: equations of the body that wait
  for (size_t i = 1; i < src.eqns.size(); ++i) {
    const Eqn& e = src.eqns[i];
    bool dep = false;
    for (const Atom& a : e.in) dep = dep || (a.is_var() && batched[a.var]);
    const bool waits = eqn_waits(e, seen);
    if (!dep) {
      if (waits) return nullptr;
      continue;
    }
    eqn_in_body[i] = true;
    body_waits += waits;
    for (VarId v : e.out) batched[v] = in_body[v] = true;
  }
  if (body_waits < 2) return nullptr;  // one stage has no other to overlap with
  for (const Atom& a : src.out)
    if (!a.is_var() || !batched[a.var] || src.vars[a.var].list_depth == 0) return nullptr;

  // The outer program (unmarked: this form is final): the inputs,
  // batch_check, the equations that do not depend on the batch.
  Builder outer;
  std::vector<Atom> at(src.vars.size());  // a var's atom in `outer`
  std::vector<Atom> in;
  for (const Atom& a : src.in) {
    if (a.is_var()) in.push_back(at[a.var] = Atom::of_var(outer.var(src.vars[a.var])));
    else in.push_back(a);
  }
  for (size_t i = 0; i < src.eqns.size(); ++i) {
    if (eqn_in_body[i]) continue;
    const Eqn& e = src.eqns[i];
    std::vector<Atom> ins;
    for (const Atom& a : e.in) ins.push_back(a.is_var() ? at[a.var] : a);
    std::vector<Atom> o = outer.copy(src, e, std::move(ins));
    for (size_t k = 0; k < o.size(); ++k) at[e.out[k]] = o[k];
  }
  // The body: what the batch-dependent equations read from outside them
  // are its inputs (batched: batch_check's outputs; shared: the rest).
  Builder inner;
  std::vector<Atom> body_at(src.vars.size());
  std::vector<bool> bound(src.vars.size(), false);
  std::vector<Atom> body_in, pipe_in;
  std::vector<Value> axes;
  auto bind = [&](const Atom& a) {
    if (!a.is_var()) return a;
    if (!in_body[a.var] && !bound[a.var]) {
      bound[a.var] = true;
      body_at[a.var] = Atom::of_var(inner.var(src.vars[a.var]));
      body_in.push_back(body_at[a.var]);
      pipe_in.push_back(at[a.var]);
      axes.push_back(Value::boolean(batched[a.var]));
    }
    return body_at[a.var];
  };
  for (size_t i = 1; i < src.eqns.size(); ++i) {
    if (!eqn_in_body[i]) continue;
    const Eqn& e = src.eqns[i];
    std::vector<Atom> ins;
    for (const Atom& a : e.in) ins.push_back(bind(a));
    std::vector<Atom> o = inner.copy(src, e, std::move(ins));
    for (size_t k = 0; k < o.size(); ++k) body_at[e.out[k]] = o[k];
  }
  std::vector<Atom> body_out;
  for (const Atom& a : src.out) body_out.push_back(bind(a));
  const size_t n_in = body_in.size(), n_out = body_out.size();
  Params params = pipeline_params(Value::list(std::move(axes)),
                                  inner.finish(std::move(body_in), TreeDef::flat_list(n_in), std::move(body_out),
                                               TreeDef::flat_list(n_out)),
                                  chunk);
  std::vector<Atom> out = outer.emit(pipeline, std::move(params), std::move(pipe_in));
  return outer.finish(std::move(in), src.in_tree, std::move(out), src.out_tree, src.in_roles);
}

}  // namespace af
