// The body of the graph-loader fuzz target, shared with the regression test
// (tests/core/io_fuzz_regression_test.cpp) so every saved crash is replayed
// by ctest too. The first byte picks what the rest is:
//   0: a whole .afg file (header, zstd, flatbuffer);
//   1: a bare flatbuffer, sealed here with a valid header and checksum, so
//      mutations reach the verifier and the semantic checks;
//   2: the JSON form.
// Whatever loads (a program's plan included) must also print, save, load
// again equal, and save to the same bytes; anything else must be a FORMAT or VERSION error. A broken
// invariant aborts (a finding).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "exec/program.h"
#include "io/afg.h"
#include "value/error.h"

namespace af::fuzz {

[[noreturn]] inline void finding(const char* what, const std::string& detail) {
  std::fprintf(stderr, "graph fuzz finding: %s: %s\n", what, detail.c_str());
  std::abort();
}

// A program's plan is checked by exec (program_from_plan): FORMAT or a
// program that saves back to the same plan.
inline const io::PlanData* check_plan(const io::Loaded& g) {
  if (!g.plan) return nullptr;
  const io::PlanData& d = *g.plan;
  auto prog = program_from_plan(g.ir, d);
  SavedPlan back = save_plan(*prog);
  if (back.live != d.live || back.priority != d.priority) finding("a loaded plan does not save back", "");
  if (d.sliced && (!back.sliced || back.sliced->live != d.sliced->live || back.sliced->priority != d.sliced->priority))
    finding("a loaded sliced plan does not save back", "");
  return &d;
}

inline void check_loaded(const io::Loaded& g) {
  const IRPtr& ir = g.ir;
  const io::PlanData* plan = check_plan(g);
  std::string text = to_text(*ir);
  (void)to_dot(*ir);
  std::string bytes;
  try {
    bytes = io::save_ir(*ir, plan);
  } catch (const Error& e) {
    // A loaded graph is within every limit, so it must save.
    finding("a loaded graph does not save", e.what());
  }
  io::Loaded again = io::load({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
  if (!ir_equal(*ir, *again.ir) || to_text(*again.ir) != text) finding("reload differs", text);
  if (io::save_ir(*again.ir, again.plan ? &*again.plan : nullptr) != bytes)
    finding("saving is not deterministic", text);
  std::string json = io::graph_to_json(*ir, plan);
  io::Loaded from_json = io::graph_from_json(json);
  if (io::save_ir(*from_json.ir, from_json.plan ? &*from_json.plan : nullptr) != bytes)
    finding("the JSON form does not round trip", json);
}

// Returns 0 always (libFuzzer's convention); aborts on a finding.
inline int graph_one(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0] % 3;
  std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    io::Loaded g;
    if (mode == 0) {
      g = io::load({data + 1, size - 1});
    } else if (mode == 1) {
      std::string sealed = io::seal(rest);
      g = io::load({reinterpret_cast<const uint8_t*>(sealed.data()), sealed.size()});
    } else {
      g = io::graph_from_json(rest);
    }
    check_loaded(g);
  } catch (const Error& e) {
    bool expected = e.code() == Code::Format || e.code() == Code::Version ||
                    (mode == 1 && e.code() == Code::InvalidArgument);  // seal's size cap
    if (!expected) finding("unexpected error code", std::to_string(int(e.code())) + ": " + e.what());
  }
  return 0;
}

}  // namespace af::fuzz
