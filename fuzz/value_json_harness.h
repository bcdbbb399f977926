// The body of the JSON-value fuzz target (af_value_from_json and the core
// parser behind it), shared with the regression test
// (tests/core/io_fuzz_regression_test.cpp). The input is JSON text.
// Whatever parses must print back, parse again equal (same hash), and print
// the same text again (one spelling per value); anything else must be
// INVALID_ARGUMENT. A broken invariant aborts (a finding).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "value/error.h"
#include "value/value.h"

namespace af::fuzz {

[[noreturn]] inline void value_finding(const char* what, const std::string& detail) {
  std::fprintf(stderr, "value json fuzz finding: %s: %s\n", what, detail.substr(0, 2000).c_str());
  std::abort();
}

// Returns true if the text parsed (0 always to libFuzzer); aborts on a finding.
inline bool value_json_one(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  Value v;
  try {
    v = from_json(text);
  } catch (const Error& e) {
    if (e.code() != Code::InvalidArgument) value_finding("unexpected error code", e.what());
    return false;
  }
  if (v.depth() > kMaxValueDepth) value_finding("a parsed value is deeper than the limit", std::string(text));
  std::string out;
  try {
    out = to_json(v);
  } catch (const Error& e) {
    value_finding("a parsed value does not print", e.what());
  }
  Value again;
  try {
    again = from_json(out);
  } catch (const Error& e) {
    value_finding("printed JSON does not parse", out + ": " + e.what());
  }
  if (!(again == v) || again.hash() != v.hash()) value_finding("JSON does not round trip", out);
  if (to_json(again) != out) value_finding("a value has two spellings", out);
  return true;
}

}  // namespace af::fuzz
