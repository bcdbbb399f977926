// Structural equality and hashing of Params and IRs. Two IRs are equal when
// they would print, serialize and run the same: same primitives (name +
// version, not Prim address, so a reloaded graph matches), params, atoms (var
// ids as numbers), trees, avals, tags and name paths. The plan cache relies on
// `plan_key(a) != plan_key(b)` implying `!ir_equal(a, b)`. All work on the
// DAG of shared sub-IRs without expanding it: a sub-IR's hash is kept with
// it (IRFacts), and a comparison remembers the pairs it found equal.
#include <bit>
#include <set>
#include <string_view>
#include <type_traits>
#include <utility>

#include "ir/ir.h"
#include "ir/prim.h"
#include "value/hash.h"

namespace af {

namespace {

constexpr uint64_t mix(uint64_t h, uint64_t v) { return hash_mix(h, v); }
// The hash of no tags and of no params: what most equations have.
constexpr uint64_t kNoneHash = mix(0, 0);
uint64_t hash_str(std::string_view s) { return hash_bytes(s); }

const std::vector<std::string> kNoStrings;
// Tags and name paths (null = none).
const std::vector<std::string>& string_list(const Tags& t) { return t ? *t : kNoStrings; }

// Tags are sorted and duplicate-free (ir.h), so set equality is sequence
// equality and hashing in order is consistent with it.
bool tags_equal(const Tags& a, const Tags& b) { return string_list(a) == string_list(b); }

// A list of strings (tags, a name path) after h.
[[gnu::noinline]] uint64_t strings_hash(uint64_t h, const std::vector<std::string>& list) {
  h = mix(h, list.size());
  for (const std::string& s : list) h = mix(h, hash_str(s));
  return h;
}

uint64_t tags_hash(const Tags& t) {
  return !t || t->empty() ? kNoneHash : strings_hash(0, *t);
}

// A name path joins the hash only when there is one, so the hash of an IR
// without names is what it was before name paths existed.
uint64_t names_hash(uint64_t h, const NamePath& p) {
  return !p || p->empty() ? h : strings_hash(mix(h, 0x6e616d65), *p);
}

bool prim_equal(const Prim* a, const Prim* b) {
  if (a == b) return true;
  return a && b && a->name == b->name && a->version == b->version;
}

uint64_t prim_hash(const Prim* p) {
  if (!p) return 0;
  return p->hash ? p->hash : prim_identity_hash(p->name, p->version);
}

// A sub-IR's hash is kept with it (IRFacts): a sub-IR shared along many
// paths is hashed once.
uint64_t ir_ptr_hash(const IRPtr& p) {
  return p ? p->facts.hash([&] { return ir_hash(*p); }) : 0;
}

// Pairs of sub-IRs found equal so far in one comparison, so a DAG of shared
// sub-IRs is compared once per distinct pair, not once per path through it.
using EqualPairs = std::set<std::pair<const IR*, const IR*>>;

bool ir_equal_in(const IR& a, const IR& b, EqualPairs& seen);

bool ir_ptr_equal(const IRPtr& a, const IRPtr& b, EqualPairs& seen) {
  if (a == b) return true;
  if (!a || !b || ir_ptr_hash(a) != ir_ptr_hash(b)) return false;
  if (seen.count({a.get(), b.get()})) return true;
  if (!ir_equal_in(*a, *b, seen)) return false;
  seen.insert({a.get(), b.get()});
  return true;
}

bool param_equal(const Param& a, const Param& b, EqualPairs& seen) {
  if (a.index() != b.index()) return false;
  return std::visit(
      [&](const auto& x) -> bool {
        using T = std::decay_t<decltype(x)>;
        const T& y = std::get<T>(b);
        if constexpr (std::is_same_v<T, Value>) {
          return x == y;
        } else if constexpr (std::is_same_v<T, IRPtr>) {
          return ir_ptr_equal(x, y, seen);
        } else if constexpr (std::is_same_v<T, IRList>) {
          if (x.size() != y.size()) return false;
          for (size_t i = 0; i < x.size(); ++i)
            if (!ir_ptr_equal(x[i], y[i], seen)) return false;
          return true;
        } else {
          if (x.size() != y.size()) return false;
          for (size_t i = 0; i < x.size(); ++i)
            if (x[i].first != y[i].first || !ir_ptr_equal(x[i].second, y[i].second, seen))
              return false;
          return true;
        }
      },
      a);
}

bool params_equal(const Params& a, const Params& b, EqualPairs& seen) {
  const Params::Items &x = a.items(), &y = b.items();
  if (&x == &y) return true;  // one shared block
  if (x.size() != y.size()) return false;
  for (size_t i = 0; i < x.size(); ++i)
    if (x[i].first != y[i].first || !param_equal(x[i].second, y[i].second, seen)) return false;
  return true;
}

uint64_t param_hash(const Param& p) {
  // Seed with the alternative so a Value and an IR param never collide by shape.
  uint64_t h = mix(0, p.index());
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, Value>) {
          h = mix(h, x.hash());
        } else if constexpr (std::is_same_v<T, IRPtr>) {
          h = mix(h, ir_ptr_hash(x));
        } else if constexpr (std::is_same_v<T, IRList>) {
          h = mix(h, x.size());
          for (const IRPtr& ir : x) h = mix(h, ir_ptr_hash(ir));
        } else {
          h = mix(h, x.size());
          for (const auto& [name, ir] : x) h = mix(mix(h, hash_str(name)), ir_ptr_hash(ir));
        }
      },
      p);
  return h;
}

