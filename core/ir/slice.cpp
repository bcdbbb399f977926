// Reachability across sub-IR boundaries and slicing: the part of an IR that
// computes chosen outputs from chosen inputs (core/ir/query.h).
#include <algorithm>
#include <unordered_map>

#include "ir/prim.h"
#include "ir/query.h"
#include "value/error.h"

namespace af {

namespace {

// A deep query names every equation inside the sub-IRs once per path to it,
// so its answer grows with the program expanded through shared sub-IRs: it
// is refused past this many paths (docs/INSPECT.md).
constexpr uint64_t kMaxNestedPaths = uint64_t(1) << 20;

// What nested_paths would list for an IR: how many paths, and their bytes
// as JSON string content (a long branch name repeats in every path below
// it). Counted on the DAG (each distinct sub-IR once), saturating.
struct NestedSize {
  uint64_t paths = 0;
  uint64_t bytes = 0;
};

uint64_t saturating_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }
uint64_t saturating_mul(uint64_t a, uint64_t b) { return b && a > UINT64_MAX / b ? UINT64_MAX : a * b; }

// The escaped length of a path segment (as append_json_string writes it).
uint64_t json_length(std::string_view s) {
  std::string q;
  append_json_string(q, s);
  return q.size() - 2;
}

// sub's paths listed under `prefix_bytes` bytes of prefix each.
void add_under(NestedSize& n, const NestedSize& sub, uint64_t prefix_bytes) {
  n.paths = saturating_add(n.paths, sub.paths);
  n.bytes = saturating_add(n.bytes, saturating_add(saturating_mul(sub.paths, prefix_bytes), sub.bytes));
}

NestedSize nested_size(const IR& ir, std::unordered_map<const IR*, NestedSize>& sized) {
  NestedSize n;
  for (size_t j = 0; j < ir.eqns.size(); ++j) {
    const uint64_t digits = std::to_string(j).size();
    add_under(n, NestedSize{1, 0}, digits);
    for (const auto& [name, sub] : sub_irs(ir.eqns[j])) {
      auto it = sized.find(sub.get());
      if (it == sized.end()) it = sized.emplace(sub.get(), nested_size(*sub, sized)).first;
      add_under(n, it->second, digits + 1 + json_length(name) + 1);  // "j/name/"
    }
  }
  return n;
}

// The path of every equation inside ir, recursively, each prefixed.
void nested_paths(const IR& ir, const std::string& prefix, std::vector<std::string>& out) {
  for (size_t j = 0; j < ir.eqns.size(); ++j) {
    std::string here = prefix + std::to_string(j);
    out.push_back(here);
    for (const auto& [name, sub] : sub_irs(ir.eqns[j])) nested_paths(*sub, here + "/" + name + "/", out);
  }
}

}  // namespace

std::string related_json(const IR& ir, size_t i, bool up, bool deep, uint64_t max_bytes) {
  std::vector<size_t> eqns = up ? ancestors(ir, i) : descendants(ir, i);
  std::string out = "{\"eqns\":[";
  for (size_t k = 0; k < eqns.size(); ++k) out += (k ? "," : "") + std::to_string(eqns[k]);
  out += ']';
  if (deep) {
    std::unordered_map<const IR*, NestedSize> sized;
    NestedSize n;
    for (size_t j : eqns)
      for (const auto& [name, sub] : sub_irs(ir.eqns[j]))
        add_under(n, nested_size(*sub, sized), std::to_string(j).size() + 1 + json_length(name) + 1);
    if (n.paths > kMaxNestedPaths)
      invalid("related: a deep query would list more than " + std::to_string(kMaxNestedPaths) +
              " nested equations (sub-IRs shared along many paths repeat on each); open the "
              "sub-IRs one at a time instead");
    // The answer's exact size: what is written so far, ,"nested":[ and ]},
    // each path quoted, commas between them.
    const uint64_t framing = out.size() + 11 + 2 + (n.paths ? n.paths - 1 : 0);
    const uint64_t total = saturating_add(saturating_add(framing, n.bytes), saturating_mul(n.paths, 2));
    if (total > max_bytes)
      invalid("related: a deep query's answer would be " + (total == UINT64_MAX ? std::string("over 2^64") : std::to_string(total)) +
              " bytes, over the limit of " + std::to_string(max_bytes) +
              " (long sub-IR names repeat in every path below them); open the sub-IRs one at a time, or raise "
              "max_bytes with af_ir_related_json_with");
    std::vector<std::string> paths;
    for (size_t j : eqns)
      for (const auto& [name, sub] : sub_irs(ir.eqns[j])) nested_paths(*sub, std::to_string(j) + "/" + name + "/", paths);
    out += ",\"nested\":[";
    for (size_t k = 0; k < paths.size(); ++k) {
      if (k) out += ',';
      append_json_string(out, paths[k]);
    }
    out += ']';
  }
  return out + "}";
}

