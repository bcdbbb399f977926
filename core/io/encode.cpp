// Saving: IR -> RawGraph (pools, columns) -> flatbuffer -> sealed bytes.
// Every step is deterministic, so the same IR always gives the same bytes:
// pools are filled in first-seen order of one fixed traversal, and literals
// are deduplicated by *exact* equality (float bits, dict insertion order), so
// a loaded graph prints and saves exactly as the one that was saved.
#include <algorithm>
#include <cstring>
#include <set>
#include <unordered_map>

#include "af_graph_generated.h"
#include "io/afg.h"
#include "io/raw.h"
#include "ir/prim.h"
#include "value/error.h"

namespace af::io {

namespace {

[[noreturn]] void too_big(const std::string& why) { invalid("save graph: " + why); }

// Exact equality: Value's == treats dict order and -0.0/0.0 as equal, which
// would change what a saved literal prints as.
bool exact_equal(const Value& a, const Value& b) {
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::Null: return true;
    case Kind::Bool: return a.as_bool() == b.as_bool();
    case Kind::Int: return a.as_int() == b.as_int();
    case Kind::Float: {
      double x = a.as_float(), y = b.as_float();
      return std::memcmp(&x, &y, sizeof x) == 0;
    }
    case Kind::Str: return a.as_str() == b.as_str();
    case Kind::List: {
      if (a.size() != b.size()) return false;
      for (size_t i = 0; i < a.size(); ++i)
        if (!exact_equal(a.items()[i], b.items()[i])) return false;
      return true;
    }
    case Kind::Dict: {
      if (a.size() != b.size()) return false;
      for (size_t i = 0; i < a.size(); ++i)
        if (a.entries()[i].first != b.entries()[i].first ||
            !exact_equal(a.entries()[i].second, b.entries()[i].second))
          return false;
      return true;
    }
    case Kind::Placeholder: return false;
  }
  return false;
}

// Value::hash is coarser than exact_equal (equal exactly => equal hash).
struct ExactHash {
  size_t operator()(const Value& v) const noexcept { return size_t(v.hash()); }
};
struct ExactEq {
  bool operator()(const Value& a, const Value& b) const noexcept { return exact_equal(a, b); }
};

// A TreeDef as a Value (dummy bool leaves), which keeps dict insertion order.
Value tree_value(const TreeDef& t) {
  std::vector<Value> leaves(t.num_leaves(), Value::boolean(false));
  return t.unflatten(leaves);
}

class Encoder {
 public:
  RawGraph g;

  uint32_t ir(const IR& ir, uint32_t depth) {
    auto too_deep = [] { too_big("IRs are nested in params more than " + std::to_string(kMaxIrDepth) + " deep"); };
    if (auto it = ir_index_.find(&ir); it != ir_index_.end()) {
      // A shared sub-IR met again, maybe deeper than the first time.
      if (depth + height_[it->second] > kMaxIrDepth) too_deep();
      return it->second;
    }
    if (depth > kMaxIrDepth) too_deep();
    if (ir.vars.size() > kMaxIndex) too_big("an IR has more than 2^31 - 1 variables");
    RawIr r;
    uint64_t expanded = ir.eqns.size();
    uint32_t height = 0;  // levels of sub-IRs below this one
    r.vars.reserve(ir.vars.size());
    for (const Aval& a : ir.vars) {
      if (a.kind == Kind::Placeholder) too_big("a variable has the placeholder kind");
      r.vars.push_back(pack_aval(a));
    }
    atoms(ir.in, r.in_atoms);
    r.in_tree = tree(ir.in_tree);
    for (InputRole role : ir.in_roles) r.in_roles.push_back(uint8_t(role));
    r.slice_items = ir.slice_items;
    const size_t n = ir.eqns.size();
    for (auto* col : {&r.eqn_prim, &r.eqn_in_end, &r.eqn_in_tree, &r.eqn_out_end, &r.eqn_out_tree,
                      &r.eqn_params, &r.eqn_tags, &r.eqn_name_path})
      col->reserve(n);
    for (const Eqn& e : ir.eqns) {
      if (!e.prim) too_big("an equation has no primitive");
      r.eqn_prim.push_back(prim(e.prim));
      atoms(e.in, r.eqn_in);
      r.eqn_in_end.push_back(uint32_t(r.eqn_in.size()));
      r.eqn_in_tree.push_back(tree(e.in_tree));
      for (VarId v : e.out) r.eqn_out.push_back(v);
      r.eqn_out_end.push_back(uint32_t(r.eqn_out.size()));
      r.eqn_out_tree.push_back(tree(e.out_tree));
      r.eqn_params.push_back(params(e.params, depth, expanded, height));
      r.eqn_tags.push_back(tags(e.tags()));
      r.eqn_name_path.push_back(name_path(e.name_path()));
      host_functions(e);
      if (e.sched() && e.sched()->level == UINT32_MAX) too_big("a sched level is out of range");
      r.eqn_sched_level.push_back(e.sched() ? e.sched()->level + 1 : 0);
      r.eqn_sched_priority.push_back(e.sched() ? e.sched()->priority : 0.0);
    }
    atoms(ir.out, r.out_atoms);
    r.out_tree = tree(ir.out_tree);
    if (expanded > kMaxExpandedEqns)
      too_big("the IR expands to more than 2^32 equations through shared sub-IRs");
    uint32_t index = uint32_t(g.irs.size());
    g.irs.push_back(std::move(r));
    expanded_.push_back(expanded);
    height_.push_back(height);
    ir_index_.emplace(&ir, index);
    return index;
  }

