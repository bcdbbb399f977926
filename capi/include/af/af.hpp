/* af.hpp — a header-only C++17 wrapper over libaf's C API (af.h).
 *
 * The ABI stays C: this header only calls af_* functions, so a program built
 * with any C++17 compiler links against any libaf of the same ABI version.
 *
 *   af::Context ctx;
 *   af::Ir ir = ctx.trace([](af::Context& c, const std::vector<af::Value>& in) {
 *     return c.format("Hello, {}!", {in[0]});
 *   }, {ctx.str("x")});
 *   af::Program prog = af::Program::compile(ctx, ir);
 *   std::string out = prog.call(ctx, {ctx.str("libaf")}).str();
 *
 * Every af.h function has its wrapper here, except the deprecated ones,
 * which it does not call (tests/cpp/af_hpp_test.cpp checks both against
 * af.h). Ownership: every handle is RAII. Value, Ir, Program and Provider are
 * reference counted in libaf, so they copy (a new reference) and move.
 * Context, Future, Walk, CancelToken, LmRequest and HostRequest own something unique and
 * only move. A moved-from handle is empty; using it throws INVALID_ARGUMENT.
 *
 * Errors are exceptions (af::Error, carrying code, message and cause),
 * not a result type: most calls can fail (any operation inside a trace, every
 * run), constructors such as Context() must be able to fail, and a lambda
 * traced, registered or used as a provider then reads as straight-line code
 * whose failures propagate on their own. What a callback throws never
 * crosses into libaf: it is caught at the boundary and reported as libaf's
 * error; the caller gets it back (Error::origin(), or the very exception for
 * a trace function).
 *
 * Strings go in as std::string_view (any bytes; libaf checks UTF-8) and come
 * out as std::string. Thread safety is af.h's: handles may move between
 * threads; Value, Ir and Program may be used concurrently; a Context
 * serializes its own mutations. */
#ifndef AF_AF_HPP
#define AF_AF_HPP

#include <af/af.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace af {

/* ---- Errors -------------------------------------------------------------- */

enum class Code : int32_t {
  InvalidArgument = AF_ERR_INVALID_ARGUMENT,
  NotFound = AF_ERR_NOT_FOUND,
  Schema = AF_ERR_SCHEMA,
  Format = AF_ERR_FORMAT,
  Version = AF_ERR_VERSION,
  Provider = AF_ERR_PROVIDER,
  Timeout = AF_ERR_TIMEOUT,
  Cancelled = AF_ERR_CANCELLED,
  Callback = AF_ERR_CALLBACK,
  IO = AF_ERR_IO,
  OutOfMemory = AF_ERR_OUT_OF_MEMORY,
  Internal = AF_ERR_INTERNAL,
};

/* "NOT_FOUND", ... as in af.h's AF_ERR_* names (af_error_code_name). */
inline const char* code_name(Code c) noexcept { return af_error_code_name(static_cast<int32_t>(c)); }

/* A libaf error: code, message (what()), the error that caused it, and for
 * the error a host callback raised, what the callback threw (origin()). */
class Error : public std::runtime_error {
 public:
  Error(Code code, const std::string& message, std::shared_ptr<const Error> cause = nullptr,
        std::exception_ptr origin = nullptr)
      : std::runtime_error(message), code_(code), cause_(std::move(cause)), origin_(origin) {}

  Code code() const noexcept { return code_; }
  std::string message() const { return what(); }
  /* The next error of the chain, or nullptr. */
  const Error* cause() const noexcept { return cause_.get(); }
  /* For the error standing for a host callback's failure: the exception the
   * callback threw (rethrow it to inspect its type); else nullptr. */
  std::exception_ptr origin() const noexcept { return origin_; }

 private:
  Code code_;
  std::shared_ptr<const Error> cause_;
  std::exception_ptr origin_;
};

namespace detail {

/* An exception a callback threw rides along with the af_error_t it returns
 * as that error's payload (af_error_new_with): libaf keeps it through every
 * wrapping, and converting libaf's error finds it on the node that carries
 * it. The magic number tells this header's payloads from another
 * binding's in the same process. */
struct Payload {
  static constexpr uint64_t kMagic = 0x6166687070657863ULL;  // "afhppexc"
  uint64_t magic = kMagic;
  std::exception_ptr thrown;
};
inline void destroy_payload(void* p) noexcept { delete static_cast<Payload*>(p); }
inline std::exception_ptr thrown_by(const af_error_t* e) noexcept {
  auto* p = static_cast<const Payload*>(af_error_payload(e));
  return p && p->magic == Payload::kMagic ? p->thrown : nullptr;
}

/* libaf's hints name C functions; say what a C++ caller calls instead. */
inline std::string binding_names(std::string msg) {
  static const std::pair<std::string_view, std::string_view> names[] = {
      {"af_register_function_with", "af::Context::register_function"},
      {"af_register_function", "af::Context::register_function"},
      {"af_context_route_fallback", "af::Context::route"},
      {"af_context_route", "af::Context::route"},
  };
  for (const auto& [from, to] : names) {
    for (size_t at = msg.find(from); at != std::string::npos; at = msg.find(from, at + to.size()))
      msg.replace(at, from.size(), to);
  }
  return msg;
}

inline Error convert(const af_error_t* e) {
  Code code = static_cast<Code>(af_error_code(e));
  std::string msg = af_error_message(e);
  if (const af_error_t* c = af_error_cause(e))
    return Error(code, binding_names(msg), std::make_shared<const Error>(convert(c)));
  std::exception_ptr origin = thrown_by(e);
  if (origin) {
    try {
      std::rethrow_exception(origin);
    } catch (const Error& own) {
      return own;  // a callback's own af::Error comes back as itself
    } catch (...) {
    }
  }
  return Error(code, binding_names(msg), nullptr, origin);
}

/* Throws the error (and frees it) if there is one. */
inline void check(af_error_t* e) {
  if (!e) return;
  Error err = convert(e);
  af_error_free(e);
  throw err;
}

/* The af_error_t* a callback returns for the exception in flight (call from
 * a catch block), carrying it for the caller. Never throws. */
inline af_error_t* error_for_current(Code other_code, const char* prefix) noexcept {
  std::exception_ptr ex = std::current_exception();
  int32_t code = static_cast<int32_t>(other_code);
  std::string msg;
  try {
    try {
      throw;
    } catch (const Error& e) {
      code = static_cast<int32_t>(e.code());
      msg = e.what();
    } catch (const std::exception& e) {
      msg = std::string(prefix) + e.what();
    } catch (...) {
      msg = std::string(prefix) + "unknown exception";
    }
    return af_error_new_with(code, msg.data(), msg.size(), new Payload{Payload::kMagic, ex}, destroy_payload);
  } catch (...) {
    return af_error_new(code, "", 0);  // out of memory: code only
  }
}

inline std::string take(af_bytes_t& b) {
  std::string s(reinterpret_cast<const char*>(b.data), b.len);
  af_bytes_free(&b);
  return s;
}

inline Error empty_handle(const char* what) {
  return Error(Code::InvalidArgument, std::string("af::") + what + " is empty (moved from)");
}

/* A unique owner of a C handle freed by Free. */
template <class T, void (*Free)(T*)>
class Unique {
 public:
  Unique() noexcept = default;
  explicit Unique(T* p) noexcept : p_(p) {}
  Unique(Unique&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  Unique& operator=(Unique&& o) noexcept {
    if (this != &o) {
      reset();
      p_ = std::exchange(o.p_, nullptr);
    }
    return *this;
  }
  Unique(const Unique&) = delete;
  Unique& operator=(const Unique&) = delete;
  ~Unique() { reset(); }
  void reset() noexcept {
    if (p_) Free(p_);
    p_ = nullptr;
  }
  T* get() const noexcept { return p_; }
  T* release() noexcept { return std::exchange(p_, nullptr); }

 private:
  T* p_ = nullptr;
};

/* A reference to a refcounted C handle: copying adds a reference. */
template <class T, T* (*Clone)(const T*), void (*Free)(T*)>
class Shared {
 public:
  Shared() noexcept = default;
  explicit Shared(T* p) noexcept : p_(p) {}
  Shared(const Shared& o) noexcept : p_(o.p_ ? Clone(o.p_) : nullptr) {}
  Shared(Shared&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  Shared& operator=(Shared o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }
  ~Shared() {
    if (p_) Free(p_);
  }
  T* get() const noexcept { return p_; }

 private:
  T* p_ = nullptr;
};

}  // namespace detail

class Context;
struct RunOptions;
class Ir;
class CancelToken;

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

/* ---- IRs ---------------------------------------------------------------- */

/* A traced program, immutable. Print it, transform it, compile it, save it. */
class Ir {
 public:
  Ir() noexcept = default;
  static Ir own(af_ir_t* ir) { return Ir(ir); }
  af_ir_t* get() const noexcept { return h_.get(); }
  explicit operator bool() const noexcept { return get() != nullptr; }

