// Inspection and graph queries over an IR (the C API's af_ir_json family,
// `af show --json`, `af slice`, `af cost`). Plain functions of the IR: no
// execution, no registry beyond the Prim each equation names.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ir/ir.h"

namespace af {

// ---- paths into trees and sub-IRs
//
// A tree path names a subtree of an input or output structure: segments
// joined by '/', a list index or a dict key each ("0/answer"); "" is the
// whole tree. A sub-IR path names an IR an equation's params hold: the
// param name ("body"), then the list index or map key for a list or map of
// IRs ("branches/urgent").

struct TreeSlot {
  TreeDef tree;        // the subtree
  size_t first_leaf;   // its first leaf in the flat leaves of the whole tree
};
// INVALID_ARGUMENT naming `what` and the path when it does not exist.
TreeSlot tree_at(const TreeDef& def, std::string_view path, const std::string& what);
// The path of every leaf of def, in flat order.
std::vector<std::string> leaf_paths(const TreeDef& def);

// Each sub-IR of e's params with its path, in param order.
std::vector<std::pair<std::string, IRPtr>> sub_irs(const Eqn& e);
// The sub-IR at `path` of equation i; INVALID_ARGUMENT listing the paths
// there are when there is none.
IRPtr sub_ir(const IR& ir, size_t i, std::string_view path);

// ---- JSON descriptions (format in docs/INSPECT.md)

std::string eqn_json(const IR& ir, size_t i);
std::string var_json(const IR& ir, VarId v);
std::string ir_json(const IR& ir);

// ---- dependency queries

// Ancestors (`up`) or descendants of equation i, as JSON:
// {"eqns": [indices]} and, when `deep`, also "nested": the path of every
// equation inside the sub-IRs of those equations ("3/body/0"). Without
// `deep` the query stops at sub-IR boundaries. An answer of more than
// max_bytes (counted on the graph of distinct sub-IRs, before anything is
// built) is INVALID_ARGUMENT.
inline constexpr uint64_t kDefaultInspectBytes = uint64_t(64) << 20;
std::string related_json(const IR& ir, size_t i, bool up, bool deep, uint64_t max_bytes = kDefaultInspectBytes);

// The part of ir that computes the outputs at `outputs` (tree paths into
// the output structure) from the inputs at `inputs` (tree paths into the
// input structure). The result's output is the list of the chosen
// subtrees; its input is the list of the chosen subtrees, or ir's own
// inputs when `all_inputs`. Only the equations those outputs need are kept
// (effects elsewhere are dropped). INVALID_ARGUMENT naming the output and
// the input leaf when the chosen inputs do not suffice.
IRPtr slice(const IR& ir, const std::vector<std::string>& outputs, const std::vector<std::string>& inputs,
            bool all_inputs);

// ---- dry-run cost (format in docs/INSPECT.md)

// LM calls per model ("dynamic" when the model is not a literal), in total
// for `batch` examples and along the critical path (the longest chain of
// calls one example waits through). Loops count max_iters passes, a choice
// of sub-IRs (switch branches) its costliest one.
std::string cost_json(const IR& ir, int64_t batch);

}  // namespace af
