// Provider options: a JSON object read key by key. Unknown keys, wrong
// kinds and values out of range are INVALID_ARGUMENT naming the provider
// and the key, so a typo never silently falls back to a default.
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include "value/value.h"

namespace af::lm {

class Options {
 public:
  // `v` must be a dict or null (no options). `what` names the provider.
  Options(const Value& v, std::string what);
  int64_t integer(const char* key, int64_t def, int64_t min, int64_t max);
  double number(const char* key, double def, double min, double max);
  std::string str(const char* key, std::string def);
  bool boolean(const char* key, bool def);
  // The raw value (nullptr if absent); marks the key as known.
  const Value* raw(const char* key);
  // INVALID_ARGUMENT on any key not read.
  void finish() const;

 private:
  [[noreturn]] void bad(const char* key, const std::string& why) const;
  Value v_;
  std::string what_;
  std::set<std::string> known_;
};

// Parses options JSON text ("" or "null" = no options).
Value options_from_json(std::string_view json, const char* what);

}  // namespace af::lm
