// The operations of the built-in primitives as C++ functions: each checks
// its arguments, then binds its primitive (recorded inside a trace,
// evaluated outside). The C API calls these.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/prim.h"
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

// The params of format and checkpoint: each builder, its accessors and its
// `*_param_specs` (what the Prim declares) spell the names once
// (prims/string.cpp, prims/control.cpp).

// format(template, names): the template text and the names of its named
// arguments (the last inputs, in this order).
Params format_params(std::string tmpl, std::vector<Value> names);
std::vector<ParamSpec> format_param_specs();
const Value& format_template(const Params& p);  // a str
const Value& format_names(const Params& p);     // a list of str

// checkpoint(collection, key).
Params checkpoint_params(std::string collection, std::string key);
std::vector<ParamSpec> checkpoint_param_specs();
const std::string& checkpoint_collection(const Params& p);
const std::string& checkpoint_key(const Params& p);

}  // namespace af
