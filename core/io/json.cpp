// The readable JSON form of a saved graph (af convert), documented in
// core/io/README.md. It mirrors RawGraph: IRs by index (sub-IRs first, the
// program last), but literals, structures and names are written inline, one
// equation per line. Reading goes JSON -> RawGraph -> flatbuffer -> the one
// loader, so JSON input gets exactly the checks bytes get.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <map>

#include "io/afg.h"
#include "io/raw.h"
#include "value/error.h"

namespace af::io {

namespace {

// ---- writing

// Non-finite floats and dicts that would read back as one of these escapes
// are wrapped, so every Value has exactly one JSON spelling.
bool is_escape_dict(const Value& v) {
  return v.kind() == Kind::Dict && v.size() == 1 &&
         (v.entries()[0].first == "$float" || v.entries()[0].first == "$dict");
}

void append_value(std::string& out, const Value& v) {
  switch (v.kind()) {
    case Kind::Float: {
      double f = v.as_float();
      if (std::isfinite(f)) break;
      uint64_t bits;
      std::memcpy(&bits, &f, sizeof bits);
      const char* name = nullptr;
      if (bits == 0x7ff8000000000000ull) name = "nan";
      else if (bits == 0x7ff0000000000000ull) name = "inf";
      else if (bits == 0xfff0000000000000ull) name = "-inf";
      char buf[24];
      if (!name) {
        std::snprintf(buf, sizeof buf, "0x%016llx", (unsigned long long)bits);
        name = buf;
      }
      out += "{\"$float\":\"";
      out += name;
      out += "\"}";
      return;
    }
    case Kind::List: {
      out += '[';
      for (size_t i = 0; i < v.size(); ++i) {
        if (i) out += ',';
        append_value(out, v.items()[i]);
      }
      out += ']';
      return;
    }
    case Kind::Dict: {
      bool wrap = is_escape_dict(v);
      out += wrap ? "{\"$dict\":{" : "{";
      for (size_t i = 0; i < v.size(); ++i) {
        if (i) out += ',';
        append_json_string(out, v.entries()[i].first);
        out += ':';
        append_value(out, v.entries()[i].second);
      }
      out += wrap ? "}}" : "}";
      return;
    }
    default: break;
  }
  append_json(out, v);
}

// A structure with "*" for leaves.
void append_shape(std::string& out, const Value& t) {
  switch (t.kind()) {
    case Kind::Null: out += "null"; return;
    case Kind::List:
      out += '[';
      for (size_t i = 0; i < t.size(); ++i) {
        if (i) out += ',';
        append_shape(out, t.items()[i]);
      }
      out += ']';
      return;
    case Kind::Dict:
      out += '{';
      for (size_t i = 0; i < t.size(); ++i) {
        if (i) out += ',';
        append_json_string(out, t.entries()[i].first);
        out += ':';
        append_shape(out, t.entries()[i].second);
      }
      out += '}';
      return;
    default: out += "\"*\""; return;
  }
}

bool is_flat_list(const TreeDef& t) {
  return t.root().type == TreeDef::NodeType::List && t.nodes().size() == t.root().n_children + 1 &&
         t.root().n_leaves == t.root().n_children;
}

class JsonWriter {
 public:
  explicit JsonWriter(const RawGraph& g) : g_(g) {}

  std::string write() {
    out_ += "{\n  \"afg\": " + std::to_string(g_.format_version) + ",\n  \"producer\": ";
    append_json_string(out_, g_.producer);
    out_ += ",\n  \"host_functions\": [";
    for (size_t i = 0; i < g_.host_functions.size(); ++i) {
      if (i) out_ += ", ";
      append_json_string(out_, g_.host_functions[i]);
    }
    out_ += "],\n  \"irs\": [";
    for (size_t i = 0; i < g_.irs.size(); ++i) {
      out_ += i ? ",\n" : "\n";
      ir(g_.irs[i]);
    }
    out_ += "\n  ]";
    if (g_.plan) plan(*g_.plan);
    out_ += "\n}\n";
    return std::move(out_);
  }

 private:
  const RawGraph& g_;
  std::string out_;

