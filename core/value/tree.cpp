#include "value/tree.h"


#include "value/error.h"
#include "value/hash.h"

namespace af {

namespace {

using Node = TreeDef::Node;
using NodeType = TreeDef::NodeType;

void build(const Value& v, std::vector<Node>& nodes) {
  size_t at = nodes.size();
  switch (v.kind()) {
    case Kind::Null: nodes.push_back(Node{NodeType::Null, 0, 0, 1, {}, {}}); return;
    case Kind::List: {
      nodes.push_back(Node{NodeType::List, uint32_t(v.size()), 0, 1, {}, {}});
      for (const Value& item : v.items()) build(item, nodes);
      break;
    }
    case Kind::Dict: {
      Node n{NodeType::Dict, uint32_t(v.size()), 0, 1, {}, {}};
      n.display.resize(v.size());
      for (uint32_t pos = 0; pos < v.size(); ++pos) {
        n.keys.push_back(v.entries()[v.sorted()[pos]].first);
        n.display[v.sorted()[pos]] = pos;
      }
      nodes.push_back(std::move(n));
      for (uint32_t i : v.sorted()) build(v.entries()[i].second, nodes);
      break;
    }
    default: nodes.push_back(Node::leaf()); return;
  }
  // Fill subtree totals from the children that follow.
  uint32_t leaves = 0;
  size_t pos = at + 1;
  for (uint32_t c = 0; c < nodes[at].n_children; ++c) {
    leaves += nodes[pos].n_leaves;
    pos += nodes[pos].n_nodes;
  }
  nodes[at].n_leaves = leaves;
  nodes[at].n_nodes = uint32_t(pos - at);
}

// Start index (in nodes) of each child of the node at `at`.
std::vector<size_t> child_starts(const std::vector<Node>& nodes, size_t at) {
  std::vector<size_t> starts;
  size_t pos = at + 1;
  for (uint32_t c = 0; c < nodes[at].n_children; ++c) {
    starts.push_back(pos);
    pos += nodes[pos].n_nodes;
  }
  return starts;
}

Value rebuild(const std::vector<Node>& nodes, size_t& pos, const Value*& leaf) {
  const Node& n = nodes[pos++];
  switch (n.type) {
    case NodeType::Leaf: return *leaf++;
    case NodeType::Null: return Value();
    case NodeType::List: {
      std::vector<Value> items;
      items.reserve(n.n_children);
      for (uint32_t c = 0; c < n.n_children; ++c) items.push_back(rebuild(nodes, pos, leaf));
      return Value::list(std::move(items));
    }
    case NodeType::Dict: {
      std::vector<Value> children;
      children.reserve(n.n_children);
      for (uint32_t c = 0; c < n.n_children; ++c) children.push_back(rebuild(nodes, pos, leaf));
      std::vector<Entry> entries;
      entries.reserve(n.n_children);
      for (uint32_t c = 0; c < n.n_children; ++c) {
        uint32_t s = n.display.empty() ? c : n.display[c];
        entries.emplace_back(n.keys[s], std::move(children[s]));
      }
      return Value::dict(std::move(entries));
    }
  }
  return Value();
}

void describe(const std::vector<Node>& nodes, size_t& pos, std::string& out) {
  const Node& n = nodes[pos++];
  switch (n.type) {
    case NodeType::Leaf: out += '*'; return;
    case NodeType::Null: out += "null"; return;
    case NodeType::List:
      out += '[';
      for (uint32_t c = 0; c < n.n_children; ++c) {
        if (c) out += ", ";
        describe(nodes, pos, out);
      }
      out += ']';
      return;
    case NodeType::Dict:
      out += '{';
      for (uint32_t c = 0; c < n.n_children; ++c) {
        if (c) out += ", ";
        append_json_string(out, n.keys[c]);
        out += ": ";
        describe(nodes, pos, out);
      }
      out += '}';
      return;
  }
}

std::string shape_of(const Value& v) {
  switch (v.kind()) {
    case Kind::List: return "a list of " + std::to_string(v.size());
    case Kind::Dict: return "a dict";
    case Kind::Null: return "null";
    default: return std::string("a leaf (") + kind_name(v.kind()) + ")";
  }
}

std::string shape_of(const Node& n) {
  switch (n.type) {
    case NodeType::List: return "a list of " + std::to_string(n.n_children);
    case NodeType::Dict: return "a dict";
    case NodeType::Null: return "null";
    case NodeType::Leaf: return "a leaf";
  }
  return "?";
}

std::string keys_of(const std::vector<std::string>& keys) {
  std::string s = "{";
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i) s += ", ";
    append_json_string(s, keys[i]);
  }
  return s + "}";
}

// path + ["key"], the key written as a JSON string so quotes stay unambiguous.
std::string key_path(const std::string& path, const std::string& key) {
  std::string out = path + "[";
  append_json_string(out, key);
  return out + "]";
}

