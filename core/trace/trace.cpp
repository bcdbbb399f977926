#include "trace/trace.h"

#include <algorithm>
#include <atomic>

#include "rt/env.h"
#include "rt/scopes.h"
#include "value/error.h"

namespace af {

namespace {

struct Frame {
  uint64_t id;
  IR ir;                          // being built
  std::vector<std::string> tag_stack;
  Tags tags;                      // the union of tag_stack, sorted
  NamePath names;                 // the open name scopes, outermost first
  int fold_depth = 0;

  // The notes every equation recorded now carries: one block shared by all
  // equations recorded in the same tag and name scopes.
  const Shared<EqnNotes>& notes() {
    if (!notes_ || notes_->tags != tags || notes_->name_path != names) notes_ = EqnNotes::of(tags, names);
    return notes_;
  }

  VarId new_var(Aval a) {
    ir.vars.push_back(a);
    return VarId(ir.vars.size() - 1);
  }
  Value placeholder(VarId v) {
    return Value::placeholder({id, v, ir.vars[v].kind, ir.vars[v].list_depth});
  }

 private:
  Shared<EqnNotes> notes_;
};

thread_local std::vector<Frame*> t_stack;
// A list of any length is an input of aval list<...<T>> (Aval::list_depth is
// a uint8_t).
constexpr uint32_t kMaxListDepth = 255;
std::atomic<uint64_t> g_next_frame{1};

Frame* top() { return t_stack.empty() ? nullptr : t_stack.back(); }

Frame& require_frame(const char* what) {
  Frame* f = top();
  if (!f) invalid(std::string(what) + " is only valid inside a trace (no trace is active on this thread)");
  return *f;
}

// Whether a container given as one leaf holds a traced value (a primitive
// given a list as one leaf: scan's xs).
bool holds_traced(const Value& v) {
  switch (v.kind()) {
    case Kind::Placeholder: return !v.promise();
    case Kind::List: return std::any_of(v.items().begin(), v.items().end(), holds_traced);
    case Kind::Dict:
      return std::any_of(v.entries().begin(), v.entries().end(), [](const auto& e) { return holds_traced(e.second); });
    default: return false;
  }
}

// The atom a leaf becomes in frame f (a promise is evaluated: its content is
// a constant of the trace). A container leaf becomes a literal, so it may
// not hold traced values: the literal could not be run or saved.
Atom atom_of(Frame& f, const Value& leaf, const char* prim) {
  if (leaf.kind() != Kind::Placeholder) {
    if ((leaf.kind() == Kind::List || leaf.kind() == Kind::Dict) && holds_traced(leaf))
      invalid(std::string(prim) + ": an argument is a list of traced values, which cannot be a constant; trace "
                                  "the list as one input of any length (af_trace_with's list_mask)");
    return Atom::literal(leaf);
  }
  if (leaf.promise()) return Atom::literal(resolve(leaf));
  const PlaceholderRef& r = leaf.placeholder_ref();
  if (r.frame != f.id)
    invalid(std::string(prim) + ": an argument is a traced value of another (enclosing or "
            "finished) trace; pass it to this trace as an input instead");
  return Atom::of_var(r.var);
}

Aval aval_of_leaf(const Value& leaf) { return aval_of(leaf); }

void reject_placeholders(const Prim& p, std::span<const Value> leaves, bool folding) {
  for (const Value& v : leaves) {
    if (v.kind() != Kind::Placeholder) continue;
    if (folding) invalid("cannot fold " + p.name + ": it depends on a traced value");
    invalid(p.name + ": an argument is a traced value whose trace has finished; call the traced "
            "program (af_ir_call) instead of reusing its placeholders");
  }
}

Value evaluate(const Prim& p, const Params& params, std::vector<Value> leaves,
               const TreeDef& in_tree, RunEnv& env) {
  std::vector<Aval> avals;
  avals.reserve(leaves.size());
  for (const Value& v : leaves) avals.push_back(aval_of_leaf(v));
  AbstractOut shape = p.abstract_eval(params, avals, in_tree);
  Eqn e;
  e.prim = &p;
  e.in_tree = in_tree;
  e.out_tree = shape.out_tree;
  e.params = params;
  std::vector<Value> out(shape.out.size());
  run_eqn(e, leaves, out, env);
  return shape.out_tree.unflatten(out);
}

Value record(Frame& f, const Prim& p, Params params, std::vector<Value> leaves, TreeDef in_tree) {
  Eqn e;
  e.prim = &p;
  e.in.reserve(leaves.size());
  std::vector<Aval> avals;
  avals.reserve(leaves.size());
  for (const Value& v : leaves) {
    e.in.push_back(atom_of(f, v, p.name.c_str()));
    avals.push_back(aval_of_leaf(v));
  }
  AbstractOut shape = p.abstract_eval(params, avals, in_tree);
  e.in_tree = std::move(in_tree);
  e.params = std::move(params);
  e.notes = f.notes();
  std::vector<Value> outs;
  outs.reserve(shape.out.size());
  e.out.reserve(shape.out.size());
  for (const Aval& a : shape.out) {
    VarId v = f.new_var(a);
    e.out.push_back(v);
    outs.push_back(f.placeholder(v));
  }
  e.out_tree = shape.out_tree;
  f.ir.eqns.push_back(std::move(e));
  return shape.out_tree.is_leaf() ? std::move(outs[0]) : shape.out_tree.unflatten(outs);
}

// Pops the frame however the traced function exits.
struct FrameGuard {
  explicit FrameGuard(Frame* f) { t_stack.push_back(f); }
  ~FrameGuard() { t_stack.pop_back(); }
};

}  // namespace

bool is_tracing() noexcept { return top() != nullptr; }
bool recording() noexcept { return top() && top()->fold_depth == 0; }

namespace {

// The traced inputs: each example becomes a tree of placeholders (static
// leaves stay literals), and each list the list mask marks becomes one
// placeholder of aval list<T> whose length is only known when the program
// runs (docs/SEMANTICS.md §2).
struct InputShaper {
  Frame& f;
  const std::vector<Value>& is_static;  // per leaf of the examples, in flattening order
  size_t next = 0;                      // the next leaf of the examples

