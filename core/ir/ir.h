// The IR: SSA equations over dense local variable ids. An IR is plain data
// (no function pointers but the registered Prim it names, no host objects):
// it compares, hashes, prints and serializes by structure.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "ir/var_ids.h"
#include "value/error.h"
#include "value/shared.h"
#include "value/tree.h"
#include "value/value.h"

namespace af {

inline constexpr VarId kNoVar = std::numeric_limits<VarId>::max();

// The abstract kind of a variable: a leaf kind, possibly wrapped in
// `list_depth` levels of list (batched values).
struct Aval {
  Kind kind = Kind::Str;
  uint8_t list_depth = 0;
  friend bool operator==(const Aval&, const Aval&) = default;
};
std::string aval_name(const Aval& a);  // "str", "list<int>"
// The aval of a concrete leaf value (list<...> for lists of leaves of one kind).
Aval aval_of(const Value& v);
// Does v hold a value of aval a? list<T> is a list (possibly empty, possibly
// ragged below) whose items hold T.
bool conforms(const Value& v, Aval a);

// An equation input or IR output: a variable or a literal value.
// 16 bytes: the id lives in the literal's tail padding (core/value/value.h).
struct Atom {
  [[no_unique_address]] Value lit;  // used when var == kNoVar
  VarId var = kNoVar;
  bool is_var() const noexcept { return var != kNoVar; }
  static Atom of_var(VarId v) { return Atom{Value(), v}; }
  static Atom literal(Value v) { return Atom{std::move(v), kNoVar}; }
  friend bool operator==(const Atom& a, const Atom& b) noexcept {
    return a.var == b.var && (a.is_var() || a.lit == b.lit);
  }
};

// An equation's input atoms, up to two held inline.
using EqnAtoms = SmallVec<Atom, 2>;

struct IR;
using IRPtr = std::shared_ptr<const IR>;
using IRList = std::vector<IRPtr>;
using IRMap = std::vector<std::pair<std::string, IRPtr>>;  // sorted by name

// A param value: a Value, an IR, a list of IRs, or a map name -> IR. Nothing
// else, so every IR serializes.
using Param = std::variant<Value, IRPtr, IRList, IRMap>;

// name -> Param, kept sorted by name. Copies share one immutable block
// (equations made by one rule or loaded from one param set of a file share
// their params); set() copies it first when it is shared.
class Params {
 public:
  void set(std::string name, Param p);
  const Param* find(std::string_view name) const noexcept;
  // Throws INTERNAL if absent or of another type (params are built by rules).
  const Value& value(std::string_view name) const;
  const IRPtr& ir(std::string_view name) const;
  // The value param `name`, or nullptr when absent or not a value (an
  // optional param, or a loaded graph's params before its rule checks them).
  const Value* find_value(std::string_view name) const noexcept;
  // True if pred (bool(const IR&)) holds for one of the IRs the params hold
  // (IR, list, map), tried in order.
  template <class Pred>
  bool any_ir(Pred&& pred) const;
  using Items = std::vector<std::pair<std::string, Param>>;
  const Items& items() const noexcept { return items_ ? *items_ : empty_items(); }
  bool empty() const noexcept { return !items_ || items_->empty(); }
  friend bool operator==(const Params& a, const Params& b) noexcept;
  uint64_t hash() const noexcept;

