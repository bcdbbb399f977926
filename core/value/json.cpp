// Exact JSON in and out. Parsing uses simdjson (validates UTF-8 and keeps
// the int/float distinction); writing is ours because it must print floats
// so they read back as floats.
#include <charconv>
#include <cmath>

#include "value/error.h"
#include "value/json_dom.h"
#include "value/value.h"

namespace af {

bool valid_utf8(std::string_view s) noexcept { return simdjson::validate_utf8(s.data(), s.size()); }

simdjson::dom::element parse_json_dom(std::string_view json) {
  thread_local simdjson::dom::parser parser;
  // The text with the padding simdjson reads past its end, in a buffer
  // kept per thread: no allocation per document once it is large enough.
  thread_local std::string padded;
  padded.assign(json);
  padded.resize(json.size() + simdjson::SIMDJSON_PADDING, '\0');
  simdjson::dom::element root;
  auto err = parser.parse(padded.data(), json.size(), false).get(root);
  // The document does not point into its text: a large one's copy goes.
  if (padded.capacity() > (size_t(1) << 20)) std::string().swap(padded);
  if (err) {
    std::string why = simdjson::error_message(err);
    if (err == simdjson::UTF8_ERROR) why = "the text is not valid UTF-8";
    if (err == simdjson::NUMBER_ERROR)
      why = "a number is malformed or out of range (integers must fit in int64, floats in a "
            "double; write larger numbers as floats or strings)";
    invalid("invalid JSON: " + why);
  }
  return root;
}

Value json_value(simdjson::dom::element e) {
  using T = simdjson::dom::element_type;
  switch (e.type()) {
    case T::ARRAY: {
      std::vector<Value> items;
      for (auto child : e.get_array()) items.push_back(json_value(child));
      return Value::list(std::move(items));
    }
    case T::OBJECT: {
      std::vector<Entry> entries;
      for (auto field : e.get_object())
        entries.emplace_back(std::string(field.key), json_value(field.value));
      return Value::dict(std::move(entries));
    }
    case T::INT64: return Value::integer(int64_t(e.get_int64()));
    case T::UINT64:
      invalid("JSON integer " + std::to_string(uint64_t(e.get_uint64())) +
              " is outside the int64 range; write it as a float (e.g. 1.8e19) or a string");
    case T::DOUBLE: return Value::floating(double(e.get_double()));
    case T::STRING: return Value::str(std::string(std::string_view(e.get_string())));
    case T::BOOL: return Value::boolean(bool(e.get_bool()));
    case T::NULL_VALUE: return Value();
  }
  invalid("unsupported JSON element");
}

Value from_json(std::string_view json) { return json_value(parse_json_dom(json)); }

std::string json_quoted(std::string_view s) {
  std::string out;
  append_json_string(out, s);
  return out;
}

void append_json_string(std::string& out, std::string_view s) {
  static const char* hex = "0123456789abcdef";
  out.push_back('"');
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out.push_back(hex[c >> 4]);
          out.push_back(hex[c & 15]);
        } else {
          out.push_back(char(c));
        }
    }
  }
  out.push_back('"');
}

static void append_float(std::string& out, double f) {
  if (!std::isfinite(f))
    invalid("cannot write a non-finite float (" + std::string(std::isnan(f) ? "nan" : "infinity") +
            ") as JSON");
  // Shortest round-trip digits, laid out like Python's repr: fixed notation
  // for 1e-4 <= |f| < 1e16 ("100000.0", "0.001"), scientific otherwise
  // ("1e+30", "1.5e-05").
  double mag = std::fabs(f);
  auto fmt = (mag == 0 || (mag >= 1e-4 && mag < 1e16)) ? std::chars_format::fixed
                                                       : std::chars_format::scientific;
  char buf[400];
  auto r = std::to_chars(buf, buf + sizeof buf, f, fmt);
  std::string_view s(buf, size_t(r.ptr - buf));
  out += s;
  // Keep it a float when read back: "2" -> "2.0".
  if (s.find_first_of(".e") == std::string_view::npos) out += ".0";
}

void append_json(std::string& out, const Value& v) {
  switch (v.kind()) {
    case Kind::Null: out += "null"; return;
    case Kind::Bool: out += v.as_bool() ? "true" : "false"; return;
    case Kind::Int: {
      char buf[24];
      auto r = std::to_chars(buf, buf + sizeof buf, v.as_int());
      out.append(buf, r.ptr);
      return;
    }
    case Kind::Float: append_float(out, v.as_float()); return;
    case Kind::Str: append_json_string(out, v.as_str()); return;
    case Kind::List: {
      out.push_back('[');
      bool first = true;
      for (const Value& item : v.items()) {
        if (!first) out.push_back(',');
        first = false;
        append_json(out, item);
      }
      out.push_back(']');
      return;
    }
    case Kind::Dict: {
      out.push_back('{');
      bool first = true;
      for (const Entry& e : v.entries()) {
        if (!first) out.push_back(',');
        first = false;
        append_json_string(out, e.first);
        out.push_back(':');
        append_json(out, e.second);
      }
      out.push_back('}');
      return;
    }
    case Kind::Placeholder:
      fail_placeholder_read("writing JSON");
  }
}

std::string to_json(const Value& v) {
  std::string out;
  append_json(out, v);
  return out;
}

std::string stringify(const Value& v) {
  if (v.kind() == Kind::Str) return v.as_str();
  return to_json(v);
}

}  // namespace af
