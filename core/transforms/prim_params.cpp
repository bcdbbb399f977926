#include "transforms/prim_params.h"

namespace af {
namespace {

// The param names, written once: builders, accessors and specs use these.
constexpr const char* kParamAxes = "axes";
constexpr const char* kParamBody = "body";
constexpr const char* kParamPaths = "paths";
constexpr const char* kParamChunk = "chunk";
constexpr const char* kParamText = "text";

}  // namespace

Params map_params(Value axes, IRPtr body) { return with_axes_and_body(Params(), std::move(axes), std::move(body)); }
std::vector<ParamSpec> map_param_specs() {
  return {{.name = kParamAxes, .value_kind = Kind::List}, {.name = kParamBody, .kind = ParamKind::IR}};
}
const Value& map_axes(const Params& p) { return p.value(kParamAxes); }
const IRPtr& map_body(const Params& p) { return p.ir(kParamBody); }
Params with_axes_and_body(Params p, Value axes, IRPtr body) {
  p.set(kParamAxes, std::move(axes));
  p.set(kParamBody, std::move(body));
  return p;
}

Params batch_check_params(Value paths) {
  Params p;
  p.set(kParamPaths, std::move(paths));
  return p;
}
std::vector<ParamSpec> batch_check_param_specs() {
  return {{.name = kParamPaths, .value_kind = Kind::List, .optional = true}};
}
const Value* batch_check_paths(const Params& p) { return p.find_value(kParamPaths); }

Params pipeline_params(Value axes, IRPtr body, int64_t chunk) {
  Params p = map_params(std::move(axes), std::move(body));
  p.set(kParamChunk, Value::integer(chunk));
  return p;
}
std::vector<ParamSpec> pipeline_param_specs() {
  std::vector<ParamSpec> ps = map_param_specs();
  ps.push_back({.name = kParamChunk, .value_kind = Kind::Int});
  return ps;
}
int64_t pipeline_chunk(const Params& p) { return p.value(kParamChunk).as_int(); }

Params zeros_like_params(bool text) {
  Params p;
  if (text) p.set(kParamText, Value::boolean(true));
  return p;
}
std::vector<ParamSpec> zeros_like_param_specs() {
  return {{.name = kParamText, .value_kind = Kind::Bool, .optional = true}};
}
bool zeros_like_text(const Params& p) {
  const Param* t = p.find(kParamText);
  return t && std::holds_alternative<Value>(*t) && std::get<Value>(*t).kind() == Kind::Bool &&
         std::get<Value>(*t).as_bool();
}

}  // namespace af
