// Tracing: a thread-local stack of trace frames. Primitive applications made
// through bind() are recorded into the innermost frame when it is active
// (and not folding), otherwise evaluated at once.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "ir/prim.h"

namespace af {

// The function being traced: positional inputs (placeholders and static
// literals) -> output tree.
using TraceFn = std::function<Value(std::span<const Value> inputs)>;

// Traces fn on placeholders shaped like `examples`. static_mask: a bool tree
// prefix of the list of inputs (null Value = all dynamic).
IRPtr trace(const TraceFn& fn, std::span<const Value> examples, const Value& static_mask);

// Applies prim to the input tree `in` (a list of positional trees, may hold
// placeholders): records an equation inside a trace, evaluates it outside
// (or when folding). Returns the output tree.
Value bind(const Prim& p, Params params, const Value& in, RunEnv& env);
// The same for flat leaf inputs with in_tree = flat_list(leaves.size()).
Value bind_flat(const Prim& p, Params params, std::vector<Value> leaves, RunEnv& env);

// True when an operation on this thread would be recorded (tracing and not
// folding).
bool recording() noexcept;
// Inlines ir's equations into the innermost trace (tags merged, name paths
// prefixed with the open name scopes); inputs are
// checked as for a call. Returns the output tree.
Value inline_ir(const IR& ir, std::span<const Value> inputs);

bool is_tracing() noexcept;
// Tag scopes of the innermost frame; INVALID_ARGUMENT outside a trace or on
// an unmatched pop.
void push_tag(std::string tag);
void pop_tag();
// Name scopes of the innermost frame (docs: af.h "Name paths"); the same
// errors as tag scopes, and INVALID_ARGUMENT for an empty name or one
// holding '/'.
void push_name(std::string name);
void pop_name();
// Fold scopes of the innermost frame; no-ops outside a trace (everything
// runs at once there); INVALID_ARGUMENT on an unmatched pop inside one.
void push_fold();
void pop_fold();

}  // namespace af
