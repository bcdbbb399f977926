// Loading: untrusted bytes -> IR, checking in the order of core/io/README.md, "Loading":
// container (container.cpp: size cap, header, checksum, zstd), then the
// FlatBuffers Verifier with explicit limits, then every index, string and
// table of the flatbuffer as the IR is built, each IR checked by the one
// IR checker (core/ir/validate.h) as it goes. This file holds the rules
// about bytes; the rules about IRs are there. Nothing is trusted before it
// is checked, and nothing is skipped.
#include <cstring>
#include <algorithm>
#include <optional>
#include <unordered_map>

#include "af_graph_generated.h"
#include "io/afg.h"
#include "io/raw.h"
#include "ir/prim.h"
#include "ir/registry.h"
#include "ir/validate.h"
#include "value/error.h"
#include "value/huge_pages.h"

namespace af::io {

namespace {

[[noreturn]] void bad(const std::string& why) { fail(Code::Format, "invalid graph: " + why); }

template <class T>
uint32_t size_of(const flatbuffers::Vector<T>* v) {
  return v ? v->size() : 0;
}

// The Verifier checks a vector's length field (4-byte aligned), not that its
// 8-byte elements are 8-byte aligned; reading a misaligned one is undefined.
// An empty vector is exempt: FlatBuffers does not pad it, and nothing is read.
template <class T>
void require_aligned(const flatbuffers::Vector<T>* v, const char* what) {
  if (v && v->size() != 0 && reinterpret_cast<uintptr_t>(v->data()) % alignof(T) != 0)
    fail(Code::Format, std::string("invalid graph: the ") + what + " vector is misaligned");
}

class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  Loaded read() {
    verify();
    g_ = fb::GetGraph(data_);
    Loaded out;
    out.format_version = g_->format_version();
    if (out.format_version == 0) bad("format_version is missing");
    if (out.format_version > kFormatVersion)
      fail(Code::Version, "this graph has format version " + std::to_string(out.format_version) +
                              "; this libaf reads up to version " + std::to_string(kFormatVersion) +
                              " (upgrade libaf)");
    if (g_->producer()) {
      std::string_view p(g_->producer()->data(), g_->producer()->size());
      if (!valid_utf8(p)) bad("the producer string is not valid UTF-8");
      out.producer = std::string(p);
    }
    strings();
    prims(out);
    literals_ = pool(g_->literals(), false, "literal");
    for (const Value& v : pool(g_->trees(), true, "tree")) {
      // A root that is not a container is a single leaf or a null node.
      trees_.push_back(v.kind() == Kind::Bool ? TreeDef() : TreeDef::of(v));
    }
    tag_sets();
    name_paths();
    param_sets();
    irs(out);
    host_functions(out);
    plan(out);
    out.ir = irs_.back();
    out.content_bytes = size_;
    return out;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  const fb::Graph* g_ = nullptr;
  std::vector<std::string_view> strings_;
  std::vector<const Prim*> prims_;
  std::vector<Value> literals_;
  std::vector<TreeDef> trees_;
  std::vector<Tags> tag_sets_;
  std::vector<NamePath> name_paths_;
  // (tag set, name path) -> the notes block of the equations that have them
  // and no sched: equations share one block, as when traced.
  std::unordered_map<uint64_t, Shared<EqnNotes>> notes_;
  struct ParamSet {
    const fb::ParamSet* fb = nullptr;
    int64_t max_ir = -1;  // highest IR index referenced
    std::optional<Params> built;
    uint64_t expanded = 0;  // equations reached through the referenced IRs
  };
  std::vector<ParamSet> param_sets_;
  std::vector<IRPtr> irs_;
  std::vector<uint64_t> expanded_;
  // Every rule about the IRs (a bad one is a bad file: FORMAT).
  IRChecker checker_{{.code = Code::Format, .keep_rule_codes = false, .undeclared_means_none = true}};