uint64_t params_hash(const Params& p) { return p.empty() ? kNoneHash : p.hash(); }

// The hash of the literal hashed last, for the next atom: a traced loop's
// constant is one Value read by many equations, hashed once per IR pass.
struct LastLiteral {
  const Value* lit = nullptr;  // in the IR being hashed
  uint64_t hash = 0;
  uint64_t of(const Value& v) {
    if (!lit || !lit->identical(v)) {
      lit = &v;
      hash = v.hash();
    }
    return hash;
  }
};

uint64_t atom_hash(const Atom& a, LastLiteral* last = nullptr) {
  if (a.is_var()) return mix(1, a.var);
  return mix(2, last ? last->of(a.lit) : a.lit.hash());
}

uint64_t atoms_hash(uint64_t h, const std::vector<Atom>& atoms) {
  h = mix(h, atoms.size());
  for (const Atom& a : atoms) h = mix(h, atom_hash(a));
  return h;
}

bool eqn_equal(const Eqn& a, const Eqn& b, EqualPairs& seen) {
  return prim_equal(a.prim, b.prim) && a.in == b.in && identical(a.in_tree, b.in_tree) && a.out == b.out &&
         identical(a.out_tree, b.out_tree) && params_equal(a.params, b.params, seen) &&
         tags_equal(a.tags(), b.tags()) && string_list(a.name_path()) == string_list(b.name_path()) &&
         a.sched() == b.sched();
}

bool ir_equal_in(const IR& a, const IR& b, EqualPairs& seen) {
  if (&a == &b) return true;
  if (a.vars != b.vars || a.in != b.in || !identical(a.in_tree, b.in_tree) || a.out != b.out ||
      !identical(a.out_tree, b.out_tree) || a.in_roles != b.in_roles || a.eqns.size() != b.eqns.size())
    return false;
  for (size_t i = 0; i < a.eqns.size(); ++i)
    if (!eqn_equal(a.eqns[i], b.eqns[i], seen)) return false;
  return true;
}

// What an equation applies to what: its primitive, input atoms and input
// structure. The first part of an equation's structural hash.
uint64_t eqn_head_hash(const Eqn& e, LastLiteral& last) {
  uint64_t h = mix(mix(0, prim_hash(e.prim)), e.in.size());
  for (const Atom& a : e.in) h = mix(h, atom_hash(a, &last));
  return mix(h, e.in_tree.identity_hash());
}

// The equation's part of ir_hash (a defined function: af_ir_hash's values
// must not change).
uint64_t eqn_full_hash(const Eqn& e, LastLiteral& last) {
  uint64_t h = eqn_head_hash(e, last);
  const uint64_t params = params_hash(e.params), tags = tags_hash(e.tags());
  h = mix(h, e.out.size());
  for (VarId v : e.out) h = mix(h, v);
  h = mix(h, e.out_tree.identity_hash());
  h = mix(h, params);
  h = mix(h, tags);
  h = names_hash(h, e.name_path());
  if (e.sched()) h = mix(mix(h, e.sched()->level), hash_double(e.sched()->priority));
  return h;
}

// ---- In-process keys: plan_key (the plan cache's) and eqn_hash (CSE's).
// Not defined functions, unlike ir_hash: they may change with any build and
// never leave the process, so they take 128 bits per multiply where ir_hash
// mixes 64 bits at a time: an equation costs two or three multiplies, not
// sixteen mixes. Equality always confirms a match (ir_equal, eqn_same).

uint64_t fold(uint64_t a, uint64_t b) {
  const unsigned __int128 p =
      static_cast<unsigned __int128>(a ^ 0x9e3779b97f4a7c15ULL) * (b ^ 0xc2b2ae3d27d4eb4fULL);
  return uint64_t(p) ^ uint64_t(p >> 64);
}

// A var as the var `alias` maps it to (ids are below 2^32); a literal by its
// value's hash with the top bit set, so the two never meet.
uint64_t atom_word(const Atom& a, std::span<const VarId> alias, LastLiteral* last) {
  if (a.is_var()) return alias.empty() ? a.var : alias[a.var];
  return (last ? last->of(a.lit) : a.lit.hash()) | (uint64_t(1) << 63);
}