  std::string text() const { return bytes_of(af_ir_to_text); }
  std::string dot() const { return bytes_of(af_ir_to_dot); }
  size_t eqn_count() const { return af_ir_eqn_count(ptr()); }
  std::string eqn_prim(size_t i) const {
    const char* p = af_ir_eqn_prim(ptr(), i);
    return p ? p : "";
  }
  size_t input_count() const { return af_ir_input_count(ptr()); }
  uint64_t hash() const { return af_ir_hash(ptr()); }
  /* The annotation Context::sched() put on equation i (NOT_FOUND if the IR
   * was not scheduled). */
  struct Sched {
    uint32_t level;
    double priority;
  };
  Sched eqn_sched(size_t i) const {
    Sched s{0, 0};
    detail::check(af_ir_eqn_sched(ptr(), i, &s.level, &s.priority));
    return s;
  }
  bool operator==(const Ir& o) const { return af_ir_equal(ptr(), o.ptr()) != 0; }
  bool operator!=(const Ir& o) const { return !(*this == o); }
  void validate() const { detail::check(af_ir_validate(ptr())); }

  /* Inspection (af.h: af_ir_json and the rest; JSON documents). */
  std::string json() const { return bytes_of(af_ir_json); }
  std::string eqn_json(size_t i) const { return take([&](af_bytes_t* b) { return af_ir_eqn_json(ptr(), i, b); }); }
  std::string var_json(uint32_t var) const {
    return take([&](af_bytes_t* b) { return af_ir_var_json(ptr(), var, b); });
  }
  Ir sub(size_t i, std::string_view path) const {
    af_ir_t* out = nullptr;
    detail::check(af_ir_sub(ptr(), i, path.data(), path.size(), &out));
    return Ir(out);
  }
  /* flags: AF_IR_ANCESTORS or AF_IR_DESCENDANTS, optionally | AF_IR_DEEP. */
  std::string related_json(size_t i, uint32_t flags) const {
    return take([&](af_bytes_t* b) { return af_ir_related_json(ptr(), i, flags, b); });
  }
  /* With the largest answer accepted, in bytes (0 = the default, 64 MiB);
   * past it INVALID_ARGUMENT ("... over the limit of N"), found before
   * anything is built. */
  std::string related_json(size_t i, uint32_t flags, uint64_t max_bytes) const {
    return take([&](af_bytes_t* b) { return af_ir_related_json_with(ptr(), i, flags, max_bytes, b); });
  }
  /* The slice computing `outputs` from ir's own inputs. */
  Ir slice(const std::vector<std::string>& outputs) const { return slice_impl(outputs, nullptr); }
  /* The slice computing `outputs` from `inputs` only. */
  Ir slice(const std::vector<std::string>& outputs, const std::vector<std::string>& inputs) const {
    return slice_impl(outputs, &inputs);
  }
  std::string cost_json(int64_t batch) const {
    return take([&](af_bytes_t* b) { return af_ir_cost_json(ptr(), batch, b); });
  }

  /* Saved graphs (.afg). */
  void save(std::string_view path) const { detail::check(af_ir_save(ptr(), path.data(), path.size())); }
  std::string to_bytes() const { return bytes_of(af_ir_to_bytes); }

 private:
  friend class Context;
  friend class Program;
  friend class Walk;
  explicit Ir(af_ir_t* ir) : h_(ir) {}
  af_ir_t* ptr() const {
    if (!get()) throw detail::empty_handle("Ir");
    return get();
  }
  template <class F>
  static std::string take(F&& f) {
    af_bytes_t b{nullptr, 0};
    detail::check(f(&b));
    return detail::take(b);
  }
  Ir slice_impl(const std::vector<std::string>& outputs, const std::vector<std::string>* inputs) const {
    std::vector<const char*> o, in;
    std::vector<size_t> ol, il;
    for (const std::string& s : outputs) {
      o.push_back(s.data());
      ol.push_back(s.size());
    }
    if (inputs)
      for (const std::string& s : *inputs) {
        in.push_back(s.data());
        il.push_back(s.size());
      }
    af_ir_t* out = nullptr;
    // A non-NULL (possibly empty) input list means "these inputs only".
    static const char* const kNone = "";
    static const size_t kNoLen = 0;
    detail::check(af_ir_slice(ptr(), o.data(), ol.data(), o.size(), inputs ? (in.empty() ? &kNone : in.data()) : nullptr,
                              inputs ? (il.empty() ? &kNoLen : il.data()) : nullptr, in.size(), &out));
    return Ir(out);
  }
  std::string bytes_of(af_error_t* (*f)(const af_ir_t*, af_bytes_t*)) const {
    af_bytes_t b{nullptr, 0};
    detail::check(f(ptr(), &b));
    return detail::take(b);
  }
  detail::Shared<af_ir_t, af_ir_clone, af_ir_free> h_;
};

/* ---- Providers ------------------------------------------------------------ */

/* One request handed to a host provider. Finish it exactly once with
 * complete() or fail(), from any thread; one destroyed unfinished fails with
 * PROVIDER. Move-only. */
class LmRequest {
 public:
  explicit LmRequest(af_lm_request_t* r) noexcept : r_(r) {}
  LmRequest(LmRequest&& o) noexcept : r_(std::exchange(o.r_, nullptr)) {}
  LmRequest& operator=(LmRequest&& o) noexcept {
    if (this != &o) {
      drop();
      r_ = std::exchange(o.r_, nullptr);
    }
    return *this;
  }
  LmRequest(const LmRequest&) = delete;
  LmRequest& operator=(const LmRequest&) = delete;
  ~LmRequest() { drop(); }

