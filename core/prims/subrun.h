// Sub-IRs run by control flow (switch branches, map items) as runs of their
// own on the context's dataflow executor, for the impl_async rules: the
// equation holds no thread while the sub-runs' LM calls are in flight, and
// map items run concurrently. The sequential impl rules use SubProgram
// (prims/subir.h) instead.
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "exec/async.h"
#include "exec/env.h"
#include "exec/executor.h"
#include "ir/ir.h"

namespace af {

// Called once when a sub-run finishes: its flat output leaves, or the error.
using SubRunDone = std::function<void(std::vector<Value>* out, const Error* err)>;

// Starts ir on its flat input leaves (values for static inputs are ignored;
// the IR's own literal is used) for the equation whose op is `parent`: when
// the parent is profiled, the sub-run's LM calls are recorded in its profile
// (on their provider tracks, under the parent equation), and its LM calls
// stream through the parent (as batch item `item` when >= 0: a map item).
// Returns the run, to cancel it.
Future start_sub_run(const IRPtr& ir, std::span<const Value> in, const RunEnv& env,
                     const std::shared_ptr<AsyncOp>& parent, SubRunDone done, int64_t item = -1);

}  // namespace af
