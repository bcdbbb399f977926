// What one transform call computed for its sub-IRs, so that it works on the
// DAG of shared sub-IRs without expanding it (docs/SECURITY.md, "Limits").
//
// A transform reaches a sub-IR (an IR object held in params) many times: the
// same branch in two switches, every path through a graph whose sub-IRs
// reuse each other, a rule asking twice with different masks (switch_push
// first learns which tangents are non-zero, then builds the branches), a
// loop rule's fixpoint, and at each level of nested control flow all of that
// again, which made push and pull exponential in the nesting depth. Each
// sub-IR function of the transforms (pushforward_flat, pullback_split,
// batch_flat, dce_flat, the signature surgeries...) goes through `memoized`
// with its sub-IR and masks: the first call computes, later ones return the
// same result, shared, so the transformed program is a DAG like the input.
//
// The memo lives as long as the outermost transform call on the thread
// (TransformScope, opened by every entry point and every sub-IR function,
// so rules need no plumbing); its keys hold their IRs, so no address is
// reused while it lives. The scope also bounds the work: a transform whose
// result is inherently larger than the program (pullback keeps the
// residuals of every use of a sub-IR, so a fan of shared sub-IRs needs
// exponentially many) is refused once it has built more variables and
// equations than transform_budget allows.
#pragma once

#include <any>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/ir.h"

namespace af {

// Variables plus equations one transform call may build (every IR it makes
// along the way counts, its result included): kTransformFactor times the
// size of the IR it transforms (variables plus equations of each distinct
// sub-IR), and at least kMinTransformBudget. Linear rules stay far below.
inline constexpr uint64_t kTransformFactor = 64;
inline constexpr uint64_t kMinTransformBudget = uint64_t(1) << 20;
uint64_t transform_budget(const IR& ir);

// What a memoized result is of (part of the key).
enum class MemoOp : uint8_t {
  Push,
  PullSplit,
  PullForward,
  Batch,
  Dce,
  DropInputs,
  FlatSignature,
  FlatInputs,
  LeafOutput,
  StateSignature,
  Cse,
  Sched,
};

class TransformScope {
 public:
  // Opens the thread's memo with the budget of a transform of `subject`,
  // or joins the one already open.
  explicit TransformScope(const IR& subject);
  ~TransformScope();
  TransformScope(const TransformScope&) = delete;
  TransformScope& operator=(const TransformScope&) = delete;

  // Counts n built variables or equations against the budget
  // (INVALID_ARGUMENT past it). A no-op outside any scope.
  static void charge(uint64_t n);

  struct State;

 private:
  std::unique_ptr<State> own_;  // set in the scope that opened the memo
};

// The memo's entry for (op, ir, a, b), computed by `compute` the first time.
// R is the result type (copied out; IRs inside are shared).
template <class R, class F>
R memoized(MemoOp op, const IRPtr& ir, const std::vector<bool>& a, const std::vector<bool>& b,
           F&& compute);

// ---- implementation

namespace memo_detail {

struct Key {
  const IR* ir;
  MemoOp op;
  std::vector<bool> a, b;
  bool operator==(const Key& o) const { return ir == o.ir && op == o.op && a == o.a && b == o.b; }
};
struct KeyHash {
  size_t operator()(const Key& k) const noexcept;
};
struct Entry {
  IRPtr keep;  // the key's IR, alive while the memo is
  std::any value;
};
// The open memo of this thread, or null.
std::unordered_map<Key, Entry, KeyHash>* current();

}  // namespace memo_detail

template <class R, class F>
R memoized(MemoOp op, const IRPtr& ir, const std::vector<bool>& a, const std::vector<bool>& b,
           F&& compute) {
  TransformScope scope(*ir);
  auto& memo = *memo_detail::current();
  memo_detail::Key key{ir.get(), op, a, b};
  if (auto it = memo.find(key); it != memo.end()) return std::any_cast<const R&>(it->second.value);
  R result = compute();
  memo.emplace(std::move(key), memo_detail::Entry{ir, result});
  return result;
}

}  // namespace af
