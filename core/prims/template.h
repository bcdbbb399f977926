// Python-style format templates: "{}" automatic, "{0}" positional, "{name}"
// named, "{{" / "}}" escapes. Parsed once at trace time (errors are
// INVALID_ARGUMENT there, not at run time) and again by the impl.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace af {

// A template has at most this many fields. Each parses into a part of ~80
// bytes from as little as 3 template bytes ("{0}"), and a saved graph's
// template arrives compressed: without a bound a 3 KB file parsed into
// gigabytes. Checked while parsing, at trace and at load alike.
inline constexpr size_t kMaxTemplateFields = 10000;

struct TemplatePart {
  std::string text;     // literal text before the field (escapes resolved)
  bool has_field = false;
  int64_t index = -1;   // positional index (automatic numbering resolved)
  std::string name;     // named field, when index < 0
};

struct Template {
  std::vector<TemplatePart> parts;
  size_t max_positional = 0;         // 1 + highest positional index used
  std::vector<std::string> names;    // named fields used, sorted, unique
};

// Throws INVALID_ARGUMENT naming the position and the fix.
Template parse_template(std::string_view tmpl);

}  // namespace af
