// The sliced form of a batched program: how the executor runs a large batch
// so that its LM stages overlap (docs/SEMANTICS.md §4 batch, "Large
// batches"). batch marks its output (IR::slice_items = the items per slice):
// everything after its batch_check depends on the batch item by item.
// pipeline_form rewrites such a program as
//
//   [batch_check, the equations that do not depend on the batch,
//    pipeline[axes, body = the equations that do, chunk](...)]
//
// whose pipeline equation (prims/pipeline.cpp) runs its body on slices of
// the batch, every slice on its own, and joins the outputs in item order.
#pragma once

#include <cstdint>

#include "ir/ir.h"

namespace af {

// Items per slice of the batches batch makes: large enough that a slice
// amortizes its sub-run and its batched equations, small enough that a
// batch of 10^4-10^5 items runs as tens of slices whose LM stages overlap.
inline constexpr int64_t kSliceItems = 1024;

// The sliced form of `ir`, or null when it has none: ir is not marked by
// batch (nor is what other transforms make of a batched program: a
// pullback, say, sums the items' feedback), fewer than two equations of the
// part that depends on the batch wait on something (an LM call, a host
// function, control flow around one: with one stage or none there is
// nothing to overlap, and slicing would only add work), or a part that does
// not depend on the batch waits (the pipeline would wait for it before its
// first stage, where the program as written overlaps the two).
IRPtr pipeline_form(const IRPtr& ir);

}  // namespace af
