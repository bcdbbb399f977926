// dce: removes equations whose outputs nothing reads (docs/SEMANTICS.md §4).
// An equation with effects (checkpoint, or a sub-IR holding one) is always
// kept. A primitive's dce rule may replace its equation by a smaller one
// (switch, map, loops: fewer outputs, fewer inputs, dead code removed from
// their sub-IRs); without a rule the equation is kept whole when any output
// is read, and all its inputs are then read.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "ir/ir.h"

namespace af {

struct DceCtx {
  const IR& src;
  const Eqn& eqn;

  // Is output k of the equation read downstream?
  bool used(size_t k) const { return out_used[k]; }
  // Keep `e` instead of the equation. e's outputs must be a subset of the
  // equation's output vars (all used ones); its inputs atoms of src.
  void replace(Eqn e) { replacement = std::move(e); }

  std::vector<bool> out_used;
  std::optional<Eqn> replacement;
};

// A sub-IR with only the outputs where used_out is true (flat outputs; the
// inputs keep their structure), and which of its inputs it still reads.
struct DcedIR {
  IRPtr ir;
  std::vector<bool> used_in;
};
DcedIR dce_flat(const IRPtr& ir, const std::vector<bool>& used_out);
// A flat-input IR without the inputs where keep is false (they must be
// unused). Both are memoized per transform call (transforms/memo.h).
IRPtr drop_inputs(const IRPtr& ir, const std::vector<bool>& keep);

// The dce rule of a primitive without sub-IRs: the equation is kept whole
// when any output is read (or it has effects), and then reads every input.
// A null Prim::dce means this rule.
void dce_whole(DceCtx& ctx, const Eqn& e);

// The public transform: out_used is a bool tree prefix of the output (null =
// every output); outputs it marks false become null.
IRPtr dce(const IR& ir, const Value& out_used);

}  // namespace af
