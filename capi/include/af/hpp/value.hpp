/* af/hpp/value.hpp — part of af.hpp (include <af/af.hpp>): values.
 *
 * af::Value (with its Range and Entry for iteration), af::Kind, and the
 * constructors af::null, af::str, af::json, af::list, af::dict, ...: values
 * belong to no Context, so nothing here needs one. */
#ifndef AF_HPP_VALUE_HPP
#define AF_HPP_VALUE_HPP

#include "handle.hpp"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace af {

class Context;

/* ---- Values -------------------------------------------------------------- */

enum class Kind : int32_t {
  Invalid = -1,
  Null = AF_KIND_NULL,
  Bool = AF_KIND_BOOL,
  Int = AF_KIND_INT,
  Float = AF_KIND_FLOAT,
  Str = AF_KIND_STR,
  List = AF_KIND_LIST,
  Dict = AF_KIND_DICT,
  Placeholder = AF_KIND_PLACEHOLDER,
};

class Value;
inline Value list(const std::vector<Value>& items);
inline Value dict(const std::vector<std::pair<std::string_view, Value>>& entries);

/* An immutable tree (null, bool, int, float, str, list, dict). Make values
 * anywhere, no Context needed (af::str("x"), af::json("[1,2]"), af::list,
 * ...; below); a Context's ctx.str("x") etc. are the same. */
class Value {
 public:
  Value() noexcept = default;
  /* Takes ownership of one reference to v. */
  static Value own(af_value_t* v) { return Value(v); }
  /* A new reference to a borrowed v. */
  static Value borrow(const af_value_t* v) { return Value(af_value_clone(v)); }

  af_value_t* get() const noexcept { return h_.get(); }
  explicit operator bool() const noexcept { return get() != nullptr; }

  Kind kind() const noexcept { return static_cast<Kind>(af_value_kind(get())); }
  /* True when reading it runs nothing (concrete, or its promises evaluated). */
  bool ready() const noexcept { return af_value_ready(get()) != 0; }
  std::string json() const {
    af_bytes_t b{nullptr, 0};
    detail::check(af_value_to_json(ptr(), &b));
    return detail::take(b);
  }
  std::string str() const {
    const char* s = nullptr;
    size_t n = 0;
    detail::check(af_value_get_str(ptr(), &s, &n));
    return std::string(s, n);
  }
  int64_t as_int() const {
    int64_t i = 0;
    detail::check(af_value_get_int(ptr(), &i));
    return i;
  }
  double as_float() const {
    double d = 0;
    detail::check(af_value_get_float(ptr(), &d));
    return d;
  }
  bool as_bool() const {
    int32_t b = 0;
    detail::check(af_value_get_bool(ptr(), &b));
    return b != 0;
  }
  /* Items of a list or entries of a dict. */
  size_t size() const {
    size_t n = 0;
    detail::check(af_value_len(ptr(), &n));
    return n;
  }
  /* Item i of a list, or the value of the i-th dict entry. */
  Value operator[](size_t i) const {
    af_value_t* out = nullptr;
    detail::check(af_value_index(ptr(), i, &out));
    return own(out);
  }
  /* The value under key in a dict (NOT_FOUND naming the key). */
  Value operator[](std::string_view key) const {
    af_value_t* out = nullptr;
    detail::check(af_value_key(ptr(), key.data(), key.size(), &out));
    return own(out);
  }
  /* The i-th key of a dict. */
  std::string key_at(size_t i) const {
    const char* k = nullptr;
    size_t n = 0;
    detail::check(af_value_key_at(ptr(), i, &k, &n));
    return std::string(k, n);
  }

  /* Iterates a list's items (Value) or a dict's entries (Value::Entry). */
  struct Entry;
  template <class Item>
  class Range;
  /* for (af::Value item : list.items()) — a dict gives its values;
   * INVALID_ARGUMENT for other kinds. */
  Range<Value> items() const;
  /* for (auto& [key, value] : dict.entries()) — INVALID_ARGUMENT if not a dict. */
  Range<Entry> entries() const;

 private:
  friend class Context;
  friend Value list(const std::vector<Value>& items);
  friend Value dict(const std::vector<std::pair<std::string_view, Value>>& entries);
  explicit Value(af_value_t* v) : h_(v) {}
  af_value_t* ptr() const {
    if (!get()) throw detail::empty_handle("Value");
    return get();
  }
  /* v (owned), a list or dict of items: while it is pending it keeps what
   * its items keep (the lazy contexts their promises were recorded on). */
  static Value holding(af_value_t* v, const std::vector<Value>& items) {
    Value out(v);
    if (!v || af_value_ready(v)) return out;
    std::vector<std::shared_ptr<const void>> keep;
    for (const Value& item : items)
      if (item.keep_ && std::find(keep.begin(), keep.end(), item.keep_) == keep.end()) keep.push_back(item.keep_);
    if (keep.size() == 1)
      out.keep_ = keep.front();
    else if (!keep.empty())
      out.keep_ = std::make_shared<const std::vector<std::shared_ptr<const void>>>(std::move(keep));
    return out;
  }
  detail::Shared<af_value_t, af_value_clone, af_value_free> h_;
  /* A promise keeps the lazy context it was recorded on alive (it can be
   * evaluated only there), a pending list or dict its items' contexts; null
   * for every other value. */
  std::shared_ptr<const void> keep_;
};

