#include "prims/template.h"

#include <algorithm>

#include "value/error.h"
#include "value/value.h"

namespace af {

namespace {

[[noreturn]] void bad(std::string_view tmpl, size_t pos, const std::string& why) {
  // The template may be huge: quote its start only.
  constexpr size_t kShown = 120;
  size_t cut = std::min(tmpl.size(), kShown);
  while (cut < tmpl.size() && cut > 0 && (static_cast<unsigned char>(tmpl[cut]) & 0xC0) == 0x80) --cut;
  std::string quoted;
  append_json_string(quoted, tmpl.substr(0, cut));
  if (cut < tmpl.size()) quoted += "... (" + std::to_string(tmpl.size()) + " bytes)";
  invalid("format template " + quoted + ": " + why + " at offset " + std::to_string(pos));
}

bool is_ident_start(char c) { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (unsigned char)c >= 0x80; }
bool is_ident_char(char c) { return is_ident_start(c) || (c >= '0' && c <= '9'); }

}  // namespace

Template parse_template(std::string_view tmpl) {
  Template t;
  TemplatePart cur;
  enum { kUnset, kAuto, kManual } numbering = kUnset;
  int64_t next_auto = 0;
  for (size_t i = 0; i < tmpl.size(); ++i) {
    char c = tmpl[i];
    if (c == '}') {
      if (i + 1 < tmpl.size() && tmpl[i + 1] == '}') {
        cur.text += '}';
        ++i;
        continue;
      }
      bad(tmpl, i, "single '}' (write '}}' for a literal brace)");
    }
    if (c != '{') {
      cur.text += c;
      continue;
    }
    if (i + 1 < tmpl.size() && tmpl[i + 1] == '{') {
      cur.text += '{';
      ++i;
      continue;
    }
    size_t close = tmpl.find('}', i + 1);
    size_t reopen = tmpl.find('{', i + 1);
    if (close == std::string_view::npos || (reopen != std::string_view::npos && reopen < close))
      bad(tmpl, i, "unbalanced '{' (close the field with '}' or write '{{' for a literal brace)");
    std::string_view field = tmpl.substr(i + 1, close - i - 1);
    if (t.parts.size() >= kMaxTemplateFields)
      bad(tmpl, i, "more than " + std::to_string(kMaxTemplateFields) + " fields (the limit)");
    cur.has_field = true;
    if (field.empty()) {
      if (numbering == kManual)
        bad(tmpl, i, "cannot switch from manual field numbering ({0}) to automatic ({})");
      numbering = kAuto;
      cur.index = next_auto++;
    } else if (field.find_first_not_of("0123456789") == std::string_view::npos) {
      if (numbering == kAuto)
        bad(tmpl, i, "cannot switch from automatic field numbering ({}) to manual ({0})");
      numbering = kManual;
      if (field.size() > 9) bad(tmpl, i, "field index too large");
      cur.index = std::stoll(std::string(field));
    } else if (is_ident_start(field[0]) &&
               std::all_of(field.begin(), field.end(), is_ident_char)) {
      cur.name = std::string(field);
      t.names.push_back(cur.name);
    } else {
      bad(tmpl, i + 1,
          "unsupported field \"" + std::string(field) +
              "\" (fields are {}, {N} or {name}; format specs and conversions are not supported)");
    }
    if (cur.index >= 0) t.max_positional = std::max(t.max_positional, size_t(cur.index + 1));
    t.parts.push_back(std::move(cur));
    cur = TemplatePart();
    i = close;
  }
  if (!cur.text.empty()) t.parts.push_back(std::move(cur));
  std::sort(t.names.begin(), t.names.end());
  t.names.erase(std::unique(t.names.begin(), t.names.end()), t.names.end());
  return t;
}

}  // namespace af