 private:
  std::unordered_map<const IR*, uint32_t> ir_index_;
  std::vector<uint64_t> expanded_;
  std::vector<uint32_t> height_;
  std::unordered_map<Value, uint32_t, ExactHash, ExactEq> literal_index_;
  std::unordered_map<const void*, uint32_t> tree_by_nodes_;
  std::unordered_map<Value, uint32_t, ExactHash, ExactEq> tree_index_;
  std::unordered_map<const Prim*, uint32_t> prim_index_;
  std::unordered_map<const void*, uint32_t> tags_by_ptr_;
  std::unordered_map<std::string, uint32_t> tags_index_;
  std::unordered_map<const void*, uint32_t> names_by_ptr_;
  std::unordered_map<std::string, uint32_t> names_index_;
  std::unordered_map<std::string, uint32_t> params_index_;

  // Host functions named by params declared as such (ParamSpec).
  void host_functions(const Eqn& e) {
    for (const ParamSpec& spec : e.prim->params) {
      if (!spec.names_host_function) continue;
      const Param* p = e.params.find(spec.name);
      if (p && std::holds_alternative<Value>(*p) && std::get<Value>(*p).kind() == Kind::Str)
        hosts.insert(std::get<Value>(*p).as_str());
    }
  }

 public:
  std::set<std::string> hosts;

 private:
  uint32_t literal(const Value& v) {
    if (v.has_placeholder())
      too_big("a literal holds a placeholder (a traced value cannot be saved)");
    auto [it, fresh] = literal_index_.try_emplace(v, uint32_t(g.literals.size()));
    if (fresh) {
      if (g.literals.size() >= kMaxIndex) too_big("more than 2^31 - 1 distinct literals");
      g.literals.push_back(v);
    }
    return it->second;
  }

  void atoms(std::span<const Atom> in, std::vector<uint32_t>& out) {
    for (const Atom& a : in) out.push_back(a.is_var() ? a.var : kLiteralBit | literal(a.lit));
  }

  uint32_t tree(const TreeDef& t) {
    const void* key = &t.nodes();
    if (auto it = tree_by_nodes_.find(key); it != tree_by_nodes_.end()) return it->second;
    Value v = tree_value(t);
    auto [it, fresh] = tree_index_.try_emplace(v, uint32_t(g.trees.size()));
    if (fresh) g.trees.push_back(t);
    // The nodes stay alive with the IR being encoded, so the address is stable.
    tree_by_nodes_.emplace(key, it->second);
    return it->second;
  }

  uint32_t prim(const Prim* p) {
    auto [it, fresh] = prim_index_.try_emplace(p, uint32_t(g.prims.size()));
    if (fresh) g.prims.emplace_back(p->name, p->version);
    return it->second;
  }