  void verify() {
    if (size_ < 8 || !fb::GraphBufferHasIdentifier(data_))
      bad("the content is not an AFG1 flatbuffer (wrong file identifier)");
    flatbuffers::Verifier::Options opts;
    opts.max_depth = kMaxVerifierDepth;
    opts.max_tables = kMaxVerifierTables;
    opts.check_alignment = true;
    flatbuffers::Verifier v(data_, size_, opts);
    if (!fb::VerifyGraphBuffer(v))
      bad("the flatbuffer does not verify (damaged, or past the limits of " +
          std::to_string(kMaxVerifierDepth) + " levels of nesting and " +
          std::to_string(kMaxVerifierTables) + " tables)");
  }

  std::string_view str(uint64_t i, const char* what) const {
    if (i >= strings_.size())
      bad(std::string(what) + " names string " + std::to_string(i) + " but the graph has " +
          std::to_string(strings_.size()));
    return strings_[size_t(i)];
  }

  void strings() {
    const auto* v = g_->strings();
    strings_.reserve(size_of(v));
    for (uint32_t i = 0; i < size_of(v); ++i) {
      const flatbuffers::String* s = v->Get(i);
      std::string_view sv(s->data(), s->size());
      if (!valid_utf8(sv)) bad("string " + std::to_string(i) + " is not valid UTF-8");
      strings_.push_back(sv);
    }
  }

  void prims(Loaded& out) {
    const auto* v = g_->prims();
    for (uint32_t i = 0; i < size_of(v); ++i) {
      const fb::PrimRef* r = v->Get(i);
      std::string_view name = str(r->name(), "a primitive");
      if (r->version() == 0) bad("primitive \"" + std::string(name) + "\" has version 0");
      const Prim* p = find_prim(name, r->version());
      if (!p) {
        std::string want = "\"" + std::string(name) + "\" version " + std::to_string(r->version());
        if (const Prim* newest = find_prim(name))
          fail(Code::Version, "this graph needs primitive " + want + "; this libaf has version " +
                                  std::to_string(newest->version) + " (upgrade libaf)");
        fail(Code::Version, "this graph needs primitive " + want +
                                ", which this libaf does not have (upgrade libaf, or load the "
                                "plugin that registers it)");
      }
      prims_.push_back(p);
      out.prims.push_back(p->version == 1 ? p->name : p->name + "@" + std::to_string(p->version));
    }
  }