  /* {"model", "messages": [{"role", "content"}...], ...} */
  std::string json() const {
    af_bytes_t b{nullptr, 0};
    detail::check(af_lm_request_json(ptr(), &b));
    return detail::take(b);
  }
  bool cancelled() const { return af_lm_request_cancelled(ptr()) != 0; }
  /* Streams a piece of the reply before complete() (the run streams when
   * json() has "stream": true; ignored otherwise); whole UTF-8 characters. */
  void stream(std::string_view text) {
    detail::check(af_lm_request_stream(ptr(), text.empty() ? "" : text.data(), text.size()));
  }
  /* What was streamed so far does not count: the reply starts over. */
  void restart_stream() { detail::check(af_lm_request_stream(ptr(), nullptr, 0)); }
  void complete(std::string_view content) {
    detail::check(af_lm_request_complete(take(), content.data(), content.size()));
  }
  void fail(Code code, std::string_view message) {
    detail::check(af_lm_request_fail(take(), af_error_new(static_cast<int32_t>(code), message.data(), message.size())));
  }
  /* Fails with the exception in flight (call from a catch block); the run's
   * caller gets it back as Error::origin(). */
  void fail_with_current_exception() noexcept {
    if (!r_) return;
    af_error_free(af_lm_request_fail(take_unchecked(), detail::error_for_current(Code::Provider, "the host provider threw: ")));
  }

 private:
  af_lm_request_t* ptr() const {
    if (!r_) throw Error(Code::InvalidArgument, "the LM request was already completed or failed");
    return r_;
  }
  af_lm_request_t* take() {
    ptr();
    return take_unchecked();
  }
  af_lm_request_t* take_unchecked() noexcept { return std::exchange(r_, nullptr); }
  void drop() noexcept {
    if (!r_) return;
    static const char msg[] = "the host provider dropped the request without answering it";
    af_error_free(af_lm_request_fail(take_unchecked(), af_error_new(AF_ERR_PROVIDER, msg, sizeof msg - 1)));
  }
  af_lm_request_t* r_;
};

/* Where LM requests go: echo (offline, deterministic), openai, replay, or
 * the host's own function. */
class Provider {
 public:
  /* Any built-in type from a spec: {"type": "anthropic", ...options} (af_provider_new). */
  static Provider from_spec(std::string_view spec_json) { return make(af_provider_new, spec_json); }
  static Provider echo(std::string_view options_json = {}) { return make(af_provider_echo_new, options_json); }
  static Provider openai(std::string_view options_json) { return make(af_provider_openai_new, options_json); }
  static Provider replay(std::string_view options_json) { return make(af_provider_replay_new, options_json); }
  /* fn receives each request on a libaf thread and must finish it: at once,
   * or later from any thread after moving it out (std::move(req)). If fn
   * throws while still holding the request, the request fails with what it
   * threw (the run's caller finds it as Error::origin()). */
  using SubmitFn = std::function<void(LmRequest&)>;
  static Provider host(SubmitFn fn) {
    auto* state = new SubmitFn(std::move(fn));
    af_provider_t* p = nullptr;
    detail::check(af_provider_host_new(&submit, state, &destroy, &p));  // destroy runs also on error
    return Provider(p);
  }

  af_provider_t* get() const noexcept { return h_.get(); }
  void set_max_in_flight(uint32_t n) { detail::check(af_provider_set_max_in_flight(get(), n)); }
  /* The options every provider takes, e.g. {"requests_per_minute": 500,
   * "schema_retries": 2}; keys not given keep their values. */
  void set_options(std::string_view options_json) {
    detail::check(af_provider_set_options(get(), options_json.data(), options_json.size()));
  }
  /* Counters as JSON. */
  std::string stats() const {
    af_bytes_t b{nullptr, 0};
    detail::check(af_provider_stats(get(), &b));
    return detail::take(b);
  }

 private:
  explicit Provider(af_provider_t* p) : h_(p) {}
  static Provider make(af_error_t* (*f)(const char*, size_t, af_provider_t**), std::string_view o) {
    af_provider_t* p = nullptr;
    detail::check(f(o.empty() ? nullptr : o.data(), o.size(), &p));
    return Provider(p);
  }
  static void submit(void* ud, af_lm_request_t* req) noexcept {
    LmRequest r(req);
    try {
      (*static_cast<SubmitFn*>(ud))(r);
    } catch (...) {
      r.fail_with_current_exception();  // a no-op if fn moved the request out
    }
  }
  static void destroy(void* ud) noexcept { delete static_cast<SubmitFn*>(ud); }
  detail::Shared<af_provider_t, af_provider_clone, af_provider_free> h_;
};

/* ---- Async host functions ------------------------------------------------- */

/* One call of an async host function. Finish it once with complete() or
 * fail(), from any thread, now or later (move it out of the callback to
 * finish later); a second finish throws INVALID_ARGUMENT and changes nothing.
 * One destroyed unfinished fails the call with CALLBACK. Move-only. */
class HostRequest {
 public:
  explicit HostRequest(af_host_request_t* r) noexcept : r_(r) {}
  HostRequest(HostRequest&& o) noexcept : r_(std::exchange(o.r_, nullptr)) {}
  HostRequest& operator=(HostRequest&& o) noexcept {
    if (this != &o) {
      af_host_request_free(r_);
      r_ = std::exchange(o.r_, nullptr);
    }
    return *this;
  }
  HostRequest(const HostRequest&) = delete;
  HostRequest& operator=(const HostRequest&) = delete;
  ~HostRequest() { af_host_request_free(r_); }

  /* True once the run no longer wants the result (cancelled, timed out,
   * failed elsewhere): stop working, then finish anyway (it is ignored). */
  bool cancelled() const noexcept { return af_host_request_cancelled(r_) != 0; }
  /* INVALID_ARGUMENT naming the function if result does not match the
   * declared kinds (the call fails with it too). */
  void complete(const Value& result) { detail::check(af_host_request_complete(ptr(), result.get())); }
  void fail(Code code, std::string_view message) {
    detail::check(af_host_request_fail(ptr(), af_error_new(static_cast<int32_t>(code), message.data(), message.size())));
  }
  /* Fails with the exception in flight (call from a catch block); the run's
   * caller finds it as the cause's origin(). Ignored if already finished. */
  void fail_with_current_exception() noexcept {
    if (r_) af_error_free(af_host_request_fail(r_, detail::error_for_current(Code::Callback, "the C++ host function threw: ")));
  }

 private:
  af_host_request_t* ptr() const {
    if (!r_) throw Error(Code::InvalidArgument, "the host request was moved from");
    return r_;
  }
  af_host_request_t* r_;
};

/* ---- Context: values, tracing, operations, host functions ---------------- */

/* The trace function: receives the context and one placeholder per example. */
using TraceFn = std::function<Value(Context&, const std::vector<Value>&)>;
/* A host function: receives its argument trees, returns its result. May run
 * on any thread, concurrently. */
using HostFn = std::function<Value(const std::vector<Value>&)>;
/* An async host function: starts the work and returns; finishes req now or
 * later (std::move(req) to keep it). If it throws while still holding req,
 * the call fails with what it threw. */
using AsyncHostFn = std::function<void(const std::vector<Value>&, HostRequest& req)>;

class Context {
 public:
  Context() {
    af_context_t* c = nullptr;
    detail::check(af_context_new(&c));
    h_ = decltype(h_)(c, af_context_free);
  }
  /* Options as af_context_new_with: {"lazy": true, "plan_cache": {...}}. */
  explicit Context(std::string_view options_json) {
    af_context_t* c = nullptr;
    detail::check(af_context_new_with(options_json.data(), options_json.size(), &c));
    h_ = decltype(h_)(c, af_context_free);
  }
  /* Move-only; a promise recorded on a lazy Context keeps the native
   * context alive after the Context object goes. */
  Context(Context&&) noexcept = default;
  Context& operator=(Context&&) noexcept = default;
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  af_context_t* get() const noexcept { return h_.get(); }

