#include "lm/options.h"

#include <cctype>
#include <cmath>
#include <utility>

#include "value/error.h"

namespace af::lm {

namespace {

// Set by describe_options for the first Options its reading builds.
thread_local std::vector<OptionSpec>* t_describe = nullptr;

Value spec_value(const OptionSpec& s) {
  std::vector<Entry> e{{"key", Value::str(s.key)}, {"kind", Value::str(s.kind)}, {"default", s.def}};
  if (!s.min.is_null()) e.emplace_back("min", s.min);
  if (!s.max.is_null()) e.emplace_back("max", s.max);
  e.emplace_back("doc", Value::str(s.doc));
  if (!s.keys.empty()) {
    std::vector<Value> keys;
    for (const OptionSpec& k : s.keys) keys.push_back(spec_value(k));
    e.emplace_back("keys", Value::list(std::move(keys)));
  }
  return Value::dict(std::move(e));
}

}  // namespace

Options::Options(const Value& v, std::string what) : v_(v), what_(std::move(what)) {
  if (t_describe) {
    sink_ = std::exchange(t_describe, nullptr);
    v_ = Value();
    return;
  }
  if (!v.is_null() && v.kind() != Kind::Dict)
    invalid(what_ + ": options must be a JSON object, found " + kind_name(v.kind()));
}

Options::Options(std::string what, std::vector<OptionSpec>* sink)
    : what_(std::move(what)), sink_(sink), top_(false) {}

void Options::bad(const char* key, const std::string& why) const {
  invalid(what_ + ": option \"" + key + "\" " + why);
}

const Value* Options::raw(const char* key) {
  known_.insert(key);
  const Value* x = v_.is_null() ? nullptr : v_.find(key);
  return x && !x->is_null() ? x : nullptr;
}

bool Options::record(const char* key, const char* kind, Value def, Value min, Value max, const char* doc) {
  if (!sink_) return false;
  sink_->push_back(OptionSpec{key, kind, std::move(def), std::move(min), std::move(max), doc, {}});
  return true;
}

int64_t Options::integer(const char* key, int64_t def, int64_t min, int64_t max, const char* doc) {
  if (record(key, "int", Value::integer(def), Value::integer(min), Value::integer(max), doc)) return def;
  const Value* x = raw(key);
  if (!x) return def;
  if (x->kind() != Kind::Int) bad(key, std::string("must be an integer, found ") + kind_name(x->kind()));
  if (x->as_int() < min || x->as_int() > max)
    bad(key, "must be between " + std::to_string(min) + " and " + std::to_string(max) + ", found " +
                 std::to_string(x->as_int()));
  return x->as_int();
}

double Options::number(const char* key, double def, double min, double max, const char* doc) {
  if (record(key, "number", Value::floating(def), Value::floating(min), Value::floating(max), doc)) return def;
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

std::string Options::str(const char* key, std::string def, const char* doc) {
  if (record(key, "str", Value::str(def), Value(), Value(), doc)) return def;
  const Value* x = raw(key);
  if (!x) return def;
  if (x->kind() != Kind::Str) bad(key, std::string("must be a string, found ") + kind_name(x->kind()));
  return x->as_str();
}

bool Options::boolean(const char* key, bool def, const char* doc) {
  if (record(key, "bool", Value::boolean(def), Value(), Value(), doc)) return def;
  const Value* x = raw(key);
  if (!x) return def;
  if (x->kind() != Kind::Bool) bad(key, std::string("must be true or false, found ") + kind_name(x->kind()));
  return x->as_bool();
}

const Value* Options::object(const char* key, const char* doc) {
  if (record(key, "object", Value(), Value(), Value(), doc)) return nullptr;
  const Value* x = raw(key);
  if (x && x->kind() != Kind::Dict) bad(key, std::string("must be an object, found ") + kind_name(x->kind()));
  return x;
}

Options Options::sub(const char* key, const char* doc) {
  if (record(key, "object", Value(), Value(), Value(), doc)) return Options(what_ + ": " + key, &sink_->back().keys);
  const Value* x = object(key, doc);
  return Options(x ? *x : Value(), what_ + ": " + key);
}

void Options::finish() {
  if (sink_) {
    if (top_) throw Described{};
    return;
  }
  if (v_.is_null()) return;
  for (const auto& [k, _] : v_.entries())
    if (!known_.count(k)) {
      std::string list;
      for (const auto& n : known_) list += (list.empty() ? "" : ", ") + n;
      invalid(what_ + ": unknown option \"" + k + "\" (known: " + list + ")");
    }
}

Value describe_options(const std::function<void()>& read) {
  std::vector<OptionSpec> specs;
  t_describe = &specs;
  try {
    read();
  } catch (const Options::Described&) {
  } catch (...) {
    t_describe = nullptr;
    throw;
  }
  t_describe = nullptr;
  if (specs.empty()) fail(Code::Internal, "describe_options: the reader read no options");
  std::vector<Value> out;
  for (const OptionSpec& s : specs) out.push_back(spec_value(s));
  return Value::list(std::move(out));
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
