#include "lazy/shapes.h"

#include <algorithm>
#include <atomic>

#include "ir/effects.h"
#include "value/hash.h"

namespace af::lazy {

namespace {

std::atomic<uint64_t> g_next_id{1};

bool same_tags(const Tags& a, const Tags& b) noexcept {
  const bool ea = !a || a->empty(), eb = !b || b->empty();
  if (ea || eb) return ea == eb;
  return a == b || *a == *b;
}

bool is_literal(const ShapeOf& s, size_t k) { return !s.literal.empty() && s.literal[k]; }

uint64_t hash_of(const ShapeOf& s) {
  uint64_t h = hash_mix(reinterpret_cast<uintptr_t>(&s.prim), s.params.hash());
  h = hash_mix(hash_mix(h, s.in_tree.identity_hash()), s.out_tree.identity_hash());
  for (const Aval& a : s.in_avals) h = hash_mix(h, uint64_t(a.kind) << 8 | a.list_depth);
  for (const Aval& a : s.out_avals) h = hash_mix(h, uint64_t(a.kind) << 8 | a.list_depth);
  if (s.tags)
    for (const std::string& t : *s.tags) h = hash_mix(h, hash_bytes(t));
  for (size_t k = 0; k < s.in.size(); ++k)
    if (is_literal(s, k)) h = hash_mix(h ^ k, s.in[k].hash());
  return hash_mix(h, s.in.size());
}

bool equal(const Shape& a, const ShapeOf& s) {
  if (a.prim != &s.prim || a.in_avals.size() != s.in.size() || !std::ranges::equal(a.in_avals, s.in_avals) ||
      !std::ranges::equal(a.out_avals, s.out_avals) || !identical(a.in_tree, s.in_tree) ||
      !identical(a.out_tree, s.out_tree) || !same_tags(a.tags, s.tags) || !(a.params == s.params))
    return false;
  size_t l = 0;
  for (size_t k = 0; k < s.in.size(); ++k) {
    if (!is_literal(s, k)) continue;
    if (l == a.literals.size() || a.literals[l].first != k || !(a.literals[l].second == s.in[k])) return false;
    ++l;
  }
  return l == a.literals.size();
}

std::shared_ptr<const Shape> make(const ShapeOf& s) {
  auto shape = std::make_shared<Shape>();
  shape->id = g_next_id.fetch_add(1, std::memory_order_relaxed);
  shape->prim = &s.prim;
  shape->params = s.params;
  shape->in_tree = s.in_tree;
  shape->out_tree = s.out_tree;
  shape->tags = s.tags && !s.tags->empty() ? s.tags : nullptr;
  shape->in_avals.assign(s.in_avals.begin(), s.in_avals.end());
  shape->out_avals.assign(s.out_avals.begin(), s.out_avals.end());
  for (size_t k = 0; k < s.in.size(); ++k)
    if (is_literal(s, k)) shape->literals.emplace_back(uint32_t(k), s.in[k]);
  shape->observable = eqn_flags(s.prim, s.params) & kObservable;
  return shape;
}

// About how much memory a literal holds (what keeping it alive costs).
size_t bytes_of(const Value& v) {
  switch (v.kind()) {
    case Kind::Str: return sizeof(Value) + v.as_str().size();
    case Kind::List: {
      size_t n = sizeof(Value);
      for (const Value& item : v.items()) n += bytes_of(item);
      return n;
    }
    case Kind::Dict: {
      size_t n = sizeof(Value);
      for (const auto& [key, item] : v.entries()) n += key.size() + bytes_of(item);
      return n;
    }
    default: return sizeof(Value);
  }
}

}  // namespace

std::shared_ptr<const Shape> ShapeTable::intern(const ShapeOf& s) {
  const uint64_t h = hash_of(s);
  std::lock_guard lock(mu_);
  auto [lo, hi] = by_hash_.equal_range(h);
  for (auto it = lo; it != hi; ++it)
    if (equal(*it->second.shape, s)) {
      it->second.used = true;
      return it->second.shape;
    }
  auto shape = make(s);
  size_t bytes = 0;
  for (const auto& [k, lit] : shape->literals) bytes += bytes_of(lit);
  if (by_hash_.size() >= limit_ || literal_bytes_ + bytes > literal_limit_) {
    sweep_locked();
    limit_ = std::max(kMinEntries, 2 * by_hash_.size());
    literal_limit_ = std::max(kMinLiteralBytes, 2 * literal_bytes_);
  }
  by_hash_.emplace(h, Entry{shape, bytes, true});
  literal_bytes_ += bytes;
  return shape;
}

size_t ShapeTable::size() const {
  std::lock_guard lock(mu_);
  return by_hash_.size();
}

size_t ShapeTable::literal_bytes() const {
  std::lock_guard lock(mu_);
  return literal_bytes_;
}

void ShapeTable::sweep_locked() {
  std::erase_if(by_hash_, [](const auto& kv) { return !kv.second.used; });
  literal_bytes_ = 0;
  for (auto& kv : by_hash_) {
    kv.second.used = false;
    literal_bytes_ += kv.second.literal_bytes;
  }
}

}  // namespace af::lazy
