// TreeDef: the structure of a Value tree without its leaves. flatten() lists
// the leaves in order (list items in order, dict entries in sorted key
// order); unflatten() rebuilds a tree from a structure and leaves. null is an
// empty node (no leaf). TreeDefs are immutable and shared.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "value/shared.h"
#include "value/value.h"

namespace af {

class TreeDef {
 public:
  enum class NodeType : uint8_t { Leaf, Null, List, Dict };
  // Pre-order node; a container's children follow it. For a dict, keys[i]
  // names child i (sorted key order).
  struct Node {
    NodeType type;
    uint32_t n_children;
    uint32_t n_leaves;            // leaves in this subtree
    uint32_t n_nodes;             // nodes in this subtree, itself included
    std::vector<std::string> keys;  // dict only, sorted
    // dict only: display[i] = sorted position of the i-th key in insertion
    // order, so unflatten restores the order a user wrote. Not structural.
    std::vector<uint32_t> display;
    static Node leaf() { return Node{NodeType::Leaf, 0, 1, 1, {}, {}}; }
  };

  // A single leaf (shared instance). Inline: every equation starts with two.
  TreeDef() : nodes_(leaf_block()) {}
  static TreeDef leaf();
  // A list of n leaves (the common shape of positional primitive inputs).
  static TreeDef flat_list(size_t n);
  // A list whose children are the given trees.
  static TreeDef list_of(std::span<const TreeDef> children);
  // The structure of v (placeholders are leaves).
  static TreeDef of(const Value& v);

  size_t num_leaves() const noexcept { return nodes_->nodes.front().n_leaves; }
  const Node& root() const noexcept { return nodes_->nodes.front(); }
  const std::vector<Node>& nodes() const noexcept { return nodes_->nodes; }
  bool is_leaf() const noexcept { return root().type == NodeType::Leaf; }

  // The i-th child subtree of a list/dict root.
  TreeDef child(size_t i) const;
  std::vector<TreeDef> children() const;

  // Rebuilds a tree; leaves.size() must equal num_leaves(). Dicts keep the
  // insertion order of the tree the structure was taken from.
  Value unflatten(std::span<const Value> leaves) const;

  // The same structure: what a value must have to fit (dict keys compared
  // as sets, the order they were written in ignored). One shared block (the
  // common case: canonical shapes) compares inline.
  friend bool operator==(const TreeDef& a, const TreeDef& b) noexcept {
    return a.nodes_ == b.nodes_ || same_nodes(a, b);
  }
  // Computed once, when the structure is made (IRs hash their trees often).
  uint64_t hash() const noexcept { return nodes_->hash; }
  // The same structure with dict keys in the same written order: what
  // unflatten builds is printed alike. IR identity (ir_equal, ir_hash, the
  // plan cache) uses this, since the order shows when a dict is printed.
  friend bool identical(const TreeDef& a, const TreeDef& b) noexcept {
    return a.nodes_ == b.nodes_ || (a.nodes_->display == b.nodes_->display && same_nodes(a, b) && same_display(a, b));
  }
  // Consistent with identical: hash() when every dict is in sorted order.
  uint64_t identity_hash() const noexcept { return nodes_->hash ^ nodes_->display; }
  // Human-readable structure with '*' for leaves: [*, {"a": *}].
  std::string to_string() const;

 private:
  // The shared, immutable structure and its hash.
  struct Block {
    explicit Block(std::vector<Node> n);
    std::vector<Node> nodes;
    uint64_t hash;
    uint64_t display;  // hash of the dicts' written orders; 0 when all are sorted
  };
  // The shared block of a leaf or a small flat list when nodes is one.
  explicit TreeDef(std::vector<Node> nodes);
  explicit TreeDef(Shared<Block> block) : nodes_(std::move(block)) {}
  static const Shared<Block>& leaf_block() {
    // Never destroyed, like the block it holds (Shared::immortal).
    static const auto* leaf = new Shared<Block>(Shared<Block>::immortal(std::vector<Node>{Node::leaf()}));
    return *leaf;
  }
  static const Shared<Block>* flat_list_block(size_t n);
  static bool same_nodes(const TreeDef& a, const TreeDef& b) noexcept;
  static bool same_display(const TreeDef& a, const TreeDef& b) noexcept;
  Shared<Block> nodes_;
};

// Appends the leaves of v in flattening order.
void flatten_into(const Value& v, std::vector<Value>& leaves);
// Leaves of v and its structure.
std::pair<std::vector<Value>, TreeDef> flatten(const Value& v);

// Checks that v has structure `def`; on mismatch throws INVALID_ARGUMENT
// naming `what`, the path (e.g. input[0]["k"][2]) and expected vs found.
// `leaf` (optional) checks each leaf: (leaf index in def, value, path).
using LeafCheck = std::function<void(size_t, const Value&, const std::string&)>;
void check_structure(const Value& v, const TreeDef& def, const std::string& what,
                     const LeafCheck& leaf = nullptr);

// For each leaf of `def`, the value of the prefix tree `prefix` that covers
// it (prefix must be a prefix of def: at each node either a leaf covering the
// whole subtree, or the same container with matching children). Throws
// INVALID_ARGUMENT naming `what` when prefix is not a prefix of def.
std::vector<Value> broadcast_prefix(const Value& prefix, const TreeDef& def,
                                    const std::string& what);

}  // namespace af
