#include "lm/options.h"

#include <cctype>
#include <cmath>

#include "value/error.h"

namespace af::lm {

Options::Options(const Value& v, std::string what) : v_(v), what_(std::move(what)) {
  if (!v.is_null() && v.kind() != Kind::Dict)
    invalid(what_ + ": options must be a JSON object, found " + kind_name(v.kind()));
}

void Options::bad(const char* key, const std::string& why) const {
  invalid(what_ + ": option \"" + key + "\" " + why);
}

const Value* Options::raw(const char* key) {
  known_.insert(key);
  const Value* x = v_.is_null() ? nullptr : v_.find(key);
  return x && !x->is_null() ? x : nullptr;
}

int64_t Options::integer(const char* key, int64_t def, int64_t min, int64_t max) {
  const Value* x = raw(key);
  if (!x) return def;
  if (x->kind() != Kind::Int) bad(key, std::string("must be an integer, found ") + kind_name(x->kind()));
  if (x->as_int() < min || x->as_int() > max)
    bad(key, "must be between " + std::to_string(min) + " and " + std::to_string(max) + ", found " +
                 std::to_string(x->as_int()));
  return x->as_int();
}

double Options::number(const char* key, double def, double min, double max) {
  const Value* x = raw(key);
  if (!x) return def;
  double d;
  if (x->kind() == Kind::Int) d = double(x->as_int());
  else if (x->kind() == Kind::Float) d = x->as_float();
  else bad(key, std::string("must be a number, found ") + kind_name(x->kind()));
  if (!(d >= min && d <= max))
    bad(key, "must be between " + to_json(Value::floating(min)) + " and " + to_json(Value::floating(max)) +
                 ", found " + to_json(*x));
  return d;
}

std::string Options::str(const char* key, std::string def) {
  const Value* x = raw(key);
  if (!x) return def;
  if (x->kind() != Kind::Str) bad(key, std::string("must be a string, found ") + kind_name(x->kind()));
  return x->as_str();
}

bool Options::boolean(const char* key, bool def) {
  const Value* x = raw(key);
  if (!x) return def;
  if (x->kind() != Kind::Bool) bad(key, std::string("must be true or false, found ") + kind_name(x->kind()));
  return x->as_bool();
}

void Options::finish() const {
  if (v_.is_null()) return;
  for (const auto& [k, _] : v_.entries())
    if (!known_.count(k)) {
      std::string list;
      for (const auto& n : known_) list += (list.empty() ? "" : ", ") + n;
      invalid(what_ + ": unknown option \"" + k + "\" (known: " + list + ")");
    }
}

Value options_from_json(std::string_view json, const char* what) {
  bool blank = true;
  for (char c : json) blank = blank && std::isspace(static_cast<unsigned char>(c));
  if (blank) return Value();
  try {
    return from_json(json);
  } catch (const Error& e) {
    invalid(std::string(what) + ": options are not valid JSON: " + e.what());
  }
}

}  // namespace af::lm
