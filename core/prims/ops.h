// The operations of the built-in primitives as C++ functions: each checks
// its arguments, then binds its primitive (recorded inside a trace,
// evaluated outside). The C API calls these.
#pragma once

#include <span>
#include <string_view>

#include "rt/env.h"
#include "value/value.h"

namespace af {

// named: a dict of named arguments, or null.
Value op_format(std::string_view tmpl, std::span<const Value> args, const Value& named,
                RunEnv& env);
Value op_concat(std::span<const Value> args, RunEnv& env);
Value op_match(const Value& a, const Value& b, RunEnv& env);
Value op_stop_gradient(const Value& v, RunEnv& env);
Value op_depends(const Value& value, std::span<const Value> deps, RunEnv& env);
Value op_checkpoint(const Value& v, std::string_view key, std::string_view collection,
                    RunEnv& env);

}  // namespace af
