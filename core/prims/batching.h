// What the primitives over batch items share (prims/batching.cpp: map;
// prims/pipeline.cpp: pipeline): their `axes` param, the batch's length, the
// set of sub-runs one equation starts, and dce over `axes` and `body`.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "ir/prim.h"
#include "rt/context.h"
#include "value/value.h"

namespace af {

// An `axes` param (a list of bools: true = the input is a list of per-item
// values) as bools.
std::vector<bool> bools(const Value& list);

// The number of items of the inputs `axes` marks batched: INVALID_ARGUMENT
// naming `prim` when one is not a list or two lengths differ; 0 when none is
// batched.
size_t batch_length(const char* prim, std::span<const Value> in, const std::vector<bool>& axes);

// The sub-runs one equation starts (map's items or branches, pipeline's
// slices), `left` of them not finished: the first failure cancels those in
// flight. Whoever holds it keeps its results beside it, under `mu`.
class SubRunSet {
 public:
  explicit SubRunSet(size_t n) : left_(n) {}
  std::mutex mu;
  // Keeps `run` to cancel, unless every sub-run has finished already.
  void track(std::shared_ptr<SubRun> run);
  // With mu held: one more finished; true for the last (the runs are
  // dropped then).
  bool finish_one_locked();
  // Cancels the sub-runs in flight.
  void cancel_all();

 private:
  size_t left_;
  std::vector<std::shared_ptr<SubRun>> runs_;
};

// The dce rule of an equation with params `axes` and `body` (map,
// pipeline): the body without its unread outputs and the inputs only they
// read; its other params kept. Kept whole when no batched input would be
// read any more (the outputs must still hold one item per batch item).
void dce_axes_body(DceCtx& ctx, const Eqn& e);

}  // namespace af
