// The body of the structured-output fuzz target: a schema as the user gives
// it (JSON, core/lm/schema.h) and a reply as an endpoint sends it, checked
// by the validator of lm_schema_call. Shared with the regression test
// (tests/core/io_fuzz_regression_test.cpp). The input is the schema's JSON,
// a NUL byte, then the reply text (no NUL: the whole input is the schema and
// the reply is empty).
//   - a schema either parses or is INVALID_ARGUMENT;
//   - a parsed schema's JSON Schema is JSON, and its smallest reply (what
//     echo answers; PROVIDER when a pattern defeats it) validates;
//   - a reply either validates, giving one leaf per node of the schema's
//     kinds, or is SCHEMA.
// A broken invariant aborts (a finding).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "lm/schema.h"
#include "value/error.h"
#include "value/value.h"

namespace af::fuzz {

[[noreturn]] inline void schema_finding(const char* what, const std::string& detail) {
  std::fprintf(stderr, "schema fuzz finding: %s: %s\n", what, detail.substr(0, 2000).c_str());
  std::abort();
}

inline void check_leaves(const lm::Schema& s, const std::vector<Value>& leaves, std::string_view reply) {
  if (leaves.size() != s.leaf_kinds().size()) schema_finding("wrong number of leaves", std::string(reply));
  for (size_t i = 0; i < leaves.size(); ++i)
    if (leaves[i].kind() != s.leaf_kinds()[i]) schema_finding("a leaf of the wrong kind", std::string(reply));
}

inline void schema_one(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t nul = in.find('\0');
  std::string_view schema_text = in.substr(0, nul);
  std::string_view reply = nul == std::string_view::npos ? std::string_view() : in.substr(nul + 1);
  lm::Schema s;
  try {
    s = lm::Schema::parse(from_json(schema_text));
  } catch (const Error& e) {
    if (e.code() != Code::InvalidArgument) schema_finding("unexpected error code for a schema", e.what());
    return;
  }
  try {
    (void)from_json(s.json_schema());
  } catch (const Error& e) {
    schema_finding("the JSON Schema is not JSON", s.json_schema());
  }
  std::string smallest;
  bool have_smallest = true;
  try {
    smallest = s.smallest_reply();
  } catch (const Error& e) {
    if (e.code() != Code::Provider) schema_finding("unexpected error code for the smallest reply", e.what());
    have_smallest = false;
  }
  if (have_smallest) {
    try {
      check_leaves(s, s.parse_reply(smallest), smallest);
    } catch (const Error& e) {
      schema_finding("the smallest reply does not validate", smallest + ": " + e.what());
    }
  }
  try {
    check_leaves(s, s.parse_reply(reply), reply);
  } catch (const Error& e) {
    if (e.code() != Code::Schema) schema_finding("unexpected error code for a reply", e.what());
  }
}

}  // namespace af::fuzz
