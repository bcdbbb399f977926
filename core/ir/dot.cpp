// Graphviz DOT of an IR's dataflow: input vars (boxes) -> equations
// (ellipses) -> outputs (double octagons). Static literal inputs are not
// drawn: no edge can leave them. Sub-IRs in params (switch branches, loop
// bodies, map bodies) are drawn as clusters, each distinct sub-IR once (a
// sub-IR shared by many equations is not drawn again per use, so the
// drawing stays linear in the graph of distinct sub-IRs); a dashed edge
// labelled with the param path (the branch name, "body", ...) leads from
// each equation holding it to its cluster. A host call is labelled with
// its function's name.
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/ir.h"
#include "ir/prim.h"
#include "ir/query.h"

namespace af {

namespace {

// A DOT double-quoted string: quotes and backslashes escaped, newlines as
// DOT's centered line break `\n`.
std::string dot_quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': break;
      default: out += c;
    }
  }
  return out + '"';
}

std::string prim_label(const Eqn& e) {
  if (!e.prim) return "?";
  std::string label = e.prim->version == 1 ? e.prim->name : e.prim->name + '@' + std::to_string(e.prim->version);
  // A tool call names its function.
  if (e.prim->name == "host_call")
    if (const Param* name = e.params.find("name"))
      if (auto* v = std::get_if<Value>(name); v && v->kind() == Kind::Str) label += " " + v->as_str();
  return label;
}

class Drawer {
 public:
  std::string draw(const IR& ir) {
    out_ = "digraph ir {\n  rankdir=TB;\n";
    body(ir, "", "  ");
    // Clusters, breadth first: drawing one may find further sub-IRs.
    for (size_t k = 0; k < clusters_.size(); ++k) {
      const std::string id = "s" + std::to_string(k);
      out_ += "  subgraph cluster_" + id + " {\n    label=" + dot_quoted(clusters_[k].label) + ";\n    style=rounded;\n";
      out_ += "    " + id + " [shape=point];\n";
      body(*clusters_[k].ir, id + "_", "    ");
      out_ += "  }\n";
    }
    return out_ + "}\n";
  }

 private:
  struct Cluster {
    const IR* ir;
    std::string label;  // the first equation holding it, and the path
  };

  // The cluster of sub-IR `sub`, made (and queued for drawing) on first use.
  std::string cluster(const IR* sub, const std::string& holder, const std::string& path) {
    auto [it, fresh] = index_.try_emplace(sub, clusters_.size());
    if (fresh) clusters_.push_back({sub, holder + ": " + path});
    return "s" + std::to_string(it->second);
  }

  void node(const std::string& indent, const std::string& id, const char* shape, const std::string& label) {
    out_ += indent + id + " [shape=" + shape + ", label=" + dot_quoted(label) + "];\n";
  }

  // The nodes and edges of one IR, ids prefixed (nothing at the top, so the
  // top level's ids are v<var>, e<eqn>, o<out>).
  void body(const IR& ir, const std::string& pre, const std::string& indent) {
    std::vector<size_t> def = defining_eqn(ir);
    std::vector<bool> is_input(ir.vars.size(), false);
    auto kind = [&](VarId v) { return v < ir.vars.size() ? aval_name(ir.vars[v]) : std::string("?"); };

    for (const Atom& a : ir.in) {
      if (!a.is_var() || a.var >= is_input.size() || is_input[a.var]) continue;
      is_input[a.var] = true;
      node(indent, pre + "v" + std::to_string(a.var), "box", "%" + std::to_string(a.var) + ":" + kind(a.var));
    }
    for (size_t i = 0; i < ir.eqns.size(); ++i) {
      const Eqn& e = ir.eqns[i];
      std::string label = prim_label(e);
      if (e.tags() && !e.tags()->empty()) {
        label += "\n#";
        for (size_t t = 0; t < e.tags()->size(); ++t) label += (t ? "," : "") + (*e.tags())[t];
      }
      if (e.name_path() && !e.name_path()->empty()) label += "\nname: " + name_path_text(e.name_path());
      if (e.sched())
        label += "\nlevel " + std::to_string(e.sched()->level) + ", priority " + sched_number(e.sched()->priority);
      node(indent, pre + "e" + std::to_string(i), "ellipse", label);
    }
    // Scheduled equations of one level share a rank, so the drawing shows the levels.
    std::vector<std::string> ranks;
    for (size_t i = 0; i < ir.eqns.size(); ++i) {
      if (!ir.eqns[i].sched()) continue;
      size_t level = ir.eqns[i].sched()->level;
      if (ranks.size() <= level) ranks.resize(level + 1);
      ranks[level] += " " + pre + "e" + std::to_string(i) + ";";
    }
    for (const std::string& r : ranks)
      if (!r.empty()) out_ += indent + "{ rank=same;" + r + " }\n";
    for (size_t k = 0; k < ir.out.size(); ++k) {
      const Atom& a = ir.out[k];
      std::string k_name = a.is_var() ? kind(a.var) : aval_name(aval_of(a.lit));
      node(indent, pre + "o" + std::to_string(k), "doubleoctagon", "out[" + std::to_string(k) + "]:" + k_name);
    }

    // The node that produces var v, or "" if nothing does (an invalid IR).
    auto producer = [&](VarId v) -> std::string {
      if (v >= def.size()) return "";
      if (def[v] != SIZE_MAX) return pre + "e" + std::to_string(def[v]);
      return is_input[v] ? pre + "v" + std::to_string(v) : "";
    };
    // One edge per input use: an equation reading the same var twice gets
    // two edges, so edge counts match the IR's atom counts.
    auto edge = [&](const Atom& a, const std::string& to) {
      if (!a.is_var()) return;
      std::string from = producer(a.var);
      if (!from.empty()) out_ += indent + from + " -> " + to + ";\n";
    };
    for (size_t i = 0; i < ir.eqns.size(); ++i)
      for (const Atom& a : ir.eqns[i].in) edge(a, pre + "e" + std::to_string(i));
    for (size_t k = 0; k < ir.out.size(); ++k) edge(ir.out[k], pre + "o" + std::to_string(k));
    // Each sub-IR an equation holds: a dashed edge to its cluster.
    for (size_t i = 0; i < ir.eqns.size(); ++i) {
      const std::string holder = pre + "e" + std::to_string(i);
      for (const auto& [path, sub] : sub_irs(ir.eqns[i]))
        out_ += indent + holder + " -> " + cluster(sub.get(), prim_label(ir.eqns[i]) + " " + holder, path) +
                " [style=dashed, label=" + dot_quoted(path) + "];\n";
    }
  }

  std::string out_;
  std::vector<Cluster> clusters_;
  std::unordered_map<const IR*, size_t> index_;
};

}  // namespace

std::string to_dot(const IR& ir) { return Drawer().draw(ir); }

}  // namespace af
