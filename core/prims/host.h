// host_call: the operation that calls a function the host registered by
// name (rt/hosts.h). docs/SEMANTICS.md §3 "host function".
#pragma once

#include <span>
#include <string_view>

#include "rt/env.h"
#include "value/value.h"

namespace af {

// Calls host function `name` on positional argument trees: recorded inside a
// trace (as host_call[name, result]), evaluated outside. NOT_FOUND if the
// name is not registered on env's context.
Value op_host_call(std::string_view name, std::span<const Value> args, RunEnv& env);

}  // namespace af
