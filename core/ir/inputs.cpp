#include "ir/ir.h"
#include "value/error.h"
#include "value/error_value.h"

namespace af {

bool conforms(const Value& v, Aval a) {
  if (a.list_depth == 0) return v.kind() == a.kind;
  if (v.kind() != Kind::List) return false;
  for (const Value& item : v.items())
    if (!conforms(item, Aval{a.kind, uint8_t(a.list_depth - 1)})) return false;
  return true;
}

namespace {

using Node = TreeDef::Node;
using NodeType = TreeDef::NodeType;

// conforms, where an item of a list<T> may also be an error value (a
// failed batch item, passed on unrun by runs with per-item errors).
bool conforms_or_failed(const Value& v, Aval a, bool item_errors) {
  if (!item_errors || a.list_depth == 0 || v.kind() != Kind::List) return conforms(v, a);
  const Aval item{a.kind, uint8_t(a.list_depth - 1)};
  for (const Value& x : v.items())
    if (!is_error_value(x) && !conforms(x, item)) return false;
  return true;
}

std::string describe(const Value& v) {
  if (v.kind() == Kind::List) return "a list of " + std::to_string(v.size());
  if (v.kind() == Kind::Dict) return "a dict";
  return kind_name(v.kind());
}

// A tangent or cotangent given as null is Zero (docs/SEMANTICS.md §4):
// null leaves of v, at the depth of aval a's leaves, become zeros.
Value nulls_as_zero(const Value& v, Aval a) {
  if (a.list_depth == 0) return v.is_null() ? zero_value(a.kind) : v;
  if (v.kind() != Kind::List) return v;
  std::vector<Value> items;
  items.reserve(v.size());
  for (const Value& item : v.items()) items.push_back(nulls_as_zero(item, Aval{a.kind, uint8_t(a.list_depth - 1)}));
  return Value::list(std::move(items));
}

// Inputs of an IR with batched (list<...>) input slots or with tangent /
// cotangent slots: a leaf slot of aval list<T> takes a list, which is the
// leaf (not a container to descend); a tangent or cotangent slot takes null
// as Zero.
struct BatchedInputs {
  const IR& ir;
  bool allow_placeholders;
  bool item_errors;
  std::vector<Value>& leaves;
  std::vector<size_t> null_batches;  // tangent / cotangent leaves given as a whole null

  // Zeros shaped like `like` down to `depth` list levels.
  static Value zeros_shaped(const Value& like, int depth, Kind kind) {
    if (depth == 0 || like.kind() != Kind::List) return zero_value(kind);
    std::vector<Value> items;
    items.reserve(like.size());
    for (const Value& item : like.items()) items.push_back(zeros_shaped(item, depth - 1, kind));
    return Value::list(std::move(items));
  }

  // Each batched tangent / cotangent given as null becomes zeros shaped like
  // a batched input given as a value (batch_check then sees equal lengths).
  void fill_null_batches() {
    for (size_t k : null_batches) {
      const Aval want = ir.vars[ir.in[k].var];
      const Value* like = nullptr;
      for (size_t j = 0; j < leaves.size() && !like; ++j) {
        const Atom& a = ir.in[j];
        if (a.is_var() && ir.vars[a.var].list_depth >= want.list_depth && leaves[j].kind() == Kind::List)
          like = &leaves[j];
      }
      if (!like)
        invalid("input leaf " + std::to_string(k) + ": a batched " +
                (ir.input_role(k) == InputRole::Cotangent ? "cotangent" : "tangent") +
                " given as null needs another batched input to take its length from; give a list "
                "with a null item per batch element");
      leaves[k] = zeros_shaped(*like, want.list_depth, want.kind);
    }
  }

