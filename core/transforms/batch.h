// batch: the vmap of LM programs (docs/SEMANTICS.md §4). A batched leaf is a
// list holding the leaf's value for each batch item (aval list<T>). The
// transform walks the equations: one with no batched input is copied; any
// other goes through its primitive's batch rule, which emits the batched
// form into the BatchCtx. batch_by_map is the rule most primitives use: it
// maps the equation over the items (the `map` primitive).
#pragma once

#include <span>
#include <vector>

#include "ir/ir.h"
#include "transforms/builder.h"

namespace af {

struct BatchCtx {
  Builder& b;
  const IR& src;   // the IR being batched (the equation's avals are there)
  const Eqn& eqn;  // the equation being batched

  // Input leaf k of the equation: its atom in the batched IR, and whether it
  // is batched (a list of per-item values).
  const Atom& in(size_t k) const { return ins[k]; }
  bool batched(size_t k) const { return in_batched[k]; }
  size_t n_in() const { return ins.size(); }
  // Sets output leaf k of the equation.
  void out(size_t k, Atom a, bool is_batched);

  // Filled by the transform / the rule.
  std::vector<Atom> ins;
  std::vector<bool> in_batched;
  std::vector<Atom> outs;
  std::vector<bool> out_batched;
  std::vector<bool> out_set;
};

// The generic batch rule: map[axes, body={the equation}](inputs) — the
// equation runs once per item; unbatched inputs are shared by every item.
void batch_by_map(BatchCtx& ctx, const Eqn& e);
// Rule of primitives that act on each leaf independently and accept list
// avals as they are (stop_gradient, depends, zeros_like): re-emits the
// equation on the batched atoms; outputs are batched like the first inputs.
void batch_identity(BatchCtx& ctx, const Eqn& e);

// A sub-IR batched with flat inputs: `axes` says which input leaves are
// batched; outputs whose `force_out` is true are batched even if they do not
// depend on a batched input (broadcast). At least one input must be
// batched when any output is forced.
struct BatchedIR {
  IRPtr ir;                      // flat inputs and outputs
  std::vector<bool> out_batched;
};
// Memoized per transform call (transforms/memo.h).
BatchedIR batch_flat(const IRPtr& ir, const std::vector<bool>& axes,
                     const std::vector<bool>& force_out);

// x repeated once per item of `like` (a batched atom).
Atom broadcast_like(Builder& b, const Atom& x, const Atom& like);

// The public transform: in_axes is a bool tree prefix of the positional
// inputs (null = every input). Static (literal) input leaves are never
// batched. With no batched input the result is ir itself.
IRPtr batch(const IRPtr& ir, const Value& in_axes);

}  // namespace af