  // A program's plan; a variable never computed has slot null.
  void plan(const PlanData& p, const char* key = "plan") {
    out_ += std::string(",\n  \"") + key + "\": {\"live\": [";
    for (size_t i = 0; i < p.live.size(); ++i) out_ += (i ? "," : "") + std::to_string(p.live[i]);
    out_ += "],\n    \"var_slot\": [";
    for (size_t i = 0; i < p.var_slot.size(); ++i) {
      if (i) out_ += ',';
      out_ += p.var_slot[i] == kNoVar ? "null" : std::to_string(p.var_slot[i]);
    }
    out_ += "],\n    \"priority\": [";
    for (size_t i = 0; i < p.priority.size(); ++i) {
      if (i) out_ += ',';
      append_value(out_, Value::floating(p.priority[i]));
    }
    out_ += "],\n    \"removed_dce\": " + std::to_string(p.removed_dce) +
            ", \"merged_cse\": " + std::to_string(p.merged_cse);
    if (p.sliced) plan(*p.sliced, "sliced");
    out_ += "}";
  }

  void atom(uint32_t a) {
    if (a & kLiteralBit) {
      out_ += "{\"lit\":";
      append_value(out_, g_.literals[a & ~kLiteralBit]);
      out_ += '}';
    } else {
      out_ += "\"%" + std::to_string(a) + '"';
    }
  }

  // Flat lists as arrays, single leaves as the atom, anything else as
  // {"tree": shape, "atoms": [...]}.
  void atoms(uint32_t tree_index, const uint32_t* a, size_t n) {
    const TreeDef& t = g_.trees[tree_index];
    auto list = [&] {
      out_ += '[';
      for (size_t i = 0; i < n; ++i) {
        if (i) out_ += ',';
        atom(a[i]);
      }
      out_ += ']';
    };
    if (is_flat_list(t)) return list();
    if (t.is_leaf() && n == 1) return atom(a[0]);
    out_ += "{\"tree\":";
    std::vector<Value> leaves(t.num_leaves(), Value::boolean(false));
    append_shape(out_, t.unflatten(leaves));
    out_ += ",\"atoms\":";
    list();
    out_ += '}';
  }

  void ir(const RawIr& r) {
    out_ += "    {\n      \"vars\": [";
    for (size_t i = 0; i < r.vars.size(); ++i) {
      if (i) out_ += ',';
      append_json_string(out_, aval_name(unpack_aval(r.vars[i])));
    }
    out_ += "],\n      \"in\": ";
    atoms(r.in_tree, r.in_atoms.data(), r.in_atoms.size());
    if (!r.in_roles.empty()) {
      out_ += ",\n      \"in_roles\": [";
      for (size_t i = 0; i < r.in_roles.size(); ++i) out_ += (i ? "," : "") + std::to_string(r.in_roles[i]);
      out_ += ']';
    }
    if (r.slice_items) out_ += ",\n      \"slice_items\": " + std::to_string(r.slice_items);
    out_ += ",\n      \"eqns\": [";
    uint32_t in_pos = 0, out_pos = 0;
    for (size_t j = 0; j < r.n_eqns(); ++j) {
      out_ += j ? ",\n        " : "\n        ";
      const auto& [name, version] = g_.prims[r.eqn_prim[j]];
      out_ += "{\"prim\":";
      append_json_string(out_, name);
      if (version != 1) out_ += ",\"version\":" + std::to_string(version);
      out_ += ",\"out\":";
      atoms(r.eqn_out_tree[j], r.eqn_out.data() + out_pos, r.eqn_out_end[j] - out_pos);
      out_ += ",\"in\":";
      atoms(r.eqn_in_tree[j], r.eqn_in.data() + in_pos, r.eqn_in_end[j] - in_pos);
      in_pos = r.eqn_in_end[j];
      out_pos = r.eqn_out_end[j];
      if (r.eqn_params[j]) params(g_.param_sets[r.eqn_params[j] - 1]);
      if (r.eqn_sched_level[j]) {
        out_ += ",\"sched\":{\"level\":" + std::to_string(r.eqn_sched_level[j] - 1) + ",\"priority\":";
        append_value(out_, Value::floating(r.eqn_sched_priority[j]));
        out_ += '}';
      }
      if (r.eqn_tags[j]) {
        out_ += ",\"tags\":[";
        const auto& tags = g_.tag_sets[r.eqn_tags[j] - 1];
        for (size_t t = 0; t < tags.size(); ++t) {
          if (t) out_ += ',';
          append_json_string(out_, tags[t]);
        }
        out_ += ']';
      }
      if (r.eqn_name_path[j]) {
        out_ += ",\"name_path\":[";
        const auto& names = g_.name_paths[r.eqn_name_path[j] - 1];
        for (size_t t = 0; t < names.size(); ++t) {
          if (t) out_ += ',';
          append_json_string(out_, names[t]);
        }
        out_ += ']';
      }
      out_ += '}';
    }
    out_ += r.n_eqns() ? "\n      ],\n      \"out\": " : "],\n      \"out\": ";
    atoms(r.out_tree, r.out_atoms.data(), r.out_atoms.size());
    out_ += "\n    }";
  }

