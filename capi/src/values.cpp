// Values: constructors, JSON, accessors, reference counting.
#include "handles.h"

namespace af::capi {

af_value* wrap(Value v) {
  auto* h = new af_value();
  h->v = std::move(v);
  return h;
}

std::vector<Value> unwrap_all(const af_value_t* const* items, size_t n, const char* fn,
                              const char* name) {
  if (n && !items) invalid(std::string(fn) + ": `" + name + "` is NULL with count " + std::to_string(n));
  std::vector<Value> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (!items[i]) invalid(std::string(fn) + ": `" + name + "[" + std::to_string(i) + "]` is NULL");
    out.push_back(items[i]->v);
  }
  return out;
}

}  // namespace af::capi

using namespace af;
using namespace af::capi;

namespace {

// Common shape of a value constructor: check out, build, wrap. fn names the
// C function in errors (the context-free af_value_*_new form, or the older
// af_value_*(ctx, ...) one that forwards here).
template <class F>
af_error_t* make(const char* fn, af_value_t** out, F&& build) {
  if (out) *out = nullptr;
  return guard([&] {
    require(out, fn, "out");
    *out = wrap(build());
  });
}

af_error_t* json_value(const char* fn, const char* json, size_t len, af_value_t** out) {
  return make(fn, out, [&] {
    require(json, fn, "json");
    return from_json(std::string_view(json, len));
  });
}

af_error_t* str_value(const char* fn, const char* s, size_t len, af_value_t** out) {
  return make(fn, out, [&] { return Value::str(std::string(text(s, len, fn, "s"))); });
}

af_error_t* list_value(const char* fn, const af_value_t* const* items, size_t n, af_value_t** out) {
  return make(fn, out, [&] { return Value::list(unwrap_all(items, n, fn, "items")); });
}

af_error_t* dict_value(const char* fn, const char* const* keys, const size_t* key_lens,
                       const af_value_t* const* values, size_t n, af_value_t** out) {
  return make(fn, out, [&] {
    if (n && (!keys || !key_lens))
      invalid(std::string(fn) + ": `keys` or `key_lens` is NULL with count " + std::to_string(n));
    std::vector<Value> vals = unwrap_all(values, n, fn, "values");
    std::vector<Entry> entries;
    entries.reserve(n);
    for (size_t i = 0; i < n; ++i)
      entries.emplace_back(std::string(text(keys[i], key_lens[i], fn, "keys[i]")), std::move(vals[i]));
    return Value::dict(std::move(entries));
  });
}

// v's own content: a promise leaf is evaluated (its result lives in its
// node, which v holds, so borrowed bytes stay valid while v lives).
const Value& content(const af_value_t* v) {
  const detail::PromiseHeap* p = unwrap(v).promise();
  if (!p) return unwrap(v);
  if (!p->ready()) p->evaluate({&unwrap(v), 1});
  return p->result();
}

const Value& leaf_of(const af_value_t* v, const char* fn, Kind want) {
  require(v, fn, "v");
  const Value& x = content(v);
  if (x.kind() == Kind::Placeholder) fail_placeholder_read(fn);
  if (x.kind() != want)
    invalid(std::string(fn) + ": the value is " + kind_name(x.kind()) + ", not " + kind_name(want));
  return x;
}

}  // namespace