  uint32_t tags(const Tags& t) {
    if (!t || t->empty()) return 0;
    if (auto it = tags_by_ptr_.find(t.get()); it != tags_by_ptr_.end()) return it->second;
    std::string key;
    for (const std::string& s : *t) key += s + '\0';
    auto [it, fresh] = tags_index_.try_emplace(key, uint32_t(g.tag_sets.size() + 1));
    if (fresh) g.tag_sets.push_back(*t);
    tags_by_ptr_.emplace(t.get(), it->second);
    return it->second;
  }

  uint32_t name_path(const NamePath& p) {
    if (!p || p->empty()) return 0;
    if (auto it = names_by_ptr_.find(p.get()); it != names_by_ptr_.end()) return it->second;
    std::string key;
    for (const std::string& s : *p) key += s + '\0';
    auto [it, fresh] = names_index_.try_emplace(key, uint32_t(g.name_paths.size() + 1));
    if (fresh) g.name_paths.push_back(*p);
    names_by_ptr_.emplace(p.get(), it->second);
    return it->second;
  }

  uint32_t sub_ir(const IRPtr& p, uint32_t depth, uint64_t& expanded, uint32_t& height) {
    if (!p) too_big("a param holds a null IR");
    uint32_t i = ir(*p, depth + 1);
    expanded += expanded_[i];
    height = std::max(height, height_[i] + 1);
    if (expanded > kMaxExpandedEqns)
      too_big("the IR expands to more than 2^32 equations through shared sub-IRs");
    return i;
  }

  uint32_t params(const Params& ps, uint32_t depth, uint64_t& expanded, uint32_t& height) {
    if (ps.empty()) return 0;
    std::vector<RawParam> set;
    std::string key;
    auto add_u32 = [&](uint32_t x) { key.append(reinterpret_cast<const char*>(&x), 4); };
    for (const auto& [name, p] : ps.items()) {
      RawParam r;
      r.name = name;
      r.kind = uint8_t(p.index());
      if (auto* v = std::get_if<Value>(&p)) {
        r.value = literal(*v);
      } else if (auto* one = std::get_if<IRPtr>(&p)) {
        r.value = sub_ir(*one, depth, expanded, height);
      } else if (auto* list = std::get_if<IRList>(&p)) {
        for (const IRPtr& x : *list) r.irs.push_back(sub_ir(x, depth, expanded, height));
      } else if (auto* map = std::get_if<IRMap>(&p)) {
        for (const auto& [k, x] : *map) {
          r.keys.push_back(k);
          r.irs.push_back(sub_ir(x, depth, expanded, height));
        }
      }
      key += name;
      key += '\0';
      key += char(r.kind);
      add_u32(r.value);
      add_u32(uint32_t(r.irs.size()));
      for (uint32_t i : r.irs) add_u32(i);
      for (const std::string& k : r.keys) key += k + '\0';
      set.push_back(std::move(r));
    }
    auto [it, fresh] = params_index_.try_emplace(key, uint32_t(g.param_sets.size() + 1));
    if (fresh) g.param_sets.push_back(std::move(set));
    return it->second;
  }
};

// ---- RawGraph -> flatbuffer

using flatbuffers::FlatBufferBuilder;
using flatbuffers::Offset;

class Writer {
 public:
  explicit Writer(const RawGraph& g) : g_(g) {}

