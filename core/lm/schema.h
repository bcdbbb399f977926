// Structured-output schemas of lm_schema_call (docs/SEMANTICS.md §3).
//
// A schema is a Value tree: containers (list, dict) hold nodes, and a node
// is a dict with a "type" key:
//   {"type":"str",  "min":0, "max":80, "pattern":"^[a-z]+$"}   (length in code points;
//                                          pattern: RE2 syntax, searched unanchored)
//   {"type":"int",  "min":1, "max":10}
//   {"type":"float","min":0.0, "max":1.0}
//   {"type":"bool"}
//   {"type":"enum", "values":["yes","no"]}         (one scalar kind)
//   {"type":"dict", "fields":{...}}  {"type":"list", "items":[...]}
// Every node may carry "doc" (its description); the "dict"/"list" forms
// exist to attach a doc to a subtree (or to use a field named "type").
// On the wire containers are JSON objects (a list's keys are "0", "1", ...)
// with every property required and no other; a leaf root travels as
// {"value": ...}. The output tree has the schema's structure with one leaf
// per node.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "value/tree.h"
#include "value/value.h"

namespace af::lm {

// Bounds on what a schema may ask and what a reply is matched against
// (documented in af.h at af_lm_schema_call).
inline constexpr int64_t kMaxStrLength = int64_t(64) << 20;  // str "min"/"max", code points
inline constexpr size_t kMaxPatternBytes = 1024;            // a "pattern"
inline constexpr size_t kMaxPatternSubjectBytes = 1 << 20;  // a string matched against it

struct SchemaNode;

class Schema {
 public:
  // Checks the node tree; INVALID_ARGUMENT naming the path ($.a.b) and what
  // is wrong (unknown type or key, min > max, bad pattern, empty enum, ...).
  static Schema parse(const Value& tree);

  const Value& tree() const noexcept { return tree_; }
  const TreeDef& out_tree() const noexcept { return out_tree_; }
  // Leaf kinds in flattening order.
  const std::vector<Kind>& leaf_kinds() const noexcept { return kinds_; }
  // The JSON Schema (an object) as compact JSON text.
  const std::string& json_schema() const noexcept { return json_schema_; }
  // The same for servers that build a grammar from the schema but ignore
  // numeric bounds (llama-cpp-python's json_object mode): an int range of
  // at most 64 values is also given as its "enum", which they enforce.
  const std::string& grammar_json_schema() const noexcept { return grammar_json_schema_; }
  // Parses and validates a reply; returns the output leaves in flattening
  // order. SCHEMA error with the JSON path, the expectation and the finding.
  std::vector<Value> parse_reply(std::string_view reply) const;
  // The same into `leaves` (leaf_kinds().size() places), allocating none.
  void parse_reply(std::string_view reply, std::span<Value> leaves) const;
  // The smallest valid reply (what the echo provider answers), wire form.
  // PROVIDER error if a string pattern defeats the simple synthesis.
  const std::string& smallest_reply() const;
  // A valid reply whose enum values, bools and bounded ints are drawn from
  // seed (echo's "schema_replies": "varied"); strings and unbounded numbers
  // as in the smallest one. PROVIDER as smallest_reply.
  std::string varied_reply(uint64_t seed) const;

 private:
  Value tree_;
  // The schema's root node as a reply carries it: a leaf root inside a
  // {"value": ...} object.
  std::shared_ptr<const SchemaNode> wire_;
  TreeDef out_tree_;
  std::vector<Kind> kinds_;
  std::string json_schema_;
  std::string grammar_json_schema_;
  std::string smallest_reply_, smallest_error_;  // one of them is set
  std::shared_ptr<const SchemaNode> root_;  // the schema as given (wire_ may wrap a leaf)
  std::string wire_reply(const Value& v) const;
};

// Parsed schemas are cached by tree (equations reuse the same param).
std::shared_ptr<const Schema> schema_of(const Value& tree);

}  // namespace af::lm