 private:
  static const Items& empty_items() noexcept;
  Shared<Items> items_;  // null = no params; never changed while shared
};

// Tags: a sorted, duplicate-free set of labels, shared between equations.
using Tags = std::shared_ptr<const std::vector<std::string>>;
// The union of two tag sets (shares one of them when the other is empty).
Tags union_tags(const Tags& a, const Tags& b);

// A name path: the module / step names open when an equation was recorded
// (af_name_push), outermost first, like a call stack. Shared between
// equations like tags, but ordered and composed by prefixing: an IR called
// (inlined) inside a named scope gets that scope's path before its own, and
// an equation inside a sub-IR (a branch, a loop body) is named relative to
// the equation holding the sub-IR. Names are non-empty and hold no '/'.
using NamePath = std::shared_ptr<const std::vector<std::string>>;
// outer followed by inner (shares one of them when the other is empty).
NamePath join_names(const NamePath& outer, const NamePath& inner);
// The names joined by '/' ("triage/classify"; "" for none).
std::string name_path_text(const NamePath& p);
// Name scopes (the trace's and a lazy context's): path with `name` appended
// (INVALID_ARGUMENT for an empty name or one holding '/'), and path without
// its last name (INVALID_ARGUMENT for no path: a pop without a push).
NamePath pushed_name(const NamePath& path, std::string name);
NamePath popped_name(const NamePath& path);
// The error of an equation named `path`, worded "in triage/classify: <what
// err says>" (same code and cause); err itself when the path is empty.
// Control flow around a named equation adds its own level in front.
Error named_error(const NamePath& path, const Error& err);

struct Prim;

// What sched (core/transforms/sched.cpp) writes on an equation, for
// inspection and drawing only: execution never reads it.
struct EqnSched {
  uint32_t level = 0;     // dependency depth: 0 = reads only IR inputs and literals
  double priority = 0.0;  // cost-weighted longest path from here to an output
  friend bool operator==(const EqnSched&, const EqnSched&) = default;
};

// What an equation carries besides what it computes: its tags, its name
// path and sched's annotation. Equations recorded in one scope share one
// block, and most equations have none (a null pointer), so a large IR pays
// one pointer per equation for them.
struct EqnNotes {
  Tags tags;            // may be null (no tags)
  NamePath name_path;   // may be null (no name)
  std::optional<EqnSched> sched;  // set by sched; absent otherwise
  // The block holding these notes; null when there are none.
  static Shared<EqnNotes> of(Tags tags, NamePath name_path, std::optional<EqnSched> sched = {});
};

struct Eqn {
  const Prim* prim = nullptr;
  EqnAtoms in;            // flat input leaves
  TreeDef in_tree;        // structure of the inputs (a list at the root)
  VarIds out;             // flat output leaves
  TreeDef out_tree;
  Params params;
  Shared<EqnNotes> notes;  // null: no tags, no name, no sched

  const Tags& tags() const noexcept { return notes ? notes->tags : kNoNotes.tags; }
  const NamePath& name_path() const noexcept { return notes ? notes->name_path : kNoNotes.name_path; }
  const std::optional<EqnSched>& sched() const noexcept { return notes ? notes->sched : kNoNotes.sched; }
  // Each replaces one note, keeping the others (a new block: blocks are shared).
  void set_tags(Tags t) { notes = EqnNotes::of(std::move(t), name_path(), sched()); }
  void set_sched(std::optional<EqnSched> s) { notes = EqnNotes::of(tags(), name_path(), s); }

 private:
  static inline const EqnNotes kNoNotes{};
};

// Facts about an IR's content that whole-graph passes ask of every sub-IR
// they meet: its hash, cost-weighted path, nesting height, whether it has
// effects. Each is kept with the IR the first time it is computed, so a
// sub-IR shared by many equations, or reached along many paths of a DAG of
// shared sub-IRs (a 2 KB graph can reach 2^32 equations that way), is
// measured once, not once per path. Only sub-IRs held in params are asked
// (an IR is immutable once shared); a copy of an IR starts with nothing
// known, since the copy may then change.
// Thread-safe: two threads may compute the same fact, and store the same value.
class IRFacts {
 public:
  enum Flag : uint8_t { kEffects = 0 };

  IRFacts() noexcept = default;
  IRFacts(const IRFacts&) noexcept {}
  IRFacts& operator=(const IRFacts&) noexcept {
    known_.store(0, std::memory_order_relaxed);
    return *this;
  }

  template <class F>
  uint64_t hash(F&& compute) const { return cached(hash_, kHashKnown, compute); }
  template <class F>
  double path_cost(F&& compute) const { return cached(cost_, kCostKnown, compute); }
  template <class F>
  uint32_t height(F&& compute) const { return cached(height_, kHeightKnown, compute); }
  template <class F>
  bool flag(Flag f, F&& compute) const {
    const uint8_t known = uint8_t(8u << (2 * f)), set = uint8_t(16u << (2 * f));
    const uint8_t k = known_.load(std::memory_order_acquire);
    if (k & known) return k & set;
    const bool v = compute();
    known_.fetch_or(uint8_t(known | (v ? set : 0)), std::memory_order_release);
    return v;
  }

