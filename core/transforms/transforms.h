// The IR -> IR transforms (docs/SEMANTICS.md §4, docs/ARCHITECTURE.md). Each returns a
// plain IR of registered primitives: it prints, transforms again and runs.
// Run-time transforms (memoize, collect, inject) are scopes of a context:
// rt/scopes.h.
#pragma once

#include "ir/ir.h"
#include "transforms/batch.h"
#include "transforms/dce.h"
#include "transforms/pullback.h"
#include "transforms/pushforward.h"

namespace af {

// cse: identical pure equations merged (nondeterministic ones — LM calls,
// host functions — only when merge_nondeterministic); never checkpoints.
IRPtr cse(const IR& ir, bool merge_nondeterministic = false);

// sched: every equation annotated with its level and priority.
IRPtr sched(const IR& ir);

}  // namespace af
