#include "value/value.h"

#include <bit>

#include <algorithm>
#include <cstring>

#include "value/error.h"
#include "value/hash.h"

namespace af {

namespace {

struct StrHeap final : detail::Heap {
  explicit StrHeap(std::string s) : s(std::move(s)) {}
  std::string s;
};
struct ListHeap final : detail::Heap {
  ListHeap(std::vector<Value> v, uint32_t d) : items(std::move(v)), depth(d) {}
  std::vector<Value> items;
  uint32_t depth;
};
struct DictHeap final : detail::Heap {
  std::vector<Entry> entries;
  std::vector<uint32_t> sorted;  // entry indices by key
  uint32_t depth = 1;
};

// 1 + the deepest child, refused past kMaxValueDepth before anything is built.
template <class Children, class Get>
uint32_t nested_depth(const Children& children, Get get) {
  uint32_t d = 0;
  for (const auto& c : children) d = std::max(d, get(c).depth());
  if (d + 1 > kMaxValueDepth)
    invalid("a value nests lists and dicts more than " + std::to_string(kMaxValueDepth) +
            " levels deep; flatten it (e.g. a list of records instead of nested lists)");
  return d + 1;
}

const std::vector<Value> kNoItems;
const std::vector<Entry> kNoEntries;
const std::vector<uint32_t> kNoIndices;
const std::string kNoStr;

}  // namespace

void fail_placeholder_read(std::string_view what) {
  invalid(std::string(what) +
          ": cannot read the content of a traced value while tracing; it is only known when the "
          "program runs. Branch on it with switch, loop on it with while_loop, or mark the input "
          "static so its value is fixed at trace time");
}

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::Null: return "null";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::Str: return "str";
    case Kind::List: return "list";
    case Kind::Dict: return "dict";
    case Kind::Placeholder: return "placeholder";
  }
  return "?";
}

Value Value::boolean(bool b) noexcept {
  Value v;
  v.kind_ = Kind::Bool;
  v.i_ = 0;
  v.b_ = b;
  return v;
}
Value Value::integer(int64_t i) noexcept {
  Value v;
  v.kind_ = Kind::Int;
  v.i_ = i;
  return v;
}
Value Value::floating(double f) noexcept {
  Value v;
  v.kind_ = Kind::Float;
  v.f_ = f;
  return v;
}
Value Value::str(std::string s) {
  Value v;
  v.kind_ = Kind::Str;
  v.h_ = new StrHeap(std::move(s));
  return v;
}
Value Value::list(std::vector<Value> items) {
  Value v;
  uint32_t depth = nested_depth(items, [](const Value& x) -> const Value& { return x; });
  v.kind_ = Kind::List;
  v.h_ = new ListHeap(std::move(items), depth);
  return v;
}
Value Value::dict(std::vector<Entry> entries) {
  uint32_t depth = nested_depth(entries, [](const Entry& e) -> const Value& { return e.second; });
  auto* h = new DictHeap();
  h->depth = depth;
  Value v;
  v.kind_ = Kind::Dict;
  v.h_ = h;  // owned by v from here on, so a throw below frees it
  h->entries = std::move(entries);
  h->sorted.resize(h->entries.size());
  for (uint32_t i = 0; i < h->sorted.size(); ++i) h->sorted[i] = i;
  std::sort(h->sorted.begin(), h->sorted.end(), [h](uint32_t a, uint32_t b) {
    return h->entries[a].first < h->entries[b].first;
  });
  for (size_t i = 1; i < h->sorted.size(); ++i) {
    const std::string& k = h->entries[h->sorted[i]].first;
    if (k == h->entries[h->sorted[i - 1]].first) invalid("duplicate dict key \"" + k + "\"");
  }
  return v;
}
Value Value::placeholder(PlaceholderRef ref) {
  Value v;
  v.kind_ = Kind::Placeholder;
  v.h_ = new detail::PlaceholderHeap(ref);
  return v;
}
Value Value::promise(const detail::PromiseHeap* p) noexcept {
  Value v;
  v.kind_ = Kind::Placeholder;
  v.h_ = const_cast<detail::PromiseHeap*>(p);
  return v;
}

