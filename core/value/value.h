// Value: an immutable, cheaply shared tree of leaves (null, bool, int, float,
// str) and containers (list, dict). Scalars live inline; strings, lists,
// dicts and placeholders live in one refcounted heap node, so passing a
// Value through an equation never copies a string.
#pragma once

#include <atomic>
#include <bit>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace af {

enum class Kind : uint8_t { Null = 0, Bool, Int, Float, Str, List, Dict, Placeholder };

// Stable lower-case name ("str", "int", ...), used in messages and IR text.
const char* kind_name(Kind k);

class Value;
using Entry = std::pair<std::string, Value>;

// Lists and dicts nest at most this deep (a leaf is depth 0, a list of
// leaves 1): recursive walks (JSON, hashing, freeing) stay within any
// thread's stack. Value::list / Value::dict throw INVALID_ARGUMENT past it.
inline constexpr uint32_t kMaxValueDepth = 512;

namespace detail {
struct Heap {
  mutable std::atomic<uint32_t> refs{1};
  virtual ~Heap() = default;
};
}  // namespace detail

// The identity of a leaf whose content is not known yet, plus the kind it
// will have. frame != 0: a traced variable (trace frame, variable id there).
// frame == 0: a lazy promise (core/lazy), identified by its heap node.
struct PlaceholderRef {
  uint64_t frame = 0;
  uint32_t var = 0;
  Kind kind = Kind::Null;
  // > 0: a batched value (list<kind>): a promise, or a traced list of any length.
  uint8_t list_depth = 0;
};

namespace detail {
// The heap node of a placeholder leaf.
struct PlaceholderHeap : Heap {
  explicit PlaceholderHeap(PlaceholderRef r) : ref(r) {}
  PlaceholderRef ref;
};
// A promise leaf: its content comes from an evaluation (core/lazy defines
// it). The value layer only asks it to evaluate and to say what it holds.
struct PromiseHeap : PlaceholderHeap {
  PromiseHeap(Kind k, uint8_t list_depth) : PlaceholderHeap(PlaceholderRef{0, 0, k, list_depth}) {}
  // Evaluates the promises among `leaves` that share this promise's
  // evaluator (this one included), as one evaluation. Throws on failure of
  // the evaluation itself (not of one promise: see result()).
  virtual void evaluate(std::span<const Value> leaves) const = 0;
  // True once evaluated (with a result or an error).
  virtual bool ready() const noexcept = 0;
  // The content once ready; throws the promise's error if it failed.
  virtual const Value& result() const = 0;
};
}  // namespace detail

class Value {
 public:
  Value() noexcept : i_(0), kind_(Kind::Null) {}
  static Value boolean(bool b) noexcept;
  static Value integer(int64_t i) noexcept;
  static Value floating(double f) noexcept;
  static Value str(std::string s);
  static Value list(std::vector<Value> items);
  // Throws Error(INVALID_ARGUMENT) on a duplicate key.
  static Value dict(std::vector<Entry> entries);
  static Value placeholder(PlaceholderRef ref);
  // A promise leaf owning one reference to p (kind: p's kind).
  static Value promise(const detail::PromiseHeap* p) noexcept;

  // Inline: values are copied and moved through every equation, and only
  // the last release of a heap node needs more than a few instructions.
  Value(const Value& o) noexcept : i_(o.i_), kind_(o.kind_) { retain(); }
  Value(Value&& o) noexcept : i_(o.i_), kind_(o.kind_) {
    o.kind_ = Kind::Null;
    o.i_ = 0;
  }
  Value& operator=(const Value& o) noexcept {
    if (this != &o) {
      o.retain();
      release();
      i_ = o.i_;
      kind_ = o.kind_;
    }
    return *this;
  }
  Value& operator=(Value&& o) noexcept {
    if (this != &o) {
      release();
      i_ = o.i_;
      kind_ = o.kind_;
      o.kind_ = Kind::Null;
      o.i_ = 0;
    }
    return *this;
  }
  ~Value() { release(); }

  Kind kind() const noexcept { return kind_; }
  bool is_null() const noexcept { return kind_ == Kind::Null; }
  bool is_container() const noexcept { return kind_ == Kind::List || kind_ == Kind::Dict; }
  // A leaf is anything flattening yields: bool, int, float, str, placeholder.
  bool is_leaf() const noexcept { return !is_container() && kind_ != Kind::Null; }

