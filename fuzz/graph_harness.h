// The body of the graph-loader fuzz target, shared with the regression test
// (tests/core/io_fuzz_regression_test.cpp) so every saved crash is replayed
// by ctest too. The first byte picks what the rest is:
//   0: a whole .afg file (header, zstd, flatbuffer);
//   1: a bare flatbuffer, sealed here with a valid header and checksum, so
//      mutations reach the verifier and the semantic checks;
//   2: the JSON form.
// Whatever loads must also print, save, load again equal, and save to the
// same bytes; anything else must be a FORMAT or VERSION error. A broken
// invariant aborts (a finding).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "io/afg.h"
#include "value/error.h"

namespace af::fuzz {

[[noreturn]] inline void finding(const char* what, const std::string& detail) {
  std::fprintf(stderr, "graph fuzz finding: %s: %s\n", what, detail.c_str());
  std::abort();
}

inline void check_loaded(const IRPtr& ir) {
  std::string text = to_text(*ir);
  (void)to_dot(*ir);
  std::string bytes;
  try {
    bytes = io::save_ir(*ir);
  } catch (const Error& e) {
    // A loaded graph is within every limit, so it must save.
    finding("a loaded graph does not save", e.what());
  }
  IRPtr again = io::load_ir({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
  if (!ir_equal(*ir, *again) || to_text(*again) != text) finding("reload differs", text);
  if (io::save_ir(*again) != bytes) finding("saving is not deterministic", text);
  std::string json = io::graph_to_json(*ir);
  if (io::save_ir(*io::graph_from_json(json).ir) != bytes) finding("the JSON form does not round trip", json);
}

// Returns 0 always (libFuzzer's convention); aborts on a finding.
inline int graph_one(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0] % 3;
  std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    IRPtr ir;
    if (mode == 0) {
      ir = io::load_ir({data + 1, size - 1});
    } else if (mode == 1) {
      std::string sealed = io::seal(rest);
      ir = io::load_ir({reinterpret_cast<const uint8_t*>(sealed.data()), sealed.size()});
    } else {
      ir = io::graph_from_json(rest).ir;
    }
    check_loaded(ir);
  } catch (const Error& e) {
    bool expected = e.code() == Code::Format || e.code() == Code::Version ||
                    (mode == 1 && e.code() == Code::InvalidArgument);  // seal's size cap
    if (!expected) finding("unexpected error code", std::to_string(int(e.code())) + ": " + e.what());
  }
  return 0;
}

}  // namespace af::fuzz
