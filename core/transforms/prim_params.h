// The params of the primitives a transform emits although their family
// lives above it (core/prims): map and batch_check (batch), pipeline
// (pipeline), zeros_like (pullback's zero cotangents). Each one's builder,
// accessors and declared params (`*_param_specs`, what its Prim holds) are
// here, the lowest layer both the transform and the family include, so its
// param names are written in one place. Builders of the other primitives
// sit in their family's header (core/prims/README.md).
#pragma once

#include <cstdint>
#include <vector>

#include "ir/prim.h"

namespace af {

// map(axes, body): body run once per batch item; axes (a list of bools)
// marks the inputs that are lists of per-item values.
Params map_params(Value axes, IRPtr body);
std::vector<ParamSpec> map_param_specs();
// The `axes` and `body` params of a map or a pipeline.
const Value& map_axes(const Params& p);
const IRPtr& map_body(const Params& p);
// The params of a map or pipeline p with its axes and body replaced (its
// other params kept).
Params with_axes_and_body(Params p, Value axes, IRPtr body);

// batch_check(paths): equal, non-zero lengths of the batched inputs, named
// by their paths in errors.
Params batch_check_params(Value paths);
std::vector<ParamSpec> batch_check_param_specs();
// Its `paths` param (a list of str), or null when it has none.
const Value* batch_check_paths(const Params& p);

// pipeline(axes, body, chunk): map's axes and body (read with map_axes,
// map_body), run on slices of at most `chunk` items.
Params pipeline_params(Value axes, IRPtr body, int64_t chunk);
std::vector<ParamSpec> pipeline_param_specs();
int64_t pipeline_chunk(const Params& p);

// zeros_like(text): a materialized Zero; `text` set: a str cotangent's.
Params zeros_like_params(bool text);
std::vector<ParamSpec> zeros_like_param_specs();
bool zeros_like_text(const Params& p);

}  // namespace af
