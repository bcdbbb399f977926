// host_call: the operation that calls a function the host registered by
// name (rt/hosts.h). docs/SEMANTICS.md §3 "host function".
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/prim.h"
#include "rt/env.h"
#include "value/value.h"

namespace af {

// Calls host function `name` on positional argument trees: recorded inside a
// trace (as host_call[name, result]), evaluated outside. NOT_FOUND if the
// name is not registered on env's context.
Value op_host_call(std::string_view name, std::span<const Value> args, RunEnv& env);

// host_call(name, result, pure): the function's registered name, the kinds
// of its result (HostFunction::result_kinds) and whether it was registered
// pure (the param is left out when not). Builder, accessors and
// `host_call_param_specs` (what the Prim declares) spell the names once.
Params host_call_params(std::string name, Value result, bool pure);
std::vector<ParamSpec> host_call_param_specs();
const std::string& host_call_name(const Params& p);
const Value& host_call_result(const Params& p);
bool host_call_pure(const Params& p);

}  // namespace af
