#include "lm/excerpt.h"

#include <cstdio>

#include "value/value.h"

namespace af::lm {

namespace {

std::string redact(std::string_view s, std::string_view secret) {
  if (secret.empty()) return std::string(s);
  std::string out;
  size_t from = 0;
  for (size_t at; (at = s.find(secret, from)) != std::string_view::npos; from = at + secret.size()) {
    out.append(s.substr(from, at - from));
    out += "[redacted]";
  }
  out.append(s.substr(from));
  return out;
}

// Length of the UTF-8 sequence starting with lead byte c (input is valid).
size_t seq_len(unsigned char c) { return c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4; }

std::string printable(std::string_view s, size_t max) {
  std::string out;
  char buf[8];
  size_t i = 0;
  while (i < s.size()) {
    if (out.size() >= max) {
      out += "...";
      break;
    }
    auto c = static_cast<unsigned char>(s[i]);
    size_t n = seq_len(c);
    if (c == '\n' || c == '\r' || c == '\t') {
      out += ' ';
    } else if (c < 0x20 || c == 0x7F) {
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else if (c == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) < 0xA0) {
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned char>(s[i + 1]));  // C1 control
      out += buf;
    } else {
      out.append(s.substr(i, n));
    }
    i += n;
  }
  return out;
}

}  // namespace

std::string safe_excerpt(std::string_view body, std::string_view secret, size_t max) {
  if (!valid_utf8(body)) return "(binary body, " + std::to_string(body.size()) + " bytes)";
  return printable(redact(body, secret), max);
}

std::string safe_text(std::string_view text, std::string_view secret) {
  if (!valid_utf8(text)) return "(a message that is not UTF-8)";
  return printable(redact(text, secret), std::string::npos);
}

}  // namespace af::lm
