// libFuzzer target: the saved-graph loader (af_ir_from_bytes and the core
// loader behind it). Modes and invariants: graph_harness.h. Build and run:
// `bash fuzz/run.sh BUILD_DIR SECONDS` (clang + ASan/UBSan; replays fuzz/regressions
// and the seed corpus, then fuzzes for half of SECONDS; CI: `bash fuzz/run.sh build-fuzz 120`).
#include <af/af.h>

#include "graph_harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static af_context_t* ctx = [] {
    af_context_t* c = nullptr;
    af_error_t* e = af_context_new(&c);
    if (e) std::abort();
    return c;
  }();
  // The public entry point on the raw bytes: never crashes, and agrees with
  // the core loader about success.
  af_ir_t* ir = nullptr;
  af_error_t* err = af_ir_from_bytes(ctx, data, size, &ir);
  if (!err == !ir) af::fuzz::finding("af_ir_from_bytes", "error and result disagree");
  if (err) {
    int32_t code = af_error_code(err);
    if (code != AF_ERR_FORMAT && code != AF_ERR_VERSION)
      af::fuzz::finding("af_ir_from_bytes", std::string("unexpected code: ") + af_error_message(err));
  }
  af_error_free(err);
  af_ir_free(ir);
  return af::fuzz::graph_one(data, size);
}
