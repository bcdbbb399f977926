#include "transforms/dce.h"

#include <algorithm>

#include "transforms/builder.h"
#include "value/error.h"

namespace af {

namespace {

// The equations of ir that survive when `live` vars are read at the end,
// in order; `live` ends up marking every var the survivors read.
std::vector<Eqn> live_eqns(const IR& ir, std::vector<bool>& live) {
  std::vector<Eqn> kept;
  for (size_t i = ir.eqns.size(); i-- > 0;) {
    const Eqn& e = ir.eqns[i];
    DceCtx ctx{ir, e, {}, std::nullopt};
    ctx.out_used.reserve(e.out.size());
    bool any = false;
    for (VarId v : e.out) {
      ctx.out_used.push_back(live[v]);
      any = any || live[v];
    }
    if (!any && !eqn_has_effects(e)) continue;
    rule_of(e, &Prim::dce, "dce")(ctx, e);
    Eqn k = ctx.replacement ? std::move(*ctx.replacement) : e;
    for (const Atom& a : k.in)
      if (a.is_var()) live[a.var] = true;
    kept.push_back(std::move(k));
  }
  std::reverse(kept.begin(), kept.end());
  return kept;
}

IRPtr rebuild(const IR& ir, std::vector<Eqn> eqns, std::vector<Atom> out, TreeDef out_tree) {
  Builder b;
  b.ir().vars = ir.vars;
  b.ir().eqns = std::move(eqns);
  return b.finish(ir.in, ir.in_tree, std::move(out), std::move(out_tree), ir.in_roles);
}

}  // namespace

void dce_whole(DceCtx&, const Eqn&) {}

DcedIR dce_flat(const IR& ir, const std::vector<bool>& used_out) {
  std::vector<bool> live(ir.vars.size(), false);
  std::vector<Atom> out;
  for (size_t k = 0; k < ir.out.size(); ++k) {
    if (!used_out[k]) continue;
    out.push_back(ir.out[k]);
    if (ir.out[k].is_var()) live[ir.out[k].var] = true;
  }
  std::vector<Eqn> kept = live_eqns(ir, live);
  DcedIR res;
  for (const Atom& a : ir.in) res.used_in.push_back(a.is_var() && live[a.var]);
  TreeDef out_tree = TreeDef::flat_list(out.size());
  res.ir = rebuild(ir, std::move(kept), std::move(out), out_tree);
  return res;
}

IRPtr drop_inputs(const IR& ir, const std::vector<bool>& keep) {
  Builder b;
  std::vector<Atom> ins, bound;
  for (size_t k = 0; k < ir.in.size(); ++k) {
    const Atom& a = ir.in[k];
    Aval av = a.is_var() ? ir.vars[a.var] : aval_of(a.lit);
    if (keep[k]) {
      ins.push_back(a.is_var() ? Atom::of_var(b.var(av)) : a);
      bound.push_back(ins.back());
    } else {
      bound.push_back(Atom::literal(filler_value(av)));  // unused: never read
    }
  }
  std::vector<Atom> outs = inline_into(b, ir, bound);
  TreeDef in_tree = TreeDef::flat_list(ins.size());
  return b.finish(std::move(ins), in_tree, std::move(outs), ir.out_tree);
}

IRPtr dce(const IR& ir, const Value& out_used) {
  Value mask = out_used.is_null() ? Value::boolean(true) : out_used;
  std::vector<Value> leaf_mask = broadcast_prefix(mask, ir.out_tree, "out_used");
  std::vector<bool> keep;
  for (const Value& v : leaf_mask) {
    if (v.kind() != Kind::Bool && !v.is_null())
      invalid(std::string("out_used must hold bools (true = keep) or null, found ") + kind_name(v.kind()));
    keep.push_back(v.kind() == Kind::Bool && v.as_bool());
  }
  std::vector<bool> live(ir.vars.size(), false);
  std::vector<Atom> out;
  for (size_t k = 0; k < ir.out.size(); ++k) {
    if (!keep[k]) continue;
    out.push_back(ir.out[k]);
    if (ir.out[k].is_var()) live[ir.out[k].var] = true;
  }
  std::vector<Eqn> kept = live_eqns(ir, live);
  return rebuild(ir, std::move(kept), std::move(out), tree_without(ir.out_tree, keep));
}

}  // namespace af
