// The IR text form, specified in docs/IR_TEXT.md. The output is stable (tests
// and issues compare it), so any change here must be additive and documented.
#include <cmath>
#include <string>
#include <type_traits>
#include <unordered_map>

#include "ir/ir.h"
#include "ir/prim.h"
#include "value/error.h"

namespace af {

namespace {

using Node = TreeDef::Node;
using NodeType = TreeDef::NodeType;

// Compact JSON, plus readable tokens for the few values JSON cannot hold
// (non-finite floats, placeholders): a printer used to debug a bad IR must
// not throw on it.
void append_literal(std::string& out, const Value& v) {
  switch (v.kind()) {
    case Kind::Float: {
      double f = v.as_float();
      if (std::isfinite(f)) break;
      out += std::isnan(f) ? "nan" : f > 0 ? "inf" : "-inf";
      return;
    }
    case Kind::Placeholder: out += "<placeholder>"; return;
    case Kind::List: {
      out += '[';
      for (size_t i = 0; i < v.items().size(); ++i) {
        if (i) out += ',';
        append_literal(out, v.items()[i]);
      }
      out += ']';
      return;
    }
    case Kind::Dict: {
      out += '{';
      for (size_t i = 0; i < v.entries().size(); ++i) {
        if (i) out += ',';
        append_json_string(out, v.entries()[i].first);
        out += ':';
        append_literal(out, v.entries()[i].second);
      }
      out += '}';
      return;
    }
    default: break;
  }
  append_json(out, v);
}

std::string kind_of(const IR& ir, VarId v) {
  return v < ir.vars.size() ? aval_name(ir.vars[v]) : std::string("?");
}

void append_var(std::string& out, const IR& ir, VarId v, bool with_kind) {
  out += '%';
  out += std::to_string(v);
  if (with_kind) out += ':' + kind_of(ir, v);
}

void append_atom(std::string& out, const IR& ir, const Atom& a, bool with_kind) {
  if (a.is_var()) {
    append_var(out, ir, a.var, with_kind);
  } else {
    append_literal(out, a.lit);
  }
}

// Prints the subtree starting at nodes[pos] (advancing pos), taking leaves
// in order from `leaf(out)`.
template <class Leaf>
void append_tree(std::string& out, const std::vector<Node>& nodes, size_t& pos, Leaf& leaf) {
  const Node& n = nodes[pos++];
  switch (n.type) {
    case NodeType::Leaf: leaf(out); return;
    case NodeType::Null: out += "null"; return;
    case NodeType::List:
    case NodeType::Dict: {
      bool dict = n.type == NodeType::Dict;
      out += dict ? '{' : '[';
      for (uint32_t c = 0; c < n.n_children; ++c) {
        if (c) out += ", ";
        if (dict) {
          append_json_string(out, n.keys[c]);
          out += ": ";
        }
        append_tree(out, nodes, pos, leaf);
      }
      out += dict ? '}' : ']';
      return;
    }
  }
}

// Appends `def` with leaves printed by `print_leaf(out, k)`; when `unwrap`
// and the root is a list, prints its children comma-separated without the
// brackets (positional inputs).
template <class PrintLeaf>
void append_structure(std::string& out, const TreeDef& def, size_t n_leaves, bool unwrap,
                      const std::string& what, PrintLeaf print_leaf) {
  if (def.num_leaves() != n_leaves)
    invalid("to_text: " + what + " has " + std::to_string(n_leaves) + " leaves but its tree " +
            def.to_string() + " has " + std::to_string(def.num_leaves()));
  size_t k = 0;
  auto leaf = [&](std::string& o) { print_leaf(o, k++); };
  const auto& nodes = def.nodes();
  size_t pos = 0;
  if (!unwrap || def.root().type != NodeType::List) return append_tree(out, nodes, pos, leaf);
  pos = 1;
  for (uint32_t c = 0; c < def.root().n_children; ++c) {
    if (c) out += ", ";
    append_tree(out, nodes, pos, leaf);
  }
}

// Sub-IRs held by more than one param slot (docs/IR_TEXT.md, "Shared
// sub-IRs"): printed in full once, then by label, so the text grows with the
// distinct sub-IRs, not with the paths through a DAG of them.
struct SharedSubIRs {
  std::unordered_map<const IR*, uint32_t> slots;  // param slots holding each sub-IR
  std::unordered_map<const IR*, uint32_t> label;  // the ones printed so far

  explicit SharedSubIRs(const IR& root) { count(root); }