 private:
  static constexpr uint8_t kHashKnown = 1, kCostKnown = 2, kHeightKnown = 4;  // flags: 8..64
  template <class T, class F>
  T cached(std::atomic<T>& slot, uint8_t bit, F& compute) const {
    if (known_.load(std::memory_order_acquire) & bit) return slot.load(std::memory_order_relaxed);
    const T v = compute();
    slot.store(v, std::memory_order_relaxed);
    known_.fetch_or(bit, std::memory_order_release);
    return v;
  }
  mutable std::atomic<uint8_t> known_{0};
  mutable std::atomic<uint64_t> hash_{0};
  mutable std::atomic<double> cost_{0.0};
  mutable std::atomic<uint32_t> height_{0};
};

// What an input leaf of an IR takes. pushforward adds tangent inputs and
// pullback cotangent inputs; there null means Zero, and a cotangent is
// feedback, which is text (docs/SEMANTICS.md §4).
enum class InputRole : uint8_t { Primal = 0, Tangent = 1, Cotangent = 2 };

struct IR {
  std::vector<Aval> vars;  // aval of each var id 0..n-1
  std::vector<Atom> in;    // flat input leaves (literals are static inputs)
  TreeDef in_tree;         // a list of positional input trees
  std::vector<Eqn> eqns;   // in a valid topological order
  std::vector<Atom> out;
  TreeDef out_tree;
  // One per input leaf, or empty when every input is a primal (the
  // canonical form: set it with set_input_roles).
  std::vector<InputRole> in_roles;
  // Set by batch on its output (0 otherwise): the equations after the
  // first (its batch_check) depend on the batch item by item, so a run over
  // more than this many items may run them on slices of the batch
  // (transforms/pipeline.h). Saved, but not part of the IR's value (never
  // compared or hashed): it is a fact about the equations, true of any IR
  // that has the same ones. Whatever copies equations into another program
  // (another transform, a call inlined into a trace) makes an IR without it.
  int64_t slice_items = 0;
  IRFacts facts;  // not part of the IR's value: never compared, hashed or saved
  // Built through libaf's own rules — traced (every equation recorded
  // through its primitive's abstract rule), made by a transform (Builder)
  // or loaded (checked by the IR checker validate uses, validate.h) — so
  // compile need not validate it again.
  // Not part of the IR's value: equality and hashing ignore it.
  bool checked = false;