  // The post-order stack program of a Pool (see the schema).
  std::vector<Value> pool(const fb::Pool* p, bool tree, const char* what) {
    std::vector<Value> stack;
    if (!p) return stack;
    const auto* kinds = p->kinds();
    const auto* data = p->data();
    require_aligned(data, "pool data");
    const auto* keys = p->keys();
    const uint32_t n = size_of(kinds);
    if (size_of(data) != n)
      bad(std::string("the ") + what + " pool has " + std::to_string(n) + " kinds but " +
          std::to_string(size_of(data)) + " data entries");
    std::vector<uint16_t> depth;
    uint32_t key_pos = 0;
    const uint32_t n_keys = size_of(keys);
    for (uint32_t i = 0; i < n; ++i) {
      const auto k = kinds->Get(i);
      const uint64_t d = data->Get(i);
      auto node = [&] { return std::string("node ") + std::to_string(i) + " of the " + what + " pool"; };
      auto scalar = [&](Value v) {
        stack.push_back(std::move(v));
        depth.push_back(1);
      };
      bool allowed = tree ? (k == fb::NodeKind::Null || k == fb::NodeKind::List ||
                             k == fb::NodeKind::Dict || k == fb::NodeKind::Leaf)
                          : k != fb::NodeKind::Leaf;
      if (!allowed && uint8_t(k) <= uint8_t(fb::NodeKind::Leaf))
        bad(node() + " is a " + fb::EnumNameNodeKind(k) + " node, which a " + what + " cannot hold");
      switch (k) {
        case fb::NodeKind::Null:
        case fb::NodeKind::Leaf:
          if (d != 0) bad(node() + " carries data");
          scalar(k == fb::NodeKind::Leaf ? Value::boolean(false) : Value());
          break;
        case fb::NodeKind::Bool:
          if (d > 1) bad(node() + " is a bool other than 0 or 1");
          scalar(Value::boolean(d == 1));
          break;
        case fb::NodeKind::Int: scalar(Value::integer(int64_t(d))); break;
        case fb::NodeKind::Float: {
          double f;
          std::memcpy(&f, &d, sizeof f);
          scalar(Value::floating(f));
          break;
        }
        case fb::NodeKind::Str: scalar(Value::str(std::string(str(d, "a string value")))); break;
        case fb::NodeKind::List:
        case fb::NodeKind::Dict: {
          if (d > stack.size())
            bad(node() + " takes " + std::to_string(d) + " children but only " +
                std::to_string(stack.size()) + " precede it");
          const size_t first = stack.size() - size_t(d);
          uint16_t deepest = 0;
          for (size_t c = first; c < stack.size(); ++c) deepest = std::max(deepest, depth[c]);
          if (deepest + 1u > kMaxTreeDepth)
            bad(node() + " nests more than " + std::to_string(kMaxTreeDepth) + " levels deep");
          Value made;
          if (k == fb::NodeKind::List) {
            std::vector<Value> items(std::make_move_iterator(stack.begin() + long(first)),
                                     std::make_move_iterator(stack.end()));
            made = Value::list(std::move(items));
          } else {
            if (d > n_keys - key_pos) bad(node() + " needs more dict keys than the pool has");
            std::vector<Entry> entries;
            entries.reserve(size_t(d));
            for (size_t c = first; c < stack.size(); ++c)
              entries.emplace_back(std::string(str(keys->Get(key_pos++), "a dict key")),
                                   std::move(stack[c]));
            try {
              made = Value::dict(std::move(entries));
            } catch (const Error& e) {
              bad(node() + ": " + e.what());
            }
          }
          stack.resize(first);
          depth.resize(first);
          stack.push_back(std::move(made));
          depth.push_back(uint16_t(deepest + 1));
          break;
        }
        default: bad(node() + " has unknown kind " + std::to_string(unsigned(k)));
      }
    }
    if (key_pos != n_keys)
      bad(std::string("the ") + what + " pool has " + std::to_string(n_keys - key_pos) +
          " dict key(s) no node uses");
    return stack;
  }

  void tag_sets() {
    const auto* v = g_->tag_sets();
    for (uint32_t i = 0; i < size_of(v); ++i) {
      const auto* tags = v->Get(i)->tags();
      auto set = std::make_shared<std::vector<std::string>>();
      for (uint32_t t = 0; t < size_of(tags); ++t) {
        std::string_view s = str(tags->Get(t), "a tag");
        if (!set->empty() && !(set->back() < s))
          bad("tag set " + std::to_string(i) + " is not sorted and duplicate-free");
        set->emplace_back(s);
      }
      tag_sets_.push_back(set->empty() ? nullptr : Tags(std::move(set)));
    }
  }

  void name_paths() {
    const auto* v = g_->name_paths();
    for (uint32_t i = 0; i < size_of(v); ++i) {
      const auto* names = v->Get(i)->names();
      if (size_of(names) == 0) bad("name path " + std::to_string(i) + " is empty");
      auto path = std::make_shared<std::vector<std::string>>();
      for (uint32_t k = 0; k < size_of(names); ++k) {
        std::string_view s = str(names->Get(k), "a name");
        if (s.empty() || s.find('/') != std::string_view::npos)
          bad("name path " + std::to_string(i) + " holds an empty name or one with '/'");
        path->emplace_back(s);
      }
      name_paths_.push_back(std::move(path));
    }
  }

  void check_ir_index(uint32_t ir, int64_t& max_ir) {
    const uint32_t n = size_of(g_->irs());
    if (ir >= n) bad("a param names IR " + std::to_string(ir) + " but the graph has " + std::to_string(n));
    max_ir = std::max<int64_t>(max_ir, ir);
  }