struct Value::Entry {
  std::string key;
  Value value;
};

template <class Item>
class Value::Range {
 public:
  class iterator {
   public:
    iterator(const Value* v, size_t i) : v_(v), i_(i) {}
    Item operator*() const {
      if constexpr (std::is_same_v<Item, Entry>)
        return Entry{v_->key_at(i_), (*v_)[i_]};
      else
        return (*v_)[i_];
    }
    iterator& operator++() {
      ++i_;
      return *this;
    }
    bool operator!=(const iterator& o) const { return i_ != o.i_; }
    bool operator==(const iterator& o) const { return i_ == o.i_; }

   private:
    const Value* v_;
    size_t i_;
  };
  explicit Range(const Value* v) : v_(*v), n_(v->size()) {}
  iterator begin() const { return iterator(&v_, 0); }
  iterator end() const { return iterator(&v_, n_); }

 private:
  // A reference of its own: `for (af::Value m : ctx.json(...).items())`
  // iterates a value that is a temporary of the loop's header.
  Value v_;
  size_t n_;
};

inline Value::Range<Value> Value::items() const { return Range<Value>(this); }
inline Value::Range<Value::Entry> Value::entries() const {
  if (kind() != Kind::Dict) throw Error(Code::InvalidArgument, "entries(): the value is not a dict");
  return Range<Entry>(this);
}

namespace detail {
inline std::vector<const af_value_t*> ptrs(const std::vector<Value>& vs) {
  std::vector<const af_value_t*> out;
  out.reserve(vs.size());
  for (const Value& v : vs) {
    if (!v) throw empty_handle("Value");
    out.push_back(v.get());
  }
  return out;
}
inline af_value_t* make_value(const std::function<af_error_t*(af_value_t**)>& f) {
  af_value_t* out = nullptr;
  check(f(&out));
  return out;
}
}  // namespace detail

/* Value constructors (af_value_<kind>_new): values belong to no context, so
 * they are made anywhere (a host function included) and passed to any
 * Context. */
inline Value null() { return Value::own(detail::make_value([](af_value_t** o) { return af_value_null_new(o); })); }
inline Value boolean(bool b) {
  return Value::own(detail::make_value([&](af_value_t** o) { return af_value_bool_new(b ? 1 : 0, o); }));
}
inline Value integer(int64_t i) {
  return Value::own(detail::make_value([&](af_value_t** o) { return af_value_int_new(i, o); }));
}
inline Value real(double d) {
  return Value::own(detail::make_value([&](af_value_t** o) { return af_value_float_new(d, o); }));
}
/* INVALID_ARGUMENT for invalid UTF-8. */
inline Value str(std::string_view s) {
  return Value::own(detail::make_value([&](af_value_t** o) { return af_value_str_new(s.data(), s.size(), o); }));
}
/* Exact JSON (integers stay int, numbers with '.' or 'e' float);
 * INVALID_ARGUMENT for malformed JSON or duplicate keys. */
inline Value json(std::string_view j) {
  return Value::own(detail::make_value([&](af_value_t** o) { return af_value_json_new(j.data(), j.size(), o); }));
}
/* A list of the items (each gets a new reference). */
inline Value list(const std::vector<Value>& items) {
  auto p = detail::ptrs(items);
  return Value::holding(detail::make_value([&](af_value_t** o) { return af_value_list_new(p.data(), p.size(), o); }),
                        items);
}
/* A dict of the entries in this order; INVALID_ARGUMENT on a duplicate key. */
inline Value dict(const std::vector<std::pair<std::string_view, Value>>& entries) {
  std::vector<const char*> keys;
  std::vector<size_t> lens;
  std::vector<Value> values;
  for (const auto& [k, v] : entries) {
    keys.push_back(k.data());
    lens.push_back(k.size());
    values.push_back(v);
  }
  auto p = detail::ptrs(values);
  return Value::holding(detail::make_value([&](af_value_t** o) {
                          return af_value_dict_new(keys.data(), lens.data(), p.data(), p.size(), o);
                        }),
                        values);
}

}  // namespace af

#endif /* AF_HPP_VALUE_HPP */