  std::string write() {
    // Pools and everything that names a string first (interning), then the
    // builder objects bottom-up.
    std::vector<uint32_t> prim_names;
    for (const auto& [name, version] : g_.prims) prim_names.push_back(intern(name));
    PoolArrays literals, trees;
    for (const Value& v : g_.literals) pool_value(literals, v, 1, false);
    // Interned strings point into these values: keep them alive.
    for (const TreeDef& t : g_.trees) {
      keep_.push_back(tree_value(t));
      pool_value(trees, keep_.back(), 1, true);
    }
    std::vector<std::vector<uint32_t>> tag_sets;
    for (const auto& set : g_.tag_sets) {
      tag_sets.emplace_back();
      for (const std::string& t : set) tag_sets.back().push_back(intern(t));
    }
    struct ParamIds {
      uint32_t name;
      std::vector<uint32_t> keys;
    };
    std::vector<std::vector<ParamIds>> param_ids;
    for (const auto& set : g_.param_sets) {
      param_ids.emplace_back();
      for (const RawParam& p : set) {
        ParamIds ids{intern(p.name), {}};
        for (const std::string& k : p.keys) ids.keys.push_back(intern(k));
        param_ids.back().push_back(std::move(ids));
      }
    }
    std::vector<uint32_t> hosts;
    for (const std::string& h : g_.host_functions) hosts.push_back(intern(h));
    std::vector<std::vector<uint32_t>> name_paths;
    for (const auto& path : g_.name_paths) {
      name_paths.emplace_back();
      for (const std::string& n : path) name_paths.back().push_back(intern(n));
    }

    size_t estimate = 1024 + literals.data.size() * 9 + trees.data.size() * 9;
    for (const std::string_view s : strings_) estimate += s.size() + 8;
    for (const RawIr& r : g_.irs)
      estimate += 4 * (r.eqn_in.size() + r.eqn_out.size() + 9 * r.n_eqns() + r.in_atoms.size() +
                       r.out_atoms.size()) + 2 * r.vars.size() + 128;
    FlatBufferBuilder fbb(std::min<size_t>(estimate, kMaxContentBytes));

    std::vector<Offset<flatbuffers::String>> str_offsets;
    str_offsets.reserve(strings_.size());
    for (std::string_view s : strings_) str_offsets.push_back(fbb.CreateString(s.data(), s.size()));
    auto strings = fbb.CreateVector(str_offsets);
    auto producer = fbb.CreateString(g_.producer);

    std::vector<Offset<fb::PrimRef>> prims;
    for (size_t i = 0; i < g_.prims.size(); ++i)
      prims.push_back(fb::CreatePrimRef(fbb, prim_names[i], g_.prims[i].second));
    auto prims_vec = fbb.CreateVector(prims);
    auto literals_pool = pool(fbb, literals);
    auto trees_pool = pool(fbb, trees);

    std::vector<Offset<fb::TagSet>> tag_offsets;
    for (const auto& set : tag_sets) tag_offsets.push_back(fb::CreateTagSet(fbb, fbb.CreateVector(set)));
    auto tag_vec = fbb.CreateVector(tag_offsets);

    std::vector<Offset<fb::ParamSet>> set_offsets;
    for (size_t s = 0; s < g_.param_sets.size(); ++s) {
      std::vector<Offset<fb::Param>> ps;
      for (size_t i = 0; i < g_.param_sets[s].size(); ++i) {
        const RawParam& p = g_.param_sets[s][i];
        fb::ParamBody type = fb::ParamBody::NONE;
        Offset<void> body;
        switch (p.kind) {
          case 0: type = fb::ParamBody::ValueParam; body = fb::CreateValueParam(fbb, p.value).Union(); break;
          case 1: type = fb::ParamBody::IrParam; body = fb::CreateIrParam(fbb, p.value).Union(); break;
          case 2:
            type = fb::ParamBody::IrListParam;
            body = fb::CreateIrListParam(fbb, fbb.CreateVector(p.irs)).Union();
            break;
          case 3: {
            type = fb::ParamBody::IrMapParam;
            auto keys = fbb.CreateVector(param_ids[s][i].keys);
            body = fb::CreateIrMapParam(fbb, keys, fbb.CreateVector(p.irs)).Union();
            break;
          }
          default: too_big("param \"" + p.name + "\" has an unknown kind");
        }
        ps.push_back(fb::CreateParam(fbb, param_ids[s][i].name, type, body));
      }
      set_offsets.push_back(fb::CreateParamSet(fbb, fbb.CreateVector(ps)));
    }
    auto set_vec = fbb.CreateVector(set_offsets);

    std::vector<Offset<fb::Ir>> irs;
    for (const RawIr& r : g_.irs) irs.push_back(ir(fbb, r));
    auto irs_vec = fbb.CreateVector(irs);
    auto hosts_vec = fbb.CreateVector(hosts);
    Offset<fb::Plan> plan;
    if (const auto& p = g_.plan) plan = write_plan(fbb, *p);

    // Absent when nothing is named: a graph without names saves as it did
    // before name paths existed.
    Offset<flatbuffers::Vector<Offset<fb::NamePath>>> names_vec;
    if (!name_paths.empty()) {
      std::vector<Offset<fb::NamePath>> offsets;
      for (const auto& path : name_paths)
        offsets.push_back(fb::CreateNamePath(fbb, fbb.CreateVector(path)));
      names_vec = fbb.CreateVector(offsets);
    }
    auto graph =
        fb::CreateGraph(fbb, g_.format_version, producer, strings, prims_vec, literals_pool,
                        trees_pool, tag_vec, set_vec, irs_vec, hosts_vec, plan, names_vec);
    fb::FinishGraphBuffer(fbb, graph);
    return std::string(reinterpret_cast<const char*>(fbb.GetBufferPointer()), fbb.GetSize());
  }

