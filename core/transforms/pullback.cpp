#include "transforms/pullback.h"

#include <algorithm>

#include "ir/registry.h"
#include "transforms/dce.h"
#include "value/error.h"

namespace af {

// Per-transform state: forward atoms, cotangent contributions, residuals.
struct PullState {
  Builder& b;
  const IR& ir;
  std::vector<Atom> atom;  // forward atom of each var of ir
  struct Contribution {
    uint64_t order;  // forward program order of the consumer (eqn, input)
    Atom ct;
  };
  std::vector<std::vector<Contribution>> contrib;
  std::vector<std::vector<Atom>> stash;  // per equation: residuals of its rule
  std::vector<VarId> touched;            // forward vars backward rules may read
  bool tolerant = false;                 // ignore failing backward rules

  PullState(Builder& builder, const IR& src)
      : b(builder), ir(src), atom(src.vars.size()), contrib(src.vars.size()), stash(src.eqns.size()) {}

  static uint64_t order(size_t eqn, size_t input) { return uint64_t(eqn) << 32 | uint64_t(input); }

  void forward(std::span<const Atom> in) {
    for (size_t k = 0; k < ir.in.size(); ++k)
      if (ir.in[k].is_var()) atom[ir.in[k].var] = in[k];
    for (size_t i = 0; i < ir.eqns.size(); ++i) {
      const Eqn& e = ir.eqns[i];
      PullCtx ctx = make_ctx(e);
      {
        EmitAs as(b, e);
        rule_of(e, &Prim::pullback_fwd, "pullback")(ctx, e);
      }
      for (size_t k = 0; k < e.out.size(); ++k) {
        if (!ctx.outs_set[k])
          fail(Code::Internal, "pullback rule of " + e.prim->name + " did not set output " + std::to_string(k));
        atom[e.out[k]] = ctx.outs[k];
      }
      stash[i] = std::move(ctx.residuals);
    }
  }

  PullCtx make_ctx(const Eqn& e) {
    PullCtx ctx{b, ir, e, {}, {}, {}, {}, {}, {}, this};
    ctx.primals.reserve(e.in.size());
    for (const Atom& a : e.in) ctx.primals.push_back(a.is_var() ? atom[a.var] : a);
    ctx.outs.resize(e.out.size());
    ctx.outs_set.assign(e.out.size(), false);
    return ctx;
  }

  // The accumulated cotangent of var v (its contributions in forward order).
  std::optional<Atom> ct_of(VarId v) {
    auto& list = contrib[v];
    if (list.empty()) return std::nullopt;
    std::stable_sort(list.begin(), list.end(),
                     [](const Contribution& a, const Contribution& c) { return a.order < c.order; });
    std::optional<Atom> res;
    if (list.size() == 1) {
      res = list[0].ct;
    } else {
      static const Prim& accumulate = prim("accumulate");
      std::vector<Atom> parts;
      parts.reserve(list.size());
      for (const Contribution& c : list) parts.push_back(c.ct);
      res = b.emit1(accumulate, Params(), std::move(parts));
    }
    list.clear();
    list.shrink_to_fit();
    return res;
  }

