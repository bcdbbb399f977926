// Cut: what an evaluation cuts out of the pending nodes it claimed (core/lazy
// graph.h), enough to find and confirm a cached program without building
// its IR, and to build the IR on a miss.
//
// Variables are numbered in the order the IR gets them: per node, its inputs
// that are not results of this cut (concrete leaves, results of earlier
// evaluations: the IR's inputs), then its outputs. An output is an output of
// the IR only when someone outside the cut still holds its promise (or the
// node is observable, so that compile keeps it): a chain then keeps no
// intermediate result alive, and strings are appended in place.
//
// The cut is also written as its signature (`code`), exact for the IR it
// makes: per node its Shape's id (lazy/shapes.h) and each input's variable
// (a new input variable followed by its kind, a literal as kLiteral), then
// the output variables and the two counts. Equal signatures make equal IRs,
// so a cached program stored with one is confirmed by comparing arrays
// (PlanCache::find): a hit builds no IR and compares no structure.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "lazy/graph.h"

namespace af::lazy {

struct Cut {
  static constexpr uint32_t kLiteral = UINT32_MAX;
  std::vector<Node*> nodes;     // one equation each, in order
  std::vector<Aval> vars;       // per variable
  std::vector<uint32_t> uses;   // per variable: uses by nodes of the cut
  // The IR's inputs, in order (held by the claimed nodes; the run copies them).
  std::vector<const Value*> inputs;
  std::vector<VarId> in_vars, out_vars;
  std::vector<uint32_t> code;   // the signature
  uint64_t key = 0;             // the plan cache's key: the signature's hash

  // The nodes of `batch` (claimed, in recording order) not failed by an
  // earlier failure: a node whose input failed gets that error here and is
  // left out. Sets each cut node's first_var (the claimer resets it).
  explicit Cut(const std::vector<std::shared_ptr<Node>>& batch);

  IRPtr build() const;

 private:
  VarId new_var(Aval a) {
    vars.push_back(a);
    uses.push_back(0);
    return VarId(vars.size() - 1);
  }
};

}  // namespace af::lazy
