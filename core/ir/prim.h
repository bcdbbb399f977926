// Prim: a registered primitive (name + version) and all of its rules. A
// primitive family registers its prims in one file under core/prims/; no
// transform special-cases a primitive by name.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "ir/ir.h"
#include "value/error.h"

namespace af {

// Run-time environment handed to impl rules (rt/env.h).
struct RunEnv;

// Transform contexts, defined by the transforms that use them.
struct BatchCtx;
struct PushCtx;
struct PullCtx;
struct DceCtx;
// One asynchronous evaluation in flight (rt/async.h).
class AsyncOp;

enum PrimFlags : uint32_t {
  kPure = 0,               // same inputs -> same outputs, no effects
  kEffectful = 1u << 0,    // must run even if its outputs look unused
  kNondeterministic = 1u << 1,  // sampled (LM calls): CSE only on request
  kNoMerge = 1u << 2,      // never merged by CSE nor memoized (checkpoint)
  // Running it is observable beyond its outputs (a checkpoint feeds collect
  // scopes, a host function reaches the host, depends orders effects): the
  // lazy evaluator runs it even when no one reads its result.
  kObservable = 1u << 3,
};

// The kinds of param a primitive takes: the alternatives of af::Param, in
// its order.
enum class ParamKind : uint8_t { Value = 0, IR = 1, IRList = 2, IRMap = 3 };
static_assert(std::is_same_v<std::variant_alternative_t<size_t(ParamKind::IR), Param>, IRPtr> &&
              std::is_same_v<std::variant_alternative_t<size_t(ParamKind::IRList), Param>, IRList> &&
              std::is_same_v<std::variant_alternative_t<size_t(ParamKind::IRMap), Param>, IRMap>);
const char* param_kind_name(ParamKind k) noexcept;  // "a value", "an IR", ...

// A param a primitive takes (see Prim::params). For a Value, `value_kind` is
// the kind it must have (Null = any). `names_host_function`: the param (a
// str) is the registered name of a host function the equation calls; saved
// graphs list these names.
struct ParamSpec {
  std::string name;
  ParamKind kind = ParamKind::Value;
  Kind value_kind = Kind::Null;
  bool optional = false;
  bool names_host_function = false;
};

// IRs an equation's impl runs besides those its params hold, derived from
// the equation alone (map: each branch of a batched switch, batched over
// the items that take it). compile() builds them once per equation and
// compiles them with the program (exec/program.h Program::forms), so a run
// compiles nothing; the impl finds them with Context::forms (rt/context.h).
// A primitive derives from it to keep what its impl needs beside the IRs.
struct Forms {
  virtual ~Forms() = default;
  std::vector<IRPtr> irs;  // null entries are skipped
};

struct AbstractOut {
  std::vector<Aval> out;
  TreeDef out_tree;
};

// Registered as one aggregate with designated initialisers (core/prims):
// every built-in names every rule slot there. No transform falls back to a
// default: a rule a primitive lacks is INVALID_ARGUMENT naming the primitive
// and the rule when a transform needs it (rule_of).
struct Prim {
  std::string name;
  uint32_t version = 1;
  uint32_t flags = kPure;
  double cost = 1.0;  // cost hint for critical-path priorities
  // An equation's flags when they depend on its params (host_call: a
  // function registered pure has none), or nullptr: `flags`. Read through
  // eqn_flags (ir/effects.h), never `flags` alone, wherever an equation is
  // at hand.
  uint32_t (*flags_of)(const Params& params) = nullptr;
  // The params it takes (empty: none). The saved-graph loader (core/io)
  // rejects a missing, unknown or wrongly-kinded param before any rule
  // sees it.
  std::vector<ParamSpec> params;

  // Evaluates the equation: `in` are its flat input leaves, `out` receives
  // its flat output leaves (sized by the caller). Throws Error.
  void (*impl)(const Eqn& e, std::span<const Value> in, std::span<Value> out,
               RunEnv& env) = nullptr;
  // Asynchronous form (LM calls, host functions, control flow): starts the
  // work and returns; the work finishes `op` later, exactly once, from any
  // thread (AsyncOp::succeed / fail). The dataflow executor prefers it to
  // `impl`, so nothing blocks a thread while the work is in flight; a
  // primitive with only this form runs elsewhere through run_async_blocking
  // (rt/scopes.h run_eqn). A primitive has impl, impl_async or both.
  void (*impl_async)(const Eqn& e, std::span<const Value> in, std::shared_ptr<AsyncOp> op,
                     RunEnv& env) = nullptr;
  // The forms its impl runs (see Forms) for equation e, or nullptr when it
  // runs none there. nullptr: it runs only the IRs its params hold.
  std::shared_ptr<const Forms> (*forms)(const Eqn& e) = nullptr;
  // Output avals and structure from params and input avals/structure.
  // Throws INVALID_ARGUMENT on kinds the primitive does not accept.
  AbstractOut (*abstract_eval)(const Params& params, std::span<const Aval> in,
                               const TreeDef& in_tree) = nullptr;

  // Transform rules (core/transforms). Shared ones are named explicitly:
  // batch_by_map, batch_identity, pull_fwd_copy, dce_whole; a primitive that
  // cannot be differentiated names a rule that says so (host_call).
  void (*batch)(BatchCtx& ctx, const Eqn& e) = nullptr;
  void (*pushforward)(PushCtx& ctx, const Eqn& e) = nullptr;
  void (*pullback_fwd)(PullCtx& ctx, const Eqn& e) = nullptr;
  void (*pullback_bwd)(PullCtx& ctx, const Eqn& e) = nullptr;
  void (*dce)(DceCtx& ctx, const Eqn& e) = nullptr;

  // The hash of (name, version), set by the registry (ir/registry.h): IRs
  // hash their primitives often. 0 for a primitive never registered.
  uint64_t hash = 0;
};

// e's rule `slot` (a member of Prim, e.g. &Prim::batch), or INVALID_ARGUMENT
// "<transform>: primitive "<name>" has no <transform> rule".
template <class Rule>
Rule rule_of(const Eqn& e, Rule Prim::*slot, const char* transform) {
  Rule r = e.prim->*slot;
  if (!r) invalid(std::string(transform) + ": primitive \"" + e.prim->name + "\" has no " + transform + " rule");
  return r;
}

}  // namespace af
