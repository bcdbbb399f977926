// VarIds: the output variables of an equation, up to two held inline
// (core/value/small_vec.h).
#pragma once

#include <cstdint>

#include "value/small_vec.h"

namespace af {

using VarId = uint32_t;
using VarIds = SmallVec<VarId, 2>;

}  // namespace af
