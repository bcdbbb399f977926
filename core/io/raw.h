// RawGraph: a saved graph as plain C++ data, one step from the flatbuffer.
// Pools hold each distinct thing once; IRs refer to them by index, as the
// schema does. Made from an IR (encode) or from the JSON form (json.cpp);
// written to a flatbuffer by write_flatbuffer. Nothing here is validated:
// every RawGraph is checked by the loader when its flatbuffer is read back.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "io/afg.h"
#include "ir/ir.h"

namespace af::io {

inline constexpr uint32_t kLiteralBit = 0x80000000u;

struct RawParam {
  std::string name;
  uint8_t kind = 0;            // index of the af::Param alternative
  uint32_t value = 0;          // Value: literal index; IR: IR index
  std::vector<uint32_t> irs;   // IR list / IR map
  std::vector<std::string> keys;  // IR map (sorted)
};

struct RawIr {
  std::vector<uint16_t> vars;  // kind | list_depth << 8
  std::vector<uint32_t> in_atoms;
  uint32_t in_tree = 0;
  std::vector<uint32_t> eqn_prim, eqn_in_end, eqn_in, eqn_in_tree, eqn_out_end, eqn_out,
      eqn_out_tree, eqn_params, eqn_tags;
  std::vector<uint32_t> out_atoms;
  uint32_t out_tree = 0;
  std::vector<uint32_t> eqn_sched_level;     // 0 = none, else level + 1
  std::vector<double> eqn_sched_priority;
  std::vector<uint8_t> in_roles;             // empty = every input primal
  std::vector<uint32_t> eqn_name_path;       // 0 = none, k = RawGraph::name_paths[k - 1]
  int64_t slice_items = 0;                   // IR::slice_items
  size_t n_eqns() const { return eqn_prim.size(); }
};

struct RawGraph {
  uint32_t format_version = 0;
  std::string producer;
  std::vector<std::pair<std::string, uint32_t>> prims;  // (name, version)
  std::vector<Value> literals;
  std::vector<TreeDef> trees;
  std::vector<std::vector<std::string>> tag_sets;
  std::vector<std::vector<RawParam>> param_sets;
  std::vector<RawIr> irs;  // the last one is the program
  std::vector<std::string> host_functions;
  std::optional<PlanData> plan;  // of the last IR
  std::vector<std::vector<std::string>> name_paths;
};

// IR -> RawGraph (pools deduplicated exactly; sub-IRs by pointer identity,
// children before parents). INVALID_ARGUMENT past a limit.
RawGraph encode(const IR& ir, const PlanData* plan = nullptr);
// RawGraph -> flatbuffer bytes. INVALID_ARGUMENT past a limit (depth of a
// value, an index too large).
std::string write_flatbuffer(const RawGraph& g);

// A flatbuffer (8-byte aligned) -> IR: the Verifier, every check of the
// bytes (decode.cpp) and of the IRs (the IR checker, core/ir/validate.h).
// Used by load() and the JSON form.
struct Loaded;
Loaded read_flatbuffer(const uint8_t* data, size_t size);

uint16_t pack_aval(const Aval& a);
Aval unpack_aval(uint16_t a);

}  // namespace af::io
