#include "lm/schema.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <mutex>
#include <optional>
#include <unordered_map>

#include <re2/re2.h>

#include "value/error.h"
#include "value/json_dom.h"
#include "value/small_vec.h"

namespace af::lm {

struct SchemaNode {
  enum Type { Str, Int, Float, Bool, Enum, Dict, List } type;
  std::string doc;
  std::optional<int64_t> imin, imax;  // str length, int bounds
  std::optional<double> fmin, fmax;   // float bounds
  std::string pattern;
  std::shared_ptr<const re2::RE2> re;  // linear time: replies are untrusted
  std::vector<Value> values;          // enum
  // Dict and list: the children in order, and their property names in a
  // reply (a dict's field names in insertion order; "0", "1", ... for a list).
  std::vector<SchemaNode> items;
  std::vector<std::string> keys;
  bool wraps_leaf = false;            // the {"value": ...} object a leaf root travels in
  uint32_t out_index = 0;              // a leaf's place among the output's leaves (flattening order)
  bool is_leaf() const { return type != Dict && type != List; }
  // Declared here, defaulted below where SchemaNode (which holds
  // SchemaNodes) is complete, as clang 14 with libstdc++ requires.
  SchemaNode();
  SchemaNode(const SchemaNode&);
  SchemaNode(SchemaNode&&) noexcept;
  SchemaNode& operator=(const SchemaNode&);
  SchemaNode& operator=(SchemaNode&&) noexcept;
  ~SchemaNode();
};
SchemaNode::SchemaNode() = default;
SchemaNode::SchemaNode(const SchemaNode&) = default;
SchemaNode::SchemaNode(SchemaNode&&) noexcept = default;
SchemaNode& SchemaNode::operator=(const SchemaNode&) = default;
SchemaNode& SchemaNode::operator=(SchemaNode&&) noexcept = default;
SchemaNode::~SchemaNode() = default;

namespace {

std::string child_path(const std::string& path, std::string_view key) {
  std::string p = path;
  bool plain = !key.empty();
  for (char c : key)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) plain = false;
  if (plain) {
    p += '.';
    p += key;
  } else {
    p += '[';
    append_json_string(p, key);
    p += ']';
  }
  return p;
}
std::string index_path(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

[[noreturn]] void bad(const std::string& path, const std::string& why) {
  invalid("schema at " + path + ": " + why);
}

// A pattern is compiled by RE2 (linear in the text matched, no
// backtracking), with its program's memory bounded.
std::shared_ptr<const re2::RE2> compile_pattern(const std::string& pattern, const std::string& path) {
  if (pattern.size() > kMaxPatternBytes)
    bad(path, "\"pattern\" is " + std::to_string(pattern.size()) + " bytes; the limit is " +
                  std::to_string(kMaxPatternBytes));
  re2::RE2::Options o;
  o.set_log_errors(false);
  o.set_max_mem(8 << 20);
  auto re = std::make_shared<const re2::RE2>(pattern, o);
  if (!re->ok())
    bad(path, "\"pattern\" is not a valid regular expression (RE2 syntax: no lookaround or backreferences): " +
                  re->error());
  return re;
}

// Unanchored search, as JSON Schema's "pattern". false for a text too long
// to match within the bound.
bool pattern_matches(const re2::RE2& re, std::string_view text) {
  return text.size() <= kMaxPatternSubjectBytes && re2::RE2::PartialMatch(re2::StringPiece(text.data(), text.size()), re);
}

SchemaNode parse_node(const Value& v, const std::string& path);

void check_keys(const Value& v, const std::string& path, std::initializer_list<const char*> known) {
  for (const auto& [k, _] : v.entries()) {
    bool ok = false;
    for (const char* n : known) ok = ok || k == n;
    if (!ok) {
      std::string list;
      for (const char* n : known) list += std::string(list.empty() ? "" : ", ") + n;
      bad(path, "unknown key \"" + k + "\" for a " + v.find("type")->as_str() +
                    " node (known keys: " + list + ")");
    }
  }
}

std::optional<int64_t> int_key(const Value& v, const char* key, const std::string& path) {
  const Value* x = v.find(key);
  if (!x || x->is_null()) return std::nullopt;
  if (x->kind() != Kind::Int)
    bad(path, std::string("\"") + key + "\" must be an int, found " + kind_name(x->kind()));
  return x->as_int();
}

std::optional<double> num_key(const Value& v, const char* key, const std::string& path) {
  const Value* x = v.find(key);
  if (!x || x->is_null()) return std::nullopt;
  if (x->kind() == Kind::Int) return double(x->as_int());
  if (x->kind() != Kind::Float || !std::isfinite(x->as_float()))
    bad(path, std::string("\"") + key + "\" must be a finite number, found " + kind_name(x->kind()));
  return x->as_float();
}

SchemaNode parse_container(const Value& v, const std::string& path) {
  SchemaNode n;
  if (v.kind() == Kind::List) {
    n.type = SchemaNode::List;
    if (v.items().empty()) bad(path, "an empty list has no field to fill");
    for (size_t i = 0; i < v.items().size(); ++i) {
      n.items.push_back(parse_node(v.items()[i], index_path(path, i)));
      n.keys.push_back(std::to_string(i));
    }
  } else {
    n.type = SchemaNode::Dict;
    if (v.entries().empty()) bad(path, "an empty dict has no field to fill");
    for (const auto& [k, x] : v.entries()) {
      n.items.push_back(parse_node(x, child_path(path, k)));
      n.keys.push_back(k);
    }
  }
  return n;
}

SchemaNode parse_node(const Value& v, const std::string& path) {
  if (v.kind() == Kind::List) return parse_container(v, path);
  if (v.kind() != Kind::Dict)
    bad(path, std::string("expected a node (a dict with \"type\") or a container, found ") +
                  kind_name(v.kind()) + (v.is_leaf() && v.kind() != Kind::Placeholder ? " " + to_json(v) : ""));
  const Value* t = v.find("type");
  if (!t) return parse_container(v, path);
  if (t->kind() != Kind::Str) bad(path, "\"type\" must be a str naming the node type");
  const std::string& ty = t->as_str();
  std::string doc;
  if (const Value* d = v.find("doc")) {
    if (d->kind() != Kind::Str) bad(path, "\"doc\" must be a str");
    doc = d->as_str();
  }
  SchemaNode n;
  if (ty == "str") {
    check_keys(v, path, {"type", "doc", "min", "max", "pattern"});
    n.type = SchemaNode::Str;
    n.imin = int_key(v, "min", path);
    n.imax = int_key(v, "max", path);
    for (auto [key, b] : {std::pair{"min", n.imin}, std::pair{"max", n.imax}}) {
      if (b && *b < 0) bad(path, std::string("\"") + key + "\" must be >= 0, found " + std::to_string(*b));
      if (b && *b > kMaxStrLength)
        bad(path, std::string("\"") + key + "\" is " + std::to_string(*b) + "; no reply can be longer than " +
                      std::to_string(kMaxStrLength) + " code points");
    }
    if (const Value* p = v.find("pattern")) {
      if (p->kind() != Kind::Str) bad(path, "\"pattern\" must be a str");
      n.pattern = p->as_str();
      n.re = compile_pattern(n.pattern, path);
    }
  } else if (ty == "int") {
    check_keys(v, path, {"type", "doc", "min", "max"});
    n.type = SchemaNode::Int;
    n.imin = int_key(v, "min", path);
    n.imax = int_key(v, "max", path);
  } else if (ty == "float") {
    check_keys(v, path, {"type", "doc", "min", "max"});
    n.type = SchemaNode::Float;
    n.fmin = num_key(v, "min", path);
    n.fmax = num_key(v, "max", path);
    if (n.fmin && n.fmax && *n.fmin > *n.fmax) bad(path, "\"min\" is greater than \"max\"");
  } else if (ty == "bool") {
    check_keys(v, path, {"type", "doc"});
    n.type = SchemaNode::Bool;
  } else if (ty == "enum") {
    check_keys(v, path, {"type", "doc", "values"});
    n.type = SchemaNode::Enum;
    const Value* vals = v.find("values");
    if (!vals || vals->kind() != Kind::List || vals->items().empty())
      bad(path, "an enum needs \"values\": a non-empty list");
    Kind k = vals->items()[0].kind();
    if (k != Kind::Str && k != Kind::Int && k != Kind::Bool)
      bad(path, std::string("enum values must be str, int or bool, found ") + kind_name(k));
    for (size_t i = 0; i < vals->items().size(); ++i) {
      const Value& x = vals->items()[i];
      if (x.kind() != k) bad(path, "enum values must all have one kind");
      for (size_t j = 0; j < i; ++j)
        if (vals->items()[j] == x) bad(path, "enum value " + to_json(x) + " is listed twice");
    }
    n.values = vals->items();
  } else if (ty == "dict") {
    check_keys(v, path, {"type", "doc", "fields"});
    const Value* f = v.find("fields");
    if (!f || f->kind() != Kind::Dict) bad(path, "a dict node needs \"fields\": a dict of nodes");
    n = parse_container(*f, path);
  } else if (ty == "list") {
    check_keys(v, path, {"type", "doc", "items"});
    const Value* f = v.find("items");
    if (!f || f->kind() != Kind::List) bad(path, "a list node needs \"items\": a list of nodes");
    n = parse_container(*f, path);
  } else {
    bad(path, "unknown node type \"" + ty + "\" (known: str, int, float, bool, enum, dict, list)");
  }
  if (n.imin && n.imax && *n.imin > *n.imax) bad(path, "\"min\" is greater than \"max\"");
  n.doc = std::move(doc);
  return n;
}

// A Value with the output's structure: leaves are their node index in
// pre-order (insertion order), so flattening gives the leaf order.
Value shape_of(SchemaNode& n, std::vector<SchemaNode*>& leaves) {
  if (n.is_leaf()) {
    leaves.push_back(&n);
    return Value::integer(int64_t(leaves.size() - 1));
  }
  if (n.type == SchemaNode::List) {
    std::vector<Value> items;
    for (SchemaNode& c : n.items) items.push_back(shape_of(c, leaves));
    return Value::list(std::move(items));
  }
  std::vector<Entry> entries;
  for (size_t i = 0; i < n.items.size(); ++i) entries.emplace_back(n.keys[i], shape_of(n.items[i], leaves));
  return Value::dict(std::move(entries));
}

// An int range this small also travels as its enum in the schema for
// grammars without numeric bounds (Schema::grammar_json_schema).
constexpr int64_t kMaxEnumeratedRange = 64;

void append_json_schema(std::string& s, const SchemaNode& n, bool enumerate_ints) {
  s += '{';
  auto field = [&](const char* k) {
    if (s.back() != '{') s += ',';
    s += '"';
    s += k;
    s += "\":";
  };
  auto num = [&](double d) { s += to_json(Value::floating(d)); };
  switch (n.type) {
    case SchemaNode::Str:
      field("type"), s += "\"string\"";
      if (n.imin) field("minLength"), s += std::to_string(*n.imin);
      if (n.imax) field("maxLength"), s += std::to_string(*n.imax);
      if (!n.pattern.empty()) field("pattern"), append_json_string(s, n.pattern);
      break;
    case SchemaNode::Int:
      field("type"), s += "\"integer\"";
      if (n.imin) field("minimum"), s += std::to_string(*n.imin);
      if (n.imax) field("maximum"), s += std::to_string(*n.imax);
      if (enumerate_ints && n.imin && n.imax && *n.imax - *n.imin < kMaxEnumeratedRange) {
        field("enum"), s += '[';
        for (int64_t i = *n.imin; i <= *n.imax; ++i) s += (i == *n.imin ? "" : ",") + std::to_string(i);
        s += ']';
      }
      break;
    case SchemaNode::Float:
      field("type"), s += "\"number\"";
      if (n.fmin) field("minimum"), num(*n.fmin);
      if (n.fmax) field("maximum"), num(*n.fmax);
      break;
    case SchemaNode::Bool:
      field("type"), s += "\"boolean\"";
      break;
    case SchemaNode::Enum: {
      Kind k = n.values[0].kind();
      field("type"), s += k == Kind::Str ? "\"string\"" : k == Kind::Int ? "\"integer\"" : "\"boolean\"";
      field("enum"), append_json(s, Value::list(n.values));
      break;
    }
    case SchemaNode::Dict:
    case SchemaNode::List: {
      field("type"), s += "\"object\"";
      field("properties"), s += '{';
      std::string required = "[";
      auto prop = [&](const std::string& k, const SchemaNode& c) {
        if (s.back() != '{') s += ',', required += ',';
        append_json_string(s, k);
        s += ':';
        append_json_schema(s, c, enumerate_ints);
        append_json_string(required, k);
      };
      for (size_t i = 0; i < n.items.size(); ++i) prop(n.keys[i], n.items[i]);
      s += '}';
      field("required"), s += required + "]";
      field("additionalProperties"), s += "false";
      break;
    }
  }
  if (!n.doc.empty()) field("description"), append_json_string(s, n.doc);
  s += '}';
}

size_t code_points(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::string excerpt(std::string_view s, size_t max = 200) {
  if (s.size() <= max) return std::string(s);
  size_t cut = max;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return std::string(s.substr(0, cut)) + "...";
}

[[noreturn]] void mismatch(const std::string& path, const std::string& expected, const Value& found) {
  std::string f = found.is_container() ? std::string("a ") + kind_name(found.kind()) : to_json(found);
  fail(Code::Schema, "the reply does not match the schema at " + path + ": expected " +
                         expected + ", found " + excerpt(f, 120));
}

std::string bounds(const char* what, std::optional<int64_t> lo, std::optional<int64_t> hi) {
  std::string s = what;
  if (lo) s += " >= " + std::to_string(*lo);
  if (lo && hi) s += " and";
  if (hi) s += " <= " + std::to_string(*hi);
  return s;
}

// Where in the reply a node is, as a chain up to the root: the text
// ("$.a.b") is built only for an error message, never on the success path.
struct ReplyPath {
  const ReplyPath* up;
  std::string_view key;  // the root's: its whole text
  std::string str() const { return up ? child_path(up->str(), key) : std::string(key); }
};

[[noreturn]] void mismatch(const ReplyPath& path, const std::string& expected, const Value& found) {
  mismatch(path.str(), expected, found);
}

// What a reply must hold for an int, float, bool or enum node.
std::string expected_leaf(const SchemaNode& n) {
  switch (n.type) {
    case SchemaNode::Int: return bounds("an integer", n.imin, n.imax);
    case SchemaNode::Float: {
      std::string e = "a number";
      if (n.fmin) e += " >= " + to_json(Value::floating(*n.fmin));
      if (n.fmin && n.fmax) e += " and";
      if (n.fmax) e += " <= " + to_json(Value::floating(*n.fmax));
      return e;
    }
    case SchemaNode::Bool: return "true or false";
    case SchemaNode::Enum: return "one of " + to_json(Value::list(n.values));
    default: return "a string";
  }
}

// Checks the reply's element e against n and puts its leaves, converted to
// their nodes' kinds, at their places in `leaves` (out_index).
// Objects are walked in the parsed document; only leaves become Values.
// json_value's INVALID_ARGUMENT (an integer beyond int64, a duplicate key)
// means the reply is JSON no Value holds: parse_reply reports it so.
void validate(const SchemaNode& n, simdjson::dom::element e, const ReplyPath& path, std::span<Value> leaves) {
  switch (n.type) {
    case SchemaNode::Str: {
      std::string_view s;
      if (e.get_string().get(s)) mismatch(path, "a string", json_value(e));
      size_t len = code_points(s);
      if ((n.imin && int64_t(len) < *n.imin) || (n.imax && int64_t(len) > *n.imax))
        mismatch(path, bounds("a string of length", n.imin, n.imax) + " (length " + std::to_string(len) + ")",
                 json_value(e));
      if (n.re && s.size() > kMaxPatternSubjectBytes)
        mismatch(path, "a string of at most " + std::to_string(kMaxPatternSubjectBytes) + " bytes to match /" +
                           n.pattern + "/ (" + std::to_string(s.size()) + " bytes)", json_value(e));
      if (n.re && !pattern_matches(*n.re, s)) mismatch(path, "a string matching /" + n.pattern + "/", json_value(e));
      leaves[n.out_index] = Value::str(std::string(s));
      return;
    }
    case SchemaNode::Int: {
      const Value v = json_value(e);
      int64_t i;
      if (v.kind() == Kind::Int) {
        i = v.as_int();
      } else if (v.kind() == Kind::Float && std::trunc(v.as_float()) == v.as_float() &&
                 std::fabs(v.as_float()) < 9.0e15) {
        i = int64_t(v.as_float());
      } else {
        mismatch(path, expected_leaf(n), v);
      }
      if ((n.imin && i < *n.imin) || (n.imax && i > *n.imax)) mismatch(path, expected_leaf(n), v);
      leaves[n.out_index] = Value::integer(i);
      return;
    }
    case SchemaNode::Float: {
      const Value v = json_value(e);
      double d;
      if (v.kind() == Kind::Float) d = v.as_float();
      else if (v.kind() == Kind::Int) d = double(v.as_int());
      else mismatch(path, "a number", v);
      if ((n.fmin && d < *n.fmin) || (n.fmax && d > *n.fmax)) mismatch(path, expected_leaf(n), v);
      leaves[n.out_index] = Value::floating(d);
      return;
    }
    case SchemaNode::Bool: {
      Value v = json_value(e);
      if (v.kind() != Kind::Bool) mismatch(path, expected_leaf(n), v);
      leaves[n.out_index] = std::move(v);
      return;
    }
    case SchemaNode::Enum: {
      // A string (the usual enum) is compared where it lies and the leaf
      // is the schema's own value: no Value is made per reply.
      if (std::string_view s; !e.get_string().get(s)) {
        for (const Value& x : n.values)
          if (x.kind() == Kind::Str && x.as_str() == s) {
            leaves[n.out_index] = x;
            return;
          }
        mismatch(path, expected_leaf(n), json_value(e));
      }
      Value v = json_value(e);
      for (const Value& x : n.values)
        if (x == v) {
          leaves[n.out_index] = std::move(v);
          return;
        }
      mismatch(path, expected_leaf(n), v);
    }
    case SchemaNode::Dict:
    case SchemaNode::List: {
      simdjson::dom::object obj;
      if (e.get_object().get(obj)) mismatch(path, n.wraps_leaf ? "an object {\"value\": ...}" : "an object", json_value(e));
      // Each property's value by the schema's key order, in one pass over
      // the object (finding each key again cost more than the rest).
      SmallVec<simdjson::dom::element, 8> at_key;
      SmallVec<bool, 8> found;
      at_key.reserve(n.keys.size());
      found.reserve(n.keys.size());
      for (size_t i = 0; i < n.keys.size(); ++i) {
        at_key.emplace_back();
        found.push_back(false);
      }
      bool twice = false;
      for (auto field : obj) {
        const auto key = std::find(n.keys.begin(), n.keys.end(), field.key);
        if (key == n.keys.end()) {
          std::string allowed;
          for (const std::string& w : n.keys) allowed += (allowed.empty() ? "" : ", ") + w;
          fail(Code::Schema, "the reply does not match the schema at " +
                                 child_path(path.str(), field.key) + ": unexpected property (allowed: " + allowed + ")");
        }
        const auto i = size_t(key - n.keys.begin());
        twice = twice || found[i];
        if (!found[i]) at_key[i] = field.value;  // the first, as a lookup by key finds
        found[i] = true;
      }
      for (size_t i = 0; i < n.keys.size(); ++i) {
        const ReplyPath at{&path, n.keys[i]};
        if (!found[i])
          fail(Code::Schema, "the reply does not match the schema at " + at.str() +
                                 ": the required property is missing");
        validate(n.items[i], at_key[i], at, leaves);
      }
      if (twice) json_value(e);  // INVALID_ARGUMENT: a key twice
      return;
    }
  }
  fail(Code::Internal, "schema: unknown node");
}

// A valid instance of n: the smallest one, or (varied) one whose enum
// values, bools and small int ranges are drawn from `seed` and the leaf's
// path, so different prompts get different, reproducible answers.
uint64_t draw(uint64_t seed, const std::string& path) {
  uint64_t h = seed ^ 0x9e3779b97f4a7c15ULL;
  for (unsigned char c : path) h = (h ^ c) * 1099511628211ULL;
  h ^= h >> 29;
  return h * 0xbf58476d1ce4e5b9ULL;
}

Value instance(const SchemaNode& n, const std::string& path, const std::optional<uint64_t>& seed) {
  switch (n.type) {
    case SchemaNode::Str: {
      size_t len = n.imin ? size_t(*n.imin) : 0;
      for (char fill : {'a', '0', 'A', ' '}) {
        std::string s(len, fill);
        if (!n.re || pattern_matches(*n.re, s)) return Value::str(std::move(s));
      }
      fail(Code::Provider, "echo: cannot make a string matching /" + n.pattern + "/ for " + path);
    }
    case SchemaNode::Int: {
      int64_t i = 0;
      if (n.imin && i < *n.imin) i = *n.imin;
      if (n.imax && i > *n.imax) i = *n.imax;
      // Varied: within [min, max] when both bound a range of at most 2^32.
      if (seed && n.imin && n.imax && uint64_t(*n.imax - *n.imin) < (uint64_t(1) << 32))
        i = *n.imin + int64_t(draw(*seed, path) % (uint64_t(*n.imax - *n.imin) + 1));
      return Value::integer(i);
    }
    case SchemaNode::Float: {
      double d = 0.0;
      if (n.fmin && d < *n.fmin) d = *n.fmin;
      if (n.fmax && d > *n.fmax) d = *n.fmax;
      return Value::floating(d);
    }
    case SchemaNode::Bool: return Value::boolean(seed && (draw(*seed, path) & 1));
    case SchemaNode::Enum: return n.values[seed ? draw(*seed, path) % n.values.size() : 0];
    case SchemaNode::Dict:
    case SchemaNode::List: {  // both travel as objects
      std::vector<Entry> e;
      for (size_t i = 0; i < n.items.size(); ++i)
        e.emplace_back(n.keys[i], instance(n.items[i],
                                           n.type == SchemaNode::Dict ? child_path(path, n.keys[i]) : index_path(path, i),
                                           seed));
      return Value::dict(std::move(e));
    }
  }
  fail(Code::Internal, "schema: unknown node");
}

Kind kind_of(const SchemaNode& n) {
  switch (n.type) {
    case SchemaNode::Str: return Kind::Str;
    case SchemaNode::Int: return Kind::Int;
    case SchemaNode::Float: return Kind::Float;
    case SchemaNode::Bool: return Kind::Bool;
    case SchemaNode::Enum: return n.values[0].kind();
    default: return Kind::Null;
  }
}

// Strips surrounding whitespace and one Markdown code fence, which some
// models put around JSON even when asked not to.
std::string_view unfence(std::string_view s) {
  auto trim = [](std::string_view x) {
    while (!x.empty() && std::isspace(static_cast<unsigned char>(x.front()))) x.remove_prefix(1);
    while (!x.empty() && std::isspace(static_cast<unsigned char>(x.back()))) x.remove_suffix(1);
    return x;
  };
  s = trim(s);
  if (s.size() >= 6 && s.substr(0, 3) == "```" && s.substr(s.size() - 3) == "```") {
    s = s.substr(3, s.size() - 6);
    size_t nl = s.find('\n');
    if (nl != std::string_view::npos && s.substr(0, nl).find('{') == std::string_view::npos)
      s = s.substr(nl + 1);
    s = trim(s);
  }
  return s;
}

// A raw control character (U+0000..U+001F) inside a JSON string, written as
// its escape: what Python's json.loads(strict=False) reads. Models, and the
// grammars that constrain them, let raw newlines into strings, and what they
// mean is unambiguous. Nothing else strict JSON refuses is changed. False when
// the text has no such character (out is then untouched).
bool escape_raw_controls(std::string_view s, std::string& out) {
  static constexpr char kHex[] = "0123456789abcdef";
  bool in_string = false, changed = false;
  size_t copied = 0;  // s[0, copied) is in out
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (!in_string) {
      in_string = c == '"';
      continue;
    }
    if (c == '\\') {
      ++i;  // the escaped character, whatever it is
    } else if (c == '"') {
      in_string = false;
    } else if (c < 0x20) {
      if (!changed) out.reserve(s.size() + 16);
      out.append(s.substr(copied, i - copied));
      switch (c) {
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        default: out += "\\u00"; out += kHex[c >> 4]; out += kHex[c & 15];
      }
      copied = i + 1;
      changed = true;
    }
  }
  if (changed) out.append(s.substr(copied));
  return changed;
}

// A reply's JSON document: strict JSON, or (only when that fails) the same
// text with raw control characters in strings escaped. A reply that fails
// both is reported with the strict parser's reason.
simdjson::dom::element parse_reply_json(std::string_view text) {
  try {
    return parse_json_dom(text);
  } catch (const Error& e) {
    std::string escaped;
    if (e.code() != Code::InvalidArgument || !escape_raw_controls(text, escaped)) throw;
    try {
      return parse_json_dom(escaped);  // the document does not point into its text
    } catch (const Error&) {
      throw e;
    }
  }
}

}  // namespace

Schema Schema::parse(const Value& tree) {
  Schema s;
  s.tree_ = tree;
  auto root = std::make_shared<SchemaNode>(parse_node(tree, "$"));
  std::vector<SchemaNode*> leaves;  // pre-order
  Value shape = shape_of(*root, leaves);
  s.out_tree_ = TreeDef::of(shape);
  auto [order, _] = flatten(shape);  // order[j]: the pre-order index of the j-th output leaf
  for (size_t j = 0; j < order.size(); ++j) {
    SchemaNode& leaf = *leaves[size_t(order[j].as_int())];
    s.kinds_.push_back(kind_of(leaf));
    leaf.out_index = uint32_t(j);
  }
  std::shared_ptr<SchemaNode> wire = root;  // what travels: a leaf root as {"value": ...}
  if (root->is_leaf()) {
    wire = std::make_shared<SchemaNode>();
    wire->type = SchemaNode::Dict;
    wire->items.push_back(*root);
    wire->keys.push_back("value");
    wire->wraps_leaf = true;
  }
  append_json_schema(s.json_schema_, *wire, false);
  append_json_schema(s.grammar_json_schema_, *wire, true);
  s.wire_ = std::move(wire);
  s.root_ = std::move(root);
  // The smallest reply, made once: the echo provider answers it to every
  // request of the schema.
  try {
    s.smallest_reply_ = s.wire_reply(instance(*s.root_, "$", std::nullopt));
  } catch (const Error& e) {
    if (e.code() != Code::Provider) throw;
    s.smallest_error_ = e.what();
  }
  return s;
}

std::string Schema::wire_reply(const Value& v) const {
  return to_json(root_->is_leaf() ? Value::dict({{"value", v}}) : v);
}

std::string Schema::varied_reply(uint64_t seed) const {
  if (!smallest_error_.empty()) fail(Code::Provider, smallest_error_);
  return wire_reply(instance(*root_, "$", seed));
}

std::vector<Value> Schema::parse_reply(std::string_view reply) const {
  std::vector<Value> leaves(kinds_.size());
  parse_reply(reply, leaves);
  return leaves;
}

void Schema::parse_reply(std::string_view reply, std::span<Value> leaves) const {
  if (leaves.size() != kinds_.size())
    fail(Code::Internal, "lm_schema_call: " + std::to_string(leaves.size()) + " places for " +
                             std::to_string(kinds_.size()) + " reply leaves");
  try {
    validate(*wire_, parse_reply_json(unfence(reply)), ReplyPath{nullptr, "$"}, leaves);
  } catch (const Error& e) {
    // parse_json_dom's and json_value's errors: JSON that no Value holds.
    if (e.code() != Code::InvalidArgument) throw;
    fail(Code::Schema, "the reply is not valid JSON (" + std::string(e.what()) +
                           "): " + excerpt(reply));
  }
}

const std::string& Schema::smallest_reply() const {
  if (!smallest_error_.empty()) fail(Code::Provider, smallest_error_);
  return smallest_reply_;
}

std::shared_ptr<const Schema> schema_of(const Value& tree) {
  static std::mutex mu;
  static std::unordered_map<uint64_t, std::vector<std::shared_ptr<const Schema>>> cache;
  uint64_t h = tree.hash();
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(h);
    if (it != cache.end())
      for (const auto& s : it->second)
        if (s->tree() == tree) return s;
  }
  auto s = std::make_shared<const Schema>(Schema::parse(tree));
  std::lock_guard<std::mutex> lock(mu);
  if (cache.size() > 4096) cache.clear();  // bounded; re-parsing is cheap
  cache[h].push_back(s);
  return s;
}

}  // namespace af::lm
