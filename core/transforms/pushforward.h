// pushforward (jvp): (primals, tangents) -> (outputs, output_tangents)
// (docs/SEMANTICS.md §4). Tangents are symbolic while transforming: a leaf's
// tangent is either an atom or Zero (std::nullopt). An equation whose
// tangent inputs are all Zero is copied and its outputs get Zero tangents —
// its rule is not even called. Otherwise the primitive's pushforward rule
// emits the primal equation and the tangent equations.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "ir/ir.h"
#include "transforms/builder.h"

namespace af {

struct PushCtx {
  Builder& b;
  const IR& src;
  const Eqn& eqn;

  size_t n_in() const { return primals.size(); }
  const Atom& primal(size_t k) const { return primals[k]; }
  const std::optional<Atom>& tangent(size_t k) const { return tangents[k]; }
  // The tangent of input k, or its materialized zero (docs/SEMANTICS.md §1).
  Atom tangent_or_zero(size_t k);
  Aval in_aval(size_t k) const;

  // Copies the equation on the primals and sets the primal outputs.
  std::vector<Atom> emit_primal();
  void primal_out(size_t k, Atom a);
  void tangent_out(size_t k, std::optional<Atom> t);
  const Atom& primal_out(size_t k) const { return outs[k]; }

  std::vector<Atom> primals;
  std::vector<std::optional<Atom>> tangents;
  std::vector<Atom> outs;
  std::vector<std::optional<Atom>> out_tangents;
  std::vector<bool> outs_set;
};

// A sub-IR pushed forward with flat inputs [primals..., the tangents whose
// nz_in is true...] and flat outputs [outputs..., the output tangents that
// are non-zero or asked for by materialize_out (as zeros)...].
struct PushedIR {
  IRPtr ir;
  std::vector<bool> nz_out;  // which output tangents are outputs
};
// Memoized per transform call (transforms/memo.h).
PushedIR pushforward_flat(const IRPtr& ir, const std::vector<bool>& nz_in,
                          const std::vector<bool>& materialize_out);

// The public transform: inputs (primals, tangents), the tangents shaped like
// the primals (a tangent given for a static input is ignored: its tangent is
// Zero); outputs (outputs, output_tangents) with null where a tangent is Zero.
IRPtr pushforward(const IR& ir);

}  // namespace af
