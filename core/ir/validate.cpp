// The one definition of a valid IR (validate.h): validate() and the loader
// both check every IR here.
#include "ir/validate.h"

#include <array>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "ir/prim.h"

namespace af {

namespace {

// abstract_eval is a function of (params, input avals, input structure), and
// the params checks of a function of (primitive, params): equations that
// share all of them share the result. Params and structures are compared by
// identity (their shared blocks), which is how equations share them, so a
// million-equation IR usually has a handful of signatures.
struct Signature {
  const Prim* prim = nullptr;
  const void* params = nullptr;
  const void* tree = nullptr;
  uint32_t n = 0;
  std::array<uint16_t, 6> avals{};
  bool operator==(const Signature& o) const noexcept {
    return prim == o.prim && params == o.params && tree == o.tree && n == o.n &&
           std::memcmp(avals.data(), o.avals.data(), sizeof(uint16_t) * n) == 0;
  }
};

uint64_t hash_of(const Signature& s) noexcept {
  uint64_t h = (uint64_t(uintptr_t(s.prim)) * 0x9e3779b97f4a7c15ull) ^ uint64_t(uintptr_t(s.params)) ^
               (uint64_t(uintptr_t(s.tree)) << 7) ^ s.n;
  for (uint32_t i = 0; i < s.n; ++i) h = (h ^ s.avals[i]) * 0x100000001b3ull;
  // Every bit of the pointers into every bit of the result (MurmurHash3's
  // finalizer): the table takes the low bits, its tags the high ones.
  h = (h ^ (h >> 33)) * 0xff51afd7ed558ccdull;
  h = (h ^ (h >> 33)) * 0xc4ceb9fe1a85ec53ull;
  return h ^ (h >> 33);
}

// Hints past this are ignored (the table of hints stays small).
constexpr uint32_t kMaxHints = 1u << 20;

uint16_t pack(const Aval& a) noexcept { return uint16_t(uint8_t(a.kind) | uint16_t(a.list_depth) << 8); }
Aval unpack(uint16_t a) noexcept { return Aval{Kind(a & 0xff), uint8_t(a >> 8)}; }

std::string str(size_t n) { return std::to_string(n); }

std::string eqn_name(const Eqn& e, size_t i) {
  std::string by = "equation " + str(i);
  if (e.prim) by += " (" + e.prim->name + ")";
  return by;
}

}  // namespace

struct IRChecker::State {
  Report report;
  std::unordered_set<const IR*> done;
  // The signatures seen, in the order first seen (which is about the order
  // equations use them in again), found through an open-addressing table
  // of small slots, at most half full: a lookup per equation is the
  // checker's hot path.
  struct Seen {
    Signature sig;
    AbstractOut shape;
  };
  std::vector<Seen> seen;
  std::vector<uint64_t> slots = std::vector<uint64_t>(256);  // hash's top half << 32 | index + 1; 0: empty
  static uint64_t tag(uint64_t h) noexcept { return h & 0xffffffff00000000ull; }

  // The slot of sig: holding it, or the empty one where it goes.
  uint64_t& slot(const Signature& sig, uint64_t h) {
    const size_t mask = slots.size() - 1;
    for (size_t i = size_t(h) & mask;; i = (i + 1) & mask) {
      const uint64_t x = slots[i];
      if (!x || (tag(x) == tag(h) && seen[uint32_t(x) - 1].sig == sig)) return slots[i];
    }
  }
  const AbstractOut* add(const Signature& sig, uint64_t h, AbstractOut shape) {
    if (2 * (seen.size() + 1) > slots.size()) {
      std::vector<uint64_t> old(slots.size() * 2);
      old.swap(slots);
      for (uint64_t x : old)
        if (x) slot(seen[uint32_t(x) - 1].sig, hash_of(seen[uint32_t(x) - 1].sig)) = x;
    }
    seen.push_back(Seen{sig, std::move(shape)});
    slot(sig, h) = tag(h) | seen.size();
    return &seen.back().shape;
  }
  // By the caller's hint (IRChecker::equation): the signature last seen with
  // it, tried before the table (index + 1 into seen; 0: none).
  std::vector<uint32_t> by_hint;
  // A list literal's aval walks the list: once per list.
  std::unordered_map<const void*, Aval> list_avals;
  std::set<std::string, std::less<>> hosts;
  Aval literal_aval(const Value& v) {
    if (v.kind() != Kind::List || v.size() == 0) return aval_of(v);
    auto [it, added] = list_avals.try_emplace(&v.items());
    if (added) it->second = aval_of(v);
    return it->second;
  }
};

// One IR being checked: where it is, and which vars are defined so far.
struct IRChecker::Scope {
  const IR& ir;
  std::string lead;
  std::string_view sep;
  Code code;
  std::vector<uint8_t> defined;
  std::vector<Aval> avals;  // the current equation's inputs

