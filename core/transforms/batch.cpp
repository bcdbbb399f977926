#include "transforms/batch.h"

#include "ir/registry.h"
#include "transforms/memo.h"
#include "transforms/pipeline.h"
#include "transforms/prim_params.h"
#include "value/error.h"

namespace af {

namespace {

Aval batched_aval(Aval a) {
  if (a.list_depth == 255) invalid("batch: too many nested batch levels");
  return Aval{a.kind, uint8_t(a.list_depth + 1)};
}

struct BatchRun {
  std::vector<Atom> out;
  std::vector<bool> out_batched;
};

// Batches ir's equations into b, ir's input leaves bound to `in` (batched
// where in_b says so).
BatchRun batch_into(Builder& b, const IR& ir, std::span<const Atom> in, const std::vector<bool>& in_b) {
  std::vector<Atom> atom(ir.vars.size());
  std::vector<bool> is_b(ir.vars.size(), false);
  for (size_t k = 0; k < ir.in.size(); ++k)
    if (ir.in[k].is_var()) {
      atom[ir.in[k].var] = in[k];
      is_b[ir.in[k].var] = in_b[k];
    }
  for (const Eqn& e : ir.eqns) {
    std::vector<Atom> ins;
    std::vector<bool> inb;
    ins.reserve(e.in.size());
    inb.reserve(e.in.size());
    bool any = false;
    for (const Atom& a : e.in) {
      ins.push_back(a.is_var() ? atom[a.var] : a);
      bool bb = a.is_var() && is_b[a.var];
      inb.push_back(bb);
      any = any || bb;
    }
    if (!any) {
      std::vector<Atom> outs = b.copy(ir, e, std::move(ins));
      for (size_t k = 0; k < outs.size(); ++k) atom[e.out[k]] = outs[k];
      continue;
    }
    BatchCtx ctx{b, ir, e, std::move(ins), std::move(inb), {}, {}, {}};
    ctx.outs.resize(e.out.size());
    ctx.out_batched.assign(e.out.size(), false);
    ctx.out_set.assign(e.out.size(), false);
    {
      EmitAs as(b, e);
      rule_of(e, &Prim::batch, "batch")(ctx, e);
    }
    for (size_t k = 0; k < e.out.size(); ++k) {
      if (!ctx.out_set[k])
        fail(Code::Internal, "batch rule of " + e.prim->name + " did not set output " + std::to_string(k));
      Aval want = ir.vars[e.out[k]];
      if (ctx.out_batched[k]) want = batched_aval(want);
      if (!(b.aval(ctx.outs[k]) == want))
        fail(Code::Internal, "batch rule of " + e.prim->name + ": output " + std::to_string(k) + " is " +
                                 aval_name(b.aval(ctx.outs[k])) + ", expected " + aval_name(want));
      atom[e.out[k]] = ctx.outs[k];
      is_b[e.out[k]] = ctx.out_batched[k];
    }
  }
  BatchRun run;
  for (const Atom& a : ir.out) {
    run.out.push_back(a.is_var() ? atom[a.var] : a);
    run.out_batched.push_back(a.is_var() && is_b[a.var]);
  }
  return run;
}

// "input[0]", "input[1][\"k\"][2]": the path of every leaf of a list of
// positional inputs, for messages.
void paths_at(const std::vector<TreeDef::Node>& nodes, size_t& pos, const std::string& path,
              std::vector<std::string>& out) {
  const TreeDef::Node& n = nodes[pos++];
  switch (n.type) {
    case TreeDef::NodeType::Leaf: out.push_back(path); return;
    case TreeDef::NodeType::Null: return;
    case TreeDef::NodeType::List:
      for (uint32_t c = 0; c < n.n_children; ++c) paths_at(nodes, pos, path + "[" + std::to_string(c) + "]", out);
      return;
    case TreeDef::NodeType::Dict:
      for (uint32_t c = 0; c < n.n_children; ++c) {
        std::string key;
        append_json_string(key, n.keys[c]);
        paths_at(nodes, pos, path + "[" + key + "]", out);
      }
      return;
  }
}

std::vector<std::string> leaf_paths(const TreeDef& in_tree) {
  std::vector<std::string> out;
  const auto& nodes = in_tree.nodes();
  size_t pos = 1;
  for (uint32_t c = 0; c < in_tree.root().n_children; ++c)
    paths_at(nodes, pos, "input[" + std::to_string(c) + "]", out);
  return out;
}

}  // namespace

void BatchCtx::out(size_t k, Atom a, bool is_batched) {
  outs[k] = std::move(a);
  out_batched[k] = is_batched;
  out_set[k] = true;
}

void batch_by_map(BatchCtx& ctx, const Eqn& e) {
  static const Prim& map = prim("map");
  // The body: the equation alone, its var inputs as the body's inputs (built
  // directly, numbered canonically: inputs first, then the outputs).
  // Sized up front: this runs once per equation of a batched program, and
  // allocation is most of its cost.
  auto body = std::make_shared<IR>();
  body->checked = true;  // one equation of a checked IR, as it was
  body->vars.reserve(e.in.size() + e.out.size());
  body->in.reserve(e.in.size());
  body->out.reserve(e.out.size());
  body->eqns.reserve(1);
  std::vector<Atom> outer;
  outer.reserve(e.in.size());
  std::vector<Value> axes;
  axes.reserve(e.in.size());
  Eqn inner;
  inner.prim = e.prim;
  inner.in.reserve(e.in.size());
  inner.out.reserve(e.out.size());
  for (size_t k = 0; k < e.in.size(); ++k) {
    const Atom& a = e.in[k];
    if (!a.is_var()) {
      inner.in.push_back(a);
      continue;
    }
    VarId v = VarId(body->vars.size());
    body->vars.push_back(ctx.src.vars[a.var]);
    body->in.push_back(Atom::of_var(v));
    inner.in.push_back(Atom::of_var(v));
    outer.push_back(ctx.in(k));
    axes.push_back(Value::boolean(ctx.batched(k)));
  }
  std::vector<Aval> out_avals;
  out_avals.reserve(e.out.size());
  for (VarId v : e.out) {
    Aval a = ctx.src.vars[v];
    VarId nv = VarId(body->vars.size());
    body->vars.push_back(a);
    inner.out.push_back(nv);
    body->out.push_back(Atom::of_var(nv));
    out_avals.push_back(batched_aval(a));
  }
  inner.in_tree = e.in_tree;
  inner.out_tree = e.out_tree;
  inner.params = e.params;
  // The name path is the map's: inner names are relative to it.
  inner.notes = EqnNotes::of(e.tags(), nullptr, e.sched());
  TreeDef in_tree = TreeDef::flat_list(body->in.size());
  body->in_tree = in_tree;
  body->out_tree = e.out_tree;
  body->eqns.push_back(std::move(inner));
  Params params = map_params(Value::list(std::move(axes)), IRPtr(std::move(body)));
  std::vector<Atom> outs = ctx.b.emit_known(map, std::move(params), std::move(outer), std::move(in_tree),
                                            out_avals, e.out_tree);
  for (size_t k = 0; k < outs.size(); ++k) ctx.out(k, outs[k], true);
}

void batch_identity(BatchCtx& ctx, const Eqn& e) {
  std::vector<Atom> outs = ctx.b.emit(*e.prim, e.params, ctx.ins, e.in_tree);
  for (size_t k = 0; k < outs.size(); ++k) ctx.out(k, outs[k], k < ctx.n_in() && ctx.batched(k));
}

Atom broadcast_like(Builder& b, const Atom& x, const Atom& like) {
  static const Prim& broadcast = prim("broadcast");
  return b.emit1(broadcast, Params(), {x, like});
}

namespace {

BatchedIR batch_sub(const IR& ir, const std::vector<bool>& axes,
                    const std::vector<bool>& force_out) {
  Builder b;
  std::vector<Atom> in;
  Atom like;
  bool have_like = false;
  for (size_t k = 0; k < ir.in.size(); ++k) {
    const Atom& a = ir.in[k];
    Aval av = a.is_var() ? ir.vars[a.var] : aval_of(a.lit);
    in.push_back(Atom::of_var(b.var(axes[k] ? batched_aval(av) : av)));
    if (axes[k] && !have_like) {
      like = in.back();
      have_like = true;
    }
  }
  std::vector<bool> in_b(axes.begin(), axes.end());
  BatchRun run = batch_into(b, ir, in, in_b);
  for (size_t k = 0; k < run.out.size(); ++k)
    if (!force_out.empty() && force_out[k] && !run.out_batched[k]) {
      if (!have_like) fail(Code::Internal, "batch: cannot broadcast an output without a batched input");
      run.out[k] = broadcast_like(b, run.out[k], like);
      run.out_batched[k] = true;
    }
  TreeDef in_tree = TreeDef::flat_list(in.size());
  TreeDef out_tree = TreeDef::flat_list(run.out.size());
  return BatchedIR{b.finish(std::move(in), in_tree, std::move(run.out), out_tree),
                   std::move(run.out_batched)};
}

}  // namespace

BatchedIR batch_flat(const IRPtr& ir, const std::vector<bool>& axes,
                     const std::vector<bool>& force_out) {
  return memoized<BatchedIR>(MemoOp::Batch, ir, axes, force_out,
                             [&] { return batch_sub(*ir, axes, force_out); });
}

IRPtr batch(const IRPtr& ir, const Value& in_axes) {
  Value axes_tree = in_axes.is_null() ? Value::boolean(true) : in_axes;
  std::vector<Value> leaf_axes = broadcast_prefix(axes_tree, ir->in_tree, "in_axes");
  std::vector<bool> batched(ir->in.size(), false);
  bool any = false;
  for (size_t k = 0; k < leaf_axes.size(); ++k) {
    const Value& v = leaf_axes[k];
    if (v.kind() != Kind::Bool && !v.is_null())
      invalid(std::string("in_axes must hold bools (true = batched) or null, found ") + kind_name(v.kind()));
    batched[k] = v.kind() == Kind::Bool && v.as_bool() && ir->in[k].is_var();
    any = any || batched[k];
  }
  if (!any) return ir;

  TransformScope scope(*ir);
  static const Prim& batch_check = prim("batch_check");
  std::vector<std::string> paths = leaf_paths(ir->in_tree);
  std::vector<Value> checked_paths;
  for (size_t k = 0; k < batched.size(); ++k)
    if (batched[k]) checked_paths.push_back(Value::str(paths[k]));
  Builder b;
  std::vector<Atom> in, bound, checked_in;
  for (size_t k = 0; k < ir->in.size(); ++k) {
    const Atom& a = ir->in[k];
    if (!a.is_var()) {
      in.push_back(a);
      bound.push_back(a);
      continue;
    }
    Aval av = ir->vars[a.var];
    in.push_back(Atom::of_var(b.var(batched[k] ? batched_aval(av) : av)));
    bound.push_back(in.back());
    if (batched[k]) checked_in.push_back(in.back());
  }
  // Every batched input goes through one check (equal, non-zero lengths)
  // before anything reads it.
  Params check_params = batch_check_params(Value::list(std::move(checked_paths)));
  std::vector<Atom> checked = b.emit(batch_check, std::move(check_params), checked_in);
  for (size_t k = 0, c = 0; k < in.size(); ++k)
    if (batched[k]) bound[k] = checked[c++];
  BatchRun run = batch_into(b, *ir, bound, batched);
  for (size_t k = 0; k < run.out.size(); ++k)
    if (!run.out_batched[k]) run.out[k] = broadcast_like(b, run.out[k], checked[0]);
  std::shared_ptr<IR> out = b.finish(std::move(in), ir->in_tree, std::move(run.out), ir->out_tree, ir->in_roles);
  // batch(ir) depends on the batch item by item: a large batch may run in
  // slices (transforms/pipeline.h).
  out->slice_items = kSliceItems;
  return out;
}

}  // namespace af