  /* Lazy contexts: evaluates the promises among values (and the pending
   * observable operations) as one run; the counters as JSON. */
  void eval(const std::vector<Value>& values) {
    std::vector<af_value_t*> p = handles(values);
    detail::check(af_eval(ptr(), p.data(), p.size()));
  }
  /* The same with a run's options for this evaluation (timeout_ms, cancel,
   * ...; af_eval_with): throws TIMEOUT / CANCELLED when they stopped it. */
  void eval(const std::vector<Value>& values, const RunOptions& options);
  std::string stats() const {
    af_bytes_t b{nullptr, 0};
    detail::check(af_context_stats(get(), &b));
    return detail::take(b);
  }

  /* Values: the same as af::null(), af::str(s), ... (values belong to no
   * context; these are kept for brevity where a Context is at hand). */
  Value null() const { return af::null(); }
  Value boolean(bool b) const { return af::boolean(b); }
  Value integer(int64_t i) const { return af::integer(i); }
  Value real(double d) const { return af::real(d); }
  Value str(std::string_view s) const { return af::str(s); }
  Value json(std::string_view j) const { return af::json(j); }
  Value list(const std::vector<Value>& items) const { return af::list(items); }
  Value dict(const std::vector<std::pair<std::string_view, Value>>& entries) const { return af::dict(entries); }

  /* Traces fn once on placeholders shaped like examples. What fn throws is
   * rethrown here as itself (an af::Error an operation raised included). */
  Ir trace(TraceFn fn, const std::vector<Value>& examples, const Value& static_mask = Value()) {
    return trace_raw(std::move(fn), [&](TraceState* st, af_ir_t** out) {
      auto ex = detail::ptrs(examples);
      return af_trace(ptr(), &trace_trampoline, st, ex.data(), ex.size(), static_mask.get(), out);
    });
  }
  /* trace with a list mask (af_trace_with): its true leaves mark example
   * lists traced as lists of any length, inputs of kind list<T> that a
   * batched IR takes; calls pass lists of any length. */
  Ir trace_with(TraceFn fn, const std::vector<Value>& examples, const Value& list_mask,
                const Value& static_mask = Value()) {
    return trace_raw(std::move(fn), [&](TraceState* st, af_ir_t** out) {
      auto ex = detail::ptrs(examples);
      af_trace_options_t o{};
      o.struct_size = sizeof o;
      o.static_mask = static_mask.get();
      o.list_mask = list_mask.get();
      return af_trace_with(ptr(), &trace_trampoline, st, ex.data(), ex.size(), &o, out);
    });
  }

  /* Tags: while pushed, every equation the innermost trace of this thread
   * records carries the tag ("urgent" is the priority hint). Fold: between
   * push and pop, operations of the innermost trace run at trace time and
   * become literals. Prefer the scopes below, which pop on every exit. */
  void tag_push(std::string_view tag) { detail::check(af_tag_push(ptr(), tag.data(), tag.size())); }
  void tag_pop() { detail::check(af_tag_pop(ptr())); }
  void fold_push() { detail::check(af_fold_push(ptr())); }
  void fold_pop() { detail::check(af_fold_pop(ptr())); }
  /* Pops what it pushed when it goes out of scope. Move-only. */
  class Scope {
   public:
    Scope(Scope&& o) noexcept : ctx_(std::exchange(o.ctx_, nullptr)), pop_(o.pop_) {}
    Scope& operator=(Scope&&) = delete;
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    /* A pop cannot fail after a successful push on this thread. */
    ~Scope() {
      if (ctx_) af_error_free(pop_(ctx_));
    }

   private:
    friend class Context;
    Scope(af_context_t* ctx, af_error_t* (*pop)(af_context_t*)) : ctx_(ctx), pop_(pop) {}
    af_context_t* ctx_;
    af_error_t* (*pop_)(af_context_t*);
  };
  /* auto urgent = ctx.tag("urgent"); — tags what the trace records until
   * the end of the block. */
  [[nodiscard]] Scope tag(std::string_view tag) {
    tag_push(tag);
    return Scope(ptr(), af_tag_pop);
  }
  /* auto folded = ctx.fold(); — folds until the end of the block. */
  [[nodiscard]] Scope fold() {
    fold_push();
    return Scope(ptr(), af_fold_pop);
  }
  /* auto scope = ctx.cancel_scope(token); — a cancel scope
   * (af_cancel_scope_push / af_cancel_scope_pop): until the end of the
   * block, what this thread runs on this context ends with CANCELLED once
   * token.trigger() is called from any thread (noticed within 20 ms): eager
   * lm_call / lm_schema_call / lm_tool_call (the request aborted), host_call
   * of a blocking or async host function, and runs (Ir::call, Program::call,
   * call_async) whose RunOptions give no cancel token of their own. A plain
   * host function runs on this thread and is not interrupted; a lazy eval
   * takes its token from eval(values, options). The scope belongs to the
   * calling thread (other threads' calls are not in it) and holds its own
   * reference to the token. Scopes nest, and the token of every open scope
   * stops what runs inside it: an inner scope never shields from an outer
   * one, and a triggered token ends nothing outside its own scope. End
   * scopes in reverse order on the thread that made them (as blocks do). */
  [[nodiscard]] Scope cancel_scope(const CancelToken& token);