  // Unchecked accessors: the caller has checked kind().
  bool as_bool() const noexcept { return b_; }
  int64_t as_int() const noexcept { return i_; }
  double as_float() const noexcept { return f_; }
  const std::string& as_str() const noexcept;
  // The string of a str value that no other Value shares (refcount 1), for
  // its owner to append in place; nullptr when shared or not a str.
  std::string* unique_str() noexcept;
  const std::vector<Value>& items() const noexcept;   // list
  const std::vector<Entry>& entries() const noexcept; // dict, insertion order
  // Dict entry indices in sorted key order (the flattening order).
  const std::vector<uint32_t>& sorted() const noexcept;
  const PlaceholderRef& placeholder_ref() const noexcept;
  // A lazy promise leaf (a placeholder of no trace), or nullptr.
  const detail::PromiseHeap* promise() const noexcept {  // inline: the lazy cut asks per input
    if (kind_ != Kind::Placeholder || static_cast<const detail::PlaceholderHeap*>(h_)->ref.frame != 0)
      return nullptr;
    return static_cast<const detail::PromiseHeap*>(h_);
  }

  // Dict lookup by key (binary search over sorted keys); nullptr if absent.
  const Value* find(std::string_view key) const noexcept;
  // Number of items (list) or entries (dict); 0 otherwise.
  size_t size() const noexcept;

  // Deep equality as fine as every observable difference, because it
  // decides "the same computation" (IR equality, CSE, memoize keys, the
  // plan cache): floats compare bitwise (0.0 is not -0.0), dicts in their
  // key order (it shows when one is printed), int != float.
  friend bool operator==(const Value& a, const Value& b) noexcept;
  // Deep hash consistent with ==.
  uint64_t hash() const noexcept;
  // Same kind and payload: the same heap node, or the same scalar bits.
  // Implies ==, in one comparison.
  bool identical(const Value& o) const noexcept {
    if (kind_ != o.kind_) return false;
    switch (kind_) {
      case Kind::Null: return true;
      case Kind::Bool: return b_ == o.b_;
      case Kind::Int: return i_ == o.i_;
      case Kind::Float: return std::bit_cast<uint64_t>(f_) == std::bit_cast<uint64_t>(o.f_);
      default: return h_ == o.h_;
    }
  }
  // True if any leaf is a placeholder (a traced value or a promise).
  bool has_placeholder() const noexcept;
  // Container nesting: 0 for a leaf or null, 1 + the deepest item otherwise.
  uint32_t depth() const noexcept;

 private:
  static bool on_heap(Kind k) noexcept { return k >= Kind::Str; }
  void retain() const noexcept {
    if (on_heap(kind_)) h_->refs.fetch_add(1, std::memory_order_relaxed);
  }
  void release() noexcept {
    if (on_heap(kind_) && h_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) free_heap(h_);
  }
  static void free_heap(detail::Heap* h) noexcept;
  // The kind after the payload: the 7 bytes after it are tail padding, which
  // a struct holding a Value [[no_unique_address]] may use (an IR Atom keeps
  // its variable id there: 16 bytes, not 24).
  union {
    bool b_;
    int64_t i_;
    double f_;
    detail::Heap* h_;
  };
  Kind kind_;
};

// Stringification used by format for non-string leaves and containers:
// JSON conventions ("2.5", "2.0", "1e+30", "true", "null", "[1,\"a\"]").
// Throws INVALID_ARGUMENT for NaN/infinity and placeholders.
std::string stringify(const Value& v);

// Exact JSON. Parse: ints stay int64, numbers with '.'/'e' are floats;
// INVALID_ARGUMENT on malformed JSON, invalid UTF-8, duplicate keys, integers
// outside int64. Write: compact, dict keys in insertion order, floats in
// shortest round-trip form that always reads back as a float.
Value from_json(std::string_view json);
std::string to_json(const Value& v);
void append_json(std::string& out, const Value& v);
// JSON string literal of s (quotes and escapes included).
void append_json_string(std::string& out, std::string_view s);
// The same as a new string: how messages quote a name ("\"lookup\"").
std::string json_quoted(std::string_view s);

// v with every promise leaf replaced by its content: evaluates the promises
// that are not ready (those of one evaluator together), then throws the
// first failed promise's error. v itself when it holds no promise.
Value resolve(const Value& v);
// Appends every promise leaf of v to out (evaluated or not).
void collect_promises(const Value& v, std::vector<Value>& out);
// True when v holds no promise that still has to be evaluated.
bool is_ready(const Value& v) noexcept;

// Throws INVALID_ARGUMENT: `what` tried to read a placeholder's content,
// which is only known when the program runs. The message names the fixes.
[[noreturn]] void fail_placeholder_read(std::string_view what);

// UTF-8 validity of s.
bool valid_utf8(std::string_view s) noexcept;

}  // namespace af