  [[noreturn]] void bad(const std::string& why) const { fail(code, lead + std::string(sep) + why); }
  void define(VarId v, const std::string& by, const char* input = "") {
    if (v >= defined.size()) bad(by + " defines %" + str(v) + ", beyond the " + str(defined.size()) + " vars");
    if (defined[v]) {
      if (*input) bad(input + std::string("%") + str(v) + " is defined twice (" + by + ")");
      bad("%" + str(v) + " is defined twice (" + by + "): it was already defined");
    }
    defined[v] = 1;
  }
  [[noreturn, gnu::noinline]] void undefined(VarId v, const std::string& by) const {
    std::string why = by + " uses %" + str(v) + " before it is defined";
    if (v >= defined.size()) why += " (there are " + str(defined.size()) + " vars)";
    bad(why);
  }
};

IRChecker::IRChecker() : IRChecker(Report{}) {}
IRChecker::IRChecker(Report report) : s_(std::make_unique<State>()) { s_->report = report; }
IRChecker::~IRChecker() = default;

const std::set<std::string, std::less<>>& IRChecker::host_functions() const { return s_->hosts; }

void IRChecker::begin(const IR& ir, std::string lead, std::string_view sep) {
  building_ = std::make_unique<Scope>(Scope{ir, std::move(lead), sep, s_->report.code, {}, {}});
  Scope& s = *building_;
  s.defined.assign(ir.vars.size(), 0);
  for (const Atom& a : ir.in)
    if (a.is_var()) s.define(a.var, "an input", "input ");
  if (ir.in_tree.root().type != TreeDef::NodeType::List) s.bad("the inputs are not a list");
  if (ir.in.size() != ir.in_tree.num_leaves())
    s.bad("input leaves do not match the input structure (" + str(ir.in.size()) + " input atoms for an input structure of " +
          str(ir.in_tree.num_leaves()) + " leaves)");
  if (!ir.in_roles.empty() && ir.in_roles.size() != ir.in.size())
    s.bad("input roles do not match the input leaves (" + str(ir.in_roles.size()) + " input roles for " +
          str(ir.in.size()) + " input leaves)");
  for (InputRole r : ir.in_roles)
    if (uint8_t(r) > uint8_t(InputRole::Cotangent))
      s.bad("an input role is not primal, tangent or cotangent (input role " + str(uint8_t(r)) +
            " is not 0, 1 or 2)");
  if (ir.slice_items < 0) s.bad("slice_items is " + std::to_string(ir.slice_items) + ", expected 0 (none) or more");
}

void IRChecker::end() {
  Scope& s = *building_;
  const IR& ir = s.ir;
  if (ir.out.size() != ir.out_tree.num_leaves())
    s.bad("output leaves do not match the output structure (" + str(ir.out.size()) +
          " output atoms for an output structure of " + str(ir.out_tree.num_leaves()) + " leaves)");
  for (const Atom& a : ir.out)
    if (a.is_var() && (a.var >= s.defined.size() || !s.defined[a.var])) s.undefined(a.var, "the output");
  s_->done.insert(&ir);
  building_.reset();
}

void IRChecker::check(const IR& ir, std::string lead, std::string_view sep) {
  // Sub-IRs are checked in a scope of their own, so a check may nest.
  std::unique_ptr<Scope> outer = std::move(building_);
  begin(ir, std::move(lead), sep);
  for (size_t i = 0; i < ir.eqns.size(); ++i) equation(i);
  end();
  building_ = std::move(outer);
}

void IRChecker::equation(size_t i, uint32_t hint) {
  Scope& s = *building_;
  State& st = *s_;
  const IR& ir = s.ir;
  const Eqn& e = ir.eqns[i];
  if (!e.prim) s.bad(eqn_name(e, i) + " has no primitive");
  if (e.in.size() != e.in_tree.num_leaves())
    s.bad(eqn_name(e, i) + ": inputs do not match the input structure (" + str(e.in.size()) +
          " inputs for an input structure of " + str(e.in_tree.num_leaves()) + " leaves)");
  if (e.in_tree.root().type != TreeDef::NodeType::List) s.bad(eqn_name(e, i) + ": the input structure is not a list");
  if (e.out.size() != e.out_tree.num_leaves())
    s.bad(eqn_name(e, i) + ": outputs do not match the output structure (" + str(e.out.size()) +
          " outputs for an output structure of " + str(e.out_tree.num_leaves()) + " leaves)");

  Signature sig{e.prim, &e.params.items(), &e.in_tree.nodes(), uint32_t(e.in.size()), {}};
  const bool shared = e.in.size() <= sig.avals.size();
  if (!shared) s.avals.clear();
  for (size_t k = 0; k < e.in.size(); ++k) {
    const Atom& a = e.in[k];
    Aval av;
    if (a.is_var()) {
      if (a.var >= s.defined.size() || !s.defined[a.var]) s.undefined(a.var, eqn_name(e, i));
      av = ir.vars[a.var];
    } else {
      av = st.literal_aval(a.lit);
    }
    if (shared)
      sig.avals[k] = pack(av);
    else
      s.avals.push_back(av);
  }

  // What is checked once per signature: sub-IRs first (a primitive's
  // abstract rule may look inside them), then their nesting, the declared
  // params, the host functions named, and the abstract rule.
  auto first_sight = [&]() -> AbstractOut {
    const std::string by = eqn_name(e, i);
    if (shared) {
      s.avals.clear();
      for (uint32_t k = 0; k < sig.n; ++k) s.avals.push_back(unpack(sig.avals[k]));
    }
    for (const auto& item : e.params.items()) {
      // Named, not a structured binding: lambdas capture it (clang 14).
      const std::string& name = item.first;
      const Param& p = item.second;
      const std::string sub = s.lead + " > " + by + " param " + name;
      auto sub_ir = [&](const IRPtr& x, const std::string& at) {
        if (!x) s.bad(by + ": param " + name + " holds a null IR");
        if (!st.done.count(x.get())) check(*x, at);
      };
      if (auto* one = std::get_if<IRPtr>(&p)) {
        sub_ir(*one, sub);
      } else if (auto* list = std::get_if<IRList>(&p)) {
        for (const auto& x : *list) sub_ir(x, sub);
      } else if (auto* map = std::get_if<IRMap>(&p)) {
        for (const auto& [k, x] : *map) sub_ir(x, sub + "[" + k + "]");
      }
    }
    // Every pass that recurses over sub-IRs (printing, freeing, transforms)
    // relies on this bound; the loader meets it before a deeper IR is built.
    if (nesting_depth(e.params) > kMaxIrDepth)
      s.bad(by + ": sub-IRs nest more than " + str(kMaxIrDepth) + " levels deep");

    // A primitive takes the params it declares and no others (one that
    // declares none: see Report::undeclared_means_none).
    const Prim& prim = *e.prim;
    for (const auto& [name, param] : e.params.items()) {
      if (prim.params.empty() && !st.report.undeclared_means_none) break;
      const ParamSpec* spec = nullptr;
      for (const ParamSpec& sp : prim.params)
        if (sp.name == name) spec = &sp;
      if (!spec) s.bad(by + ": unknown param \"" + name + "\" for primitive " + prim.name);
      if (param.index() != size_t(spec->kind))
        s.bad(by + ": param \"" + name + "\" is " + param_kind_name(ParamKind(param.index())) + ", expected " +
              param_kind_name(spec->kind));
      if (spec->kind == ParamKind::Value && spec->value_kind != Kind::Null &&
          std::get<Value>(param).kind() != spec->value_kind)
        s.bad(by + ": param \"" + name + "\" is a " + kind_name(std::get<Value>(param).kind()) + ", expected a " +
              kind_name(spec->value_kind));
    }
    for (const ParamSpec& sp : prim.params) {
      const Param* v = e.params.find(sp.name);
      if (!v && !sp.optional) s.bad(by + ": missing param \"" + sp.name + "\"");
      if (v && sp.names_host_function && std::holds_alternative<Value>(*v) &&
          std::get<Value>(*v).kind() == Kind::Str)
        st.hosts.insert(std::get<Value>(*v).as_str());
    }

    if (!prim.abstract_eval) s.bad(by + ": the primitive has no abstract rule to check it against");
    try {
      return prim.abstract_eval(e.params, s.avals, e.in_tree);
    } catch (const std::bad_alloc&) {
      throw;
    } catch (const Error& err) {
      if (!st.report.keep_rule_codes) s.bad(by + ": " + err.what());
      throw Error(err.code(), s.lead + std::string(s.sep) + by + ": " + err.what(), err.cause_ptr());
    } catch (const std::exception& x) {
      if (!st.report.keep_rule_codes) s.bad(by + ": " + x.what());
      throw;
    }
  };

  AbstractOut unshared;
  const AbstractOut* shape;
  if (shared) {
    uint32_t* last = nullptr;
    if (hint < kMaxHints) {
      if (hint >= st.by_hint.size()) st.by_hint.resize(size_t(hint) + 1);
      last = &st.by_hint[hint];
    }
    if (last && *last && st.seen[*last - 1].sig == sig) {
      shape = &st.seen[*last - 1].shape;
    } else {
      const uint64_t h = hash_of(sig);
      uint64_t x = st.slot(sig, h);
      if (!x) {
        st.add(sig, h, first_sight());
        x = st.seen.size();
      }
      const uint32_t k = uint32_t(x);  // index + 1
      if (hint < kMaxHints) st.by_hint[hint] = k;  // (first_sight may have grown it)
      shape = &st.seen[k - 1].shape;
    }
  } else {
    unshared = first_sight();
    shape = &unshared;
  }

  if (shape->out.size() != e.out.size() || !(shape->out_tree == e.out_tree))
    s.bad(eqn_name(e, i) + ": output structure differs from the primitive's rule (declared " + e.out_tree.to_string() +
          ", the rule gives " + shape->out_tree.to_string() + ")");
  for (size_t k = 0; k < e.out.size(); ++k) {
    const VarId o = e.out[k];
    if (o >= s.defined.size() || s.defined[o]) s.define(o, eqn_name(e, i));
    s.defined[o] = 1;
    if (!(ir.vars[o] == shape->out[k]))
      s.bad(eqn_name(e, i) + ": output " + str(k) + " is declared " + aval_name(ir.vars[o]) +
            " but the primitive produces " + aval_name(shape->out[k]));
  }
}

void validate(const IR& ir) { IRChecker().check(ir); }

}  // namespace af