 private:
  struct PoolArrays {
    std::vector<uint8_t> kinds;
    std::vector<uint64_t> data;
    std::vector<uint32_t> keys;
  };
  const RawGraph& g_;
  std::vector<std::string_view> strings_;
  std::unordered_map<std::string_view, uint32_t> string_index_;
  std::vector<Value> keep_;

  // A plan and, nested in it, its sliced form's (built first: children
  // before parents).
  static Offset<fb::Plan> write_plan(flatbuffers::FlatBufferBuilder& fbb, const PlanData& p) {
    Offset<fb::Plan> sliced;
    if (p.sliced) sliced = write_plan(fbb, *p.sliced);
    return fb::CreatePlan(fbb, fbb.CreateVector(p.live), fbb.CreateVector(p.var_slot),
                          fbb.CreateVector(p.priority), p.removed_dce, p.merged_cse, sliced);
  }

  uint32_t intern(std::string_view s) {
    auto [it, fresh] = string_index_.try_emplace(s, uint32_t(strings_.size()));
    if (fresh) strings_.push_back(s);
    return it->second;
  }

  // Post-order: children, then the node (see the schema's Pool).
  void pool_value(PoolArrays& p, const Value& v, uint32_t depth, bool tree) {
    if (depth > kMaxTreeDepth)
      too_big("a value or structure is nested more than " + std::to_string(kMaxTreeDepth) + " deep");
    auto node = [&](fb::NodeKind k, uint64_t d) {
      p.kinds.push_back(uint8_t(k));
      p.data.push_back(d);
    };
    switch (v.kind()) {
      case Kind::Null: node(fb::NodeKind::Null, 0); return;
      case Kind::Bool:
        node(tree ? fb::NodeKind::Leaf : fb::NodeKind::Bool, tree ? 0 : uint64_t(v.as_bool()));
        return;
      case Kind::Int: node(fb::NodeKind::Int, uint64_t(v.as_int())); return;
      case Kind::Float: {
        double f = v.as_float();
        uint64_t bits;
        std::memcpy(&bits, &f, sizeof bits);
        node(fb::NodeKind::Float, bits);
        return;
      }
      case Kind::Str: node(fb::NodeKind::Str, intern(v.as_str())); return;
      case Kind::List:
        for (const Value& item : v.items()) pool_value(p, item, depth + 1, tree);
        node(fb::NodeKind::List, v.size());
        return;
      case Kind::Dict:
        for (const Entry& e : v.entries()) pool_value(p, e.second, depth + 1, tree);
        for (const Entry& e : v.entries()) p.keys.push_back(intern(e.first));
        node(fb::NodeKind::Dict, v.size());
        return;
      case Kind::Placeholder: too_big("a literal holds a placeholder");
    }
  }

  Offset<fb::Pool> pool(FlatBufferBuilder& fbb, const PoolArrays& p) {
    auto kinds = fbb.CreateVector(p.kinds);
    auto data = fbb.CreateVector(p.data);
    auto keys = fbb.CreateVector(p.keys);
    return fb::CreatePool(fbb, Offset<flatbuffers::Vector<fb::NodeKind>>(kinds.o), data, keys);
  }