IRPtr slice(const IR& ir, const std::vector<std::string>& outputs, const std::vector<std::string>& inputs,
            bool all_inputs) {
  if (outputs.empty()) invalid("slice: choose at least one output");
  std::vector<size_t> def = defining_eqn(ir);
  std::vector<std::string> in_paths = leaf_paths(ir.in_tree);

  // The chosen inputs: their leaves become the slice's inputs.
  std::vector<Atom> new_in;
  std::vector<TreeDef> in_trees;
  std::vector<bool> available(ir.vars.size(), false);
  auto take_inputs = [&](size_t first, const TreeDef& t) {
    for (size_t k = first; k < first + t.num_leaves(); ++k) {
      new_in.push_back(ir.in[k]);
      if (ir.in[k].is_var() && ir.in[k].var < available.size()) available[ir.in[k].var] = true;
    }
  };
  if (all_inputs) {
    take_inputs(0, ir.in_tree);
  } else {
    for (const std::string& p : inputs) {
      TreeSlot s = tree_at(ir.in_tree, p, "slice: input");
      take_inputs(s.first_leaf, s.tree);
      in_trees.push_back(s.tree);
    }
  }
  std::vector<size_t> in_leaf_of(ir.vars.size(), SIZE_MAX);  // for the error message
  for (size_t k = 0; k < ir.in.size(); ++k)
    if (ir.in[k].is_var() && ir.in[k].var < in_leaf_of.size() && in_leaf_of[ir.in[k].var] == SIZE_MAX)
      in_leaf_of[ir.in[k].var] = k;

  // Mark the needed equations walking back from each chosen output, so an
  // input the chosen ones lack is reported with the output that needs it.
  std::vector<bool> needed(ir.eqns.size(), false);
  std::vector<Atom> new_out;
  std::vector<TreeDef> out_trees;
  for (const std::string& p : outputs) {
    TreeSlot s = tree_at(ir.out_tree, p, "slice: output");
    out_trees.push_back(s.tree);
    std::vector<VarId> stack;
    for (size_t k = s.first_leaf; k < s.first_leaf + s.tree.num_leaves(); ++k) {
      new_out.push_back(ir.out[k]);
      if (ir.out[k].is_var()) stack.push_back(ir.out[k].var);
    }
    std::vector<bool> seen(ir.vars.size(), false);
    while (!stack.empty()) {
      VarId v = stack.back();
      stack.pop_back();
      if (v >= ir.vars.size() || seen[v]) continue;
      seen[v] = true;
      if (def[v] == SIZE_MAX) {
        if (available[v]) continue;
        std::string leaf = in_leaf_of[v] == SIZE_MAX ? "%" + std::to_string(v) : "\"" + in_paths[in_leaf_of[v]] + "\"";
        invalid("slice: output \"" + p + "\" needs input " + leaf + " (%" + std::to_string(v) + ", " +
                aval_name(ir.vars[v]) + "), which is not among the chosen inputs");
      }
      needed[def[v]] = true;
      for (const Atom& a : ir.eqns[def[v]].in)
        if (a.is_var()) stack.push_back(a.var);
    }
  }

  // Renumber in order of definition: inputs first, then equation outputs.
  auto out_ir = std::make_shared<IR>();
  std::vector<VarId> renum(ir.vars.size(), kNoVar);
  auto fresh = [&](VarId v) {
    if (renum[v] == kNoVar) {
      renum[v] = static_cast<VarId>(out_ir->vars.size());
      out_ir->vars.push_back(ir.vars[v]);
    }
    return renum[v];
  };
  auto map_atom = [&](const Atom& a) { return a.is_var() ? Atom::of_var(renum[a.var]) : a; };
  for (Atom& a : new_in)
    if (a.is_var()) a = Atom::of_var(fresh(a.var));
  for (size_t j : topological_order(ir)) {
    if (!needed[j]) continue;
    Eqn e = ir.eqns[j];
    for (Atom& a : e.in) a = map_atom(a);
    for (VarId& v : e.out) v = fresh(v);
    if (e.sched()) e.set_sched(std::nullopt);  // levels and priorities were the whole program's
    out_ir->eqns.push_back(std::move(e));
  }
  for (Atom& a : new_out) a = map_atom(a);
  out_ir->in = std::move(new_in);
  out_ir->in_tree = all_inputs ? ir.in_tree : TreeDef::list_of(in_trees);
  if (all_inputs) {
    set_input_roles(*out_ir, input_roles(ir));
  } else {
    std::vector<InputRole> roles;
    std::vector<InputRole> old = input_roles(ir);
    for (const std::string& p : inputs) {
      TreeSlot s = tree_at(ir.in_tree, p, "slice: input");
      for (size_t k = s.first_leaf; k < s.first_leaf + s.tree.num_leaves(); ++k) roles.push_back(old[k]);
    }
    set_input_roles(*out_ir, std::move(roles));
  }
  out_ir->out = std::move(new_out);
  out_ir->out_tree = TreeDef::list_of(out_trees);
  validate(*out_ir);
  return out_ir;
}

}  // namespace af
