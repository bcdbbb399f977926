// Graphviz DOT of an IR's dataflow: input vars (boxes) -> equations
// (ellipses) -> outputs (double octagons). Static literal inputs are not
// drawn: no edge can leave them. Sub-IRs in params are not drawn either.
#include <string>

#include "ir/ir.h"
#include "ir/prim.h"

namespace af {

namespace {

// A DOT double-quoted string: quotes and backslashes escaped, newlines as
// DOT's centered line break `\n`.
std::string quoted(const std::string& s) {
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

std::string prim_label(const Prim* p) {
  if (!p) return "?";
  return p->version == 1 ? p->name : p->name + '@' + std::to_string(p->version);
}

}  // namespace

std::string to_dot(const IR& ir) {
  std::vector<size_t> def = defining_eqn(ir);
  std::vector<bool> is_input(ir.vars.size(), false);

  std::string out = "digraph ir {\n  rankdir=TB;\n";
  auto node = [&](const std::string& id, const char* shape, const std::string& label) {
    out += "  " + id + " [shape=" + shape + ", label=" + quoted(label) + "];\n";
  };
  auto kind = [&](VarId v) { return v < ir.vars.size() ? aval_name(ir.vars[v]) : std::string("?"); };

  for (const Atom& a : ir.in) {
    if (!a.is_var() || a.var >= is_input.size() || is_input[a.var]) continue;
    is_input[a.var] = true;
    node("v" + std::to_string(a.var), "box", "%" + std::to_string(a.var) + ":" + kind(a.var));
  }
  for (size_t i = 0; i < ir.eqns.size(); ++i) {
    const Eqn& e = ir.eqns[i];
    std::string label = prim_label(e.prim);
    if (e.tags() && !e.tags()->empty()) {
      label += "\n#";
      for (size_t t = 0; t < e.tags()->size(); ++t) label += (t ? "," : "") + (*e.tags())[t];
    }
    if (e.name_path() && !e.name_path()->empty()) label += "\nname: " + name_path_text(e.name_path());
    if (e.sched())
      label += "\nlevel " + std::to_string(e.sched()->level) + ", priority " +
               sched_number(e.sched()->priority);
    node("e" + std::to_string(i), "ellipse", label);
  }
  // Scheduled equations of one level share a rank, so the drawing shows the levels.
  std::vector<std::string> ranks;
  for (size_t i = 0; i < ir.eqns.size(); ++i) {
    if (!ir.eqns[i].sched()) continue;
    size_t level = ir.eqns[i].sched()->level;
    if (ranks.size() <= level) ranks.resize(level + 1);
    ranks[level] += " e" + std::to_string(i) + ";";
  }
  for (const std::string& r : ranks)
    if (!r.empty()) out += "  { rank=same;" + r + " }\n";
  for (size_t k = 0; k < ir.out.size(); ++k) {
    const Atom& a = ir.out[k];
    std::string k_name = a.is_var() ? kind(a.var) : aval_name(aval_of(a.lit));
    node("o" + std::to_string(k), "doubleoctagon", "out[" + std::to_string(k) + "]:" + k_name);
  }

  // The node that produces var v, or "" if nothing does (an invalid IR).
  auto producer = [&](VarId v) -> std::string {
    if (v >= def.size()) return "";
    if (def[v] != SIZE_MAX) return "e" + std::to_string(def[v]);
    return is_input[v] ? "v" + std::to_string(v) : "";
  };
  // One edge per input use: an equation reading the same var twice gets two
  // edges, so edge counts match the IR's atom counts.
  auto edge = [&](const Atom& a, const std::string& to) {
    if (!a.is_var()) return;
    std::string from = producer(a.var);
    if (!from.empty()) out += "  " + from + " -> " + to + ";\n";
  };
  for (size_t i = 0; i < ir.eqns.size(); ++i)
    for (const Atom& a : ir.eqns[i].in) edge(a, "e" + std::to_string(i));
  for (size_t k = 0; k < ir.out.size(); ++k) edge(ir.out[k], "o" + std::to_string(k));
  return out + "}\n";
}

}  // namespace af
