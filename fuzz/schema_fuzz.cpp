// libFuzzer target: a structured-output schema (JSON, as a user gives it)
// and a reply (as an endpoint sends it), through the validator of
// lm_schema_call. Input layout and invariants: schema_harness.h. Run with
// the others by `bash fuzz/run.sh BUILD_DIR SECONDS`.
#include "schema_harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  af::fuzz::schema_one(data, size);
  return 0;
}
