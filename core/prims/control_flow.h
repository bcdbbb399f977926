// Control-flow operations (docs/SEMANTICS.md §3): switch and while_loop. Like
// the operations of ops.h they check their arguments, then bind (recorded
// inside a trace, evaluated outside).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "rt/env.h"
#include "ir/ir.h"
#include "value/value.h"

namespace af {

// switch(key, branches, operands...): runs the branch named key on the
// operands (positional trees). Every branch takes the operands' structure
// and all branches return one structure; output kinds are joined over the
// branches. INVALID_ARGUMENT (at trace time) on mismatched structures or
// kinds; NOT_FOUND (at run time) for an unknown key, listing the known ones.
Value op_switch(const Value& key, std::span<const std::string> names, std::span<const IRPtr> branches,
                std::span<const Value> operands, RunEnv& env);

// The branch of switch equation params `p` named `key`; NOT_FOUND listing
// the branches if none (what the switch does at run time).
const IRPtr& switch_branch(const Params& p, const std::string& key);
// A switch's branches, by name (its params).
const IRMap& switch_branches(const Params& p);

// while_loop(cond, body, init, max_iters): while cond(state) is true and
// fewer than max_iters iterations ran, state = body(state). cond and body
// take one positional input (the state); body keeps its structure and kinds.
Value op_while_loop(const IRPtr& cond, const IRPtr& body, const Value& init, uint64_t max_iters,
                    RunEnv& env);

// scan(body, init, xs, reverse): carry = init; for each item of xs in order
// (last to first when reverse), [carry, y] = body(carry, item); returns
// [carry, ys] where ys holds each y at its item's index (y's structure with
// a list at each leaf). xs is a list, or a tree whose leaves are lists of
// one length (the item is the tree of their i-th items). Defined in
// prims/scan.cpp on the scan primitive, with every rule.
Value op_scan(const IRPtr& body, const Value& init, const Value& xs, bool reverse, RunEnv& env);

}  // namespace af