  // Checks each param set's shape now; builds its Params when an IR first
  // uses it (the IRs it names exist by then).
  void param_sets() {
    const auto* v = g_->param_sets();
    param_sets_.resize(size_of(v));
    for (uint32_t i = 0; i < size_of(v); ++i) {
      ParamSet& set = param_sets_[i];
      set.fb = v->Get(i);
      const auto* params = set.fb->params();
      std::string_view prev;
      for (uint32_t k = 0; k < size_of(params); ++k) {
        const fb::Param* p = params->Get(k);
        std::string_view name = str(p->name(), "a param name");
        auto where = [&] { return "param \"" + std::string(name) + "\" (param set " + std::to_string(i) + ")"; };
        if (k > 0 && !(prev < name)) bad("param set " + std::to_string(i) + " is not sorted by name or repeats a name");
        prev = name;
        // The Verifier accepts a union whose type is set but whose table is absent.
        if (p->body_type() != fb::ParamBody::NONE && !p->body()) bad(where() + " has no body");
        switch (p->body_type()) {
          case fb::ParamBody::ValueParam:
            if (p->body_as_ValueParam()->value() >= literals_.size())
              bad(where() + " names literal " + std::to_string(p->body_as_ValueParam()->value()) +
                  " but the graph has " + std::to_string(literals_.size()));
            break;
          case fb::ParamBody::IrParam: check_ir_index(p->body_as_IrParam()->ir(), set.max_ir); break;
          case fb::ParamBody::IrListParam: {
            const auto* irs = p->body_as_IrListParam()->irs();
            for (uint32_t j = 0; j < size_of(irs); ++j) check_ir_index(irs->Get(j), set.max_ir);
            break;
          }
          case fb::ParamBody::IrMapParam: {
            const auto* m = p->body_as_IrMapParam();
            if (size_of(m->keys()) != size_of(m->irs()))
              bad(where() + " has " + std::to_string(size_of(m->keys())) + " keys but " +
                  std::to_string(size_of(m->irs())) + " IRs");
            std::string_view prev_key;
            for (uint32_t j = 0; j < size_of(m->keys()); ++j) {
              std::string_view key = str(m->keys()->Get(j), "an IR map key");
              if (j > 0 && !(prev_key < key)) bad(where() + ": keys are not sorted or repeat");
              prev_key = key;
              check_ir_index(m->irs()->Get(j), set.max_ir);
            }
            break;
          }
          case fb::ParamBody::NONE: bad(where() + " has no body");
          default:
            bad(where() + " has an unknown kind (" + std::to_string(unsigned(p->body_type())) + ")");
        }
      }
    }
  }

  const Params& params_for(ParamSet& set) {
    if (set.built) return *set.built;
    Params ps;
    const auto* params = set.fb->params();
    for (uint32_t k = 0; k < size_of(params); ++k) {
      const fb::Param* p = params->Get(k);
      std::string name(str(p->name(), "a param name"));
      switch (p->body_type()) {
        case fb::ParamBody::ValueParam: ps.set(name, literals_[p->body_as_ValueParam()->value()]); break;
        case fb::ParamBody::IrParam:
          set.expanded += expanded_[p->body_as_IrParam()->ir()];
          ps.set(name, irs_[p->body_as_IrParam()->ir()]);
          break;
        case fb::ParamBody::IrListParam: {
          IRList list;
          const auto* irs = p->body_as_IrListParam()->irs();
          for (uint32_t j = 0; j < size_of(irs); ++j) {
            set.expanded += expanded_[irs->Get(j)];
            list.push_back(irs_[irs->Get(j)]);
          }
          ps.set(name, std::move(list));
          break;
        }
        case fb::ParamBody::IrMapParam: {
          IRMap map;
          const auto* m = p->body_as_IrMapParam();
          for (uint32_t j = 0; j < size_of(m->keys()); ++j) {
            set.expanded += expanded_[m->irs()->Get(j)];
            map.emplace_back(std::string(str(m->keys()->Get(j), "an IR map key")), irs_[m->irs()->Get(j)]);
          }
          ps.set(name, std::move(map));
          break;
        }
        default: break;  // rejected by param_sets()
      }
      if (set.expanded > kMaxExpandedEqns) set.expanded = kMaxExpandedEqns + 1;
    }
    set.built = std::move(ps);
    return *set.built;
  }