  Offset<fb::Ir> ir(FlatBufferBuilder& fbb, const RawIr& r) {
    auto vars = fbb.CreateVector(r.vars);
    auto in_atoms = fbb.CreateVector(r.in_atoms);
    auto prim = fbb.CreateVector(r.eqn_prim);
    auto in_end = fbb.CreateVector(r.eqn_in_end);
    auto in = fbb.CreateVector(r.eqn_in);
    auto in_tree = fbb.CreateVector(r.eqn_in_tree);
    auto out_end = fbb.CreateVector(r.eqn_out_end);
    auto out = fbb.CreateVector(r.eqn_out);
    auto out_tree = fbb.CreateVector(r.eqn_out_tree);
    // Columns that are all zero (no params, no tags) are left out.
    auto all_zero = [](const std::vector<uint32_t>& c) {
      for (uint32_t x : c)
        if (x) return false;
      return true;
    };
    Offset<flatbuffers::Vector<uint32_t>> params, tags;
    if (!all_zero(r.eqn_params)) params = fbb.CreateVector(r.eqn_params);
    if (!all_zero(r.eqn_tags)) tags = fbb.CreateVector(r.eqn_tags);
    auto out_atoms = fbb.CreateVector(r.out_atoms);
    Offset<flatbuffers::Vector<uint32_t>> sched_level;
    Offset<flatbuffers::Vector<double>> sched_priority;
    if (!all_zero(r.eqn_sched_level)) {
      sched_level = fbb.CreateVector(r.eqn_sched_level);
      sched_priority = fbb.CreateVector(r.eqn_sched_priority);
    }
    Offset<flatbuffers::Vector<uint8_t>> in_roles;
    if (!r.in_roles.empty()) in_roles = fbb.CreateVector(r.in_roles);
    Offset<flatbuffers::Vector<uint32_t>> name_path;
    if (!all_zero(r.eqn_name_path)) name_path = fbb.CreateVector(r.eqn_name_path);
    fb::IrBuilder b(fbb);
    b.add_vars(vars);
    b.add_in_atoms(in_atoms);
    b.add_in_tree(r.in_tree);
    b.add_eqn_prim(prim);
    b.add_eqn_in_end(in_end);
    b.add_eqn_in(in);
    b.add_eqn_in_tree(in_tree);
    b.add_eqn_out_end(out_end);
    b.add_eqn_out(out);
    b.add_eqn_out_tree(out_tree);
    if (!params.IsNull()) b.add_eqn_params(params);
    if (!tags.IsNull()) b.add_eqn_tags(tags);
    b.add_out_atoms(out_atoms);
    b.add_out_tree(r.out_tree);
    if (!sched_level.IsNull()) {
      b.add_eqn_sched_level(sched_level);
      b.add_eqn_sched_priority(sched_priority);
    }
    if (!in_roles.IsNull()) b.add_in_roles(in_roles);
    if (!name_path.IsNull()) b.add_eqn_name_path(name_path);
    if (r.slice_items) b.add_slice_items(r.slice_items);
    return b.Finish();
  }
};

}  // namespace

const std::string& producer() {
  static const std::string p = "libaf " AF_PRODUCER_VERSION;
  return p;
}

uint16_t pack_aval(const Aval& a) { return uint16_t(uint16_t(a.kind) | uint16_t(a.list_depth) << 8); }
Aval unpack_aval(uint16_t a) { return Aval{Kind(a & 0xff), uint8_t(a >> 8)}; }

RawGraph encode(const IR& ir, const PlanData* plan) {
  Encoder e;
  e.g.format_version = kFormatVersion;
  e.g.producer = producer();
  e.ir(ir, 0);
  e.g.host_functions.assign(e.hosts.begin(), e.hosts.end());
  if (plan) e.g.plan = *plan;
  return std::move(e.g);
}

std::string write_flatbuffer(const RawGraph& g) { return Writer(g).write(); }

std::string save_ir(const IR& ir, const PlanData* plan) {
  RawGraph g = encode(ir, plan);
  uint16_t flags = g.host_functions.empty() ? 0 : kFlagHasHostFunctions;
  return seal(write_flatbuffer(g), flags);
}

}  // namespace af::io