  void params(const std::vector<RawParam>& ps) {
    out_ += ",\"params\":{";
    for (size_t i = 0; i < ps.size(); ++i) {
      const RawParam& p = ps[i];
      if (i) out_ += ',';
      append_json_string(out_, p.name);
      switch (p.kind) {
        case 0:
          out_ += ":{\"value\":";
          append_value(out_, g_.literals[p.value]);
          out_ += '}';
          break;
        case 1: out_ += ":{\"ir\":" + std::to_string(p.value) + '}'; break;
        case 2:
          out_ += ":{\"ir_list\":[";
          for (size_t k = 0; k < p.irs.size(); ++k) out_ += (k ? "," : "") + std::to_string(p.irs[k]);
          out_ += "]}";
          break;
        default:
          out_ += ":{\"ir_map\":{";
          for (size_t k = 0; k < p.irs.size(); ++k) {
            if (k) out_ += ',';
            append_json_string(out_, p.keys[k]);
            out_ += ':' + std::to_string(p.irs[k]);
          }
          out_ += "}}";
      }
    }
    out_ += '}';
  }
};

// ---- reading

[[noreturn]] void bad(const std::string& where, const std::string& why) {
  fail(Code::Format, "invalid graph JSON: " + where + ": " + why);
}

const Value& field(const Value& obj, std::string_view key, const std::string& where) {
  const Value* v = obj.find(key);
  if (!v) bad(where, "missing \"" + std::string(key) + "\"");
  return *v;
}

void only_keys(const Value& obj, std::initializer_list<std::string_view> keys, const std::string& where) {
  if (obj.kind() != Kind::Dict) bad(where, std::string("expected an object, found ") + kind_name(obj.kind()));
  for (const Entry& e : obj.entries())
    if (std::find(keys.begin(), keys.end(), e.first) == keys.end())
      bad(where, "unknown key \"" + e.first + "\"");
}

const std::vector<Value>& list_of(const Value& v, const std::string& where) {
  if (v.kind() != Kind::List) bad(where, std::string("expected a list, found ") + kind_name(v.kind()));
  return v.items();
}

const std::string& str_of(const Value& v, const std::string& where) {
  if (v.kind() != Kind::Str) bad(where, std::string("expected a string, found ") + kind_name(v.kind()));
  return v.as_str();
}

uint32_t index_of(const Value& v, const std::string& where) {
  if (v.kind() != Kind::Int || v.as_int() < 0 || v.as_int() > int64_t(kMaxIndex))
    bad(where, "expected an index (a non-negative integer)");
  return uint32_t(v.as_int());
}

Value decode_value(const Value& v, const std::string& where) {
  switch (v.kind()) {
    case Kind::List: {
      std::vector<Value> items;
      for (const Value& x : v.items()) items.push_back(decode_value(x, where));
      return Value::list(std::move(items));
    }
    case Kind::Dict: {
      if (v.size() == 1 && v.entries()[0].first == "$float") {
        const std::string& s = str_of(v.entries()[0].second, where + " $float");
        uint64_t bits = 0;
        if (s == "nan") bits = 0x7ff8000000000000ull;
        else if (s == "inf") bits = 0x7ff0000000000000ull;
        else if (s == "-inf") bits = 0xfff0000000000000ull;
        else if (s.size() == 18 && s.compare(0, 2, "0x") == 0 &&
                 std::from_chars(s.data() + 2, s.data() + 18, bits, 16).ptr == s.data() + 18) {
        } else {
          bad(where, "\"$float\" must be \"nan\", \"inf\", \"-inf\" or 0x and 16 hex digits, found \"" + s + "\"");
        }
        double f;
        std::memcpy(&f, &bits, sizeof f);
        return Value::floating(f);
      }
      const Value* d = &v;
      if (v.size() == 1 && v.entries()[0].first == "$dict") {
        d = &v.entries()[0].second;
        if (d->kind() != Kind::Dict) bad(where, "\"$dict\" must hold an object");
      }
      std::vector<Entry> entries;
      for (const Entry& e : d->entries()) entries.emplace_back(e.first, decode_value(e.second, where));
      return Value::dict(std::move(entries));
    }
    default: return v;
  }
}

Aval parse_aval(const std::string& s, const std::string& where) {
  std::string_view rest = s;
  uint32_t depth = 0;
  while (rest.size() > 6 && rest.substr(0, 5) == "list<" && rest.back() == '>') {
    rest = rest.substr(5, rest.size() - 6);
    ++depth;
  }
  for (Kind k : {Kind::Null, Kind::Bool, Kind::Int, Kind::Float, Kind::Str, Kind::List, Kind::Dict})
    if (rest == kind_name(k) && depth <= 255) return Aval{k, uint8_t(depth)};
  bad(where, "unknown variable kind \"" + s + "\"");
}

Value shape_value(const Value& s, const std::string& where) {
  switch (s.kind()) {
    case Kind::Null: return Value();
    case Kind::Str:
      if (s.as_str() != "*") break;
      return Value::boolean(false);
    case Kind::List: {
      std::vector<Value> items;
      for (const Value& x : s.items()) items.push_back(shape_value(x, where));
      return Value::list(std::move(items));
    }
    case Kind::Dict: {
      std::vector<Entry> entries;
      for (const Entry& e : s.entries()) entries.emplace_back(e.first, shape_value(e.second, where));
      return Value::dict(std::move(entries));
    }
    default: break;
  }
  bad(where, "a structure holds \"*\" for leaves, null, lists and objects only");
}

class JsonReader {
 public:
  RawGraph read(std::string_view text) {
    Value doc;
    try {
      doc = from_json(text);
    } catch (const Error& e) {
      bad("the document", e.what());
    }
    only_keys(doc, {"afg", "producer", "host_functions", "irs", "plan"}, "the document");
    const Value& version = field(doc, "afg", "the document");
    if (version.kind() != Kind::Int || version.as_int() < 1 || version.as_int() > 0xffffffffll)
      bad("\"afg\"", "expected the format version, a positive integer");
    g_.format_version = uint32_t(version.as_int());
    if (const Value* p = doc.find("producer")) g_.producer = str_of(*p, "\"producer\"");
    if (const Value* h = doc.find("host_functions")) {
      for (const Value& name : list_of(*h, "\"host_functions\"")) g_.host_functions.push_back(str_of(name, "\"host_functions\""));
      std::sort(g_.host_functions.begin(), g_.host_functions.end());
      g_.host_functions.erase(std::unique(g_.host_functions.begin(), g_.host_functions.end()), g_.host_functions.end());
    }
    const auto& irs = list_of(field(doc, "irs", "the document"), "\"irs\"");
    for (size_t i = 0; i < irs.size(); ++i) ir(irs[i], "irs[" + std::to_string(i) + "]");
    if (const Value* p = doc.find("plan")) plan(*p);
    return std::move(g_);
  }