  template <class Where>
  const TreeDef& tree(uint32_t i, const Where& where) {
    if (i >= trees_.size())
      bad(where() + " names tree " + std::to_string(i) + " but the graph has " + std::to_string(trees_.size()));
    return trees_[i];
  }

  void irs(Loaded& out) {
    const auto* v = g_->irs();
    if (size_of(v) == 0) bad("the graph holds no IR");
    for (uint32_t i = 0; i < v->size(); ++i) ir(i, v->Get(i), out);
    out.n_irs = irs_.size();
  }

  // Builds IR `index` in place, from indices checked here, and has the
  // checker check it equation by equation as it is built: one pass.
  void ir(uint32_t index, const fb::Ir* r, Loaded& out) {
    const std::string ir_name = "IR " + std::to_string(index);
    auto built = std::make_shared<IR>();  // checked at its final address
    IR& ir = *built;
    const uint32_t n_vars = size_of(r->vars());
    ir.vars.reserve(n_vars);
    for (uint32_t k = 0; k < n_vars; ++k) {
      Aval a = unpack_aval(r->vars()->Get(k));
      if (uint8_t(a.kind) > uint8_t(Kind::Dict))
        bad(ir_name + ": variable %" + std::to_string(k) + " has unknown kind " + std::to_string(unsigned(a.kind)));
      ir.vars.push_back(a);
    }
    // A var's range and definition are the checker's; a literal's index is ours.
    auto atom = [&](uint32_t a, const auto& where) -> Atom {
      if (a & kLiteralBit) {
        uint32_t l = a & ~kLiteralBit;
        if (l >= literals_.size())
          bad(where() + " uses literal " + std::to_string(l) + " but the graph has " + std::to_string(literals_.size()));
        return Atom::literal(literals_[l]);
      }
      return Atom::of_var(a);
    };

    auto in_where = [&] { return ir_name + " input"; };
    for (uint32_t k = 0; k < size_of(r->in_atoms()); ++k) ir.in.push_back(atom(r->in_atoms()->Get(k), in_where));
    ir.in_tree = tree(r->in_tree(), in_where);
    ir.slice_items = r->slice_items();
    if (const auto* roles = r->in_roles()) {
      // A column of one entry per input atom when present (even empty).
      if (roles->size() != ir.in.size())
        bad(ir_name + ": " + std::to_string(roles->size()) + " input roles for " + std::to_string(ir.in.size()) +
            " input leaves");
      std::vector<InputRole> rs;
      for (uint8_t role : *roles) rs.push_back(InputRole(role));
      set_input_roles(ir, std::move(rs));
    }
    checker_.begin(ir, "invalid graph: " + ir_name, ", ");

    const uint32_t n = size_of(r->eqn_prim());
    auto column = [&](const flatbuffers::Vector<uint32_t>* c, const char* name, bool optional) {
      if (optional && !c) return;
      if (size_of(c) != n)
        bad(ir_name + ": column " + name + " has " + std::to_string(size_of(c)) + " entries for " +
            std::to_string(n) + " equations");
    };
    column(r->eqn_in_end(), "eqn_in_end", false);
    column(r->eqn_in_tree(), "eqn_in_tree", false);
    column(r->eqn_out_end(), "eqn_out_end", false);
    column(r->eqn_out_tree(), "eqn_out_tree", false);
    column(r->eqn_params(), "eqn_params", true);
    column(r->eqn_tags(), "eqn_tags", true);
    column(r->eqn_name_path(), "eqn_name_path", true);
    column(r->eqn_sched_level(), "eqn_sched_level", true);
    if (size_of(r->eqn_sched_priority()) != size_of(r->eqn_sched_level()))
      bad(ir_name + ": column eqn_sched_priority has " + std::to_string(size_of(r->eqn_sched_priority())) +
          " entries, eqn_sched_level " + std::to_string(size_of(r->eqn_sched_level())));
    const auto *c_sched = r->eqn_sched_level();
    const auto *c_priority = r->eqn_sched_priority();
    require_aligned(c_priority, "eqn_sched_priority");
    const uint32_t n_in = size_of(r->eqn_in()), n_out = size_of(r->eqn_out());
    const auto *c_prim = r->eqn_prim(), *c_in_end = r->eqn_in_end(), *c_in = r->eqn_in(),
               *c_in_tree = r->eqn_in_tree(), *c_out_end = r->eqn_out_end(), *c_out = r->eqn_out(),
               *c_out_tree = r->eqn_out_tree(), *c_params = r->eqn_params(),
               *c_tags = r->eqn_tags(), *c_names = r->eqn_name_path();
    uint32_t in_pos = 0, out_pos = 0;
    uint64_t expanded = n;
    ir.eqns.reserve(n);
    advise_huge_pages(ir.eqns.data(), n * sizeof(Eqn));
    for (uint32_t j = 0; j < n; ++j) {
      Eqn e;
      const uint32_t pi = c_prim->Get(j);
      auto where = [&]() -> std::string {
        std::string w = ir_name + ", equation " + std::to_string(j);
        if (e.prim) w += " (" + e.prim->name + ")";
        return w;
      };
      if (pi >= prims_.size())
        bad(where() + " names primitive " + std::to_string(pi) + " but the graph has " + std::to_string(prims_.size()));
      e.prim = prims_[pi];
      const uint32_t in_end = c_in_end->Get(j);
      if (in_end < in_pos || in_end > n_in) bad(where() + ": input range out of order or out of bounds");
      e.in.reserve(in_end - in_pos);
      for (; in_pos < in_end; ++in_pos) e.in.push_back(atom(c_in->Get(in_pos), where));
      e.in_tree = tree(c_in_tree->Get(j), where);
      const uint32_t out_end = c_out_end->Get(j);
      if (out_end < out_pos || out_end > n_out) bad(where() + ": output range out of order or out of bounds");
      e.out.reserve(out_end - out_pos);
      for (; out_pos < out_end; ++out_pos) e.out.push_back(c_out->Get(out_pos));
      e.out_tree = tree(c_out_tree->Get(j), where);
      if (const uint32_t k = c_params ? c_params->Get(j) : 0) {
        if (k > param_sets_.size())
          bad(where() + " names param set " + std::to_string(k - 1) + " but the graph has " + std::to_string(param_sets_.size()));
        ParamSet& set = param_sets_[k - 1];
        if (set.max_ir >= int64_t(index))
          bad(where() + ": a param names IR " + std::to_string(set.max_ir) +
              ", which is not before this one (sub-IRs come first, and never form a cycle)");
        e.params = params_for(set);
        expanded += set.expanded;
      }
      const uint32_t tag_k = c_tags ? c_tags->Get(j) : 0, name_k = c_names ? c_names->Get(j) : 0;
      if (tag_k > tag_sets_.size())
        bad(where() + " names tag set " + std::to_string(tag_k - 1) + " but the graph has " +
            std::to_string(tag_sets_.size()));
      if (name_k > name_paths_.size())
        bad(where() + " names name path " + std::to_string(name_k - 1) + " but the graph has " +
            std::to_string(name_paths_.size()));
      const Tags& tags = tag_k ? tag_sets_[tag_k - 1] : nullptr;
      const NamePath& names = name_k ? name_paths_[name_k - 1] : nullptr;
      if (const uint32_t level = c_sched ? c_sched->Get(j) : 0)
        e.notes = EqnNotes::of(tags, names, EqnSched{level - 1, c_priority->Get(j)});
      else if (tag_k || name_k) {
        Shared<EqnNotes>& shared = notes_[uint64_t(tag_k) << 32 | name_k];
        if (!shared) shared = EqnNotes::of(tags, names);
        e.notes = shared;
      }
      ir.eqns.push_back(std::move(e));
      // Before the next equation is built: sub-IRs nesting too deep are
      // refused here, before a deeper IR exists.
      checker_.equation(j, c_params ? c_params->Get(j) : 0);
      if (expanded > kMaxExpandedEqns) expanded = kMaxExpandedEqns + 1;
    }
    if (in_pos != n_in || out_pos != n_out) bad(ir_name + ": equation inputs or outputs left over after the last equation");
    auto out_where = [&] { return ir_name + " output"; };
    for (uint32_t k = 0; k < size_of(r->out_atoms()); ++k) ir.out.push_back(atom(r->out_atoms()->Get(k), out_where));
    ir.out_tree = tree(r->out_tree(), out_where);
    checker_.end();
    if (expanded > kMaxExpandedEqns)
      bad(ir_name + " expands to more than 2^32 equations through shared sub-IRs");
    out.n_eqns += n;
    expanded_.push_back(expanded);
    ir.checked = true;  // the IR checker passed it
    irs_.push_back(std::move(built));
  }

