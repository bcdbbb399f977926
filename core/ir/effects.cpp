#include "ir/effects.h"

namespace af {

bool params_have_effects(const Params& ps) {
  return ps.any_ir([](const IR& ir) {
    return ir.facts.flag(IRFacts::kEffects, [&] { return has_effects(ir); });
  });
}

bool has_effects(const IR& ir) {
  for (const Eqn& e : ir.eqns)
    if (eqn_has_effects(e)) return true;
  return false;
}

}  // namespace af
