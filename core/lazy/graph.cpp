#include "lazy/graph.h"

#include <algorithm>

#include "exec/executor.h"

namespace af::lazy {

namespace {

[[noreturn]] void freed_context() {
  invalid("reading a promise whose context was freed before it was evaluated: evaluate it "
          "(af_eval, or read it) before freeing its context");
}

}  // namespace

// ---- Node and Cell

Node::~Node() {
  if (state.load(std::memory_order_acquire) != State::Pending) return;
  if (auto g = graph.lock()) g->dropped_.fetch_add(1, std::memory_order_relaxed);
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
    : PromiseHeap(n->out_avals[i].kind, n->out_avals[i].list_depth), node(std::move(n)), index(i) {}

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
  if (s == Node::State::Done) return node->out[index];
  if (s == Node::State::Failed) throw *node->error;
  if (node->graph.expired()) freed_context();
  fail(Code::Internal, "a promise was read before its evaluation finished");
}

const Cell* cell_of(const Value& leaf) noexcept {
  return static_cast<const Cell*>(leaf.promise());
}

// ---- Recording

Graph::Graph(ExecContext& ctx) : ctx_(ctx), run_env_{&ctx} {}

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
                                      TreeDef in_tree, std::vector<Aval> out_avals,
                                      TreeDef out_tree) {
  auto n = std::make_shared<Node>();
  n->prim = &p;
  n->params = std::move(params);
  n->in_tree = std::move(in_tree);
  n->out_tree = std::move(out_tree);
  n->in = std::move(leaves);
  n->out_avals = std::move(out_avals);
  n->tags = current_tags();
  n->name_path = current_names();
  n->graph = weak_from_this();
  n->seq = recorded_.fetch_add(1, std::memory_order_relaxed) + 1;
  if (p.flags & kObservable) {
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
  return outputs_of(new_node(p, std::move(params), std::move(leaves), std::move(in_tree),
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
    std::vector<Aval> out_avals;
    for (VarId v : e.out) out_avals.push_back(ir.vars[v]);
    auto n = new_node(*e.prim, e.params, std::move(in), e.in_tree, std::move(out_avals), e.out_tree);
    n->literal = std::move(literal);
    n->tags = union_tags(e.tags(), n->tags);
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

void Graph::eval(std::span<const Value> leaves, bool strict) {
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
  std::vector<std::shared_ptr<Node>> batch = claim(std::move(roots));
  if (batch.empty()) return;
  try {
    run(batch);
  } catch (...) {
    // Whatever escaped (out of memory building the IR) fails the batch:
    // no promise of it may stay Running forever.
    auto err = std::make_shared<const Error>(Code::OutOfMemory, "lazy evaluation ran out of memory");
    for (auto& n : batch)
      if (!n->error && n->out.size() != n->out_avals.size()) n->error = err;
    finish(batch);
    throw;
  }
  finish(batch);
}

std::vector<std::shared_ptr<Node>> Graph::claim(std::vector<std::shared_ptr<Node>> roots) {
  std::unique_lock lock(mu_);
  std::vector<std::shared_ptr<Node>> batch;
  std::vector<const std::shared_ptr<Node>*> stack;
  for (;;) {
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
      if (s == Node::State::Running) busy = true;
      if (s != Node::State::Pending) continue;
      batch.push_back(n);
      for (const Value& leaf : n->in)
        if (const Cell* c = cell_of(leaf)) stack.push_back(&c->node);
    }
    // Another evaluation runs part of what is needed: wait for it, then
    // look again (it may have failed, or finished what we would run).
    if (!busy) break;
    cv_.wait(lock);
  }
  for (auto& n : batch) n->state.store(Node::State::Running, std::memory_order_relaxed);
  std::erase_if(observable_, [](const std::shared_ptr<Node>& n) {
    return n->state.load(std::memory_order_relaxed) != Node::State::Pending;
  });
  std::sort(batch.begin(), batch.end(), [](const auto& a, const auto& b) { return a->seq < b->seq; });
  return batch;
}

void Graph::run(const std::vector<std::shared_ptr<Node>>& batch) {
  // Cut the batch out as an IR: concrete leaves (and results of earlier
  // evaluations) become inputs, in order of use; each node one equation.
  auto ir = std::make_shared<IR>();
  ir->checked = true;  // each node was recorded through its primitive's abstract rule
  ir->eqns.reserve(batch.size());
  std::vector<Value> inputs;
  std::vector<const Node*> eqn_node;
  eqn_node.reserve(batch.size());
  auto new_var = [&](Aval a) {
    ir->vars.push_back(a);
    return VarId(ir->vars.size() - 1);
  };
  auto input = [&](const Value& v) {
    VarId var = new_var(aval_of(v));
    ir->in.push_back(Atom::of_var(var));
    inputs.push_back(v);
    return Atom::of_var(var);
  };
  Shared<EqnNotes> notes;  // shared by consecutive nodes of the same tags
  for (const auto& n : batch) {
    // An input from a failed evaluation fails this node without running.
    for (const Value& leaf : n->in) {
      const Cell* c = cell_of(leaf);
      if (c && c->node->state.load(std::memory_order_acquire) == Node::State::Failed) {
        n->error = c->node->error;
        break;
      }
      if (c && c->node->error) {  // failed in this batch, before running
        n->error = c->node->error;
        break;
      }
    }
    if (n->error) continue;
    Eqn e;
    e.prim = n->prim;
    e.params = n->params;
    e.in_tree = n->in_tree;
    e.out_tree = n->out_tree;
    // (Not the name path: it only words errors, through where().)
    if (!notes || notes->tags != n->tags) notes = EqnNotes::of(n->tags, nullptr);
    e.notes = notes;
    e.in.reserve(n->in.size());
    for (size_t k = 0; k < n->in.size(); ++k) {
      const Value& leaf = n->in[k];
      const Cell* c = cell_of(leaf);
      if (!n->literal.empty() && n->literal[k]) e.in.push_back(Atom::literal(leaf));
      else if (!c) e.in.push_back(input(leaf));
      else if (c->node->first_var != kNoVar) e.in.push_back(Atom::of_var(c->node->first_var + c->index));
      else e.in.push_back(input(c->node->out[c->index]));  // evaluated earlier
    }
    n->first_var = VarId(ir->vars.size());
    e.out.reserve(n->out_avals.size());
    for (const Aval& a : n->out_avals) e.out.push_back(new_var(a));
    for (VarId v : e.out) ir->out.push_back(Atom::of_var(v));
    ir->eqns.push_back(std::move(e));
    eqn_node.push_back(n.get());
  }
  if (ir->eqns.empty()) return;
  ir->in_tree = TreeDef::flat_list(ir->in.size());
  ir->out_tree = TreeDef::flat_list(ir->out.size());
  std::vector<std::shared_ptr<const Error>> errors(ir->out.size());
  RunOptions opts;
  opts.keep_going = true;
  opts.flat_output = true;
  opts.on_output_error = [&errors](size_t k, const std::shared_ptr<const Error>& e) { errors[k] = e; };
  Value result;
  try {
    std::shared_ptr<const Program> prog = ctx_.plans.get(ir);
    result = run_sync(run_env_, std::move(prog), std::move(inputs), std::move(opts));
  } catch (const Error& e) {
    // The run as a whole failed (invalid program, timeout): so does every
    // node of it.
    auto cause = std::make_shared<const Error>(e);
    for (const Node* n : eqn_node) {
      auto* m = const_cast<Node*>(n);
      m->error = std::make_shared<const Error>(
          e.code(), "evaluating " + n->where() + " failed: " + e.what(), cause);
    }
    return;
  }
  // Write back: each node its outputs, or the error of the operation that
  // failed first. A node whose input failed gets that origin's error.
  size_t k = 0;
  for (const Node* n : eqn_node) {
    auto* m = const_cast<Node*>(n);
    std::shared_ptr<const Error> failed;
    for (size_t i = 0; i < n->out_avals.size(); ++i)
      if (errors[k + i] && !failed) failed = errors[k + i];
    if (failed) {
      for (const Value& leaf : n->in)
        if (const Cell* c = cell_of(leaf); c && c->node->error) {
          m->error = c->node->error;
          break;
        }
      if (!m->error)
        m->error = std::make_shared<const Error>(failed->code(), n->where() + " failed: " + failed->what(),
                                                 failed);
    } else {
      m->out.assign(result.items().begin() + ptrdiff_t(k),
                    result.items().begin() + ptrdiff_t(k + n->out_avals.size()));
    }
    k += n->out_avals.size();
  }
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
  return s;
}

}  // namespace af::lazy