  // The plan's shape against the program's IR; exec checks its meaning.
  void plan(Loaded& out) {
    const fb::Plan* p = g_->plan();
    if (!p) return;
    const IR& ir = *irs_.back();
    out.plan = plan_columns(p, "the program plan", ir.eqns.size(), ir.vars.size());
    // The sliced form's IR is derived in exec, which checks the sizes too.
    if (const fb::Plan* s = p->sliced()) {
      if (s->sliced()) bad("the program plan's sliced form has a sliced form of its own");
      out.plan->sliced = std::make_shared<const PlanData>(
          plan_columns(s, "the program plan's sliced form", SIZE_MAX, size_of(s->var_slot())));
    }
  }

  PlanData plan_columns(const fb::Plan* p, const std::string& what, size_t max_live, size_t n_vars) {
    PlanData d;
    auto column = [&](const auto* v, auto& into, size_t want, const char* name) {
      if (size_of(v) != want)
        bad(what + " has " + std::to_string(size_of(v)) + " " + name + " entries, expected " + std::to_string(want));
      if (v) into.assign(v->begin(), v->end());
    };
    if (size_of(p->live()) > max_live) bad(what + " runs more equations than the program has");
    column(p->live(), d.live, size_of(p->live()), "live");
    column(p->var_slot(), d.var_slot, n_vars, "var_slot");
    require_aligned(p->priority(), "plan priority");
    column(p->priority(), d.priority, d.live.size(), "priority");
    d.removed_dce = p->removed_dce();
    d.merged_cse = p->merged_cse();
    return d;
  }