 private:
  RawGraph g_;

  void plan(const Value& v) { g_.plan = plan_of(v, "\"plan\"", true); }

  PlanData plan_of(const Value& v, const std::string& where, bool may_slice) {
    if (may_slice)
      only_keys(v, {"live", "var_slot", "priority", "removed_dce", "merged_cse", "sliced"}, where);
    else
      only_keys(v, {"live", "var_slot", "priority", "removed_dce", "merged_cse"}, where);
    PlanData p;
    for (const Value& x : list_of(field(v, "live", where), where + ".live"))
      p.live.push_back(index_of(x, where + ".live"));
    for (const Value& x : list_of(field(v, "var_slot", where), where + ".var_slot"))
      p.var_slot.push_back(x.is_null() ? kNoVar : index_of(x, where + ".var_slot"));
    for (const Value& x : list_of(field(v, "priority", where), where + ".priority")) {
      Value f = decode_value(x, where + ".priority");
      if (f.kind() != Kind::Float) bad(where + ".priority", "expected floats");
      p.priority.push_back(f.as_float());
    }
    auto count = [&](const char* key) {
      const Value& c = field(v, key, where);
      if (c.kind() != Kind::Int || c.as_int() < 0) bad(where + "." + key, "expected a non-negative integer");
      return uint64_t(c.as_int());
    };
    p.removed_dce = count("removed_dce");
    p.merged_cse = count("merged_cse");
    if (const Value* s = v.find("sliced")) p.sliced = std::make_shared<const PlanData>(plan_of(*s, where + ".sliced", false));
    return p;
  }
  std::map<std::pair<std::string, uint32_t>, uint32_t> prim_index_;