  void walk(const Value& v, const std::vector<Node>& nodes, size_t& pos, const std::string& path) {
    const Node& n = nodes[pos++];
    auto mismatch = [&](const std::string& expected) {
      invalid(path + ": expected " + expected + ", found " + describe(v));
    };
    switch (n.type) {
      case NodeType::Leaf: {
        const size_t leaf = leaves.size();
        const Atom& slot = ir.in[leaf];
        const InputRole role = ir.input_role(leaf);
        if (!slot.is_var()) {
          if (!(v == slot.lit))
            invalid("static input mismatch at " + path + ": expected " + to_json(slot.lit) +
                    ", got " + (v.kind() == Kind::Placeholder ? std::string("a traced value") : to_json(v)) +
                    " (static inputs are fixed when the program is traced)");
        } else {
          Aval want = ir.vars[slot.var];
          if (role != InputRole::Primal && v.is_null() && want.list_depth != 0) {
            // A whole batched slot given as null: Zero for every item, shaped
            // like another batched input once all are read (fill_null_batches).
            null_batches.push_back(leaves.size());
            leaves.push_back(v);
            return;
          }
          if (role != InputRole::Primal) {
            Value zeroed = nulls_as_zero(v, want);
            if (role == InputRole::Cotangent && zeroed.kind() != Kind::Placeholder && !conforms(zeroed, want))
              invalid(path + ": feedback must be text: expected " + aval_name(want) +
                      (want.list_depth ? " (one item per batch element; a null item for no feedback)"
                                       : " (or null for no feedback)") +
                      ", found " + describe(v));
            if (zeroed.kind() != Kind::Placeholder && conforms(zeroed, want)) {
              leaves.push_back(std::move(zeroed));
              return;
            }
          }
          if (v.kind() == Kind::Placeholder) {
            if (!allow_placeholders)
              invalid(path + ": a traced value (placeholder) cannot be run; it only exists inside its "
                      "trace. Pass a concrete value");
            // A traced list of any length may be given where list<T> is taken.
            if (!(aval_of(v) == want))
              invalid(path + ": expected " + aval_name(want) + ", found a traced " +
                      aval_name(aval_of(v)));
          } else if (!conforms_or_failed(v, want, item_errors)) {
            if (want.list_depth == 0 || v.kind() != Kind::List)
              mismatch(want.list_depth ? aval_name(want) +
                                             " (a list of any length, or a batched input: one item "
                                             "per batch element)"
                                       : aval_name(want));
            // Name the item that does not fit.
            std::string at = path;
            const Value* item = &v;
            Aval a = want;
            for (bool outer = true; a.list_depth != 0 && item->kind() == Kind::List; outer = false) {
              a.list_depth--;
              size_t i = 0;
              // Failed batch items (error values) fit where the run allows them.
              while (conforms(item->items()[i], a) || (outer && item_errors && is_error_value(item->items()[i]))) ++i;
              at += "[" + std::to_string(i) + "]";
              item = &item->items()[i];
            }
            invalid(at + ": expected " + aval_name(a) + ", found " + describe(*item) + " (in " +
                    path + ", a " + aval_name(want) + ")");
          }
        }
        leaves.push_back(v);
        return;
      }
      case NodeType::Null:
        if (!v.is_null()) mismatch("null");
        return;
      case NodeType::List: {
        if (v.kind() != Kind::List || v.size() != n.n_children)
          mismatch("a list of " + std::to_string(n.n_children));
        for (uint32_t c = 0; c < n.n_children; ++c)
          walk(v.items()[c], nodes, pos, path + "[" + std::to_string(c) + "]");
        return;
      }
      case NodeType::Dict: {
        bool same = v.kind() == Kind::Dict && v.size() == n.n_children;
        for (size_t c = 0; same && c < n.n_children; ++c)
          same = v.entries()[v.sorted()[c]].first == n.keys[c];
        if (!same) {
          std::string keys;
          for (size_t c = 0; c < n.keys.size(); ++c) {
            if (c) keys += ", ";
            append_json_string(keys, n.keys[c]);
          }
          mismatch("a dict with keys {" + keys + "}");
        }
        for (uint32_t c = 0; c < n.n_children; ++c) {
          std::string key;
          append_json_string(key, n.keys[c]);
          walk(v.entries()[v.sorted()[c]].second, nodes, pos, path + "[" + key + "]");
        }
        return;
      }
    }
  }
};

bool has_batched_inputs(const IR& ir) {
  for (const Atom& a : ir.in)
    if (a.is_var() && ir.vars[a.var].list_depth != 0) return true;
  return false;
}

}  // namespace

std::vector<Value> check_inputs(const IR& ir, std::span<const Value> inputs,
                                bool allow_placeholders, bool item_errors) {
  if (inputs.size() != ir.num_inputs())
    invalid("the program takes " + std::to_string(ir.num_inputs()) + " input(s), got " +
            std::to_string(inputs.size()));
  std::vector<Value> leaves;
  leaves.reserve(ir.in.size());
  if (has_batched_inputs(ir) || !ir.in_roles.empty()) {
    BatchedInputs walker{ir, allow_placeholders, item_errors, leaves, {}};
    const auto& nodes = ir.in_tree.nodes();
    size_t pos = 1;
    for (size_t i = 0; i < inputs.size(); ++i)
      walker.walk(inputs[i], nodes, pos, "input[" + std::to_string(i) + "]");
    walker.fill_null_batches();
    return leaves;
  }
  auto trees = ir.in_tree.children();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const size_t first = leaves.size();
    // Kinds and static values are checked leaf by leaf, with the path.
    auto check_leaf = [&](size_t k, const Value& got, const std::string& path) {
      const Atom& slot = ir.in[first + k];
      if (!slot.is_var()) {
        if (!(got == slot.lit))
          invalid("static input mismatch at " + path + ": expected " + to_json(slot.lit) +
                  ", got " + (got.kind() == Kind::Placeholder ? std::string("a traced value")
                                                             : to_json(got)) +
                  " (static inputs are fixed when the program is traced)");
        return;
      }
      if (got.kind() == Kind::Placeholder && !allow_placeholders)
        invalid(path + ": a traced value (placeholder) cannot be run; it only exists inside its "
                "trace. Pass a concrete value");
      Aval want = ir.vars[slot.var];
      Aval have = aval_of(got);
      if (!(want == have))
        invalid(path + ": expected " + aval_name(want) + ", found " + aval_name(have));
    };
    check_structure(inputs[i], trees[i], "input[" + std::to_string(i) + "]", check_leaf);
    flatten_into(inputs[i], leaves);
  }
  return leaves;
}

}  // namespace af