  /* Operations: recorded inside a trace, evaluated at once outside. */
  Value format(std::string_view tmpl, const std::vector<Value>& args, const Value& named = Value()) {
    auto p = detail::ptrs(args);
    return make([&](af_value_t** o) { return af_format(ptr(), tmpl.data(), tmpl.size(), p.data(), p.size(), named.get(), o); });
  }
  Value concat(const std::vector<Value>& args) {
    auto p = detail::ptrs(args);
    return make([&](af_value_t** o) { return af_concat(ptr(), p.data(), p.size(), o); });
  }
  Value match(const Value& a, const Value& b) {
    return make([&](af_value_t** o) { return af_match(ptr(), a.get(), b.get(), o); });
  }
  Value stop_gradient(const Value& v) { return make([&](af_value_t** o) { return af_stop_gradient(ptr(), v.get(), o); }); }
  /* value, produced only after every dep exists (DCE keeps the deps). */
  Value depends(const Value& value, const std::vector<Value>& deps) {
    auto p = detail::ptrs(deps);
    return make(
        [&](af_value_t** o) { return af_depends(ptr(), value.get(), p.data(), p.size(), o); });
  }
  /* Identity marking v as checkpoint `key` of `collection` (what collect
   * and inject scopes see). */
  Value checkpoint(const Value& v, std::string_view key, std::string_view collection) {
    return make([&](af_value_t** o) {
      return af_checkpoint(ptr(), v.get(), key.data(), key.size(), collection.data(),
                           collection.size(), o);
    });
  }
  Value lm_call(const Value& messages, const Value& model) {
    return make([&](af_value_t** o) { return af_lm_call(ptr(), messages.get(), model.get(), o); });
  }
  Value lm_schema_call(const Value& messages, const Value& model, const Value& schema) {
    return make([&](af_value_t** o) { return af_lm_schema_call(ptr(), messages.get(), model.get(), schema.get(), o); });
  }
  /* With sampling params: a dict of temperature, top_p, max_tokens, seed,
   * stop (part of the recorded equation). */
  Value lm_call(const Value& messages, const Value& model, const Value& params) {
    return make([&](af_value_t** o) { return af_lm_call_ex(ptr(), messages.get(), model.get(), params.get(), o); });
  }
  Value lm_schema_call(const Value& messages, const Value& model, const Value& schema, const Value& params) {
    return make([&](af_value_t** o) {
      return af_lm_schema_call_ex(ptr(), messages.get(), model.get(), schema.get(), params.get(), o);
    });
  }
  /* Tool calling (af_lm_tool_call): a dict {"called", "text", "names",
   * "arguments", "turn"}; history is "" to start, then what tool_results
   * returns. params may be null. */
  Value lm_tool_call(const Value& messages, const Value& history, const Value& model, const Value& tools,
                     const Value& params = Value()) {
    return make([&](af_value_t** o) {
      return af_lm_tool_call(ptr(), messages.get(), history.get(), model.get(), tools.get(), params.get(), o);
    });
  }
  /* The history after a turn and one result (str) per call it made (af_tool_results). */
  Value tool_results(const Value& history, const Value& turn, const Value& results) {
    return make([&](af_value_t** o) { return af_tool_results(ptr(), history.get(), turn.get(), results.get(), o); });
  }
  /* Runs the branch named by key (a str) on the operands. */
  Value switch_(const Value& key, const std::vector<std::pair<std::string_view, Ir>>& branches,
                const std::vector<Value>& operands) {
    std::vector<const char*> names;
    std::vector<size_t> lens;
    std::vector<const af_ir_t*> irs;
    for (const auto& [n, ir] : branches) {
      names.push_back(n.data());
      lens.push_back(n.size());
      irs.push_back(ir.ptr());
    }
    auto ops = detail::ptrs(operands);
    return make([&](af_value_t** o) {
      return af_switch(ptr(), key.get(), names.data(), lens.data(), irs.data(), irs.size(), ops.data(), ops.size(), o);
    });
  }
  Value while_loop(const Ir& cond, const Ir& body, const Value& init, uint64_t max_iters) {
    return make([&](af_value_t** o) { return af_while_loop(ptr(), cond.ptr(), body.ptr(), init.get(), max_iters, o); });
  }
  /* [carry, ys]: body(carry, item) -> [next carry, y] over the items of xs
   * (last to first when reverse); see af_scan. */
  Value scan(const Ir& body, const Value& init, const Value& xs, bool reverse = false) {
    return make([&](af_value_t** o) { return af_scan(ptr(), body.ptr(), init.get(), xs.get(), reverse ? 1 : 0, o); });
  }
  /* Runs ir (inlined when called inside a trace). */
  Value call(const Ir& ir, const std::vector<Value>& inputs) {
    auto p = detail::ptrs(inputs);
    return make([&](af_value_t** o) { return af_ir_call(ptr(), ir.ptr(), p.data(), p.size(), o); });
  }

  /* Host functions: registered by name (a saved graph refers to the name).
   * result_kinds: the result's structure with kind names as leaves. What fn
   * throws becomes a CALLBACK error whose cause's origin() is the exception
   * (an af::Error keeps its code and comes back as itself). */
  void register_function(std::string_view name, const Value& result_kinds, HostFn fn) {
    auto* state = new HostFn(std::move(fn));  // deleted by libaf's destroy, also on error
    detail::check(af_register_function(ptr(), name.data(), name.size(), &host_trampoline, state,
                                       &destroy_host, result_kinds.get()));
  }
  /* A sync function run on the context's host pool (at most "host_threads"
   * at once, a context option): for slow tools that block. */
  void register_function_blocking(std::string_view name, const Value& result_kinds, HostFn fn) {
    auto* state = new HostFn(std::move(fn));  // deleted by libaf's destroy, also on error
    detail::check(af_register_function_blocking(ptr(), name.data(), name.size(), &host_trampoline, state,
                                                &destroy_host, result_kinds.get()));
  }
  /* An async function: no libaf thread waits while it works. */
  void register_function_async(std::string_view name, const Value& result_kinds, AsyncHostFn fn) {
    auto* state = new AsyncHostFn(std::move(fn));  // deleted by libaf's destroy, also on error
    detail::check(af_register_function_async(ptr(), name.data(), name.size(), &async_host_trampoline, state,
                                             &destroy_async_host, result_kinds.get()));
  }
  /* How a function registered with options runs: pure (AF_FUNCTION_PURE:
   * same arguments, same result, no effects, so libaf may drop a call whose
   * result is unused, merge equal calls and memoize them; functions are
   * effectful by default) and, for a sync one, blocking (on the host pool). */
  struct FunctionOptions {
    bool pure = false;
    bool blocking = false;
  };
  void register_function(std::string_view name, const Value& result_kinds, HostFn fn, FunctionOptions how) {
    af_function_options_t o = function_options(how, result_kinds);
    o.fn = &host_trampoline;
    o.user_data = new HostFn(std::move(fn));  // deleted by libaf's destroy, also on error
    o.destroy = &destroy_host;
    detail::check(af_register_function_with(ptr(), name.data(), name.size(), &o));
  }
  void register_function_async(std::string_view name, const Value& result_kinds, AsyncHostFn fn,
                               FunctionOptions how) {
    af_function_options_t o = function_options(how, result_kinds);
    o.async_fn = &async_host_trampoline;
    o.user_data = new AsyncHostFn(std::move(fn));  // deleted by libaf's destroy, also on error
    o.destroy = &destroy_async_host;
    detail::check(af_register_function_with(ptr(), name.data(), name.size(), &o));
  }
  Value host_call(std::string_view name, const std::vector<Value>& args) {
    auto p = detail::ptrs(args);
    return make([&](af_value_t** o) { return af_host_call(ptr(), name.data(), name.size(), p.data(), p.size(), o); });
  }

  /* Routes models matching pattern ('*', '?') to provider. */
  void route(std::string_view pattern, const Provider& provider) {
    detail::check(af_context_route(ptr(), pattern.data(), pattern.size(), provider.get()));
  }
  /* Routes to providers in order: the next is asked after a PROVIDER or
   * TIMEOUT error. */
  void route(std::string_view pattern, const std::vector<Provider>& fallbacks) {
    std::vector<af_provider_t*> p;
    for (const Provider& x : fallbacks) p.push_back(x.get());
    detail::check(af_context_route_fallback(ptr(), pattern.data(), pattern.size(), p.data(), p.size()));
  }