  Value input(const Value& leaf, const std::string& path) {
    if (is_static[next++].as_bool()) {
      if (leaf.kind() == Kind::Placeholder)
        invalid(path + ": a static input must be a concrete value");
      f.ir.in.push_back(Atom::literal(leaf));
      return leaf;
    }
    return variable(aval_of(leaf));
  }

  Value variable(Aval a) {
    VarId v = f.new_var(a);
    f.ir.in.push_back(Atom::of_var(v));
    return f.placeholder(v);
  }

  // A list the mask marks: its items (or nested lists of items) are leaves
  // of one kind; the example's length and values do not matter.
  Value any_length_list(const Value& v, const std::string& path) {
    if (v.kind() != Kind::List)
      invalid(path + ": the list mask marks " +
              (v.is_null() ? std::string("null") : std::string("a ") + kind_name(v.kind())) +
              "; only a list can be traced as a list of any length");
    if (v.depth() > kMaxListDepth)
      invalid(path + ": a list of any length nests at most " + std::to_string(kMaxListDepth) +
              " levels");
    const Aval a = aval_of(v);
    if (a.list_depth == 0 || a.kind == Kind::Null || a.kind >= Kind::List)
      invalid(path +
              (v.size() == 0
                   ? ": an empty list does not show the kind of its items; give one example item"
                   : ": a list of any length holds items of one kind (str, int, float or bool), or "
                     "lists of such items, all at one depth (batch a list of dicts as a dict of "
                     "lists)"));
    for (size_t k = 0, n = TreeDef::of(v).num_leaves(); k < n; ++k)
      if (is_static[next++].as_bool()) invalid(path + ": a list of any length cannot be static");
    return variable(a);
  }