void check_at(const Value& v, const std::vector<Node>& nodes, size_t at, std::string path,
              const std::string& what, size_t& leaf_index, const LeafCheck& leaf) {
  const Node& n = nodes[at];
  auto mismatch = [&](const std::string& expected, const std::string& found) {
    invalid(what + path + ": expected " + expected + ", found " + found);
  };
  switch (n.type) {
    case NodeType::Leaf:
      // The leaf check sees non-leaves too, so it can name the kind it wanted.
      if (leaf) leaf(leaf_index, v, what + path);
      if (!v.is_leaf()) mismatch("a leaf", shape_of(v));
      ++leaf_index;
      return;
    case NodeType::Null:
      if (!v.is_null()) mismatch("null", shape_of(v));
      return;
    case NodeType::List: {
      if (v.kind() != Kind::List || v.size() != n.n_children) mismatch(shape_of(n), shape_of(v));
      auto starts = child_starts(nodes, at);
      for (size_t c = 0; c < starts.size(); ++c)
        check_at(v.items()[c], nodes, starts[c], path + "[" + std::to_string(c) + "]", what,
                 leaf_index, leaf);
      return;
    }
    case NodeType::Dict: {
      bool same = v.kind() == Kind::Dict && v.size() == n.n_children;
      for (size_t c = 0; same && c < n.n_children; ++c)
        same = v.entries()[v.sorted()[c]].first == n.keys[c];
      if (!same) {
        std::vector<std::string> found;
        for (uint32_t i : v.sorted()) found.push_back(v.entries()[i].first);
        mismatch("a dict with keys " + keys_of(n.keys),
                 v.kind() == Kind::Dict ? "a dict with keys " + keys_of(found) : shape_of(v));
      }
      auto starts = child_starts(nodes, at);
      for (size_t c = 0; c < starts.size(); ++c) {
        check_at(v.entries()[v.sorted()[c]].second, nodes, starts[c], key_path(path, n.keys[c]),
                 what, leaf_index, leaf);
      }
      return;
    }
  }
}

void broadcast_at(const Value& prefix, const std::vector<Node>& nodes, size_t at,
                  std::vector<Value>& out, const std::string& path, const std::string& what) {
  const Node& n = nodes[at];
  if (!prefix.is_container()) {
    // A leaf (or null) of the prefix covers the whole subtree.
    for (uint32_t i = 0; i < n.n_leaves; ++i) out.push_back(prefix);
    return;
  }
  auto starts = child_starts(nodes, at);
  if (prefix.kind() == Kind::List && n.type == NodeType::List && prefix.size() == n.n_children) {
    for (size_t c = 0; c < starts.size(); ++c)
      broadcast_at(prefix.items()[c], nodes, starts[c], out, path + "[" + std::to_string(c) + "]",
                   what);
    return;
  }
  if (prefix.kind() == Kind::Dict && n.type == NodeType::Dict && prefix.size() == n.n_children) {
    bool same = true;
    for (size_t c = 0; same && c < n.n_children; ++c)
      same = prefix.entries()[prefix.sorted()[c]].first == n.keys[c];
    if (same) {
      for (size_t c = 0; c < starts.size(); ++c)
        broadcast_at(prefix.entries()[prefix.sorted()[c]].second, nodes, starts[c], out,
                     key_path(path, n.keys[c]), what);
      return;
    }
  }
  invalid(what + " is not a prefix of the inputs' structure at " + (path.empty() ? "the root" : path) +
          ": it has " + shape_of(prefix) + " where the inputs have " + shape_of(n));
}

std::vector<Node> flat_list_nodes(size_t n) {
  std::vector<Node> nodes;
  nodes.reserve(n + 1);
  nodes.push_back(Node{NodeType::List, uint32_t(n), uint32_t(n), uint32_t(n + 1), {}, {}});
  for (size_t i = 0; i < n; ++i) nodes.push_back(Node::leaf());
  return nodes;
}

}  // namespace

TreeDef::Block::Block(std::vector<Node> n) : nodes(std::move(n)), hash(0), display(0) {
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& node = nodes[i];
    hash = hash_mix(hash, uint64_t(node.type) << 32 | node.n_children);
    for (const auto& k : node.keys) hash = hash_mix(hash, hash_bytes(k));
    for (uint32_t d = 0; d < node.display.size(); ++d)
      if (node.display[d] != d) display = hash_mix(display ^ i, uint64_t(d) << 32 | node.display[d]);
  }
}

// A leaf (leaf_block) and flat lists of fewer than 64 leaves are the shapes
// of nearly every equation's inputs and outputs: each is one immortal block,
// whichever way it was made (read without a lock once made).
const Shared<TreeDef::Block>* TreeDef::flat_list_block(size_t n) {
  static const auto* shared = [] {  // never destroyed, like the blocks
    auto* v = new std::vector<Shared<Block>>();
    for (size_t k = 0; k < 64; ++k) v->push_back(Shared<Block>::immortal(flat_list_nodes(k)));
    return v;
  }();
  return n < shared->size() ? &(*shared)[n] : nullptr;
}

TreeDef TreeDef::leaf() { return TreeDef(); }