  void host_functions(Loaded& out) {
    const auto* v = g_->host_functions();
    for (uint32_t i = 0; i < size_of(v); ++i) {
      std::string_view s = str(v->Get(i), "a host function");
      if (!out.host_functions.empty() && !(out.host_functions.back() < s))
        bad("the host function list is not sorted and duplicate-free");
      out.host_functions.emplace_back(s);
    }
    // The list is what a plugin host reads to know what to register: it must
    // be exactly what the equations call.
    const auto& used = checker_.host_functions();
    if (!std::equal(out.host_functions.begin(), out.host_functions.end(), used.begin(), used.end()))
      bad("the host function list does not match the host functions the equations call");
  }
};

}  // namespace

Loaded read_flatbuffer(const uint8_t* data, size_t size) { return Reader(data, size).read(); }

namespace {

Loaded decoded(const Unsealed& u, size_t file_bytes) {
  Loaded out = read_flatbuffer(u.data(), u.size);
  out.container_version = u.container_version;
  out.file_bytes = file_bytes;
  return out;
}

}  // namespace

Loaded load(std::span<const uint8_t> bytes) { return decoded(unseal(bytes), bytes.size()); }

Loaded load(std::vector<uint8_t>&& file) {
  Unsealed u = unseal(file);
  const size_t file_bytes = file.size();
  // Building the IR is the peak of a load: the compressed bytes go first.
  std::vector<uint8_t>().swap(file);
  return decoded(u, file_bytes);
}

}  // namespace af::io
