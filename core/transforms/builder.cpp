#include "transforms/builder.h"

#include <variant>

#include "ir/registry.h"
#include "transforms/memo.h"
#include "transforms/prim_params.h"
#include "value/error.h"

namespace af {

VarId Builder::var(Aval a) {
  TransformScope::charge(1);
  ir_.vars.push_back(a);
  return VarId(ir_.vars.size() - 1);
}

Aval Builder::aval(const Atom& a) const { return a.is_var() ? ir_.vars[a.var] : aval_of(a.lit); }

std::vector<Atom> Builder::emit(const Prim& p, Params params, std::vector<Atom> in, TreeDef in_tree) {
  std::vector<Aval> avals;
  avals.reserve(in.size());
  for (const Atom& a : in) avals.push_back(aval(a));
  AbstractOut shape = p.abstract_eval(params, avals, in_tree);
  return emit_known(p, std::move(params), std::move(in), std::move(in_tree), shape.out,
                    std::move(shape.out_tree));
}

std::vector<Atom> Builder::emit(const Prim& p, Params params, std::vector<Atom> in) {
  TreeDef tree = TreeDef::flat_list(in.size());
  return emit(p, std::move(params), std::move(in), std::move(tree));
}

Atom Builder::emit1(const Prim& p, Params params, std::vector<Atom> in) {
  std::vector<Atom> out = emit(p, std::move(params), std::move(in));
  if (out.size() != 1)
    fail(Code::Internal, p.name + ": expected one output, the rule made " + std::to_string(out.size()));
  return out[0];
}

std::vector<Atom> Builder::emit_known(const Prim& p, Params params, std::vector<Atom> in,
                                      TreeDef in_tree, std::span<const Aval> out, TreeDef out_tree) {
  TransformScope::charge(1);
  // A rule may wrap an equation in a sub-IR (batch's map): one level more.
  check_nesting(params, p.name);
  Eqn e;
  e.prim = &p;
  e.in = std::move(in);
  e.in_tree = std::move(in_tree);
  e.params = std::move(params);
  e.notes = notes;
  e.out_tree = std::move(out_tree);
  std::vector<Atom> atoms;
  atoms.reserve(out.size());
  e.out.reserve(out.size());
  for (const Aval& a : out) {
    VarId v = var(a);
    e.out.push_back(v);
    atoms.push_back(Atom::of_var(v));
  }
  ir_.eqns.push_back(std::move(e));
  return atoms;
}

std::vector<Atom> Builder::copy(const IR& src, const Eqn& from, std::vector<Atom> in) {
  TransformScope::charge(1);
  Eqn e;
  e.prim = from.prim;
  e.in = std::move(in);
  e.in_tree = from.in_tree;
  e.params = from.params;
  e.notes = from.notes;
  e.out_tree = from.out_tree;
  std::vector<Atom> atoms;
  atoms.reserve(from.out.size());
  e.out.reserve(from.out.size());
  for (VarId v : from.out) {
    VarId nv = var(src.vars[v]);
    e.out.push_back(nv);
    atoms.push_back(Atom::of_var(nv));
  }
  ir_.eqns.push_back(std::move(e));
  return atoms;
}

std::shared_ptr<IR> Builder::finish(std::vector<Atom> in, TreeDef in_tree, std::vector<Atom> out,
                                    TreeDef out_tree, std::vector<InputRole> roles) {
  std::shared_ptr<IR> res = extract_ir(0, ir_.eqns.size(), std::move(in), std::move(in_tree), std::move(out),
                                       std::move(out_tree));
  if (!roles.empty() && roles.size() != res->in.size())
    fail(Code::Internal, "transform: " + std::to_string(roles.size()) + " input roles for " +
                             std::to_string(res->in.size()) + " input leaves");
  set_input_roles(*res, std::move(roles));
  return res;
}

IRPtr Builder::extract(size_t first, size_t last, std::vector<Atom> in, TreeDef in_tree,
                       std::vector<Atom> out, TreeDef out_tree) {
  return extract_ir(first, last, std::move(in), std::move(in_tree), std::move(out), std::move(out_tree));
}

std::shared_ptr<IR> Builder::extract_ir(size_t first, size_t last, std::vector<Atom> in, TreeDef in_tree,
                                        std::vector<Atom> out, TreeDef out_tree) {
  auto res = std::make_shared<IR>();
  res->checked = true;  // emitted through the primitives' rules
  std::vector<VarId> map(ir_.vars.size(), kNoVar);
  auto define = [&](VarId v) {
    if (map[v] != kNoVar) fail(Code::Internal, "transform: %" + std::to_string(v) + " is defined twice");
    map[v] = VarId(res->vars.size());
    res->vars.push_back(ir_.vars[v]);
    return map[v];
  };
  auto use = [&](const Atom& a, const char* where) -> Atom {
    if (!a.is_var()) return a;
    if (a.var >= map.size() || map[a.var] == kNoVar)
      fail(Code::Internal, std::string("transform: ") + where + " uses %" + std::to_string(a.var) +
                               ", which the IR being built does not define");
    return Atom::of_var(map[a.var]);
  };
  res->in.reserve(in.size());
  for (const Atom& a : in) res->in.push_back(a.is_var() ? Atom::of_var(define(a.var)) : a);
  res->in_tree = std::move(in_tree);
  res->eqns.reserve(last - first);
  for (size_t i = first; i < last; ++i) {
    Eqn e = std::move(ir_.eqns[i]);
    for (Atom& a : e.in) a = use(a, e.prim->name.c_str());
    for (VarId& v : e.out) v = define(v);
    res->eqns.push_back(std::move(e));
  }
  res->out.reserve(out.size());
  for (const Atom& a : out) res->out.push_back(use(a, "an output"));
  res->out_tree = std::move(out_tree);
  return res;
}

std::vector<Atom> inline_into(Builder& b, const IR& ir, std::span<const Atom> in) {
  if (in.size() != ir.in.size())
    fail(Code::Internal, "inline_into: " + std::to_string(in.size()) + " inputs for an IR of " +
                             std::to_string(ir.in.size()));
  std::vector<Atom> map(ir.vars.size());
  for (size_t k = 0; k < ir.in.size(); ++k)
    if (ir.in[k].is_var()) map[ir.in[k].var] = in[k];
  auto remap = [&](const Atom& a) { return a.is_var() ? map[a.var] : a; };
  for (const Eqn& e : ir.eqns) {
    std::vector<Atom> ins;
    ins.reserve(e.in.size());
    for (const Atom& a : e.in) ins.push_back(remap(a));
    std::vector<Atom> outs = b.copy(ir, e, std::move(ins));
    for (size_t k = 0; k < outs.size(); ++k) map[e.out[k]] = outs[k];
  }
  std::vector<Atom> out;
  out.reserve(ir.out.size());
  for (const Atom& a : ir.out) out.push_back(remap(a));
  return out;
}

// ---- zeros

Atom zero_atom(Builder& b, Aval a, const Atom& like) {
  if (a.list_depth == 0) return Atom::literal(zero_value(a.kind));
  if (!like.is_var()) return Atom::literal(filler_value(a));
  static const Prim& zeros_like = prim("zeros_like");
  return b.emit1(zeros_like, Params(), {like});
}

Aval cotangent_aval(Aval primal) { return Aval{Kind::Str, primal.list_depth}; }

Atom zero_cotangent(Builder& b, Aval primal, const Atom& like) {
  Aval a = cotangent_aval(primal);
  if (a.list_depth == 0 || !like.is_var()) return zero_atom(b, a, like);
  static const Prim& zeros_like = prim("zeros_like");
  return b.emit1(zeros_like, zeros_like_params(true), {like});
}

Value filler_value(Aval a) {
  Value v = zero_value(a.kind);
  for (int d = 0; d < a.list_depth; ++d) v = Value::list({v});
  return v;
}

// ---- surgery

std::vector<Aval> in_avals(const IR& ir) {
  std::vector<Aval> out;
  out.reserve(ir.in.size());
  for (const Atom& a : ir.in) out.push_back(a.is_var() ? ir.vars[a.var] : aval_of(a.lit));
  return out;
}

std::vector<Aval> out_avals(const IR& ir) {
  std::vector<Aval> out;
  out.reserve(ir.out.size());
  for (const Atom& a : ir.out) out.push_back(a.is_var() ? ir.vars[a.var] : aval_of(a.lit));
  return out;
}

// The signature surgeries are memoized too (transforms/memo.h): a rule
// calling one on a shared sub-IR gets the same IR each time, so what the
// rule then transforms is still shared.
IRPtr flat_signature(const IRPtr& ir) {
  return memoized<IRPtr>(MemoOp::FlatSignature, ir, {}, {}, [&] {
    auto res = std::make_shared<IR>(*ir);
    res->in_tree = TreeDef::flat_list(ir->in.size());
    res->out_tree = TreeDef::flat_list(ir->out.size());
    return IRPtr(std::move(res));
  });
}

IRPtr flat_inputs(const IRPtr& ir) {
  return memoized<IRPtr>(MemoOp::FlatInputs, ir, {}, {}, [&] {
    auto res = std::make_shared<IR>(*ir);
    res->in_tree = TreeDef::flat_list(ir->in.size());
    return IRPtr(std::move(res));
  });
}

IRPtr leaf_output(const IRPtr& ir) {
  if (ir->out.size() != 1)
    fail(Code::Internal, "leaf_output: the IR has " + std::to_string(ir->out.size()) + " outputs");
  return memoized<IRPtr>(MemoOp::LeafOutput, ir, {}, {}, [&] {
    auto res = std::make_shared<IR>(*ir);
    res->out_tree = TreeDef::leaf();
    return IRPtr(std::move(res));
  });
}

IRPtr state_signature(const IRPtr& ir) {
  return memoized<IRPtr>(MemoOp::StateSignature, ir, {}, {}, [&] {
    auto res = std::make_shared<IR>(*ir);
    TreeDef flat = TreeDef::flat_list(ir->in.size());
    res->in_tree = TreeDef::list_of(std::span<const TreeDef>(&flat, 1));
    return IRPtr(std::move(res));
  });
}

IRPtr rewire(const IR& ir, std::span<const Aval> new_in, std::span<const size_t> in_from,
             std::span<const size_t> out_select) {
  if (in_from.size() != ir.in.size())
    fail(Code::Internal, "rewire: input map of the wrong size");
  Builder b;
  std::vector<Atom> ins;
  ins.reserve(new_in.size());
  for (const Aval& a : new_in) ins.push_back(Atom::of_var(b.var(a)));
  std::vector<Atom> bound(ir.in.size());
  for (size_t i = 0; i < ir.in.size(); ++i) {
    if (in_from[i] >= ins.size()) fail(Code::Internal, "rewire: input index out of range");
    bound[i] = ir.in[i].is_var() ? ins[in_from[i]] : ir.in[i];
  }
  std::vector<Atom> outs = inline_into(b, ir, bound);
  std::vector<Atom> sel;
  sel.reserve(out_select.size());
  for (size_t j : out_select) {
    if (j < outs.size()) {
      sel.push_back(outs[j]);
    } else if (j - outs.size() < ins.size()) {
      sel.push_back(ins[j - outs.size()]);
    } else {
      fail(Code::Internal, "rewire: output index out of range");
    }
  }
  TreeDef in_tree = TreeDef::flat_list(ins.size());
  TreeDef out_tree = TreeDef::flat_list(sel.size());
  return b.finish(std::move(ins), std::move(in_tree), std::move(sel), std::move(out_tree));
}

TreeDef tree_without(const TreeDef& def, const std::vector<bool>& keep) {
  std::vector<Value> leaves;
  leaves.reserve(keep.size());
  for (bool k : keep) leaves.push_back(k ? Value::integer(0) : Value());
  return TreeDef::of(def.unflatten(leaves));
}

}  // namespace af
