// Options: a JSON object read key by key. Unknown keys, wrong kinds and
// values out of range are INVALID_ARGUMENT naming the reader and the key, so
// a typo never silently falls back to a default.
//
// The same readers describe the options: run under describe_options(), a
// reader gets no options, and each key it reads is recorded (kind, default,
// range, doc) instead; the reader stops at finish(). So the description
// that af_options_json gives (and docs/OPTIONS.md is generated from) is the
// code that reads the options, and cannot drift from it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "value/value.h"

namespace af::lm {

// One key as a reader reads it.
struct OptionSpec {
  std::string key;
  std::string kind;  // "int", "number", "str", "bool" or "object"
  Value def;         // null: none (or required: the doc says)
  Value min, max;    // null: no range
  std::string doc;
  std::vector<OptionSpec> keys;  // an object read with sub()
};

class Options {
 public:
  // `v` must be a dict or null (no options). `what` names the reader.
  Options(const Value& v, std::string what);
  int64_t integer(const char* key, int64_t def, int64_t min, int64_t max, const char* doc);
  double number(const char* key, double def, double min, double max, const char* doc);
  std::string str(const char* key, std::string def, const char* doc);
  bool boolean(const char* key, bool def, const char* doc);
  // An object (nullptr if absent) the caller reads itself.
  const Value* object(const char* key, const char* doc);
  // An object read key by key with its own reader (empty if absent); call
  // its finish() before this reader's.
  Options sub(const char* key, const char* doc);
  // INVALID_ARGUMENT on any key not read. Describing: ends the reading.
  void finish();

 private:
  struct Described {};  // thrown by finish() to end a described reading
  friend Value describe_options(const std::function<void()>& read);
  Options(std::string what, std::vector<OptionSpec>* sink);
  const Value* raw(const char* key);
  bool record(const char* key, const char* kind, Value def, Value min, Value max, const char* doc);
  [[noreturn]] void bad(const char* key, const std::string& why) const;
  Value v_;
  std::string what_;
  std::set<std::string> known_;
  std::vector<OptionSpec>* sink_ = nullptr;  // describing: where keys are recorded
  bool top_ = true;                          // finish() of the outermost reader ends it
};

// Runs `read` (which builds Options and reads them, as the function that
// takes the options does) in describe mode, and returns what it read: a
// list of {"key", "kind", "default", "min", "max", "doc", "keys"} dicts.
// An af::Error `read` throws before it reads anything passes through (e.g.
// a provider this build lacks).
Value describe_options(const std::function<void()>& read);

// Parses options JSON text ("" or "null" = no options).
Value options_from_json(std::string_view json, const char* what);

}  // namespace af::lm
