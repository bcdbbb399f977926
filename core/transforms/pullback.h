// pullback (vjp): (primals, output_cotangent) -> (outputs, input_cotangents)
// (docs/SEMANTICS.md §4). The transformed IR is the forward equations followed by
// the backward equations; the backward reads forward values (residuals) and
// never re-runs forward work. Cotangents are symbolic while transforming
// (std::nullopt = Zero): an equation whose output cotangents are all Zero
// has no backward equations at all. A var with several consumers gets the
// accumulation (`accumulate`: strings concatenated, numbers summed) of its
// contributions in the forward program order of the consumers.
//
// Rules: pullback_fwd emits the forward part (null = copy the equation) and
// may keep extra residual atoms; pullback_bwd emits the backward part from
// the output cotangents and adds input cotangents. Contract (it keeps the
// residuals of a sub-IR independent of which cotangents are Zero): which
// forward values a backward rule reads must not depend on which of its
// output cotangents are Zero; use cotangent_or_zero, which accounts for it.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "ir/ir.h"
#include "transforms/builder.h"

namespace af {

struct PullState;

struct PullCtx {
  Builder& b;
  const IR& src;
  const Eqn& eqn;

  size_t n_in() const { return primals.size(); }
  size_t n_out() const { return outs.size(); }
  // Forward atom of input k / output k (outputs: after the forward phase).
  const Atom& primal(size_t k) const { return primals[k]; }
  const Atom& out(size_t k) const { return outs[k]; }
  Aval in_aval(size_t k) const;
  Aval out_aval(size_t k) const;
  // The aval of output k's cotangent: a str (feedback is text), batched
  // like the output.
  Aval out_ct_aval(size_t k) const;

  // ---- forward phase (pullback_fwd)
  // Copies the equation on the primals and sets the forward outputs.
  std::vector<Atom> emit_forward();
  void forward_out(size_t k, Atom a);
  // Extra forward atoms the backward rule reads (kept per equation).
  std::vector<Atom> residuals;

  // ---- backward phase (pullback_bwd)
  // Cotangent of output k (nullopt = Zero), and its materialized form.
  const std::optional<Atom>& cotangent(size_t k) const { return cts[k]; }
  Atom cotangent_or_zero(size_t k);
  bool any_cotangent() const;
  // Adds a contribution to input k's cotangent (ignored for literal inputs).
  void add_cotangent(size_t k, Atom ct);

  std::vector<Atom> primals;
  std::vector<Atom> outs;
  std::vector<bool> outs_set;
  std::vector<std::optional<Atom>> cts;
  std::vector<std::pair<size_t, Atom>> added;
  PullState* state = nullptr;
};

// A sub-IR split for control flow: fwd runs the forward part and keeps
// residuals, bwd runs the backward part from them.
//   fwd: [inputs...] -> [outputs..., residuals...]
//   bwd: [inputs..., residuals..., cotangents of outputs with nz_out...]
//        -> [input cotangents that are non-zero or asked for by
//            materialize_in (as zeros)...]
// The residuals (and so fwd) do not depend on nz_out / materialize_in, so
// the forward of a control-flow primitive can be emitted before its output
// cotangents are known.
struct SplitIR {
  IRPtr fwd, bwd;
  size_t n_res = 0;
  std::vector<bool> nz_in;
};
// Both are memoized per transform call (transforms/memo.h).
SplitIR pullback_split(const IRPtr& ir, const std::vector<bool>& nz_out,
                       const std::vector<bool>& materialize_in);
// The forward part alone (fwd and n_res; bwd is null): what a forward rule
// emits before the cotangents are known. Backward rules that cannot run
// (host functions) do not make it fail: only a backward that needs them does.
SplitIR pullback_forward(const IRPtr& ir);

// The public transform: inputs (primals, output_cotangent) — the cotangent
// shaped like the outputs (a cotangent for a literal output is ignored);
// outputs (outputs, input_cotangents) with null where nothing flows.
IRPtr pullback(const IR& ir);

// The pullback_fwd rule of a primitive whose backward reads only the
// equation's own inputs and outputs: the forward part is the equation
// itself, with no extra residuals. A null Prim::pullback_fwd means this rule.
void pull_fwd_copy(PullCtx& ctx, const Eqn& e);

}  // namespace af
