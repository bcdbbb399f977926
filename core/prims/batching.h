// What the primitives over batch items share (prims/batching.cpp: map;
// prims/pipeline.cpp: pipeline): their `axes` param and the batch's length.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "value/value.h"

namespace af {

// An `axes` param (a list of bools: true = the input is a list of per-item
// values) as bools.
std::vector<bool> bools(const Value& list);

// The number of items of the inputs `axes` marks batched: INVALID_ARGUMENT
// naming `prim` when one is not a list or two lengths differ; 0 when none is
// batched.
size_t batch_length(const char* prim, std::span<const Value> in, const std::vector<bool>& axes);

}  // namespace af
