// What an equation does beyond computing its outputs, read from its
// primitive's flags and, where they depend on them, its params (a host
// function registered pure or effectful): what compile may remove (dce),
// merge (cse), answer from a memoize scope, or run once for a whole batch.
#pragma once

#include "ir/ir.h"
#include "ir/prim.h"

namespace af {

// The flags of an equation of p with these params (Prim::flags_of).
inline uint32_t eqn_flags(const Prim& p, const Params& params) {
  return p.flags_of ? p.flags_of(params) : p.flags;
}
inline uint32_t eqn_flags(const Eqn& e) { return eqn_flags(*e.prim, e.params); }

// True if ir (or any sub-IR in its params, recursively) holds an effectful
// or no-merge equation (an effectful host call, a checkpoint): such an IR
// must run even if unused.
bool has_effects(const IR& ir);
// Inline: compile asks both of every equation, and most hold no sub-IR.
bool params_have_effects(const Params& ps);
inline bool eqn_has_effects(const Eqn& e) {
  if (eqn_flags(e) & (kEffectful | kNoMerge)) return true;
  return !e.params.empty() && params_have_effects(e.params);
}
// Whether CSE may merge e with an identical equation (ir/ir.h eqn_same): it
// has no effects, and it is deterministic unless merging nondeterministic
// equations (LM calls) was asked for.
inline bool mergeable(const Eqn& e, bool merge_nondeterministic) {
  return !eqn_has_effects(e) && (!(eqn_flags(e) & kNondeterministic) || merge_nondeterministic);
}

}  // namespace af