extern "C" {

af_error_t* af_value_json_new(const char* json, size_t len, af_value_t** out) {
  return json_value("af_value_json_new", json, len, out);
}

af_error_t* af_value_from_json(af_context_t*, const char* json, size_t len, af_value_t** out) {
  return json_value("af_value_from_json", json, len, out);
}

af_error_t* af_value_to_json(const af_value_t* v, af_bytes_t* out) {
  if (out) *out = af_bytes_t{nullptr, 0};
  return guard([&] {
    require(v, "af_value_to_json", "v");
    require(out, "af_value_to_json", "out");
    to_bytes(to_json(resolved(v)), out);
  });
}

af_error_t* af_value_null_new(af_value_t** out) {
  return make("af_value_null_new", out, [] { return Value(); });
}
af_error_t* af_value_bool_new(int32_t b, af_value_t** out) {
  return make("af_value_bool_new", out, [&] { return Value::boolean(b != 0); });
}
af_error_t* af_value_int_new(int64_t i, af_value_t** out) {
  return make("af_value_int_new", out, [&] { return Value::integer(i); });
}
af_error_t* af_value_float_new(double f, af_value_t** out) {
  return make("af_value_float_new", out, [&] { return Value::floating(f); });
}
af_error_t* af_value_str_new(const char* s, size_t len, af_value_t** out) {
  return str_value("af_value_str_new", s, len, out);
}
af_error_t* af_value_list_new(const af_value_t* const* items, size_t n, af_value_t** out) {
  return list_value("af_value_list_new", items, n, out);
}
af_error_t* af_value_dict_new(const char* const* keys, const size_t* key_lens, const af_value_t* const* values,
                              size_t n, af_value_t** out) {
  return dict_value("af_value_dict_new", keys, key_lens, values, n, out);
}

// The older forms, whose context was never used.
af_error_t* af_value_null(af_context_t*, af_value_t** out) {
  return make("af_value_null", out, [] { return Value(); });
}
af_error_t* af_value_bool(af_context_t*, int32_t b, af_value_t** out) {
  return make("af_value_bool", out, [&] { return Value::boolean(b != 0); });
}
af_error_t* af_value_int(af_context_t*, int64_t i, af_value_t** out) {
  return make("af_value_int", out, [&] { return Value::integer(i); });
}
af_error_t* af_value_float(af_context_t*, double f, af_value_t** out) {
  return make("af_value_float", out, [&] { return Value::floating(f); });
}
af_error_t* af_value_str(af_context_t*, const char* s, size_t len, af_value_t** out) {
  return str_value("af_value_str", s, len, out);
}
af_error_t* af_value_list(af_context_t*, const af_value_t* const* items, size_t n, af_value_t** out) {
  return list_value("af_value_list", items, n, out);
}
af_error_t* af_value_dict(af_context_t*, const char* const* keys, const size_t* key_lens,
                          const af_value_t* const* values, size_t n, af_value_t** out) {
  return dict_value("af_value_dict", keys, key_lens, values, n, out);
}

int32_t af_value_kind(const af_value_t* v) {
  if (!v) return -1;
  if (const detail::PromiseHeap* p = v->v.promise())
    return int32_t(p->ref.list_depth ? Kind::List : p->ref.kind);
  return int32_t(v->v.kind());
}

af_error_t* af_value_len(const af_value_t* v, size_t* out) {
  if (out) *out = 0;
  return guard([&] {
    require(v, "af_value_len", "v");
    require(out, "af_value_len", "out");
    const Value& x = content(v);
    if (!x.is_container())
      invalid(std::string("af_value_len: the value is ") + kind_name(x.kind()) + ", not a list or dict");
    *out = x.size();
  });
}

af_error_t* af_value_index(const af_value_t* v, size_t i, af_value_t** out) {
  if (out) *out = nullptr;
  return guard([&] {
    require(v, "af_value_index", "v");
    require(out, "af_value_index", "out");
    const Value& x = content(v);
    if (!x.is_container())
      invalid(std::string("af_value_index: the value is ") + kind_name(x.kind()) +
              ", not a list or dict");
    if (i >= x.size())
      invalid("af_value_index: index " + std::to_string(i) + " is out of range (size " +
              std::to_string(x.size()) + ")");
    *out = wrap(x.kind() == Kind::List ? x.items()[i] : x.entries()[i].second);
  });
}

af_error_t* af_value_key(const af_value_t* v, const char* key, size_t len, af_value_t** out) {
  if (out) *out = nullptr;
  return guard([&] {
    require(v, "af_value_key", "v");
    require(out, "af_value_key", "out");
    std::string_view k = text(key, len, "af_value_key", "key");
    const Value& x = content(v);
    if (x.kind() != Kind::Dict)
      invalid(std::string("af_value_key: the value is ") + kind_name(x.kind()) + ", not a dict");
    const Value* found = x.find(k);
    if (!found) {
      std::string keys;
      for (const Entry& e : x.entries()) keys += (keys.empty() ? "" : ", ") + e.first;
      fail(Code::NotFound, "af_value_key: no key \"" + std::string(k) + "\" (keys: " + keys + ")");
    }
    *out = wrap(*found);
  });
}

af_error_t* af_value_key_at(const af_value_t* v, size_t i, const char** key, size_t* len) {
  if (key) *key = nullptr;
  if (len) *len = 0;
  return guard([&] {
    require(v, "af_value_key_at", "v");
    require(key, "af_value_key_at", "key");
    require(len, "af_value_key_at", "len");
    const Value& x = content(v);
    if (x.kind() != Kind::Dict)
      invalid(std::string("af_value_key_at: the value is ") + kind_name(x.kind()) + ", not a dict");
    if (i >= x.size())
      invalid("af_value_key_at: index " + std::to_string(i) + " is out of range (size " +
              std::to_string(x.size()) + ")");
    *key = x.entries()[i].first.data();
    *len = x.entries()[i].first.size();
  });
}

af_error_t* af_value_get_str(const af_value_t* v, const char** s, size_t* len) {
  if (s) *s = nullptr;
  if (len) *len = 0;
  return guard([&] {
    require(s, "af_value_get_str", "s");
    require(len, "af_value_get_str", "len");
    const Value& x = leaf_of(v, "af_value_get_str", Kind::Str);
    *s = x.as_str().data();
    *len = x.as_str().size();
  });
}

af_error_t* af_value_get_int(const af_value_t* v, int64_t* out) {
  if (out) *out = 0;
  return guard([&] {
    require(out, "af_value_get_int", "out");
    *out = leaf_of(v, "af_value_get_int", Kind::Int).as_int();
  });
}

af_error_t* af_value_get_float(const af_value_t* v, double* out) {
  if (out) *out = 0;
  return guard([&] {
    require(out, "af_value_get_float", "out");
    *out = leaf_of(v, "af_value_get_float", Kind::Float).as_float();
  });
}

af_error_t* af_value_get_bool(const af_value_t* v, int32_t* out) {
  if (out) *out = 0;
  return guard([&] {
    require(out, "af_value_get_bool", "out");
    *out = leaf_of(v, "af_value_get_bool", Kind::Bool).as_bool() ? 1 : 0;
  });
}

af_value_t* af_value_clone(const af_value_t* v) {
  if (!v) return nullptr;
  v->refs.fetch_add(1, std::memory_order_relaxed);
  return const_cast<af_value_t*>(v);
}

void af_value_free(af_value_t* v) {
  if (v && v->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete v;
}

}  // extern "C"
