// The LM operations as C++ functions (the C API calls these): each checks
// its arguments, then binds lm_call / lm_schema_call (recorded inside a
// trace, evaluated — i.e. one blocking request — outside).
#pragma once

#include <vector>

#include "ir/prim.h"
#include "rt/env.h"
#include "value/value.h"

namespace af {

// messages: a list of {"role": str (concrete), "content": str}; model: str;
// sampling: null or a dict of the call's sampling params (temperature,
// top_p, max_tokens, seed, stop), static.
Value op_lm_call(const Value& messages, const Value& model, const Value& sampling, RunEnv& env);
// schema: a node tree (lm/schema.h). The result has the schema's structure.
Value op_lm_schema_call(const Value& messages, const Value& model, const Value& schema,
                        const Value& sampling, RunEnv& env);

// Tool calling (lm/tools.h): history is a str (the turns so far, "" for
// none), tools a static list of tools. The result is the dict of
// lm/tools.h's ToolOut.
Value op_lm_tool_call(const Value& messages, const Value& history, const Value& model, const Value& tools,
                      const Value& sampling, RunEnv& env);
// The history after a turn and its tools' results (a list of str).
Value op_tool_results(const Value& history, const Value& turn, const Value& results, RunEnv& env);

// The params of the LM calls: roles (one str per message), parts (per
// message, null or its parts' kinds; left out when every message is plain:
// pass null), the sampling params (optional, set by the operations from the
// sampling table), and schema (lm_schema_call) or tools and tool_choice
// (lm_tool_call). Builders, accessors and `*_param_specs` (what the Prims
// declare) spell the names once (prims/lm.cpp).
Params lm_call_params(Value roles, Value parts);
Params lm_schema_call_params(Value roles, Value parts, Value schema);
Params lm_tool_call_params(Value roles, Value parts, Value tools);
std::vector<ParamSpec> lm_call_param_specs();
std::vector<ParamSpec> lm_schema_call_param_specs();
std::vector<ParamSpec> lm_tool_call_param_specs();
// Each param as a Value, or null when absent (or, in a loaded graph not yet
// checked, not a Value).
const Value* lm_roles(const Params& p);
// Messages given as parts (af.h: content parts): per message, null (its
// content is one str input) or the kinds of its parts, one input each:
// "text", "url" (an image by URL) or an image's media type (base64 data).
// Absent when every message is plain.
const Value* lm_parts(const Params& p);
const Value* lm_schema(const Params& p);
const Value* lm_tools(const Params& p);
const Value* lm_tool_choice(const Params& p);

// The sampling params (af_lm_call_ex's params) as af_options_json lists
// them: {"key", "kind", "default", "min", "max", "doc"} (a list's min and
// max count its items; top_p's min is excluded).
Value describe_sampling_params();

// Cost hint of an LM call relative to a cheap primitive (1): priorities
// follow the longest remaining path, so LM calls dominate them.
inline constexpr double kLmCallCost = 1000.0;

}  // namespace af