  void count(const IR& ir) {
    for (const Eqn& e : ir.eqns)
      e.params.any_ir([&](const IR& sub) {
        if (++slots[&sub] == 1) count(sub);
        return false;
      });
  }
};

void append_ir(std::string& out, const IR& ir, const std::string& indent, SharedSubIRs& shared);

}  // namespace

// A sched priority: integral values without a fraction ("3"), others in
// shortest round-trip JSON form ("2.5").
std::string sched_number(double d) {
  if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 1e15)
    return std::to_string(int64_t(d));
  std::string s;
  append_literal(s, Value::floating(d));
  return s;
}

namespace {

// A nested IR as `{`, its block two spaces deeper than `indent`, then `}`;
// a shared one as `&N {...}` the first time and `*N` after.
void append_nested(std::string& out, const IRPtr& ir, const std::string& indent, SharedSubIRs& shared) {
  if (!ir) {
    out += "null";
    return;
  }
  if (shared.slots[ir.get()] > 1) {
    auto [it, first] = shared.label.try_emplace(ir.get(), uint32_t(shared.label.size() + 1));
    if (!first) {
      out += '*' + std::to_string(it->second);
      return;
    }
    out += '&' + std::to_string(it->second) + ' ';
  }
  out += "{\n";
  append_ir(out, *ir, indent + "  ", shared);
  out += indent + '}';
}

void append_params(std::string& out, const Params& params, const std::string& indent,
                   SharedSubIRs& shared) {
  if (params.empty()) return;
  out += '[';
  bool first = true;
  for (const auto& [name, param] : params.items()) {
    if (!first) out += ", ";
    first = false;
    out += name + '=';
    std::visit(
        [&](const auto& p) {
          using T = std::decay_t<decltype(p)>;
          if constexpr (std::is_same_v<T, Value>) {
            append_literal(out, p);
          } else if constexpr (std::is_same_v<T, IRPtr>) {
            append_nested(out, p, indent, shared);
          } else if constexpr (std::is_same_v<T, IRList>) {
            out += '[';
            for (size_t i = 0; i < p.size(); ++i) {
              if (i) out += ", ";
              append_nested(out, p[i], indent, shared);
            }
            out += ']';
          } else {
            out += '{';
            for (size_t i = 0; i < p.size(); ++i) {
              if (i) out += ", ";
              append_json_string(out, p[i].first);
              out += ": ";
              append_nested(out, p[i].second, indent, shared);
            }
            out += '}';
          }
        },
        param);
  }
  out += ']';
}

void append_eqn(std::string& out, const IR& ir, size_t i, const std::string& indent,
                SharedSubIRs& shared) {
  const Eqn& e = ir.eqns[i];
  const std::string what = "equation " + std::to_string(i);
  out += indent;
  append_structure(out, e.out_tree, e.out.size(), false, what + " output",
                   [&](std::string& o, size_t k) { append_var(o, ir, e.out[k], true); });
  out += " = ";
  if (!e.prim) {
    out += '?';
  } else {
    out += e.prim->name;
    // Version 1 is the norm; any other version is part of the identity.
    if (e.prim->version != 1) out += '@' + std::to_string(e.prim->version);
  }
  append_params(out, e.params, indent, shared);
  out += '(';
  // Positional subtrees; for the usual flat list of leaves that is `a, b, c`.
  append_structure(out, e.in_tree, e.in.size(), true, what + " input",
                   [&](std::string& o, size_t k) { append_atom(o, ir, e.in[k], false); });
  out += ')';
  if (e.tags() && !e.tags()->empty()) {
    out += " #";
    for (size_t t = 0; t < e.tags()->size(); ++t) {
      if (t) out += ',';
      out += (*e.tags())[t];
    }
  }
  if (e.name_path() && !e.name_path()->empty()) {
    out += " @name=";
    append_json_string(out, name_path_text(e.name_path()));
  }
  if (e.sched()) out += " @level=" + std::to_string(e.sched()->level) + " @priority=" + sched_number(e.sched()->priority);
  out += '\n';
}

void append_ir(std::string& out, const IR& ir, const std::string& indent, SharedSubIRs& shared) {
  out += indent + "ir (";
  append_structure(out, ir.in_tree, ir.in.size(), true, "IR input",
                   [&](std::string& o, size_t k) { append_atom(o, ir, ir.in[k], true); });
  out += ')';
  if (ir.slice_items) out += " @slices=" + std::to_string(ir.slice_items);
  out += " {\n";
  for (size_t i = 0; i < ir.eqns.size(); ++i) append_eqn(out, ir, i, indent + "  ", shared);
  out += indent + "  return ";
  append_structure(out, ir.out_tree, ir.out.size(), false, "IR output",
                   [&](std::string& o, size_t k) { append_atom(o, ir, ir.out[k], false); });
  out += '\n' + indent + "}\n";
}

}  // namespace

std::string to_text(const IR& ir) {
  std::string out;
  SharedSubIRs shared(ir);
  append_ir(out, ir, "", shared);
  return out;
}

}  // namespace af
