// Prim: a registered primitive (name + version) and all of its rules. A
// primitive family registers its prims in one file under core/prims/; no
// transform special-cases a primitive by name.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace af {

// Run-time environment handed to impl rules (host functions, providers,
// cancellation live here as the executor grows). Defined in exec/.
struct RunEnv;

// Transform contexts, defined by the transforms that use them.
struct BatchCtx;
struct PushCtx;
struct PullCtx;
struct DceCtx;
// One asynchronous evaluation in flight (exec/async.h).
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

// A param a primitive takes (see Prim::params). `kind` is the index of the
// alternative in af::Param (0 Value, 1 IR, 2 IR list, 3 IR map); for a
// Value, `value_kind` is the kind it must have (Null = any).
// `names_host_function`: the param (a str) is the registered name of a host
// function the equation calls; saved graphs list these names.
struct ParamSpec {
  std::string name;
  uint8_t kind = 0;
  Kind value_kind = Kind::Null;
  bool optional = false;
  bool names_host_function = false;
};

struct AbstractOut {
  std::vector<Aval> out;
  TreeDef out_tree;
};

struct Prim {
  std::string name;
  uint32_t version = 1;
  uint32_t flags = kPure;
  double cost = 1.0;  // cost hint for critical-path priorities

  // Evaluates the equation: `in` are its flat input leaves, `out` receives
  // its flat output leaves (sized by the caller). Throws Error.
  void (*impl)(const Eqn& e, std::span<const Value> in, std::span<Value> out,
               RunEnv& env) = nullptr;
  // Asynchronous form (LM calls, async host functions): starts the work and
  // returns; the work finishes `op` later, exactly once, from any thread
  // (AsyncOp::succeed / fail). The dataflow executor prefers it to `impl`,
  // so nothing blocks a thread while the work is in flight.
  void (*impl_async)(const Eqn& e, std::span<const Value> in, std::shared_ptr<AsyncOp> op,
                     RunEnv& env) = nullptr;
  // Output avals and structure from params and input avals/structure.
  // Throws INVALID_ARGUMENT on kinds the primitive does not accept.
  AbstractOut (*abstract_eval)(const Params& params, std::span<const Aval> in,
                               const TreeDef& in_tree) = nullptr;

  // Transform rule slots (core/transforms). Null: batch = batch_by_map,
  // pullback_fwd = pull_fwd_copy, dce = dce_whole; pushforward and
  // pullback_bwd unsupported (INVALID_ARGUMENT naming the primitive).
  void (*batch)(BatchCtx& ctx, const Eqn& e) = nullptr;
  void (*pushforward)(PushCtx& ctx, const Eqn& e) = nullptr;
  void (*pullback_fwd)(PullCtx& ctx, const Eqn& e) = nullptr;
  void (*pullback_bwd)(PullCtx& ctx, const Eqn& e) = nullptr;
  void (*dce)(DceCtx& ctx, const Eqn& e) = nullptr;

  // The params the primitive takes, if it declares them. The saved-graph
  // loader (core/io) then rejects a missing, unknown or wrongly-kinded param
  // before any rule sees it; undeclared, only abstract_eval checks params.
  std::optional<std::vector<ParamSpec>> params;
};

}  // namespace af