  /* Run-time scopes of the calling thread (pushes and pops pair up per
   * thread; runs started by other threads never see them). */
  void collect_push(std::string_view collection) { detail::check(af_collect_push(ptr(), collection.data(), collection.size())); }
  Value collect_pop() { return make([&](af_value_t** o) { return af_collect_pop(ptr(), o); }); }
  void inject_push(std::string_view collection, const Value& values) {
    detail::check(af_inject_push(ptr(), collection.data(), collection.size(), values.get()));
  }
  void inject_pop() { detail::check(af_inject_pop(ptr())); }
  void memoize_push() { detail::check(af_memoize_push(ptr())); }
  void memoize_pop() { detail::check(af_memoize_pop(ptr())); }

  /* Name scopes (af_name_push): inside a trace of this thread (or outside
   * one on a lazy context), what is recorded carries the open names as its
   * name path ("triage/classify"). Pushes and pops pair up. */
  void name_push(std::string_view name) {
    detail::check(af_name_push(ptr(), name.data(), name.size()));
  }
  void name_pop() { detail::check(af_name_pop(ptr())); }

  /* Transforms: IR -> IR. */
  Ir batch(const Ir& ir, const Value& in_axes = Value()) {
    return transform([&](af_ir_t** o) { return af_batch(ptr(), ir.ptr(), in_axes.get(), o); });
  }
  Ir pushforward(const Ir& ir) { return transform([&](af_ir_t** o) { return af_pushforward(ptr(), ir.ptr(), o); }); }
  Ir pullback(const Ir& ir) { return transform([&](af_ir_t** o) { return af_pullback(ptr(), ir.ptr(), o); }); }
  Ir dce(const Ir& ir, const Value& out_used = Value()) {
    return transform([&](af_ir_t** o) { return af_dce(ptr(), ir.ptr(), out_used.get(), o); });
  }
  Ir cse(const Ir& ir) { return transform([&](af_ir_t** o) { return af_cse(ptr(), ir.ptr(), o); }); }
  /* cse that also merges identical LM calls and host functions when
   * merge_nondeterministic. */
  Ir cse(const Ir& ir, bool merge_nondeterministic) {
    af_cse_options_t opts{sizeof(af_cse_options_t), merge_nondeterministic ? 1u : 0u};
    return transform([&](af_ir_t** o) { return af_cse_ex(ptr(), ir.ptr(), &opts, o); });
  }
  Ir sched(const Ir& ir) { return transform([&](af_ir_t** o) { return af_sched(ptr(), ir.ptr(), o); }); }

  /* Saved graphs. */
  Ir load(std::string_view path) {
    return transform([&](af_ir_t** o) { return af_ir_load(ptr(), path.data(), path.size(), o); });
  }
  Ir from_bytes(std::string_view bytes) {
    return transform([&](af_ir_t** o) {
      return af_ir_from_bytes(ptr(), reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), o);
    });
  }
  /* Runs every load check on .afg bytes; a one-line JSON summary. */
  std::string graph_verify(std::string_view bytes) {
    return take_bytes(
        [&](af_bytes_t* b) { return af_graph_verify(ptr(), data(bytes), bytes.size(), b); });
  }
  /* The readable JSON form of .afg bytes; graph_from_json gives the bytes back. */
  std::string graph_to_json(std::string_view bytes) {
    return take_bytes(
        [&](af_bytes_t* b) { return af_graph_to_json(ptr(), data(bytes), bytes.size(), b); });
  }
  std::string graph_from_json(std::string_view json) {
    return take_bytes(
        [&](af_bytes_t* b) { return af_graph_from_json(ptr(), json.data(), json.size(), b); });
  }

 private:
  friend class Program;
  friend class Walk;
  struct TraceState {
    Context* ctx;
    TraceFn fn;
    std::exception_ptr thrown;
  };
  af_context_t* ptr() const {
    if (!get()) throw detail::empty_handle("Context");
    return get();
  }
  Value make(const std::function<af_error_t*(af_value_t**)>& f) const { return adopt(detail::make_value(f)); }
  static std::vector<af_value_t*> handles(const std::vector<Value>& values) {
    std::vector<af_value_t*> p;
    p.reserve(values.size());
    for (const Value& v : values) p.push_back(v.get());
    return p;
  }
  /* v (owned) as a Value; a promise holds this context. */
  Value adopt(af_value_t* v) const {
    Value out = Value::own(v);
    if (v && !af_value_ready(v)) out.keep_ = h_;
    return out;
  }
  static const uint8_t* data(std::string_view bytes) {
    return reinterpret_cast<const uint8_t*>(bytes.data());
  }
  static std::string take_bytes(const std::function<af_error_t*(af_bytes_t*)>& f) {
    af_bytes_t b{nullptr, 0};
    detail::check(f(&b));
    return detail::take(b);
  }
  static Ir transform(const std::function<af_error_t*(af_ir_t**)>& f) {
    af_ir_t* out = nullptr;
    detail::check(f(&out));
    return Ir::own(out);
  }
  static std::vector<Value> borrow_all(const af_value_t* const* vs, size_t n) {
    std::vector<Value> out;
    out.reserve(n);
    for (size_t i = 0; i < n; ++i) out.push_back(Value::borrow(vs[i]));
    return out;
  }
  static af_error_t* trace_trampoline(void* ud, af_context_t*, const af_value_t* const* in, size_t n,
                                      af_value_t** out) noexcept {
    auto* st = static_cast<TraceState*>(ud);
    try {
      Value r = st->fn(*st->ctx, borrow_all(in, n));
      if (!r) throw Error(Code::InvalidArgument, "the trace function returned an empty af::Value");
      *out = af_value_clone(r.get());
      return nullptr;
    } catch (...) {
      st->thrown = std::current_exception();  // rethrown by trace() as itself
      static const char msg[] = "the C++ trace function threw";
      return af_error_new(AF_ERR_CALLBACK, msg, sizeof msg - 1);
    }
  }
  // Runs call (af_trace or af_trace_with) with fn behind the trampoline;
  // what fn threw is rethrown as itself.
  template <class Call>
  Ir trace_raw(TraceFn fn, Call&& call) {
    TraceState st{this, std::move(fn), nullptr};
    af_ir_t* out = nullptr;
    af_error_t* e = call(&st, &out);
    if (st.thrown) {
      af_error_free(e);
      af_ir_free(out);
      std::rethrow_exception(st.thrown);
    }
    detail::check(e);
    return Ir::own(out);
  }
  static af_error_t* host_trampoline(void* ud, const af_value_t* const* args, size_t n, af_value_t** out) noexcept {
    try {
      Value r = (*static_cast<HostFn*>(ud))(borrow_all(args, n));
      if (!r) throw Error(Code::InvalidArgument, "the host function returned an empty af::Value");
      *out = af_value_clone(r.get());
      return nullptr;
    } catch (...) {
      return detail::error_for_current(Code::Callback, "the C++ host function threw: ");
    }
  }
  static void destroy_host(void* ud) noexcept { delete static_cast<HostFn*>(ud); }
  static void async_host_trampoline(void* ud, const af_value_t* const* args, size_t n, af_host_request_t* req) noexcept {
    HostRequest r(req);
    try {
      (*static_cast<AsyncHostFn*>(ud))(borrow_all(args, n), r);
    } catch (...) {
      r.fail_with_current_exception();  // ignored if fn finished or moved the request
    }
  }
  static void destroy_async_host(void* ud) noexcept { delete static_cast<AsyncHostFn*>(ud); }
  static af_function_options_t function_options(FunctionOptions how, const Value& result_kinds) noexcept {
    af_function_options_t o{};
    o.struct_size = sizeof o;
    o.flags = (how.pure ? AF_FUNCTION_PURE : 0u) | (how.blocking ? AF_FUNCTION_BLOCKING : 0u);
    o.result_kinds = result_kinds.get();
    return o;
  }