void Value::free_heap(detail::Heap* h) noexcept { delete h; }

const std::string& Value::as_str() const noexcept {
  return kind_ == Kind::Str ? static_cast<StrHeap*>(h_)->s : kNoStr;
}
std::string* Value::unique_str() noexcept {
  if (kind_ != Kind::Str || h_->refs.load(std::memory_order_acquire) != 1) return nullptr;
  return &static_cast<StrHeap*>(h_)->s;
}
const std::vector<Value>& Value::items() const noexcept {
  return kind_ == Kind::List ? static_cast<ListHeap*>(h_)->items : kNoItems;
}
const std::vector<Entry>& Value::entries() const noexcept {
  return kind_ == Kind::Dict ? static_cast<DictHeap*>(h_)->entries : kNoEntries;
}
const std::vector<uint32_t>& Value::sorted() const noexcept {
  return kind_ == Kind::Dict ? static_cast<DictHeap*>(h_)->sorted : kNoIndices;
}
const PlaceholderRef& Value::placeholder_ref() const noexcept {
  static const PlaceholderRef none;
  return kind_ == Kind::Placeholder ? static_cast<detail::PlaceholderHeap*>(h_)->ref : none;
}
const Value* Value::find(std::string_view key) const noexcept {
  if (kind_ != Kind::Dict) return nullptr;
  const auto* h = static_cast<DictHeap*>(h_);
  auto it = std::lower_bound(h->sorted.begin(), h->sorted.end(), key,
                             [h](uint32_t i, std::string_view k) { return h->entries[i].first < k; });
  if (it == h->sorted.end() || h->entries[*it].first != key) return nullptr;
  return &h->entries[*it].second;
}

size_t Value::size() const noexcept {
  if (kind_ == Kind::List) return items().size();
  if (kind_ == Kind::Dict) return entries().size();
  return 0;
}

uint32_t Value::depth() const noexcept {
  if (kind_ == Kind::List) return static_cast<const ListHeap*>(h_)->depth;
  if (kind_ == Kind::Dict) return static_cast<const DictHeap*>(h_)->depth;
  return 0;
}

bool operator==(const Value& a, const Value& b) noexcept {
  if (a.kind_ != b.kind_) return false;
  switch (a.kind_) {
    case Kind::Null: return true;
    case Kind::Bool: return a.b_ == b.b_;
    case Kind::Int: return a.i_ == b.i_;
    case Kind::Float: return std::bit_cast<uint64_t>(a.f_) == std::bit_cast<uint64_t>(b.f_);
    case Kind::Str: return a.h_ == b.h_ || a.as_str() == b.as_str();
    case Kind::List: return a.h_ == b.h_ || a.items() == b.items();
    case Kind::Dict: {
      if (a.h_ == b.h_) return true;
      // Key order shows wherever a dict is printed: it is part of identity.
      return a.entries() == b.entries();
    }
    case Kind::Placeholder: {
      const auto& x = a.placeholder_ref();
      const auto& y = b.placeholder_ref();
      if (x.frame == 0 || y.frame == 0) return a.h_ == b.h_;  // promises: by identity
      return x.frame == y.frame && x.var == y.var;
    }
  }
  return false;
}