  size_t num_inputs() const { return in_tree.root().n_children; }
  InputRole input_role(size_t leaf) const { return in_roles.empty() ? InputRole::Primal : in_roles[leaf]; }
};

// Sets ir.in_roles, keeping it empty when every role is Primal.
void set_input_roles(IR& ir, std::vector<InputRole> roles);
// The roles of ir's input leaves (all Primal when ir has none).
std::vector<InputRole> input_roles(const IR& ir);

// The zero of a leaf kind: "" for str, 0, 0.0, false. INTERNAL for others.
Value zero_value(Kind k);

// How deep sub-IRs may nest: an equation's params hold IRs whose equations'
// params hold IRs ... at most kMaxIrDepth levels down. Tracing and the
// transforms refuse an equation that would nest deeper (INVALID_ARGUMENT),
// saving refuses such an IR, loading refuses such a graph (FORMAT): every
// pass that recurses over sub-IRs (printing, freeing, transforms, running)
// has a bounded depth.
inline constexpr uint32_t kMaxIrDepth = 64;
// How many levels of sub-IRs an equation's params hold: 0 for none, 1 for
// sub-IRs without sub-IRs, and so on (each sub-IR's own height is kept with
// it, IRFacts).
uint32_t nesting_depth(const Params& params);
// INVALID_ARGUMENT naming `what` (the primitive) if params nest deeper than
// kMaxIrDepth.
void check_nesting(const Params& params, const std::string& what);

// Structural equality and hash (var ids compared as numbers: tracing and
// transforms number variables canonically, in order of definition).
bool ir_equal(const IR& a, const IR& b) noexcept;
// ir_hash is a defined function (af_ir_hash): the same value in every
// process, build and platform, so it can name files (the plan cache's disk).
uint64_t ir_hash(const IR& ir);
// The key of the in-memory plan cache: equal IRs get equal keys, as with
// ir_hash, but it is not a defined function (it may change with any build and
// never leaves the process), which lets it cost a fraction of ir_hash. With
// `ids`: each equation's identity (eqn_hash without aliases) as well, from
// the same pass (compile's CSE takes them instead of hashing again).
uint64_t plan_key(const IR& ir, std::vector<uint64_t>* ids = nullptr);
// What a primitive contributes to a hash: its name and version (not its
// address, so a reloaded graph hashes the same).
uint64_t prim_identity_hash(std::string_view name, uint32_t version) noexcept;

// Equation identity, shared by the cse transform and compile's CSE: two
// equations are the same when they apply the same primitive with equal
// params to the same input atoms with the same input structure, the same
// tags and the same name path. `alias` (compile's CSE): the var each input var stands for; empty
// means every var stands for itself.
uint64_t eqn_hash(const Eqn& e, std::span<const VarId> alias = {}) noexcept;
bool eqn_same(const Eqn& a, const Eqn& b, std::span<const VarId> alias = {}) noexcept;

// Checks SSA (each var defined once, before use, inputs defined by `in`),
// arity and avals against each primitive's abstract rule, and recursively
// sub-IRs in params: every rule of the IR checker (validate.h), which the
// loader uses too. Throws INVALID_ARGUMENT describing the first problem (or
// the code a primitive's rule threw).
void validate(const IR& ir);

// Equation indices (sorted) whose outputs eqn i transitively uses / that
// transitively use eqn i's outputs.
std::vector<size_t> ancestors(const IR& ir, size_t i);
std::vector<size_t> descendants(const IR& ir, size_t i);
// A topological order of the equations (stable: keeps the given order where
// dependencies allow). Throws INVALID_ARGUMENT on a cycle or an undefined var.
std::vector<size_t> topological_order(const IR& ir);

// Cost hints (sched's priorities, compile's critical path): an equation
// weighs its primitive's Prim::cost plus, for control flow, its costliest
// sub-IR's path (one pass of a loop), so a switch around LM calls weighs like
// them. ir_path_cost is the IR's longest cost-weighted chain of equations.
double eqn_cost(const Eqn& e);
double ir_path_cost(const IR& ir);
// For each var, the index of the equation defining it (SIZE_MAX for inputs).
std::vector<size_t> defining_eqn(const IR& ir);

// Checks positional inputs against the IR's inputs: count, structure, leaf
// kinds, equality of static (literal) inputs. Placeholders are accepted (by
// their kind) only when `allow_placeholders` (inlining into a trace). With
// `item_errors` (a run with per-item errors), an item of a list<T> input
// may be an error value ({"error": {...}}, value/error_value.h): a batched
// program passes it on unrun. Returns the flat input leaves.
// INVALID_ARGUMENT names the input path.
std::vector<Value> check_inputs(const IR& ir, std::span<const Value> inputs,
                                bool allow_placeholders = false, bool item_errors = false);

// Text form, documented in docs/IR_TEXT.md.
std::string to_text(const IR& ir);
// Graphviz DOT.
std::string to_dot(const IR& ir);
// How text and DOT print a sched priority ("3", "2.5").
std::string sched_number(double d);

template <class Pred>
bool Params::any_ir(Pred&& pred) const {
  if (!items_) return false;
  for (const auto& [name, p] : *items_) {
    if (auto* one = std::get_if<IRPtr>(&p)) {
      if (*one && pred(**one)) return true;
    } else if (auto* list = std::get_if<IRList>(&p)) {
      for (const IRPtr& x : *list)
        if (x && pred(*x)) return true;
    } else if (auto* map = std::get_if<IRMap>(&p)) {
      for (const auto& [k, x] : *map)
        if (x && pred(*x)) return true;
    }
  }
  return false;
}

}  // namespace af
