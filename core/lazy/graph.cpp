#include "lazy/graph.h"

#include <algorithm>
#include <chrono>
#include <unordered_map>

#include "lazy/cut.h"

#include "exec/executor.h"

namespace af::lazy {

namespace {

[[noreturn]] void freed_context() {
  invalid("reading a promise whose context was freed before it was evaluated: evaluate it "
          "(af_eval, or read it) before freeing its context");
}

}  // namespace

// ---- Node and Cell

namespace {

// The inputs of nodes being freed on this thread. Releasing a node's inputs
// may free the node before it in a chain, and so on: instead of recursing
// once per node, a node freed while another is being freed leaves its
// inputs here, and the outermost release empties the list in a loop.
thread_local std::vector<std::vector<Value>>* t_releasing = nullptr;

}  // namespace

Node::~Node() {
  if (state.load(std::memory_order_acquire) == State::Pending)
    if (auto g = graph.lock()) g->dropped_.fetch_add(1, std::memory_order_relaxed);
  if (in.empty()) return;
  if (t_releasing) {
    t_releasing->push_back(std::move(in));
    return;
  }
  std::vector<std::vector<Value>> queue;
  t_releasing = &queue;
  queue.push_back(std::move(in));
  while (!queue.empty()) {
    std::vector<Value> inputs = std::move(queue.back());
    queue.pop_back();
    inputs.clear();  // may free nodes: their inputs join the queue
  }
  t_releasing = nullptr;
}

std::string Node::where() const {
  std::string s = prim->name + " (operation #" + std::to_string(seq) + " recorded on its context";
  if (name_path) s += ", name " + name_path_text(name_path);
  if (tags && !tags->empty()) {
    s += ", tags [";
    for (size_t i = 0; i < tags->size(); ++i) s += (i ? ", " : "") + (*tags)[i];
    s += "]";
  }
  return s + ")";
}

Cell::Cell(std::shared_ptr<Node> n, uint32_t i)
    : PromiseHeap(n->out_avals[i].kind, n->out_avals[i].list_depth), node(std::move(n)), index(i) {
  node->cells[index].store(this, std::memory_order_release);
}

Cell::~Cell() { node->cells[index].store(nullptr, std::memory_order_release); }

void Cell::evaluate(std::span<const Value> leaves) const {
  std::shared_ptr<Graph> g = node->graph.lock();
  if (!g) freed_context();
  g->eval(leaves, /*strict=*/false);
}

bool Cell::ready() const noexcept {
  Node::State s = node->state.load(std::memory_order_acquire);
  return s == Node::State::Done || s == Node::State::Failed;
}

const Value& Cell::result() const {
  Node::State s = node->state.load(std::memory_order_acquire);
  if (s == Node::State::Done) {
    // A result nobody held when its evaluation ran was not kept (lazy/cut.h):
    // then nobody can read it. Reaching it is a bug, reported, not undefined.
    if (index >= node->out.size()) fail(Code::Internal, "a promise's result was not kept by its evaluation");
    return node->out[index];
  }
  if (s == Node::State::Failed) throw *node->error;
  if (node->graph.expired()) freed_context();
  fail(Code::Internal, "a promise was read before its evaluation finished");
}

// ---- Recording

Graph::Graph(ExecContext& ctx) : ctx_(ctx) {}

void Graph::check_input(const Value& leaf, const Prim& p) const {
  if (leaf.kind() != Kind::Placeholder) return;
  const Cell* c = cell_of(leaf);
  if (!c)
    invalid(p.name + ": an argument is a traced value whose trace has finished; call the traced "
            "program (af_ir_call) instead of reusing its placeholders");
  if (c->node->graph.lock().get() != this)
    invalid(p.name + ": an argument is a promise of another lazy context; read it (or af_eval it "
            "on its own context) first, or record both operations on one context");
}

Tags Graph::current_tags() {
  std::lock_guard lock(mu_);
  auto it = tags_.find(std::this_thread::get_id());
  if (it == tags_.end() || it->second.empty()) return nullptr;
  auto set = std::make_shared<std::vector<std::string>>(it->second);
  std::sort(set->begin(), set->end());
  set->erase(std::unique(set->begin(), set->end()), set->end());
  return set;
}

NamePath Graph::current_names() {
  std::lock_guard lock(mu_);
  auto it = names_.find(std::this_thread::get_id());
  return it == names_.end() ? nullptr : it->second;
}

std::shared_ptr<Node> Graph::new_node(const Prim& p, Params params, std::vector<Value> leaves,
                                      std::vector<uint8_t> literal, std::span<const Aval> in_avals,
                                      TreeDef in_tree, std::vector<Aval> out_avals, TreeDef out_tree,
                                      const Tags& ir_tags) {
  auto n = std::make_shared<Node>();
  n->prim = &p;
  n->params = std::move(params);
  n->in_tree = std::move(in_tree);
  n->out_tree = std::move(out_tree);
  n->in = std::move(leaves);
  n->literal = std::move(literal);
  n->out_avals = std::move(out_avals);
  n->tags = ir_tags ? union_tags(ir_tags, current_tags()) : current_tags();
  n->name_path = current_names();
  n->cells = std::make_unique<std::atomic<const Cell*>[]>(n->out_avals.size());
  n->graph = weak_from_this();
  n->seq = recorded_.fetch_add(1, std::memory_order_relaxed) + 1;
  n->shape = shapes_.intern(
      ShapeOf{p, n->params, n->in_tree, n->out_tree, n->tags, n->in, n->literal, in_avals, n->out_avals});
  if (n->shape->observable) {
    std::lock_guard lock(mu_);
    observable_.push_back(n);
  }
  return n;
}

Value Graph::outputs_of(const std::shared_ptr<Node>& n) const {
  std::vector<Value> outs;
  outs.reserve(n->out_avals.size());
  for (uint32_t i = 0; i < n->out_avals.size(); ++i) outs.push_back(Value::promise(new Cell(n, i)));
  return n->out_tree.unflatten(outs);
}

Value Graph::record(const Prim& p, Params params, std::vector<Value> leaves, TreeDef in_tree) {
  std::vector<Aval> avals;
  avals.reserve(leaves.size());
  for (const Value& leaf : leaves) {
    check_input(leaf, p);
    avals.push_back(aval_of(leaf));
  }
  AbstractOut shape = p.abstract_eval(params, avals, in_tree);
  return outputs_of(new_node(p, std::move(params), std::move(leaves), {}, avals, std::move(in_tree),
                             std::move(shape.out), std::move(shape.out_tree)));
}

Value Graph::record_ir(const IR& ir, std::span<const Value> inputs) {
  std::vector<Value> leaves = check_inputs(ir, inputs, /*allow_placeholders=*/true);
  std::vector<Value> vars(ir.vars.size());
  for (size_t k = 0; k < ir.in.size(); ++k)
    if (ir.in[k].is_var()) vars[ir.in[k].var] = leaves[k];
  std::vector<Value> outs;
  for (const Eqn& e : ir.eqns) {
    std::vector<Value> in;
    std::vector<uint8_t> literal(e.in.size(), 0);
    in.reserve(e.in.size());
    for (size_t k = 0; k < e.in.size(); ++k) {
      const Atom& a = e.in[k];
      if (a.is_var()) {
        check_input(vars[a.var], *e.prim);
        in.push_back(vars[a.var]);
      } else {
        literal[k] = 1;
        in.push_back(a.lit);
      }
    }
    std::vector<Aval> in_avals, out_avals;
    for (const Value& leaf : in) in_avals.push_back(aval_of(leaf));
    for (VarId v : e.out) out_avals.push_back(ir.vars[v]);
    auto n = new_node(*e.prim, e.params, std::move(in), std::move(literal), in_avals, e.in_tree,
                      std::move(out_avals), e.out_tree, e.tags());
    n->name_path = join_names(n->name_path, e.name_path());
    auto [leaf_outs, tree] = flatten(outputs_of(n));
    for (size_t k = 0; k < e.out.size(); ++k) vars[e.out[k]] = leaf_outs[k];
  }
  outs.reserve(ir.out.size());
  for (const Atom& a : ir.out) outs.push_back(a.is_var() ? vars[a.var] : a.lit);
  return ir.out_tree.unflatten(outs);
}

void Graph::push_tag(std::string tag) {
  std::lock_guard lock(mu_);
  tags_[std::this_thread::get_id()].push_back(std::move(tag));
}

void Graph::pop_tag() {
  std::lock_guard lock(mu_);
  auto it = tags_.find(std::this_thread::get_id());
  if (it == tags_.end() || it->second.empty()) invalid("tag pop without a matching push");
  it->second.pop_back();
  if (it->second.empty()) tags_.erase(it);
}

void Graph::push_name(std::string name) {
  // Only this thread changes its own entry: reading it, then writing it, is
  // not a race.
  NamePath path = pushed_name(current_names(), std::move(name));
  std::lock_guard lock(mu_);
  names_[std::this_thread::get_id()] = std::move(path);
}

void Graph::pop_name() {
  std::lock_guard lock(mu_);
  auto it = names_.find(std::this_thread::get_id());
  if (it == names_.end()) invalid("name pop without a matching push");
  it->second = popped_name(it->second);
  if (!it->second) names_.erase(it);
}

// ---- Evaluation

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void reentrant(const Node& n) {
  invalid("a host function read a promise that the evaluation calling it is running (" + n.where() +
          "): it would wait for itself. Pass the value to the host function as an argument, or read it "
          "after the evaluation");
}

}  // namespace