  std::shared_ptr<af_context_t> h_;
};

/* ---- Programs and runs ------------------------------------------------------ */

/* Cancels every run given it in its RunOptions, and what a thread runs in a
 * Context::cancel_scope of it, from any thread. */
class CancelToken {
 public:
  CancelToken() {
    af_cancel_t* c = nullptr;
    detail::check(af_cancel_new(&c));
    h_ = decltype(h_)(c);
  }
  af_cancel_t* get() const noexcept { return h_.get(); }
  void trigger() noexcept {
    if (get()) af_cancel_trigger(get());
  }
  bool triggered() const noexcept { return get() && af_cancel_triggered(get()) != 0; }

 private:
  detail::Unique<af_cancel_t, af_cancel_free> h_;
};

inline Context::Scope Context::cancel_scope(const CancelToken& token) {
  detail::check(af_cancel_scope_push(ptr(), token.get()));
  return Scope(ptr(), af_cancel_scope_pop);
}

struct RunOptions {
  bool keep_going = false;      /* failures become {"error": ...} values */
  bool profile = false;         /* record a profile (Future::profile) */
  bool item_errors = false;     /* batched programs: a failing item becomes its error value */
  uint64_t timeout_ms = 0;      /* 0 = none: TIMEOUT after this long */
  std::string profile_path;     /* write the profile here as Chrome trace JSON */
  const CancelToken* cancel = nullptr;
  /* done and total equations, from libaf threads; must be quick and not throw
   * (what it throws is dropped). */
  std::function<void(uint64_t, uint64_t)> progress;
  /* The run summary JSON (calls, tokens, retries, time per model; af.h "Run
   * summaries"): call() writes it here, also when the run fails. */
  std::string* summary_out = nullptr;
  /* call_async(): record the run summary for Future::summary(). */
  bool summary = false;
  /* LM replies as they arrive: (equation index, batch item, the next piece,
   * or nullopt: what that equation and item streamed so far does not count).
   * From libaf threads, one at a time per run; must be quick; what it throws
   * is dropped. */
  std::function<void(uint32_t, uint64_t, std::optional<std::string_view>)> stream;
  std::string stream_tag; /* only LM equations with this tag stream ("" = all) */
  /* The largest value one equation may build, in bytes (a format or concat
   * result; 0 = the default, 1 GiB): past it the run fails with
   * OUT_OF_MEMORY naming the primitive and the size. */
  uint64_t max_value_bytes = 0;
  /* A run journal (af.h "Run journals"): each completed LM call is recorded
   * there, and a rerun of the same program on the same inputs answers the
   * recorded ones without reaching a provider ("" = none). */
  std::string journal_path;
};

/* A run in flight. Destroying it cancels the run (nobody can read the
 * result any more, and the run must not outlive the Context the caller
 * owns); call wait() first to let it finish. Move-only. */
class Future {
 public:
  Future(Future&&) noexcept = default;
  Future& operator=(Future&& o) noexcept {
    if (this != &o) {
      cancel();
      h_ = std::move(o.h_);
    }
    return *this;
  }
  ~Future() { cancel(); }

  /* Blocks until the run finishes: its output, or throws its error
   * (CANCELLED, TIMEOUT, ...). May be called again (same result). */
  Value wait() {
    af_value_t* out = nullptr;
    detail::check(af_future_wait(ptr(), &out));
    return Value::own(out);
  }
  bool ready() const { return af_future_ready(ptr()) != 0; }
  void cancel() noexcept {
    if (h_.get()) af_future_cancel(h_.get());
  }
  std::string profile() const {
    af_bytes_t b{nullptr, 0};
    detail::check(af_future_profile(ptr(), &b));
    return detail::take(b);
  }
  /* The run summary of a run started with RunOptions::summary (so far,
   * until it finished). */
  std::string summary() const {
    af_bytes_t b{nullptr, 0};
    detail::check(af_future_summary_json(ptr(), &b));
    return detail::take(b);
  }
  /* fn runs once when the run finishes: on a libaf thread, or here at once
   * if it already has. It must be quick and must not destroy the Context;
   * what it throws is dropped (nothing may unwind into libaf). */
  void on_done(std::function<void()> fn) {
    // Deleted by libaf's destroy callback, also when the call fails.
    auto* state = new std::function<void()>(std::move(fn));
    detail::check(af_future_on_done(ptr(), &done, state, &destroy_done));
  }

 private:
  friend class Program;
  explicit Future(af_future_t* f) : h_(f) {}
  static void done(void* ud) noexcept {
    try {
      (*static_cast<std::function<void()>*>(ud))();
    } catch (...) {
    }
  }
  static void destroy_done(void* ud) noexcept { delete static_cast<std::function<void()>*>(ud); }
  af_future_t* ptr() const {
    if (!h_.get()) throw detail::empty_handle("Future");
    return h_.get();
  }
  detail::Unique<af_future_t, af_future_free> h_;
};

/* A compiled IR for the dataflow executor. */
class Program {
 public:
  static Program compile(Context& ctx, const Ir& ir) {
    af_program_t* p = nullptr;
    detail::check(af_compile(ctx.ptr(), ir.ptr(), &p));
    return Program(p);
  }
  /* Loads a program saved with save() (or an IR's graph, compiled here). */
  static Program load(Context& ctx, std::string_view path) {
    af_program_t* p = nullptr;
    detail::check(af_program_load(ctx.ptr(), path.data(), path.size(), &p));
    return Program(p);
  }
  af_program_t* get() const noexcept { return h_.get(); }

  /* Runs and waits (inlined inside a trace; recorded as a promise on a lazy
   * Context). */
  Value call(Context& ctx, const std::vector<Value>& inputs) const {
    auto p = detail::ptrs(inputs);
    af_value_t* out = nullptr;
    detail::check(af_program_call(ctx.ptr(), ptr(), p.data(), p.size(), &out));
    return ctx.adopt(out);
  }
  /* With options: a run that happens now, on a lazy Context too. */
  Value call(Context& ctx, const std::vector<Value>& inputs, const RunOptions& options) const {
    auto p = detail::ptrs(inputs);
    Native o(options);
    af_bytes_t summary{nullptr, 0};
    if (options.summary_out) o.raw.summary = &summary;
    af_value_t* out = nullptr;
    af_error_t* err = af_program_call_with(ctx.ptr(), ptr(), p.data(), p.size(), &o.raw, &out);
    if (options.summary_out)
      *options.summary_out = summary.data ? detail::take(summary) : std::string();
    detail::check(err);
    return Value::own(out);
  }
  /* Starts the run and returns at once (input errors are thrown here). */
  Future call_async(Context& ctx, const std::vector<Value>& inputs) const {
    auto p = detail::ptrs(inputs);
    af_future_t* f = nullptr;
    detail::check(af_program_call_async(ctx.ptr(), ptr(), p.data(), p.size(), &f));
    return Future(f);
  }
  Future call_async(Context& ctx, const std::vector<Value>& inputs,
                    const RunOptions& options) const {
    auto p = detail::ptrs(inputs);
    Native o(options);
    if (options.summary) o.raw.flags |= AF_RUN_SUMMARY;
    af_future_t* f = nullptr;
    detail::check(af_program_call_async_with(ctx.ptr(), ptr(), p.data(), p.size(), &o.raw, &f));
    return Future(f);
  }
  void save(std::string_view path) const { detail::check(af_program_save(ptr(), path.data(), path.size())); }

