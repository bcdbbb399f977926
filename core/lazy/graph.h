// The lazy evaluator: on a lazy context, every operation made outside a
// trace is recorded into the context's pending graph and answered with
// promises (placeholder leaves of no trace, whose kind is known at once).
// Reading a promise evaluates the smallest part of the pending graph it
// needs, as one run on the context's dataflow executor, through the
// context's plan cache; results are written back into the promises.
//
// What is cut out for a run is an IR whose inputs are the concrete leaves
// the operations were given (never literals), so that the same structure
// with other data is the same IR: the plan cache compiles it once. Each
// node knows its structural key from the moment it is recorded, so a cache
// hit is found and confirmed from the nodes themselves: the IR is built only
// on a miss.
//
// Lifetimes: a promise owns its node; a node owns its inputs (and so the
// nodes that produce them). A node whose last promise goes before it ran is
// dropped and never runs; a chain of them is freed without recursion.
// Observable operations (kObservable: checkpoints, depends, host functions)
// are held by the graph until they have run: every evaluation on the context
// runs the ones recorded before it. An evaluation in progress keeps what it
// uses alive; close() (af_context_free) cancels evaluations in progress and
// returns when none touches the context.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "exec/context.h"
#include "exec/executor.h"
#include "rt/env.h"
#include "ir/prim.h"
#include "lazy/shapes.h"
#include "value/error.h"

namespace af::lazy {

class Graph;
struct Cell;

// One recorded operation.
struct Node {
  const Prim* prim = nullptr;
  Params params;
  TreeDef in_tree, out_tree;
  std::vector<Value> in;          // flat input leaves: concrete values or promises
  std::vector<uint8_t> literal;   // per input: 1 = a constant of a called IR (stays a literal)
  std::vector<Aval> out_avals;
  Tags tags;                      // tag scopes open when it was recorded
  NamePath name_path;             // name scopes open when it was recorded
  uint64_t seq = 0;               // 1, 2, ... in recording order on its graph
  // Its own structure, interned when recorded (lazy/shapes.h): everything
  // of it but which inputs are promises (known only when it is cut out).
  std::shared_ptr<const Shape> shape;
  std::weak_ptr<Graph> graph;
  // The cell of each output while one exists (cleared by ~Cell): whether a
  // result is still wanted by anyone outside the evaluation.
  std::unique_ptr<std::atomic<const Cell*>[]> cells;

  enum class State : uint8_t { Pending, Running, Done, Failed };
  // Pending -> Running under the graph's mutex; Running -> Done/Failed
  // after out / error are written (release), read with acquire.
  std::atomic<State> state{State::Pending};
  std::vector<Value> out;  // Done: the outputs still wanted when it ran (others null)
  std::shared_ptr<const Error> error;
  // Guarded by the graph's mutex: the claim that last visited it, and the
  // evaluation that claimed it (Running).
  uint64_t visit = 0;
  uint64_t eval_id = 0;
  // Scratch of the evaluation that claimed it (only its thread touches it):
  // its first output variable in the cut.
  VarId first_var = kNoVar;

  Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  // A node that never ran counts as dropped. Releasing its inputs may free
  // a long chain of nodes: that is done iteratively.
  ~Node();
  // "lm_call (operation #3 recorded on its context, name triage/draft,
  // tags [a, b])"
  std::string where() const;
};

// A promise leaf: output `index` of `node`.
struct Cell final : detail::PromiseHeap {
  Cell(std::shared_ptr<Node> n, uint32_t i);
  ~Cell() override;
  std::shared_ptr<Node> node;
  uint32_t index;