void Graph::eval(std::span<const Value> leaves, bool strict, RunOptions opts) {
  std::vector<Value> promises;
  for (const Value& v : leaves) collect_promises(v, promises);
  std::vector<std::shared_ptr<Node>> roots;
  for (const Value& p : promises) {
    const Cell* c = cell_of(p);
    if (c->node->graph.lock().get() != this) {
      if (strict)
        invalid("af_eval: a value holds a promise of another context; evaluate it on its own "
                "context");
      continue;
    }
    roots.push_back(c->node);
  }
  if (opts.timeout_ms == 0) opts.timeout_ms = eval_timeout_ms_.load(std::memory_order_relaxed);
  const Clock::time_point deadline =
      opts.timeout_ms ? Clock::now() + std::chrono::milliseconds(opts.timeout_ms) : Clock::time_point::max();
  uint64_t id;
  {
    std::lock_guard lock(mu_);
    if (closed_) fail(Code::Cancelled, "the context is being freed: no evaluation can start");
    ++active_;
    id = ++eval_ids_;
  }
  struct Leave {
    Graph& g;
    ~Leave() {
      std::lock_guard lock(g.mu_);
      if (--g.active_ == 0 && g.closed_) g.cv_.notify_all();
    }
  } leave{*this};
  std::vector<std::shared_ptr<Node>> batch;
  try {
    batch = claim(std::move(roots), id, opts, deadline);
  } catch (const Error& e) {
    if (e.code() == Code::Timeout) timed_out_.fetch_add(1, std::memory_order_relaxed);
    if (e.code() == Code::Cancelled) cancelled_.fetch_add(1, std::memory_order_relaxed);
    throw;
  }
  if (batch.empty()) return;
  evaluations_.fetch_add(1, std::memory_order_relaxed);
  if (opts.timeout_ms) {  // what waiting for other evaluations took counts
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
    opts.timeout_ms = std::max<int64_t>(1, left);
  }
  std::shared_ptr<const Error> stopped;
  try {
    stopped = run(batch, id, std::move(opts));
  } catch (...) {
    // Whatever escaped (out of memory building the IR) fails the batch:
    // no promise of it may stay Running forever.
    auto err = std::make_shared<const Error>(Code::OutOfMemory, "lazy evaluation ran out of memory");
    for (auto& n : batch)
      if (!n->error && n->out.empty()) n->error = err;
    finish(batch);
    throw;
  }
  finish(batch);
  if (stopped) {
    (stopped->code() == Code::Timeout ? timed_out_ : cancelled_).fetch_add(1, std::memory_order_relaxed);
    throw *stopped;
  }
}