uint64_t Value::hash() const noexcept {
  // Each case starts from its kind's seed, a constant.
  constexpr auto seed = [](Kind k) { return hash_mix(0, static_cast<uint64_t>(k)); };
  uint64_t h = seed(kind_);  // containers and placeholders
  switch (kind_) {
    case Kind::Null: return seed(Kind::Null);
    case Kind::Bool: return hash_mix(seed(Kind::Bool), b_);
    case Kind::Int: return hash_mix(seed(Kind::Int), static_cast<uint64_t>(i_));
    case Kind::Float: return hash_mix(seed(Kind::Float), std::bit_cast<uint64_t>(f_));
    case Kind::Str: return hash_mix(seed(Kind::Str), hash_bytes(as_str()));
    case Kind::List:
      for (const Value& v : items()) h = hash_mix(h, v.hash());
      return h;
    case Kind::Dict: {
      // Entries in sorted key order, then the written order when it is not
      // that one: a dict written sorted hashes as it always did (af_ir_hash
      // names files), and two orders hash apart as they compare apart.
      bool sorted_order = true;
      for (uint32_t k = 0; k < sorted().size(); ++k) {
        const uint32_t i = sorted()[k];
        h = hash_mix(h, hash_bytes(entries()[i].first));
        h = hash_mix(h, entries()[i].second.hash());
        sorted_order = sorted_order && i == k;
      }
      if (!sorted_order)
        for (uint32_t i : sorted()) h = hash_mix(h, i);
      return h;
    }
    case Kind::Placeholder:
      if (placeholder_ref().frame == 0) return hash_mix(h, reinterpret_cast<uintptr_t>(h_));
      return hash_mix(hash_mix(h, placeholder_ref().frame), placeholder_ref().var);
  }
  return h;
}

bool Value::has_placeholder() const noexcept {
  switch (kind_) {
    case Kind::Placeholder: return true;
    case Kind::List:
      return std::any_of(items().begin(), items().end(),
                         [](const Value& v) { return v.has_placeholder(); });
    case Kind::Dict:
      return std::any_of(entries().begin(), entries().end(),
                         [](const Entry& e) { return e.second.has_placeholder(); });
    default: return false;
  }
}

void collect_promises(const Value& v, std::vector<Value>& out) {
  switch (v.kind()) {
    case Kind::Placeholder:
      if (v.promise()) out.push_back(v);
      return;
    case Kind::List:
      for (const Value& x : v.items()) collect_promises(x, out);
      return;
    case Kind::Dict:
      for (const Entry& e : v.entries()) collect_promises(e.second, out);
      return;
    default: return;
  }
}

namespace {

Value substitute(const Value& v) {
  switch (v.kind()) {
    case Kind::Placeholder: return v.promise() ? v.promise()->result() : v;
    case Kind::List: {
      if (!v.has_placeholder()) return v;
      std::vector<Value> items;
      items.reserve(v.size());
      for (const Value& x : v.items()) items.push_back(substitute(x));
      return Value::list(std::move(items));
    }
    case Kind::Dict: {
      if (!v.has_placeholder()) return v;
      std::vector<Entry> entries;
      entries.reserve(v.size());
      for (const Entry& e : v.entries()) entries.emplace_back(e.first, substitute(e.second));
      return Value::dict(std::move(entries));
    }
    default: return v;
  }
}

}  // namespace

Value resolve(const Value& v) {
  if (!v.has_placeholder()) return v;
  std::vector<Value> promises;
  collect_promises(v, promises);
  std::erase_if(promises, [](const Value& p) { return p.promise()->ready(); });
  // Each evaluator takes the promises it owns from the whole list at once;
  // the others stay for theirs.
  for (const Value& p : promises)
    if (!p.promise()->ready()) p.promise()->evaluate(promises);
  return substitute(v);
}

bool is_ready(const Value& v) noexcept {
  switch (v.kind()) {
    case Kind::Placeholder: return v.promise() && v.promise()->ready();
    case Kind::List:
      return std::all_of(v.items().begin(), v.items().end(), [](const Value& x) { return is_ready(x); });
    case Kind::Dict:
      return std::all_of(v.entries().begin(), v.entries().end(),
                         [](const Entry& e) { return is_ready(e.second); });
    default: return true;
  }
}

}  // namespace af
