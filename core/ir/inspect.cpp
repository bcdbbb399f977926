// JSON descriptions of an IR, its equations and its variables (format in
// docs/INSPECT.md): what a host reads to draw or analyse a graph without
// parsing the text form.
#include <algorithm>

#include "ir/effects.h"
#include "ir/prim.h"
#include "ir/query.h"
#include "value/error.h"

namespace af {

namespace {

// A literal as JSON; values JSON cannot hold (non-finite floats,
// placeholders) as {"unprintable": kind}, so describing never throws on them.
void append_lit(std::string& out, const Value& v) {
  try {
    std::string s = to_json(v);
    out += s;
  } catch (const Error&) {
    out += "{\"unprintable\":";
    append_json_string(out, kind_name(v.kind()));
    out += '}';
  }
}

std::string kind_of(const IR& ir, VarId v) {
  return v < ir.vars.size() ? aval_name(ir.vars[v]) : std::string("?");
}

void append_atom(std::string& out, const IR& ir, const Atom& a) {
  if (a.is_var()) {
    out += "{\"var\":" + std::to_string(a.var) + ",\"kind\":";
    append_json_string(out, kind_of(ir, a.var));
  } else {
    out += "{\"lit\":";
    append_lit(out, a.lit);
    out += ",\"kind\":";
    append_json_string(out, aval_name(aval_of(a.lit)));
  }
  out += '}';
}

void append_indices(std::string& out, const std::vector<size_t>& v) {
  out += '[';
  for (size_t k = 0; k < v.size(); ++k) out += (k ? "," : "") + std::to_string(v[k]);
  out += ']';
}

// Atoms with the path of each in `tree`.
void append_slots(std::string& out, const IR& ir, const std::vector<Atom>& atoms, const TreeDef& tree) {
  std::vector<std::string> paths = leaf_paths(tree);
  out += '[';
  for (size_t k = 0; k < atoms.size(); ++k) {
    if (k) out += ',';
    append_atom(out, ir, atoms[k]);
    out.pop_back();
    out += ",\"path\":";
    append_json_string(out, k < paths.size() ? paths[k] : std::string());
    out += '}';
  }
  out += ']';
}

struct Uses {
  std::vector<size_t> producer;              // SIZE_MAX: an input (or undefined)
  std::vector<std::vector<size_t>> consumers;  // sorted, unique
  std::vector<bool> is_output;
};

Uses uses_of(const IR& ir) {
  Uses u{defining_eqn(ir), std::vector<std::vector<size_t>>(ir.vars.size()), std::vector<bool>(ir.vars.size())};
  for (size_t j = 0; j < ir.eqns.size(); ++j)
    for (const Atom& a : ir.eqns[j].in)
      if (a.is_var() && a.var < u.consumers.size() && (u.consumers[a.var].empty() || u.consumers[a.var].back() != j))
        u.consumers[a.var].push_back(j);
  for (const Atom& a : ir.out)
    if (a.is_var() && a.var < u.is_output.size()) u.is_output[a.var] = true;
  return u;
}

void append_var(std::string& out, const IR& ir, const Uses& u, VarId v) {
  out += "{\"var\":" + std::to_string(v) + ",\"kind\":";
  append_json_string(out, kind_of(ir, v));
  out += ",\"producer\":";
  out += u.producer[v] == SIZE_MAX ? "null" : std::to_string(u.producer[v]);
  out += ",\"consumers\":";
  append_indices(out, u.consumers[v]);
  out += std::string(",\"output\":") + (u.is_output[v] ? "true" : "false") + '}';
}

void append_eqn(std::string& out, const IR& ir, size_t i, const std::vector<size_t>& producer) {
  const Eqn& e = ir.eqns[i];
  out += "{\"index\":" + std::to_string(i) + ",\"prim\":";
  append_json_string(out, e.prim->name);
  out += ",\"in\":[";
  for (size_t k = 0; k < e.in.size(); ++k) {
    if (k) out += ',';
    append_atom(out, ir, e.in[k]);
  }
  out += "],\"in_tree\":";
  append_json_string(out, e.in_tree.to_string());
  out += ",\"out\":[";
  for (size_t k = 0; k < e.out.size(); ++k) {
    if (k) out += ',';
    append_atom(out, ir, Atom::of_var(e.out[k]));
  }
  out += "],\"out_tree\":";
  append_json_string(out, e.out_tree.to_string());
  // Direct dependencies: the equations defining this one's input vars.
  std::vector<size_t> deps;
  for (const Atom& a : e.in)
    if (a.is_var() && a.var < producer.size() && producer[a.var] != SIZE_MAX) deps.push_back(producer[a.var]);
  std::sort(deps.begin(), deps.end());
  deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
  out += ",\"deps\":";
  append_indices(out, deps);
  // Whether it must run even when nothing reads it (ir/effects.h): compile
  // keeps it, never merges or memoizes it.
  out += eqn_has_effects(e) ? ",\"effects\":true" : ",\"effects\":false";
  // Value params as JSON; IR params by sub-IR path (af_ir_sub opens them).
  out += ",\"params\":{";
  bool first = true;
  for (const auto& [name, p] : e.params.items()) {
    if (!first) out += ',';
    first = false;
    append_json_string(out, name);
    out += ':';
    if (const auto* v = std::get_if<Value>(&p)) {
      append_lit(out, *v);
    } else if (std::holds_alternative<IRPtr>(p)) {
      out += "{\"sub\":";
      append_json_string(out, name);
      out += '}';
    } else if (const auto* list = std::get_if<IRList>(&p)) {
      out += "{\"subs\":[";
      for (size_t k = 0; k < list->size(); ++k) {
        if (k) out += ',';
        append_json_string(out, name + "/" + std::to_string(k));
      }
      out += "]}";
    } else {
      out += "{\"subs\":[";
      const auto& map = std::get<IRMap>(p);
      for (size_t k = 0; k < map.size(); ++k) {
        if (k) out += ',';
        append_json_string(out, name + "/" + map[k].first);
      }
      out += "]}";
    }
  }
  out += "},\"subs\":[";
  auto subs = sub_irs(e);
  for (size_t k = 0; k < subs.size(); ++k) {
    if (k) out += ',';
    append_json_string(out, subs[k].first);
  }
  out += "],\"tags\":[";
  if (e.tags())
    for (size_t k = 0; k < e.tags()->size(); ++k) {
      if (k) out += ',';
      append_json_string(out, (*e.tags())[k]);
    }
  out += "],\"name_path\":[";
  if (e.name_path())
    for (size_t k = 0; k < e.name_path()->size(); ++k) {
      if (k) out += ',';
      append_json_string(out, (*e.name_path())[k]);
    }
  out += ']';
  if (e.sched()) {
    out += ",\"sched\":{\"level\":" + std::to_string(e.sched()->level) + ",\"priority\":";
    append_lit(out, Value::floating(e.sched()->priority));
    out += '}';
  }
  out += '}';
}

void check_eqn(const IR& ir, size_t i) {
  if (i >= ir.eqns.size())
    invalid("equation index " + std::to_string(i) + " is out of range (the IR has " +
            std::to_string(ir.eqns.size()) + " equations)");
}

}  // namespace

std::string eqn_json(const IR& ir, size_t i) {
  check_eqn(ir, i);
  std::string out;
  append_eqn(out, ir, i, defining_eqn(ir));
  return out;
}

std::string var_json(const IR& ir, VarId v) {
  if (v >= ir.vars.size())
    invalid("variable %" + std::to_string(v) + " is out of range (the IR has " + std::to_string(ir.vars.size()) +
            " variables)");
  std::string out;
  append_var(out, ir, uses_of(ir), v);
  return out;
}

std::string ir_json(const IR& ir) {
  Uses u = uses_of(ir);
  std::string out = "{\"inputs\":";
  append_slots(out, ir, ir.in, ir.in_tree);
  out += ",\"in_tree\":";
  append_json_string(out, ir.in_tree.to_string());
  out += ",\"outputs\":";
  append_slots(out, ir, ir.out, ir.out_tree);
  out += ",\"out_tree\":";
  append_json_string(out, ir.out_tree.to_string());
  out += ",\"topological_order\":";
  append_indices(out, topological_order(ir));
  out += ",\n\"vars\":[";
  for (VarId v = 0; v < ir.vars.size(); ++v) {
    out += v ? ",\n" : "\n";
    append_var(out, ir, u, v);
  }
  out += "],\n\"eqns\":[";
  for (size_t i = 0; i < ir.eqns.size(); ++i) {
    out += i ? ",\n" : "\n";
    append_eqn(out, ir, i, u.producer);
  }
  out += "]}\n";
  return out;
}

}  // namespace af
