// libFuzzer target: JSON text -> value (af_value_from_json and the core
// parser behind it). Invariants: value_json_harness.h. Run with the others
// by `bash fuzz/run.sh BUILD_DIR SECONDS`.
#include <af/af.h>

#include "value_json_harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static af_context_t* ctx = [] {
    af_context_t* c = nullptr;
    if (af_context_new(&c)) std::abort();
    return c;
  }();
  // The public entry point agrees with the core parser, and prints what it
  // parsed the same way.
  af_value_t* v = nullptr;
  af_error_t* err = af_value_from_json(ctx, reinterpret_cast<const char*>(data), size, &v);
  const bool parsed = af::fuzz::value_json_one(data, size);
  if (!err != parsed || !err != !!v) af::fuzz::value_finding("af_value_from_json", "disagrees with the core parser");
  if (err && af_error_code(err) != AF_ERR_INVALID_ARGUMENT)
    af::fuzz::value_finding("af_value_from_json", std::string("unexpected code: ") + af_error_message(err));
  if (v) {
    af_bytes_t out{nullptr, 0};
    af_error_t* e = af_value_to_json(v, &out);
    std::string core = af::to_json(af::from_json({reinterpret_cast<const char*>(data), size}));
    if (e || std::string_view(reinterpret_cast<const char*>(out.data), out.len) != core)
      af::fuzz::value_finding("af_value_to_json", "differs from the core printer");
    af_bytes_free(&out);
  }
  af_error_free(err);
  af_value_free(v);
  return 0;
}