TreeDef::TreeDef(std::vector<Node> nodes) {
  const bool flat = !nodes.empty() && nodes[0].type == NodeType::List &&
                    nodes.size() == size_t(nodes[0].n_leaves) + 1 && nodes[0].n_children == nodes[0].n_leaves;
  if (nodes.size() == 1 && nodes[0].type == NodeType::Leaf) nodes_ = leaf_block();
  else if (const Shared<Block>* shared = flat ? flat_list_block(nodes.size() - 1) : nullptr) nodes_ = *shared;
  else nodes_ = Shared<Block>::make(std::move(nodes));
}

TreeDef TreeDef::flat_list(size_t n) {
  const Shared<Block>* shared = flat_list_block(n);
  return shared ? TreeDef(*shared) : TreeDef(flat_list_nodes(n));
}

TreeDef TreeDef::list_of(std::span<const TreeDef> children) {
  std::vector<Node> nodes;
  nodes.push_back(Node{NodeType::List, uint32_t(children.size()), 0, 1, {}, {}});
  for (const TreeDef& c : children) {
    nodes.insert(nodes.end(), c.nodes().begin(), c.nodes().end());
    nodes[0].n_leaves += uint32_t(c.num_leaves());
  }
  nodes[0].n_nodes = uint32_t(nodes.size());
  return TreeDef(std::move(nodes));
}

TreeDef TreeDef::of(const Value& v) {
  if (v.is_leaf()) return TreeDef();
  std::vector<Node> nodes;
  build(v, nodes);
  return TreeDef(std::move(nodes));
}

TreeDef TreeDef::child(size_t i) const {
  const std::vector<Node>& all = nodes();
  auto starts = child_starts(all, 0);
  if (i >= starts.size()) fail(Code::Internal, "TreeDef::child out of range");
  auto first = all.begin() + long(starts[i]);
  return TreeDef(std::vector<Node>(first, first + all[starts[i]].n_nodes));
}

std::vector<TreeDef> TreeDef::children() const {
  // One pass over the children (child(i) for each i would be quadratic in
  // a wide tree: a switch with thousands of operands).
  std::vector<TreeDef> out;
  out.reserve(root().n_children);
  const std::vector<Node>& all = nodes();
  for (size_t start : child_starts(all, 0)) {
    auto first = all.begin() + long(start);
    out.push_back(TreeDef(std::vector<Node>(first, first + all[start].n_nodes)));
  }
  return out;
}

Value TreeDef::unflatten(std::span<const Value> leaves) const {
  if (leaves.size() != num_leaves())
    fail(Code::Internal, "unflatten: " + std::to_string(leaves.size()) + " leaves for a tree of " +
                             std::to_string(num_leaves()));
  size_t pos = 0;
  const Value* leaf = leaves.data();
  return rebuild(nodes(), pos, leaf);
}

bool TreeDef::same_nodes(const TreeDef& a, const TreeDef& b) noexcept {
  if (a.nodes_->hash != b.nodes_->hash) return false;
  const auto& x = a.nodes();
  const auto& y = b.nodes();
  if (x.size() != y.size()) return false;
  for (size_t i = 0; i < x.size(); ++i)
    if (x[i].type != y[i].type || x[i].n_children != y[i].n_children || x[i].keys != y[i].keys)
      return false;
  return true;
}


bool TreeDef::same_display(const TreeDef& a, const TreeDef& b) noexcept {
  const auto& x = a.nodes();
  const auto& y = b.nodes();
  // (An empty display is the sorted order.)
  auto at = [](const Node& n, uint32_t c) { return n.display.empty() ? c : n.display[c]; };
  for (size_t i = 0; i < x.size(); ++i)
    if (x[i].type == NodeType::Dict)
      for (uint32_t c = 0; c < x[i].n_children; ++c)
        if (at(x[i], c) != at(y[i], c)) return false;
  return true;
}

std::string TreeDef::to_string() const {
  std::string out;
  size_t pos = 0;
  describe(nodes(), pos, out);
  return out;
}

void flatten_into(const Value& v, std::vector<Value>& leaves) {
  switch (v.kind()) {
    case Kind::Null: return;
    case Kind::List:
      for (const Value& item : v.items()) flatten_into(item, leaves);
      return;
    case Kind::Dict:
      for (uint32_t i : v.sorted()) flatten_into(v.entries()[i].second, leaves);
      return;
    default: leaves.push_back(v);
  }
}

std::pair<std::vector<Value>, TreeDef> flatten(const Value& v) {
  std::vector<Value> leaves;
  flatten_into(v, leaves);
  return {std::move(leaves), TreeDef::of(v)};
}

void check_structure(const Value& v, const TreeDef& def, const std::string& what,
                     const LeafCheck& leaf) {
  size_t leaf_index = 0;
  check_at(v, def.nodes(), 0, "", what, leaf_index, leaf);
}

std::vector<Value> broadcast_prefix(const Value& prefix, const TreeDef& def,
                                    const std::string& what) {
  std::vector<Value> out;
  out.reserve(def.num_leaves());
  broadcast_at(prefix, def.nodes(), 0, out, "", what);
  return out;
}

}  // namespace af
