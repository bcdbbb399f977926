// Control-flow operations (docs/SEMANTICS.md §3): switch and while_loop. Like
// the operations of ops.h they check their arguments, then bind (recorded
// inside a trace, evaluated outside).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ir/prim.h"
#include "rt/env.h"
#include "value/value.h"

namespace af {

// switch(key, branches, operands...): runs the branch named key on the
// operands (positional trees). Every branch takes the operands' structure
// and all branches return one structure; output kinds are joined over the
// branches. INVALID_ARGUMENT (at trace time) on mismatched structures or
// kinds; NOT_FOUND (at run time) for an unknown key, listing the known ones.
Value op_switch(const Value& key, std::span<const std::string> names, std::span<const IRPtr> branches,
                std::span<const Value> operands, RunEnv& env);

// The params of the control-flow primitives: each builder, its accessors and
// its `*_param_specs` (what the Prim declares) spell each name once, in
// prims/control_flow.cpp (while_scan's and scan's too, though prims/scan.cpp
// registers them: they share the loops' names).

// switch(branches): its branches by name (sorted).
Params switch_params(IRMap branches);
std::vector<ParamSpec> switch_param_specs();
// The branch of switch equation params `p` named `key`; NOT_FOUND listing
// the branches if none (what the switch does at run time).
const IRPtr& switch_branch(const Params& p, const std::string& key);
// A switch's branches, by name (its params).
const IRMap& switch_branches(const Params& p);

// while_loop(cond, body, max_iters), and while_scan, which takes the same
// params (a while_loop that records its trajectory).
Params while_loop_params(IRPtr cond, IRPtr body, int64_t max_iters);
std::vector<ParamSpec> while_loop_param_specs();
Params while_scan_params(IRPtr cond, IRPtr body, int64_t max_iters);
std::vector<ParamSpec> while_scan_param_specs();
// The params of a while_loop or while_scan.
const IRPtr& loop_cond(const Params& p);
const Value& loop_max_iters(const Params& p);  // an int
// The body of a while_loop, while_scan or scan.
const IRPtr& loop_body(const Params& p);

// scan(body, n_xs, reverse): n_xs of the body's inputs are per-item lists.
Params scan_params(IRPtr body, size_t n_xs, bool reverse);
std::vector<ParamSpec> scan_param_specs();
size_t scan_n_xs(const Params& p);
bool scan_reverse(const Params& p);

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