void Graph::close() {
  {
    std::lock_guard lock(mu_);
    closed_ = true;
  }
  cv_.notify_all();  // evaluations waiting for others give up
  // Runs in flight end with CANCELLED and no new one starts; evaluations
  // still cutting or compiling then fail at their run's start.
  ctx_.scheduler()->shutdown();
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return active_ == 0; });
}

std::vector<std::shared_ptr<Node>> Graph::claim(std::vector<std::shared_ptr<Node>> roots, uint64_t eval_id,
                                                const RunOptions& opts, Clock::time_point deadline) {
  const std::shared_ptr<const Evaluation>& serving = serving_evaluation();
  std::unique_lock lock(mu_);
  std::vector<std::shared_ptr<Node>> batch;
  std::vector<const std::shared_ptr<Node>*> stack;
  for (;;) {
    if (closed_) fail(Code::Cancelled, "the context was freed while this evaluation waited for another");
    batch.clear();
    bool busy = false;
    const uint64_t visit = ++claims_;
    for (const auto& n : roots) stack.push_back(&n);
    for (const auto& n : observable_) stack.push_back(&n);
    while (!stack.empty()) {
      const std::shared_ptr<Node>& n = *stack.back();
      stack.pop_back();
      if (n->visit == visit) continue;
      n->visit = visit;
      Node::State s = n->state.load(std::memory_order_acquire);
      if (s == Node::State::Running) {
        if (serving && serving->within(n->eval_id)) reentrant(*n);
        busy = true;
      }
      if (s != Node::State::Pending) continue;
      batch.push_back(n);
      for (const Value& leaf : n->in)
        if (const Cell* c = cell_of(leaf)) stack.push_back(&c->node);
    }
    // Another evaluation runs part of what is needed: wait for it, then
    // look again (it may have failed, or finished what we would run).
    if (!busy) break;
    if (opts.cancel && opts.cancel->cancelled())
      fail(Code::Cancelled, "the evaluation was cancelled while it waited for another");
    // A cancel token has no way to wake this wait: look at it every 20 ms.
    Clock::time_point until = opts.cancel ? std::min(deadline, Clock::now() + std::chrono::milliseconds(20)) : deadline;
    if (until == Clock::time_point::max()) cv_.wait(lock);
    else if (cv_.wait_until(lock, until) == std::cv_status::timeout && Clock::now() >= deadline)
      fail(Code::Timeout, "the evaluation's deadline passed while it waited for another evaluation running "
                          "what it needs (it goes on; read again later)");
  }
  for (auto& n : batch) {
    n->state.store(Node::State::Running, std::memory_order_relaxed);
    n->eval_id = eval_id;
  }
  std::erase_if(observable_, [](const std::shared_ptr<Node>& n) {
    return n->state.load(std::memory_order_relaxed) != Node::State::Pending;
  });
  std::sort(batch.begin(), batch.end(), [](const auto& a, const auto& b) { return a->seq < b->seq; });
  return batch;
}

