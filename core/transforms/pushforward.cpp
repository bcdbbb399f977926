#include "transforms/pushforward.h"

#include "value/error.h"

namespace af {

namespace {

struct PushRun {
  std::vector<Atom> out;
  std::vector<std::optional<Atom>> tout;
};

PushRun push_into(Builder& b, const IR& ir, std::span<const Atom> in,
                  std::span<const std::optional<Atom>> tin) {
  std::vector<Atom> atom(ir.vars.size());
  std::vector<std::optional<Atom>> tan(ir.vars.size());
  for (size_t k = 0; k < ir.in.size(); ++k)
    if (ir.in[k].is_var()) {
      atom[ir.in[k].var] = in[k];
      tan[ir.in[k].var] = tin[k];
    }
  for (const Eqn& e : ir.eqns) {
    std::vector<Atom> ins;
    std::vector<std::optional<Atom>> tins;
    ins.reserve(e.in.size());
    tins.reserve(e.in.size());
    bool any = false;
    for (const Atom& a : e.in) {
      ins.push_back(a.is_var() ? atom[a.var] : a);
      tins.push_back(a.is_var() ? tan[a.var] : std::nullopt);
      any = any || tins.back().has_value();
    }
    if (!any) {
      // Zero-tangent fast path: the primal equation alone.
      std::vector<Atom> outs = b.copy(ir, e, std::move(ins));
      for (size_t k = 0; k < outs.size(); ++k) atom[e.out[k]] = outs[k];
      continue;
    }
    rule_of(e, &Prim::pushforward, "pushforward");
    PushCtx ctx{b, ir, e, std::move(ins), std::move(tins), {}, {}, {}};
    ctx.outs.resize(e.out.size());
    ctx.out_tangents.resize(e.out.size());
    ctx.outs_set.assign(e.out.size(), false);
    {
      EmitAs as(b, e);
      e.prim->pushforward(ctx, e);
    }
    for (size_t k = 0; k < e.out.size(); ++k) {
      if (!ctx.outs_set[k])
        fail(Code::Internal, "pushforward rule of " + e.prim->name + " did not set output " + std::to_string(k));
      const Aval want = ir.vars[e.out[k]];
      if (!(b.aval(ctx.outs[k]) == want) ||
          (ctx.out_tangents[k] && !(b.aval(*ctx.out_tangents[k]) == want)))
        fail(Code::Internal, "pushforward rule of " + e.prim->name + ": output " + std::to_string(k) +
                                 " or its tangent is not " + aval_name(want));
      atom[e.out[k]] = ctx.outs[k];
      tan[e.out[k]] = ctx.out_tangents[k];
    }
  }
  PushRun run;
  for (const Atom& a : ir.out) {
    run.out.push_back(a.is_var() ? atom[a.var] : a);
    run.tout.push_back(a.is_var() ? tan[a.var] : std::nullopt);
  }
  return run;
}

}  // namespace

Aval PushCtx::in_aval(size_t k) const {
  const Atom& a = eqn.in[k];
  return a.is_var() ? src.vars[a.var] : aval_of(a.lit);
}

Atom PushCtx::tangent_or_zero(size_t k) {
  if (tangents[k]) return *tangents[k];
  return zero_atom(b, in_aval(k), primals[k]);
}

std::vector<Atom> PushCtx::emit_primal() {
  std::vector<Atom> o = b.copy(src, eqn, primals);
  for (size_t k = 0; k < o.size(); ++k) primal_out(k, o[k]);
  return o;
}

void PushCtx::primal_out(size_t k, Atom a) {
  outs[k] = std::move(a);
  outs_set[k] = true;
}

void PushCtx::tangent_out(size_t k, std::optional<Atom> t) { out_tangents[k] = std::move(t); }

PushedIR pushforward_flat(const IR& ir, const std::vector<bool>& nz_in, const std::vector<bool>& materialize_out) {
  Builder b;
  std::vector<Atom> in, tin_atoms;
  std::vector<std::optional<Atom>> tin;
  for (const Atom& a : ir.in) in.push_back(a.is_var() ? Atom::of_var(b.var(ir.vars[a.var])) : a);
  for (size_t k = 0; k < ir.in.size(); ++k) {
    if (!nz_in[k]) {
      tin.push_back(std::nullopt);
      continue;
    }
    const Atom& a = ir.in[k];
    Atom t = Atom::of_var(b.var(a.is_var() ? ir.vars[a.var] : aval_of(a.lit)));
    tin_atoms.push_back(t);
    // A static input's tangent is Zero whatever is passed for it.
    tin.push_back(a.is_var() ? std::optional<Atom>(t) : std::nullopt);
  }
  PushRun run = push_into(b, ir, in, tin);
  PushedIR res;
  std::vector<Atom> outs = run.out;
  for (size_t k = 0; k < run.out.size(); ++k) {
    if (run.tout[k]) {
      outs.push_back(*run.tout[k]);
      res.nz_out.push_back(true);
    } else if (!materialize_out.empty() && materialize_out[k]) {
      outs.push_back(zero_atom(b, b.aval(run.out[k]), run.out[k]));
      res.nz_out.push_back(true);
    } else {
      res.nz_out.push_back(false);
    }
  }
  in.insert(in.end(), tin_atoms.begin(), tin_atoms.end());
  TreeDef in_tree = TreeDef::flat_list(in.size());
  TreeDef out_tree = TreeDef::flat_list(outs.size());
  res.ir = b.finish(std::move(in), in_tree, std::move(outs), out_tree);
  return res;
}

IRPtr pushforward(const IR& ir) {
  Builder b;
  std::vector<Atom> in, tin_atoms;
  std::vector<std::optional<Atom>> tin;
  for (const Atom& a : ir.in) in.push_back(a.is_var() ? Atom::of_var(b.var(ir.vars[a.var])) : a);
  for (const Atom& a : ir.in) {
    Atom t = Atom::of_var(b.var(a.is_var() ? ir.vars[a.var] : aval_of(a.lit)));
    tin_atoms.push_back(t);
    tin.push_back(a.is_var() ? std::optional<Atom>(t) : std::nullopt);
  }
  PushRun run = push_into(b, ir, in, tin);
  std::vector<Atom> outs = run.out;
  std::vector<bool> nz;
  for (const auto& t : run.tout) {
    nz.push_back(t.has_value());
    if (t) outs.push_back(*t);
  }
  in.insert(in.end(), tin_atoms.begin(), tin_atoms.end());
  const TreeDef ins[2] = {ir.in_tree, ir.in_tree};
  const TreeDef outs_tree[2] = {ir.out_tree, tree_without(ir.out_tree, nz)};
  // The primal inputs keep their roles (a tangent of a pullback is still
  // one); the new inputs are tangents.
  std::vector<InputRole> roles = input_roles(ir);
  roles.resize(in.size(), InputRole::Tangent);
  return b.finish(std::move(in), TreeDef::list_of(ins), std::move(outs), TreeDef::list_of(outs_tree),
                  std::move(roles));
}

}  // namespace af
