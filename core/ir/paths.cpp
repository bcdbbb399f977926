// Tree paths ("0/answer") and sub-IR paths ("branches/urgent"): how
// inspection, slicing and the CLI name parts of an IR (core/ir/query.h).
#include <charconv>

#include "ir/prim.h"
#include "ir/query.h"
#include "value/error.h"

namespace af {

namespace {

using NodeType = TreeDef::NodeType;

std::vector<std::string_view> split(std::string_view path) {
  std::vector<std::string_view> out;
  if (path.empty()) return out;
  size_t start = 0;
  for (;;) {
    size_t slash = path.find('/', start);
    out.push_back(path.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start));
    if (slash == std::string_view::npos) return out;
    start = slash + 1;
  }
}

// The child a segment names, or SIZE_MAX.
size_t child_index(const TreeDef::Node& n, std::string_view seg) {
  if (n.type == NodeType::List) {
    size_t i = 0;
    auto [end, ec] = std::from_chars(seg.data(), seg.data() + seg.size(), i);
    if (ec != std::errc() || end != seg.data() + seg.size() || seg.empty() || i >= n.n_children) return SIZE_MAX;
    return i;
  }
  if (n.type == NodeType::Dict)
    for (size_t i = 0; i < n.keys.size(); ++i)
      if (n.keys[i] == seg) return i;
  return SIZE_MAX;
}

void collect_paths(const TreeDef& t, const std::string& prefix, std::vector<std::string>& out) {
  const TreeDef::Node& n = t.root();
  if (n.type == NodeType::Leaf) {
    out.push_back(prefix);
    return;
  }
  std::vector<TreeDef> children = t.children();
  for (size_t c = 0; c < children.size(); ++c) {
    std::string seg = n.type == NodeType::Dict ? n.keys[c] : std::to_string(c);
    collect_paths(children[c], prefix.empty() ? seg : prefix + "/" + seg, out);
  }
}

}  // namespace

TreeSlot tree_at(const TreeDef& def, std::string_view path, const std::string& what) {
  TreeSlot slot{def, 0};
  std::string walked;
  for (std::string_view seg : split(path)) {
    const TreeDef::Node& n = slot.tree.root();
    size_t c = child_index(n, seg);
    if (c == SIZE_MAX)
      invalid(what + " path \"" + std::string(path) + "\": " +
              (walked.empty() ? std::string("the root") : "\"" + walked + "\"") + " has no " +
              (n.type == NodeType::List ? "item" : "key") + " \"" + std::string(seg) + "\" (it is " +
              slot.tree.to_string() + ")");
    for (size_t k = 0; k < c; ++k) slot.first_leaf += slot.tree.child(k).num_leaves();
    slot.tree = slot.tree.child(c);
    walked += (walked.empty() ? "" : "/") + std::string(seg);
  }
  return slot;
}

std::vector<std::string> leaf_paths(const TreeDef& def) {
  std::vector<std::string> out;
  collect_paths(def, "", out);
  return out;
}

std::vector<std::pair<std::string, IRPtr>> sub_irs(const Eqn& e) {
  std::vector<std::pair<std::string, IRPtr>> out;
  for (const auto& [name, p] : e.params.items()) {
    if (const auto* one = std::get_if<IRPtr>(&p)) out.emplace_back(name, *one);
    if (const auto* list = std::get_if<IRList>(&p))
      for (size_t k = 0; k < list->size(); ++k) out.emplace_back(name + "/" + std::to_string(k), (*list)[k]);
    if (const auto* map = std::get_if<IRMap>(&p))
      for (const auto& [key, ir] : *map) out.emplace_back(name + "/" + key, ir);
  }
  return out;
}

IRPtr sub_ir(const IR& ir, size_t i, std::string_view path) {
  if (i >= ir.eqns.size())
    invalid("equation index " + std::to_string(i) + " is out of range (the IR has " +
            std::to_string(ir.eqns.size()) + " equations)");
  std::string have;
  for (auto& [name, sub] : sub_irs(ir.eqns[i])) {
    if (name == path) return sub;
    have += (have.empty() ? "\"" : ", \"") + name + "\"";
  }
  fail(Code::NotFound, "equation " + std::to_string(i) + " (" + ir.eqns[i].prim->name + ") has no sub-IR \"" +
                           std::string(path) + "\" (" + (have.empty() ? "it has none" : "it has " + have) + ")");
}

}  // namespace af