  uint32_t literal(const Value& v, const std::string& where) {
    if (g_.literals.size() >= kMaxIndex) bad(where, "too many literals");
    g_.literals.push_back(decode_value(v, where));
    return uint32_t(g_.literals.size() - 1);
  }

  uint32_t tree(TreeDef t) {
    g_.trees.push_back(std::move(t));
    return uint32_t(g_.trees.size() - 1);
  }

  uint32_t atom(const Value& a, bool vars_only, const std::string& where) {
    if (a.kind() == Kind::Str) {
      const std::string& s = a.as_str();
      uint32_t v = 0;
      if (s.size() >= 2 && s[0] == '%' && (s.size() == 2 || s[1] != '0')) {
        auto r = std::from_chars(s.data() + 1, s.data() + s.size(), v);
        if (r.ec == std::errc() && r.ptr == s.data() + s.size() && v <= kMaxIndex - 1) return v;
      }
      bad(where, "\"" + s + "\" is not a variable (\"%N\")");
    }
    if (!vars_only && a.kind() == Kind::Dict && a.size() == 1 && a.entries()[0].first == "lit")
      return kLiteralBit | literal(a.entries()[0].second, where);
    bad(where, vars_only ? "expected a variable \"%N\"" : "expected a variable \"%N\" or {\"lit\": value}");
  }

  // The three spellings written by JsonWriter::atoms.
  uint32_t atoms(const Value& v, bool vars_only, std::vector<uint32_t>& out, const std::string& where) {
    if (v.kind() == Kind::List) {
      for (const Value& a : v.items()) out.push_back(atom(a, vars_only, where));
      return tree(TreeDef::flat_list(v.size()));
    }
    if (v.kind() == Kind::Dict && v.find("tree")) {
      only_keys(v, {"tree", "atoms"}, where);
      Value shape = shape_value(field(v, "tree", where), where);
      for (const Value& a : list_of(field(v, "atoms", where), where)) out.push_back(atom(a, vars_only, where));
      return tree(shape.kind() == Kind::Bool ? TreeDef() : TreeDef::of(shape));
    }
    out.push_back(atom(v, vars_only, where));
    return tree(TreeDef());
  }

  void ir(const Value& v, const std::string& where) {
    only_keys(v, {"vars", "in", "in_roles", "slice_items", "eqns", "out"}, where);
    RawIr r;
    for (const Value& k : list_of(field(v, "vars", where), where + ".vars"))
      r.vars.push_back(pack_aval(parse_aval(str_of(k, where + ".vars"), where + ".vars")));
    r.in_tree = atoms(field(v, "in", where), false, r.in_atoms, where + ".in");
    if (const Value* roles = v.find("in_roles"))
      for (const Value& role : list_of(*roles, where + ".in_roles")) {
        uint32_t x = index_of(role, where + ".in_roles");
        if (x > uint32_t(InputRole::Cotangent)) bad(where + ".in_roles", "expected 0 (primal), 1 (tangent) or 2 (cotangent)");
        r.in_roles.push_back(uint8_t(x));
      }
    if (const Value* slices = v.find("slice_items")) {
      if (slices->kind() != Kind::Int || slices->as_int() < 0) bad(where + ".slice_items", "expected an int >= 0");
      r.slice_items = slices->as_int();
    }
    if (const Value* eqns = v.find("eqns")) {
      const auto& list = list_of(*eqns, where + ".eqns");
      for (size_t j = 0; j < list.size(); ++j) eqn(r, list[j], where + ".eqns[" + std::to_string(j) + "]");
    }
    r.out_tree = atoms(field(v, "out", where), false, r.out_atoms, where + ".out");
    g_.irs.push_back(std::move(r));
  }