 private:
  friend class Context;  /* eval with options shares Native */
  explicit Program(af_program_t* p) : h_(p) {}
  af_program_t* ptr() const {
    if (!get()) throw detail::empty_handle("Program");
    return get();
  }
  /* af_run_options_t for one call; libaf owns (and destroys) the progress
   * function from the call on, also when the call fails. */
  struct Native {
    af_run_options_t raw{};
    explicit Native(const RunOptions& o) {
      raw.struct_size = sizeof raw;
      raw.flags = (o.keep_going ? AF_RUN_KEEP_GOING : 0u) | (o.profile ? AF_RUN_PROFILE : 0u) |
                  (o.item_errors ? AF_RUN_ITEM_ERRORS : 0u);
      raw.timeout_ms = o.timeout_ms;
      raw.max_value_bytes = o.max_value_bytes;
      if (!o.profile_path.empty()) {
        raw.profile_path = o.profile_path.data();
        raw.profile_path_len = o.profile_path.size();
      }
      if (!o.journal_path.empty()) {
        raw.journal_path = o.journal_path.data();
        raw.journal_path_len = o.journal_path.size();
      }
      raw.cancel = o.cancel ? o.cancel->get() : nullptr;
      if (o.progress) {
        raw.progress = &progress;
        raw.progress_user_data = new std::function<void(uint64_t, uint64_t)>(o.progress);
        raw.progress_destroy = &destroy_progress;
      }
      if (o.stream) {
        raw.stream = &stream;
        raw.stream_user_data = new StreamFn(o.stream);
        raw.stream_destroy = &destroy_stream;
      }
      if (!o.stream_tag.empty()) {
        raw.stream_tag = o.stream_tag.data();
        raw.stream_tag_len = o.stream_tag.size();
      }
    }
    using StreamFn = std::function<void(uint32_t, uint64_t, std::optional<std::string_view>)>;
    static void stream(void* ud, uint32_t eqn, uint64_t item, const char* text, size_t len) noexcept {
      try {
        (*static_cast<StreamFn*>(ud))(eqn, item, text ? std::optional<std::string_view>(std::string_view(text, len))
                                                       : std::nullopt);
      } catch (...) {
        // Like progress: nothing may unwind into libaf.
      }
    }
    static void destroy_stream(void* ud) noexcept { delete static_cast<StreamFn*>(ud); }
    static void progress(void* ud, uint64_t done, uint64_t total) noexcept {
      try {
        (*static_cast<std::function<void(uint64_t, uint64_t)>*>(ud))(done, total);
      } catch (...) {
        // Progress is advisory: nothing may unwind into libaf.
      }
    }
    static void destroy_progress(void* ud) noexcept { delete static_cast<std::function<void(uint64_t, uint64_t)>*>(ud); }
  };
  detail::Shared<af_program_t, af_program_clone, af_program_free> h_;
};

inline void Context::eval(const std::vector<Value>& values, const RunOptions& options) {
  std::vector<af_value_t*> p = handles(values);
  Program::Native o(options);
  af_bytes_t summary{nullptr, 0};
  if (options.summary_out) o.raw.summary = &summary;
  af_error_t* err = af_eval_with(ptr(), p.data(), p.size(), &o.raw);
  if (options.summary_out) *options.summary_out = summary.data ? detail::take(summary) : std::string();
  detail::check(err);
}

/* ---- Walking an IR one equation at a time -------------------------------- */

/* A stepper over an IR, for debuggers and hosts that run some equations
 * themselves: next() gives the next equation and its inputs; then eval()
 * lets libaf evaluate it or send() supplies its outputs; once next() gives
 * nothing, outputs() is the program's output. Use it while its Context
 * lives. Move-only. */
class Walk {
 public:
  /* Inputs are checked as for a call of ir. */
  Walk(Context& ctx, const Ir& ir, const std::vector<Value>& inputs) {
    auto p = detail::ptrs(inputs);
    af_walk_t* w = nullptr;
    detail::check(af_walk_new(ctx.ptr(), ir.ptr(), p.data(), p.size(), &w));
    h_ = decltype(h_)(w);
  }
  af_walk_t* get() const noexcept { return h_.get(); }

  struct Step {
    size_t eqn;    /* the equation's index (as Ir::eqn_prim numbers them) */
    Value inputs;  /* its input tree, with values */
  };
  /* The next equation (the same one again until eval() or send()), or
   * nothing once every equation ran. */
  std::optional<Step> next() {
    size_t eqn = AF_WALK_DONE;
    af_value_t* in = nullptr;
    detail::check(af_walk_next(ptr(), &eqn, &in));
    Value inputs = Value::own(in);
    if (eqn == AF_WALK_DONE) return std::nullopt;
    return Step{eqn, std::move(inputs)};
  }
  /* Evaluates the current equation with libaf's implementation. */
  void eval() { detail::check(af_walk_eval(ptr())); }
  /* Supplies the current equation's outputs (its output tree, concrete
   * leaves of the declared kinds). */
  void send(const Value& outputs) { detail::check(af_walk_send(ptr(), outputs.get())); }
  /* The program's output (INVALID_ARGUMENT while equations remain). */
  Value outputs() {
    af_value_t* out = nullptr;
    detail::check(af_walk_outputs(ptr(), &out));
    return Value::own(out);
  }

 private:
  af_walk_t* ptr() const {
    if (!get()) throw detail::empty_handle("Walk");
    return get();
  }
  detail::Unique<af_walk_t, af_walk_free> h_;
};

/* "MAJOR.MINOR.PATCH" of the loaded libaf. */
inline std::string version() { return af_version(); }
/* AF_ABI_VERSION of the loaded libaf (equal to this header's AF_ABI_VERSION
 * when the two match). */
inline uint32_t abi_version() noexcept { return af_abi_version(); }
/* True on the thread running a trace function (see Context::trace). */
inline bool is_tracing() noexcept { return af_is_tracing() != 0; }

// af_profile_event: a marker on the profile of the run calling this host
// function (a no-op outside a profiled run). args_json: a JSON object, or
// empty for none.
inline void profile_event(std::string_view name, std::string_view args_json = {}) {
  detail::check(af_profile_event(name.data(), name.size(), args_json.empty() ? nullptr : args_json.data(),
                                 args_json.size()));
}

// Run journals (af.h): what one holds, as JSON (calls, tokens, per model),
// and compacting one no run is writing.
inline std::string journal_summary_json(std::string_view path) {
  af_bytes_t b{};
  detail::check(af_journal_summary_json(path.data(), path.size(), &b));
  return detail::take(b);
}
inline void journal_compact(std::string_view path) {
  detail::check(af_journal_compact(path.data(), path.size()));
}

}  // namespace af

#endif /* AF_AF_HPP */