  // v with its leaves made inputs; `mask` is the list mask's subtree at v
  // (null: no list below is marked).
  Value shape(const Value& v, const Value& mask, const std::string& path) {
    if (mask.kind() == Kind::Bool && mask.as_bool()) return any_length_list(v, path);
    const bool descend_mask = mask.is_container();
    if (!mask.is_null() && !descend_mask && mask.kind() != Kind::Bool)
      invalid(std::string("the list mask must hold bools (true = a list of any length), found ") +
              kind_name(mask.kind()) + " at " + path);
    auto mask_mismatch = [&] {
      invalid("the list mask is not a prefix of the inputs' structure at " + path +
              ": where the mask has a " + kind_name(mask.kind()) + ", the input must be a " +
              kind_name(mask.kind()) + " with the same " +
              (mask.kind() == Kind::List ? "length" : "keys") + ", found " +
              (v.is_null() ? std::string("null") : std::string("a ") + kind_name(v.kind())));
    };
    switch (v.kind()) {
      case Kind::Null:
        if (descend_mask) mask_mismatch();
        return v;
      case Kind::List: {
        if (descend_mask && (mask.kind() != Kind::List || mask.size() != v.size())) mask_mismatch();
        std::vector<Value> items;
        items.reserve(v.size());
        for (size_t i = 0; i < v.size(); ++i)
          items.push_back(shape(v.items()[i], descend_mask ? mask.items()[i] : Value(),
                                path + "[" + std::to_string(i) + "]"));
        return Value::list(std::move(items));
      }
      case Kind::Dict: {
        if (descend_mask && (mask.kind() != Kind::Dict || mask.size() != v.size())) mask_mismatch();
        // Leaves come in sorted key order; the dict keeps its own order.
        std::vector<Entry> entries(v.entries());
        for (uint32_t i : v.sorted()) {
          const std::string& key = v.entries()[i].first;
          const Value* m = descend_mask ? mask.find(key) : nullptr;
          if (descend_mask && !m) mask_mismatch();
          std::string at;
          append_json_string(at, key);
          entries[i].second = shape(v.entries()[i].second, m ? *m : Value(), path + "[" + at + "]");
        }
        return Value::dict(std::move(entries));
      }
      default:
        if (descend_mask) mask_mismatch();
        return input(v, path);
    }
  }
};

}  // namespace

IRPtr trace(const TraceFn& fn, std::span<const Value> examples, const Value& static_mask,
            const Value& list_mask) {
  Frame f;
  f.id = g_next_frame.fetch_add(1);
  // Which leaves are static: the mask is a prefix of the list of inputs.
  Value all = Value::list(std::vector<Value>(examples.begin(), examples.end()));
  TreeDef all_tree = TreeDef::of(all);
  Value mask = static_mask.is_null() ? Value::boolean(false) : static_mask;
  std::vector<Value> is_static = broadcast_prefix(mask, all_tree, "the static mask");
  for (const Value& b : is_static)
    if (b.kind() != Kind::Bool)
      invalid(std::string("the static mask must hold bools, found ") + kind_name(b.kind()));
  if (list_mask.kind() == Kind::List && list_mask.size() != examples.size())
    invalid("the list mask is not a prefix of the inputs' structure: it lists " +
            std::to_string(list_mask.size()) + " input(s), the function takes " +
            std::to_string(examples.size()));
  if (!list_mask.is_null() && list_mask.kind() != Kind::List && list_mask.kind() != Kind::Bool)
    invalid(std::string("the list mask must be a bool or a list with one entry per input, found ") +
            kind_name(list_mask.kind()));

  InputShaper shaper{f, is_static};
  std::vector<Value> inputs;
  std::vector<TreeDef> trees;
  for (size_t i = 0; i < examples.size(); ++i) {
    const Value m = list_mask.kind() == Kind::List ? list_mask.items()[i] : list_mask;
    inputs.push_back(shaper.shape(examples[i], m, "input[" + std::to_string(i) + "]"));
    trees.push_back(TreeDef::of(inputs.back()));
  }
  f.ir.in_tree = TreeDef::list_of(trees);

  Value result;
  {
    FrameGuard guard(&f);
    result = fn(inputs);
    if (!f.tag_stack.empty())
      invalid("the traced function returned with " + std::to_string(f.tag_stack.size()) +
              " tag scope(s) still open (pair every tag push with a pop)");
    if (f.names)
      invalid("the traced function returned with name scope(s) still open (\"" +
              name_path_text(f.names) + "\"; pair every name push with a pop)");
    if (f.fold_depth != 0)
      invalid("the traced function returned with a fold scope still open");
  }
  auto [leaves, tree] = flatten(result);
  for (const Value& leaf : leaves) f.ir.out.push_back(atom_of(f, leaf, "the traced output"));
  f.ir.out_tree = std::move(tree);
  f.ir.checked = true;  // every equation went through its abstract rule
  return std::make_shared<const IR>(std::move(f.ir));
}

namespace {

// Outside a trace, or folding: promises among the inputs are evaluated
// first (together), then the primitive runs.
void resolve_promises(std::vector<Value>& leaves) {
  if (std::none_of(leaves.begin(), leaves.end(), [](const Value& v) { return v.promise(); })) return;
  Value all = resolve(Value::list(std::move(leaves)));
  leaves = all.items();
}

Value bind_leaves(const Prim& p, Params params, std::vector<Value> leaves, TreeDef in_tree,
                  RunEnv& env) {
  // Sub-IRs (branches, loop bodies) traced inside sub-IRs: refused past the
  // nesting limit here, so no deeper program is ever recorded or run.
  check_nesting(params, p.name);
  Frame* f = top();
  if (!f && env.recorder)
    return env.recorder->record(p, std::move(params), std::move(leaves), std::move(in_tree));
  if (!f || f->fold_depth > 0) {
    resolve_promises(leaves);
    reject_placeholders(p, leaves, f != nullptr);
    return evaluate(p, params, std::move(leaves), in_tree, env);
  }
  return record(*f, p, std::move(params), std::move(leaves), std::move(in_tree));
}

}  // namespace

Value bind(const Prim& p, Params params, const Value& in, RunEnv& env) {
  auto [leaves, in_tree] = flatten(in);
  return bind_leaves(p, std::move(params), std::move(leaves), std::move(in_tree), env);
}

Value bind_flat(const Prim& p, Params params, std::vector<Value> leaves, RunEnv& env) {
  TreeDef in_tree = TreeDef::flat_list(leaves.size());
  return bind_leaves(p, std::move(params), std::move(leaves), std::move(in_tree), env);
}

Value inline_ir(const IR& ir, std::span<const Value> inputs) {
  Frame& f = require_frame("inlining a program");
  std::vector<Value> leaves = check_inputs(ir, inputs, /*allow_placeholders=*/true);
  // Map each var of ir to an atom of the frame.
  std::vector<Atom> map(ir.vars.size());
  for (size_t k = 0; k < ir.in.size(); ++k)
    if (ir.in[k].is_var()) map[ir.in[k].var] = atom_of(f, leaves[k], "a program input");
  auto remap = [&](const Atom& a) { return a.is_var() ? map[a.var] : a; };
  // The scope's tags and names joined to each source notes block once:
  // equations that shared a block share its joined one.
  const EqnNotes* joined_from = nullptr;
  Shared<EqnNotes> joined;
  for (const Eqn& src : ir.eqns) {
    Eqn e = src;
    for (Atom& a : e.in) a = remap(a);
    for (VarId& v : e.out) {
      VarId nv = f.new_var(ir.vars[v]);
      map[v] = Atom::of_var(nv);
      v = nv;
    }
    if (f.tags || f.names) {
      if (!joined || src.notes.get() != joined_from) {
        joined = EqnNotes::of(union_tags(src.tags(), f.tags), join_names(f.names, src.name_path()), src.sched());
        joined_from = src.notes.get();
      }
      e.notes = joined;
    }
    f.ir.eqns.push_back(std::move(e));
  }
  std::vector<Value> outs;
  for (const Atom& a : ir.out) {
    Atom m = remap(a);
    outs.push_back(m.is_var() ? f.placeholder(m.var) : m.lit);
  }
  return ir.out_tree.unflatten(outs);
}

void push_tag(std::string tag) {
  Frame& f = require_frame("a tag scope");
  f.tag_stack.push_back(tag);
  auto one = std::make_shared<const std::vector<std::string>>(1, std::move(tag));
  f.tags = union_tags(f.tags, one);
}

void pop_tag() {
  Frame& f = require_frame("a tag scope");
  if (f.tag_stack.empty()) invalid("tag pop without a matching push");
  f.tag_stack.pop_back();
  auto set = std::make_shared<std::vector<std::string>>(f.tag_stack);
  std::sort(set->begin(), set->end());
  set->erase(std::unique(set->begin(), set->end()), set->end());
  f.tags = set->empty() ? nullptr : Tags(std::move(set));
}

void push_name(std::string name) {
  Frame& f = require_frame("a name scope");
  f.names = pushed_name(f.names, std::move(name));
}

void pop_name() {
  Frame& f = require_frame("a name scope");
  f.names = popped_name(f.names);
}

// Outside a trace every operation already runs at once, which is what fold
// asks for: push and pop are no-ops there (a program ported from a library
// whose fold scope works anywhere keeps working).
void push_fold() {
  if (Frame* f = top()) ++f->fold_depth;
}

void pop_fold() {
  Frame* f = top();
  if (!f) return;
  if (f->fold_depth == 0) invalid("fold pop without a matching push");
  --f->fold_depth;
}

}  // namespace af