std::shared_ptr<const Error> Graph::run(const std::vector<std::shared_ptr<Node>>& batch, uint64_t eval_id,
                                        RunOptions opts) {
  Cut cut(batch);
  if (cut.nodes.empty()) return nullptr;
  std::vector<std::shared_ptr<const Error>> out_errors(cut.out_vars.size()), own(cut.nodes.size());
  opts.keep_going = true;
  opts.flat_output = true;
  opts.on_output_error = [&out_errors](size_t k, const std::shared_ptr<const Error>& e) { out_errors[k] = e; };
  opts.on_eqn_error = [&own](uint32_t eqn, const std::shared_ptr<const Error>& e) { own[eqn] = e; };
  RunEnv env;
  env.context = &ctx_;
  env.evaluation = std::make_shared<const Evaluation>(Evaluation{eval_id, serving_evaluation()});
  Value result;
  try {
    std::shared_ptr<const Program> prog = ctx_.plans.find(cut.key, cut.code);
    if (!prog) prog = ctx_.plans.get(cut.build(), cut.key, {}, cut.code);
    std::vector<Value> inputs;
    inputs.reserve(cut.inputs.size());
    for (const Value* v : cut.inputs) inputs.push_back(*v);
    result = run_sync(std::move(env), std::move(prog), std::move(inputs), std::move(opts));
  } catch (const Error& e) {
    // The run as a whole failed (deadline, cancel, invalid program): so does
    // every node of it.
    auto cause = std::make_shared<const Error>(e);
    for (Node* n : cut.nodes)
      n->error = std::make_shared<const Error>(e.code(), "evaluating " + n->where() + " failed: " + e.what(), cause);
    return e.code() == Code::Timeout || e.code() == Code::Cancelled ? cause : nullptr;
  }
  // Write back, in recording order: a node that failed itself gets an error
  // naming it; one whose input failed, that input's error; else its wanted
  // outputs (an output failing with neither is a merged twin's failure).
  std::unordered_map<const Error*, std::shared_ptr<const Error>> origin;
  auto named = [](const Node& n, const std::shared_ptr<const Error>& e) {
    return std::make_shared<const Error>(e->code(), n.where() + " failed: " + e->what(), e);
  };
  std::span<const Value> items = result.items();
  size_t o = 0;  // into cut.out_vars
  for (size_t j = 0; j < cut.nodes.size(); ++j) {
    Node& n = *cut.nodes[j];
    if (own[j]) {
      n.error = named(n, own[j]);
      origin.emplace(own[j].get(), n.error);
    }
    for (size_t k = 0; k < n.in.size() && !n.error; ++k)
      if (const Cell* c = cell_of(n.in[k]); c && c->node->error) n.error = c->node->error;
    // (A node none of whose results is wanted keeps no output slots: no
    // promise can read them.)
    for (uint32_t i = 0; i < n.out_avals.size(); ++i) {
      if (o == cut.out_vars.size() || cut.out_vars[o] != n.first_var + i) continue;
      if (const auto& e = out_errors[o]; e && !n.error) {
        auto it = origin.find(e.get());
        n.error = it != origin.end() ? it->second : named(n, e);
      }
      if (n.out.empty()) n.out.resize(n.out_avals.size());
      n.out[i] = items[o++];
    }
    if (n.error) n.out.clear();
  }
  return nullptr;
}

void Graph::finish(const std::vector<std::shared_ptr<Node>>& batch) {
  {
    std::lock_guard lock(mu_);
    for (auto& n : batch) {
      n->first_var = kNoVar;
      n->state.store(n->error ? Node::State::Failed : Node::State::Done, std::memory_order_release);
    }
  }
  evaluated_.fetch_add(batch.size(), std::memory_order_relaxed);
  cv_.notify_all();
  // What an evaluated node was computed from is no longer needed: release
  // it (and the upstream nodes only it held).
  for (auto& n : batch) std::vector<Value>().swap(n->in);
}

GraphStats Graph::stats() const {
  GraphStats s;
  s.recorded = recorded_.load(std::memory_order_relaxed);
  s.evaluated = evaluated_.load(std::memory_order_relaxed);
  s.dropped = dropped_.load(std::memory_order_relaxed);
  s.pending = s.recorded - std::min(s.recorded, s.evaluated + s.dropped);
  s.evaluations = evaluations_.load(std::memory_order_relaxed);
  s.timed_out = timed_out_.load(std::memory_order_relaxed);
  s.cancelled = cancelled_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace af::lazy