  void evaluate(std::span<const Value> leaves) const override;
  bool ready() const noexcept override;
  const Value& result() const override;
};

// The cell behind a promise leaf, or nullptr.
inline const Cell* cell_of(const Value& leaf) noexcept { return static_cast<const Cell*>(leaf.promise()); }

struct GraphStats {
  uint64_t recorded = 0, evaluated = 0, dropped = 0, pending = 0;
  uint64_t evaluations = 0, timed_out = 0, cancelled = 0;
};

class Graph final : public Recorder, public std::enable_shared_from_this<Graph> {
 public:
  explicit Graph(ExecContext& ctx);
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  Value record(const Prim& p, Params params, std::vector<Value> leaves, TreeDef in_tree) override;
  // af_ir_call / af_program_call on a lazy context: ir's equations are
  // recorded with `inputs` (checked as for a call); returns the output tree.
  Value record_ir(const IR& ir, std::span<const Value> inputs);

  // Evaluates this graph's promises among `leaves` (deep), and every
  // observable operation recorded so far, as one run with `opts` (timeout 0
  // = the graph's default; keep_going and flat_output are set here).
  // INVALID_ARGUMENT if a promise belongs to another context and `strict`;
  // otherwise those are left to their own graph. Failed operations do not
  // throw here (reading their promises does); TIMEOUT / CANCELLED do when
  // the deadline or the cancel stopped this evaluation, and INVALID_ARGUMENT
  // when a host function of an evaluation reads a promise that evaluation
  // runs.
  void eval(std::span<const Value> leaves, bool strict, RunOptions opts = {});

  // The deadline of evaluations given no timeout (0 = none).
  void set_eval_timeout_ms(int64_t ms) noexcept { eval_timeout_ms_ = ms; }
  // Cancels the evaluations in progress and makes later ones fail with
  // CANCELLED; returns once none of them touches the context. Called by
  // af_context_free before the context goes.
  void close();

  // Tag and name scopes of lazy operations, per recording thread.
  void push_tag(std::string tag);
  void pop_tag();
  void push_name(std::string name);
  void pop_name();

  GraphStats stats() const;

 private:
  friend struct Node;
  // `ir_tags`: the tags of a called IR's equation, beside the open scopes'.
  std::shared_ptr<Node> new_node(const Prim& p, Params params, std::vector<Value> leaves,
                                 std::vector<uint8_t> literal, std::span<const Aval> in_avals, TreeDef in_tree,
                                 std::vector<Aval> out_avals, TreeDef out_tree, const Tags& ir_tags = nullptr);
  Value outputs_of(const std::shared_ptr<Node>& n) const;
  void check_input(const Value& leaf, const Prim& p) const;
  Tags current_tags();
  NamePath current_names();
  // Claims the pending nodes the roots need (waiting, until `deadline`, for
  // ones another evaluation is running), in recording order.
  std::vector<std::shared_ptr<Node>> claim(std::vector<std::shared_ptr<Node>> roots, uint64_t eval_id,
                                           const RunOptions& opts,
                                           std::chrono::steady_clock::time_point deadline);
  // Runs the batch and writes results and errors back into its nodes;
  // returns the error that stopped the whole run when it was a deadline or
  // a cancel.
  std::shared_ptr<const Error> run(const std::vector<std::shared_ptr<Node>>& batch, uint64_t eval_id,
                                   RunOptions opts);
  void finish(const std::vector<std::shared_ptr<Node>>& batch);

  ExecContext& ctx_;  // valid while an evaluation is active (close() waits for them)
  ShapeTable shapes_;
  std::atomic<int64_t> eval_timeout_ms_{0};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::shared_ptr<Node>> observable_;  // recorded, not yet run
  std::unordered_map<std::thread::id, std::vector<std::string>> tags_;
  std::unordered_map<std::thread::id, NamePath> names_;
  std::atomic<uint64_t> recorded_{0}, evaluated_{0}, dropped_{0};
  std::atomic<uint64_t> evaluations_{0}, timed_out_{0}, cancelled_{0};
  // Guarded by mu_.
  uint64_t claims_ = 0;
  uint64_t eval_ids_ = 0;
  size_t active_ = 0;   // evaluations between their start and their end
  bool closed_ = false;
};

}  // namespace af::lazy
