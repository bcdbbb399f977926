// Shapes: the exact identity of a pending node's own structure, given when
// it is recorded (hash-consing). Everything of a node that its equation in a
// cut holds but which of its inputs are promises (primitive, params, trees,
// tags, input and output kinds, literal inputs) is interned: two nodes get
// the same Shape exactly when those are equal by the IR's own equality
// (bitwise floats, dict order: ir/ir.h). A Shape's id is unique in the
// process and never reused, so a cut written as shape ids and variable
// numbers (lazy/cut.h) names its IR exactly, and comparing two such codes
// confirms a cached program with no structural compare.
//
// The table forgets shapes no node recorded since its last sweep once it
// holds twice as many as that sweep left (at least kMinEntries), or twice
// the bytes of literal inputs (at least kMinLiteralBytes: constants of
// called IRs, which it keeps alive): a node keeps its own Shape alive, and a
// forgotten one costs a later evaluation a compile (its id is never given
// again), never a wrong program.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/ir.h"
#include "ir/prim.h"

namespace af::lazy {

struct Shape {
  uint64_t id = 0;
  const Prim* prim = nullptr;
  Params params;
  TreeDef in_tree, out_tree;
  Tags tags;
  std::vector<Aval> in_avals, out_avals;
  std::vector<std::pair<uint32_t, Value>> literals;  // (input position, value), ascending
  bool observable = false;                           // kObservable (ir/effects.h)
};

// What a node being recorded is, for interning (views of its fields).
struct ShapeOf {
  const Prim& prim;
  const Params& params;
  const TreeDef &in_tree, &out_tree;
  const Tags& tags;
  std::span<const Value> in;
  std::span<const uint8_t> literal;  // per input, 1 = a literal; empty = none
  std::span<const Aval> in_avals, out_avals;
};

class ShapeTable {
 public:
  static constexpr size_t kMinEntries = 4096;
  static constexpr size_t kMinLiteralBytes = size_t(64) << 20;
  // The one Shape equal to `s`, made on first sight. Thread-safe.
  std::shared_ptr<const Shape> intern(const ShapeOf& s);
  size_t size() const;
  size_t literal_bytes() const;

 private:
  struct Entry {
    std::shared_ptr<const Shape> shape;
    size_t literal_bytes = 0;
    bool used = true;  // recorded since the last sweep
  };
  void sweep_locked();

  mutable std::mutex mu_;
  std::unordered_multimap<uint64_t, Entry> by_hash_;
  size_t limit_ = kMinEntries;
  size_t literal_bytes_ = 0, literal_limit_ = kMinLiteralBytes;
};

}  // namespace af::lazy