  void eqn(RawIr& r, const Value& e, const std::string& where) {
    only_keys(e, {"prim", "version", "out", "in", "params", "tags", "name_path", "sched"}, where);
    std::string name = str_of(field(e, "prim", where), where + ".prim");
    uint32_t version = 1;
    if (const Value* ver = e.find("version")) version = index_of(*ver, where + ".version");
    auto [it, fresh] = prim_index_.try_emplace({name, version}, uint32_t(g_.prims.size()));
    if (fresh) g_.prims.emplace_back(name, version);
    r.eqn_prim.push_back(it->second);
    r.eqn_out_tree.push_back(atoms(field(e, "out", where), true, r.eqn_out, where + ".out"));
    r.eqn_out_end.push_back(uint32_t(r.eqn_out.size()));
    r.eqn_in_tree.push_back(atoms(field(e, "in", where), false, r.eqn_in, where + ".in"));
    r.eqn_in_end.push_back(uint32_t(r.eqn_in.size()));
    uint32_t params = 0;
    if (const Value* ps = e.find("params")) {
      if (ps->kind() != Kind::Dict) bad(where + ".params", "expected an object");
      std::vector<RawParam> set;
      for (uint32_t i : ps->sorted()) set.push_back(param(ps->entries()[i], where + ".params"));
      if (!set.empty()) {
        g_.param_sets.push_back(std::move(set));
        params = uint32_t(g_.param_sets.size());
      }
    }
    r.eqn_params.push_back(params);
    uint32_t tags = 0;
    if (const Value* ts = e.find("tags")) {
      std::vector<std::string> set;
      for (const Value& t : list_of(*ts, where + ".tags")) set.push_back(str_of(t, where + ".tags"));
      std::sort(set.begin(), set.end());
      set.erase(std::unique(set.begin(), set.end()), set.end());
      if (!set.empty()) {
        g_.tag_sets.push_back(std::move(set));
        tags = uint32_t(g_.tag_sets.size());
      }
    }
    r.eqn_tags.push_back(tags);
    uint32_t names = 0;
    if (const Value* ns = e.find("name_path")) {
      std::vector<std::string> path;
      for (const Value& n : list_of(*ns, where + ".name_path"))
        path.push_back(str_of(n, where + ".name_path"));
      if (!path.empty()) {
        g_.name_paths.push_back(std::move(path));
        names = uint32_t(g_.name_paths.size());
      }
    }
    r.eqn_name_path.push_back(names);
    uint32_t level = 0;
    double priority = 0.0;
    if (const Value* sc = e.find("sched")) {
      only_keys(*sc, {"level", "priority"}, where + ".sched");
      uint32_t l = index_of(field(*sc, "level", where + ".sched"), where + ".sched.level");
      if (l >= kMaxIndex) bad(where + ".sched.level", "out of range");
      level = l + 1;
      Value p = decode_value(field(*sc, "priority", where + ".sched"), where + ".sched.priority");
      if (p.kind() != Kind::Float) bad(where + ".sched.priority", "expected a float");
      priority = p.as_float();
    }
    r.eqn_sched_level.push_back(level);
    r.eqn_sched_priority.push_back(priority);
  }

  RawParam param(const Entry& entry, const std::string& at) {
    const std::string where = at + "." + entry.first;
    const Value& body = entry.second;
    if (body.kind() != Kind::Dict || body.size() != 1)
      bad(where, "a param is an object with one of \"value\", \"ir\", \"ir_list\", \"ir_map\"");
    RawParam p;
    p.name = entry.first;
    const auto& [kind, v] = body.entries()[0];
    if (kind == "value") {
      p.kind = 0;
      p.value = literal(v, where);
    } else if (kind == "ir") {
      p.kind = 1;
      p.value = index_of(v, where);
    } else if (kind == "ir_list") {
      p.kind = 2;
      for (const Value& i : list_of(v, where)) p.irs.push_back(index_of(i, where));
    } else if (kind == "ir_map") {
      p.kind = 3;
      if (v.kind() != Kind::Dict) bad(where, "\"ir_map\" must be an object");
      for (uint32_t i : v.sorted()) {
        p.keys.push_back(v.entries()[i].first);
        p.irs.push_back(index_of(v.entries()[i].second, where));
      }
    } else {
      bad(where, "unknown param kind \"" + kind + "\"");
    }
    return p;
  }
};

}  // namespace

std::string graph_to_json(const IR& ir, const PlanData* plan) {
  return JsonWriter(encode(ir, plan)).write();
}

Loaded graph_from_json(std::string_view json) {
  RawGraph g = JsonReader().read(json);
  std::string fb;
  try {
    fb = write_flatbuffer(g);
  } catch (const Error& e) {
    if (e.code() != Code::InvalidArgument) throw;
    fail(Code::Format, std::string("invalid graph JSON: ") + e.what());
  }
  std::vector<uint64_t> aligned((fb.size() + 7) / 8);
  std::memcpy(aligned.data(), fb.data(), fb.size());
  return read_flatbuffer(reinterpret_cast<const uint8_t*>(aligned.data()), fb.size());
}

}  // namespace af::io