  std::vector<std::optional<Atom>> backward(std::span<const std::optional<Atom>> out_cts) {
    const size_t n = ir.eqns.size();
    for (size_t k = 0; k < ir.out.size(); ++k)
      if (ir.out[k].is_var() && out_cts[k]) contrib[ir.out[k].var].push_back({order(n, k), *out_cts[k]});
    for (size_t i = n; i-- > 0;) {
      const Eqn& e = ir.eqns[i];
      std::vector<std::optional<Atom>> cts(e.out.size());
      bool any = false;
      for (size_t k = 0; k < e.out.size(); ++k) {
        cts[k] = ct_of(e.out[k]);
        any = any || cts[k].has_value();
      }
      if (!any) continue;
      rule_of(e, &Prim::pullback_bwd, "pullback");
      PullCtx ctx = make_ctx(e);
      for (size_t k = 0; k < e.out.size(); ++k) {
        ctx.outs[k] = atom[e.out[k]];
        ctx.outs_set[k] = true;
      }
      ctx.cts = std::move(cts);
      ctx.residuals = stash[i];
      {
        EmitAs as(b, e);
        if (tolerant) {
          // Only residuals are wanted: a rule that cannot run (a host function)
          // contributes nothing; the build that needs its result reports it.
          try {
            e.prim->pullback_bwd(ctx, e);
          } catch (const Error&) {
            ctx.added.clear();
          }
        } else {
          e.prim->pullback_bwd(ctx, e);
        }
      }
      for (auto& [k, ct] : ctx.added) {
        const Atom& a = e.in[k];
        if (!a.is_var()) continue;
        if (!(b.aval(ct) == cotangent_aval(ir.vars[a.var])))
          fail(Code::Internal, "pullback rule of " + e.prim->name + ": the cotangent of input " +
                                   std::to_string(k) + " is " + aval_name(b.aval(ct)) + ", expected " +
                                   aval_name(cotangent_aval(ir.vars[a.var])));
        contrib[a.var].push_back({order(i, k), ct});
      }
    }
    std::vector<std::optional<Atom>> in_cts;
    in_cts.reserve(ir.in.size());
    for (const Atom& a : ir.in) in_cts.push_back(a.is_var() ? ct_of(a.var) : std::nullopt);
    return in_cts;
  }
};

Aval PullCtx::in_aval(size_t k) const {
  const Atom& a = eqn.in[k];
  return a.is_var() ? src.vars[a.var] : aval_of(a.lit);
}

Aval PullCtx::out_aval(size_t k) const { return src.vars[eqn.out[k]]; }

Aval PullCtx::out_ct_aval(size_t k) const { return cotangent_aval(out_aval(k)); }

std::vector<Atom> PullCtx::emit_forward() {
  std::vector<Atom> o = b.copy(src, eqn, primals);
  for (size_t k = 0; k < o.size(); ++k) forward_out(k, o[k]);
  return o;
}

void PullCtx::forward_out(size_t k, Atom a) {
  outs[k] = std::move(a);
  outs_set[k] = true;
}

Atom PullCtx::cotangent_or_zero(size_t k) {
  Aval a = out_aval(k);
  // A list zero is shaped like the forward output: read it whether or not
  // this cotangent is Zero (the rule contract in pullback.h).
  if (a.list_depth != 0 && outs[k].is_var()) state->touched.push_back(outs[k].var);
  if (cts[k]) return *cts[k];
  return zero_cotangent(b, a, outs[k]);
}

bool PullCtx::any_cotangent() const {
  for (const auto& c : cts)
    if (c) return true;
  return false;
}

void PullCtx::add_cotangent(size_t k, Atom ct) { added.emplace_back(k, std::move(ct)); }

namespace {

// One combined build of a sub-IR's pullback: forward equations, then
// backward equations; `boundary` vars and eqns separate the two.
struct Build {
  Builder b;
  std::vector<Atom> in;
  std::vector<Atom> out;
  std::vector<Atom> cts;                 // cotangent inputs (nz_out)
  std::vector<Atom> in_cts;              // present input cotangents
  std::vector<bool> nz_in;
  size_t fwd_eqns = 0;
  VarId first_bwd_var = 0;
  std::vector<VarId> residuals;          // sorted forward vars the backward reads
};

void build_split(Build& s, const IR& ir, const std::vector<bool>& nz_out, const std::vector<bool>& materialize_in,
                 bool tolerant) {
  Builder& b = s.b;
  for (const Atom& a : ir.in) s.in.push_back(a.is_var() ? Atom::of_var(b.var(ir.vars[a.var])) : a);
  PullState st(b, ir);
  st.tolerant = tolerant;
  st.forward(s.in);
  s.fwd_eqns = b.num_eqns();
  s.first_bwd_var = VarId(b.avals().size());
  for (const Atom& a : ir.in) (void)a;
  std::vector<std::optional<Atom>> out_cts(ir.out.size());
  for (size_t k = 0; k < ir.out.size(); ++k) {
    const Atom& a = ir.out[k];
    s.out.push_back(a.is_var() ? st.atom[a.var] : a);
    if (!nz_out[k]) continue;
    Atom ct = Atom::of_var(b.var(cotangent_aval(a.is_var() ? ir.vars[a.var] : aval_of(a.lit))));
    s.cts.push_back(ct);
    out_cts[k] = ct;
  }
  std::vector<std::optional<Atom>> in_cts = st.backward(out_cts);
  for (size_t k = 0; k < in_cts.size(); ++k) {
    if (in_cts[k]) {
      s.in_cts.push_back(*in_cts[k]);
      s.nz_in.push_back(true);
    } else if (!materialize_in.empty() && materialize_in[k]) {
      const Atom& a = ir.in[k];
      s.in_cts.push_back(zero_cotangent(b, a.is_var() ? ir.vars[a.var] : aval_of(a.lit), s.in[k]));
      s.nz_in.push_back(true);
    } else {
      s.nz_in.push_back(false);
    }
  }
  // Residuals: forward equation outputs read by the backward.
  std::vector<bool> is_input(b.avals().size(), false);
  for (const Atom& a : s.in)
    if (a.is_var()) is_input[a.var] = true;
  std::vector<bool> seen(b.avals().size(), false);
  auto note = [&](const Atom& a) {
    if (a.is_var() && a.var < s.first_bwd_var && !is_input[a.var]) seen[a.var] = true;
  };
  for (size_t i = s.fwd_eqns; i < b.num_eqns(); ++i)
    for (const Atom& a : b.ir().eqns[i].in) note(a);
  for (const Atom& a : s.in_cts) note(a);
  for (VarId v : st.touched) note(Atom::of_var(v));
  for (VarId v = 0; v < s.first_bwd_var; ++v)
    if (seen[v]) s.residuals.push_back(v);
}

}  // namespace

SplitIR pullback_split(const IR& ir, const std::vector<bool>& nz_out, const std::vector<bool>& materialize_in) {
  std::vector<bool> all_out(ir.out.size(), true), all_in(ir.in.size(), true);
  bool is_all = std::all_of(nz_out.begin(), nz_out.end(), [](bool x) { return x; }) &&
                materialize_in.size() == ir.in.size() &&
                std::all_of(materialize_in.begin(), materialize_in.end(), [](bool x) { return x; });
  Build full;
  build_split(full, ir, all_out, all_in, /*tolerant=*/!is_all);
  Build part;
  if (!is_all) build_split(part, ir, nz_out, materialize_in, /*tolerant=*/false);
  Build& bwd = is_all ? full : part;
  for (VarId v : bwd.residuals)
    if (!std::binary_search(full.residuals.begin(), full.residuals.end(), v))
      fail(Code::Internal, "pullback: a backward rule read a forward value that is not a residual (see the rule contract in pullback.h)");

  SplitIR res;
  res.n_res = full.residuals.size();
  res.nz_in = bwd.nz_in;
  std::vector<Atom> fwd_out = full.out;
  for (VarId v : full.residuals) fwd_out.push_back(Atom::of_var(v));
  TreeDef fwd_in_tree = TreeDef::flat_list(full.in.size());
  TreeDef fwd_out_tree = TreeDef::flat_list(fwd_out.size());
  res.fwd = full.b.extract(0, full.fwd_eqns, full.in, fwd_in_tree, std::move(fwd_out), fwd_out_tree);

  std::vector<Atom> bwd_in = bwd.in;
  for (VarId v : full.residuals) bwd_in.push_back(Atom::of_var(v));
  bwd_in.insert(bwd_in.end(), bwd.cts.begin(), bwd.cts.end());
  // The backward also takes the primal inputs: literal (static) ones stay
  // literals, so give them fresh unused slots of their kind.
  for (size_t k = 0; k < bwd.in.size(); ++k)
    if (!bwd.in[k].is_var()) bwd_in[k] = Atom::of_var(bwd.b.var(aval_of(bwd.in[k].lit)));
  TreeDef bwd_in_tree = TreeDef::flat_list(bwd_in.size());
  TreeDef bwd_out_tree = TreeDef::flat_list(bwd.in_cts.size());
  res.bwd = bwd.b.extract(bwd.fwd_eqns, bwd.b.num_eqns(), std::move(bwd_in), bwd_in_tree, bwd.in_cts,
                          bwd_out_tree);
  return res;
}

SplitIR pullback_forward(const IR& ir) {
  std::vector<bool> all_out(ir.out.size(), true), all_in(ir.in.size(), true);
  Build full;
  build_split(full, ir, all_out, all_in, /*tolerant=*/true);
  SplitIR res;
  res.n_res = full.residuals.size();
  std::vector<Atom> fwd_out = full.out;
  for (VarId v : full.residuals) fwd_out.push_back(Atom::of_var(v));
  TreeDef fwd_in_tree = TreeDef::flat_list(full.in.size());
  TreeDef fwd_out_tree = TreeDef::flat_list(fwd_out.size());
  res.fwd = full.b.extract(0, full.fwd_eqns, full.in, fwd_in_tree, std::move(fwd_out), fwd_out_tree);
  return res;
}

void pull_fwd_copy(PullCtx& ctx, const Eqn&) { ctx.emit_forward(); }

IRPtr pullback(const IR& ir) {
  Builder b;
  std::vector<Atom> in;
  for (const Atom& a : ir.in) in.push_back(a.is_var() ? Atom::of_var(b.var(ir.vars[a.var])) : a);
  PullState st(b, ir);
  st.forward(in);
  std::vector<Atom> outs;
  std::vector<Atom> ct_in;
  std::vector<std::optional<Atom>> out_cts;
  for (const Atom& a : ir.out) {
    outs.push_back(a.is_var() ? st.atom[a.var] : a);
    Atom ct = Atom::of_var(b.var(cotangent_aval(a.is_var() ? ir.vars[a.var] : aval_of(a.lit))));
    ct_in.push_back(ct);
    out_cts.push_back(a.is_var() ? std::optional<Atom>(ct) : std::nullopt);
  }
  std::vector<std::optional<Atom>> in_cts = st.backward(out_cts);
  std::vector<bool> nz;
  for (const auto& c : in_cts) {
    nz.push_back(c.has_value());
    if (c) outs.push_back(*c);
  }
  in.insert(in.end(), ct_in.begin(), ct_in.end());
  const TreeDef ins[2] = {ir.in_tree, ir.out_tree};
  const TreeDef outs_tree[2] = {ir.out_tree, tree_without(ir.in_tree, nz)};
  // The primal inputs keep their roles; the new inputs are cotangents.
  std::vector<InputRole> roles = input_roles(ir);
  roles.resize(in.size(), InputRole::Cotangent);
  IRPtr res = b.finish(std::move(in), TreeDef::list_of(ins), std::move(outs), TreeDef::list_of(outs_tree),
                       std::move(roles));
  // Forward values no backward equation reads (a loop's trajectory of state
  // the backward does not need) are not kept.
  return dce(*res, Value());
}

}  // namespace af