uint64_t eqn_key(const Eqn& e, std::span<const VarId> alias, LastLiteral* last) {
  const NamePath& names = e.name_path();
  const uint64_t names_word = !names || names->empty() ? 0 : strings_hash(0, *names);
  uint64_t h = fold(prim_hash(e.prim) ^ e.in.size() ^ std::rotl(tags_hash(e.tags()), 32),
                    e.in_tree.identity_hash() ^ params_hash(e.params) ^ std::rotl(names_word, 17));
  const size_t n = e.in.size();
  size_t k = 0;
  for (; k + 1 < n; k += 2) h = fold(h ^ atom_word(e.in[k], alias, last), atom_word(e.in[k + 1], alias, last));
  if (k < n) h = fold(h ^ atom_word(e.in[k], alias, last), n);
  return h;
}

uint64_t atoms_key(uint64_t h, const std::vector<Atom>& atoms) {
  h = fold(h, atoms.size());
  for (const Atom& a : atoms) h = fold(h, atom_word(a, {}, nullptr));
  return h;
}

}  // namespace

bool operator==(const Params& a, const Params& b) noexcept {
  EqualPairs seen;
  return params_equal(a, b, seen);
}

uint64_t Params::hash() const noexcept {
  if (empty()) return kNoneHash;  // most equations have no params
  const Items& v = *items_;
  uint64_t h = mix(0, v.size());
  for (const auto& [name, p] : v) h = mix(mix(h, hash_str(name)), param_hash(p));
  return h;
}

bool ir_equal(const IR& a, const IR& b) noexcept {
  EqualPairs seen;
  return ir_equal_in(a, b, seen);
}

uint64_t ir_hash(const IR& ir) {
  uint64_t h = mix(0, ir.vars.size());
  for (const Aval& a : ir.vars) h = mix(h, uint64_t(a.kind) << 8 | a.list_depth);
  h = atoms_hash(h, ir.in);
  h = mix(h, ir.in_tree.identity_hash());
  for (InputRole r : ir.in_roles) h = mix(h, uint64_t(r));
  h = mix(h, ir.eqns.size());
  LastLiteral last;
  for (const Eqn& e : ir.eqns) h = mix(h, eqn_full_hash(e, last));
  h = atoms_hash(h, ir.out);
  return mix(h, ir.out_tree.identity_hash());
}

uint64_t plan_key(const IR& ir, std::vector<uint64_t>* ids) {
  static_assert(sizeof(Aval) == 2 && std::has_unique_object_representations_v<Aval>);
  if (ids) ids->resize(ir.eqns.size());
  uint64_t h = fold(ir.vars.size(), ir.eqns.size());
  h = fold(h, hash_bytes({reinterpret_cast<const char*>(ir.vars.data()), ir.vars.size() * sizeof(Aval)}));
  h = fold(h ^ ir.in_tree.identity_hash(), ir.out_tree.identity_hash());
  h = atoms_key(atoms_key(h, ir.in), ir.out);
  for (InputRole r : ir.in_roles) h = fold(h, uint64_t(r));
  LastLiteral last;
  for (size_t i = 0; i < ir.eqns.size(); ++i) {
    const Eqn& e = ir.eqns[i];
    const uint64_t id = eqn_key(e, {}, &last);
    if (ids) (*ids)[i] = id;
    const size_t n_out = e.out.size();
    uint64_t outs = e.out_tree.identity_hash() ^ n_out << 56;
    if (n_out > 0) outs ^= e.out[0];
    if (n_out > 1) outs ^= uint64_t(e.out[1]) << 32;
    h = fold(h ^ id, outs);
    for (size_t k = 2; k < n_out; ++k) h = fold(h, e.out[k]);
    if (e.sched()) h = fold(h ^ e.sched()->level, hash_double(e.sched()->priority));
  }
  return h;
}

uint64_t eqn_hash(const Eqn& e, std::span<const VarId> alias) noexcept { return eqn_key(e, alias, nullptr); }

bool eqn_same(const Eqn& a, const Eqn& b, std::span<const VarId> alias) noexcept {
  if (!prim_equal(a.prim, b.prim) || a.in.size() != b.in.size() || !identical(a.in_tree, b.in_tree) ||
      !(a.params == b.params) || !tags_equal(a.tags(), b.tags()) ||
      string_list(a.name_path()) != string_list(b.name_path()))
    return false;
  for (size_t k = 0; k < a.in.size(); ++k) {
    const Atom &x = a.in[k], &y = b.in[k];
    if (x.is_var() != y.is_var()) return false;
    if (x.is_var() ? (alias.empty() ? x.var != y.var : alias[x.var] != alias[y.var]) : !(x.lit == y.lit))
      return false;
  }
  return true;
}

uint64_t prim_identity_hash(std::string_view name, uint32_t version) noexcept {
  return hash_mix(hash_bytes(name), version);
}

}  // namespace af
