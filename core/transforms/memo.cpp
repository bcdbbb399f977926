#include "transforms/memo.h"

#include <unordered_set>
#include <utility>

#include "value/error.h"
#include "value/hash.h"

namespace af {

struct TransformScope::State {
  std::unordered_map<memo_detail::Key, memo_detail::Entry, memo_detail::KeyHash> memo;
  uint64_t built = 0;
  uint64_t budget = 0;
};

namespace {

thread_local TransformScope::State* open_state = nullptr;

uint64_t dag_size(const IR& ir, std::unordered_set<const IR*>& seen) {
  uint64_t n = ir.vars.size() + ir.eqns.size();
  for (const Eqn& e : ir.eqns)
    e.params.any_ir([&](const IR& sub) {
      if (seen.insert(&sub).second) n += dag_size(sub, seen);
      return false;
    });
  return n;
}

}  // namespace

size_t memo_detail::KeyHash::operator()(const Key& k) const noexcept {
  uint64_t h = hash_mix(reinterpret_cast<uintptr_t>(k.ir), uint64_t(k.op));
  for (const auto* mask : {&k.a, &k.b}) {
    h = hash_mix(h, mask->size());
    uint64_t word = 0;  // 64 mask bits per mix
    for (size_t i = 0; i < mask->size(); ++i) {
      word = word << 1 | uint64_t((*mask)[i]);
      if (i % 64 == 63) h = hash_mix(h, std::exchange(word, 0));
    }
    h = hash_mix(h, word);
  }
  return size_t(h);
}

std::unordered_map<memo_detail::Key, memo_detail::Entry, memo_detail::KeyHash>*
memo_detail::current() {
  return open_state ? &open_state->memo : nullptr;
}

uint64_t transform_budget(const IR& ir) {
  std::unordered_set<const IR*> seen;
  return std::max(kMinTransformBudget, kTransformFactor * dag_size(ir, seen));
}

TransformScope::TransformScope(const IR& subject) {
  if (open_state) return;
  own_ = std::make_unique<State>();
  own_->budget = transform_budget(subject);
  open_state = own_.get();
}

TransformScope::~TransformScope() {
  if (own_) open_state = nullptr;
}

void TransformScope::charge(uint64_t n) {
  State* s = open_state;
  if (!s) return;
  s->built += n;
  if (s->built > s->budget)
    invalid(
        "transform: the result would exceed " + std::to_string(s->budget) +
        " variables and equations (" + std::to_string(kTransformFactor) +
        " times the program's size, at least " + std::to_string(kMinTransformBudget) +
        "): shared sub-IRs expand in it (pullback keeps the residuals of every use of a sub-IR)");
}

}  // namespace af
