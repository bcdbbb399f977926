// switch and while_loop (docs/SEMANTICS.md §3), each with all of its rules.
//
//   switch[branches: name -> IR](key, operands...) -> outputs
//   while_loop[cond: IR, body: IR, max_iters](init) -> state
//
// Transform rules, in short (details next to each):
//   switch  batch: an unbatched key keeps one switch whose branches are
//           batched (outputs batched in any branch are batched in all); a
//           batched key maps the switch over the items, so each item takes
//           its own branch. push: one switch of pushed-forward branches.
//           pull: the forward switch runs each branch's forward part and
//           returns its residuals (fillers in the slots of the other
//           branches); the backward switch, routed by the same key, runs the
//           backward part of the branch taken — nothing is re-run. dce:
//           branches lose the outputs nobody reads, and the inputs no
//           branch reads any more.
//   while_loop batch: maps the loop over the items (each item stops when
//           its own cond is false: only live items run). push: one loop over
//           (state, tangents). pull: the forward loop (while_scan) records
//           the trajectory (each iteration's state and residuals); the
//           backward walks it in reverse (scan, reverse=true) through the
//           body's backward part. dce: state leaves nothing needs are
//           dropped from the loop; cond and body lose their dead equations.
#include "prims/control_flow.h"

#include <algorithm>
#include <atomic>
#include <limits>
#include <mutex>
#include <variant>

#include "ir/registry.h"
#include "prims/builtins.h"
#include "prims/pass_loop.h"
#include "trace/trace.h"
#include "transforms/batch.h"
#include "transforms/dce.h"
#include "transforms/pullback.h"
#include "transforms/pushforward.h"
#include "value/error.h"

namespace af {

// ---- params (prims/control_flow.h): each name spelled once

namespace {
constexpr const char* kParamBranches = "branches";
constexpr const char* kParamBody = "body";
constexpr const char* kParamCond = "cond";
constexpr const char* kParamMaxIters = "max_iters";
constexpr const char* kParamNXs = "n_xs";
constexpr const char* kParamReverse = "reverse";
}  // namespace

Params switch_params(IRMap branches) {
  Params p;
  p.set(kParamBranches, std::move(branches));
  return p;
}
std::vector<ParamSpec> switch_param_specs() { return {{.name = kParamBranches, .kind = ParamKind::IRMap}}; }

const IRMap& switch_branches(const Params& p) {
  const Param* b = p.find(kParamBranches);
  if (!b || !std::holds_alternative<IRMap>(*b)) fail(Code::Internal, "switch: missing branches param");
  return std::get<IRMap>(*b);
}

Params while_loop_params(IRPtr cond, IRPtr body, int64_t max_iters) {
  Params p;
  p.set(kParamBody, std::move(body));
  p.set(kParamCond, std::move(cond));
  p.set(kParamMaxIters, Value::integer(max_iters));
  return p;
}
std::vector<ParamSpec> while_loop_param_specs() {
  return {{.name = kParamBody, .kind = ParamKind::IR},
          {.name = kParamCond, .kind = ParamKind::IR},
          {.name = kParamMaxIters, .value_kind = Kind::Int}};
}
Params while_scan_params(IRPtr cond, IRPtr body, int64_t max_iters) {
  return while_loop_params(std::move(cond), std::move(body), max_iters);
}
std::vector<ParamSpec> while_scan_param_specs() { return while_loop_param_specs(); }
const IRPtr& loop_cond(const Params& p) { return p.ir(kParamCond); }
const Value& loop_max_iters(const Params& p) { return p.value(kParamMaxIters); }
const IRPtr& loop_body(const Params& p) { return p.ir(kParamBody); }

Params scan_params(IRPtr body, size_t n_xs, bool reverse) {
  Params p;
  p.set(kParamBody, std::move(body));
  p.set(kParamNXs, Value::integer(int64_t(n_xs)));
  p.set(kParamReverse, Value::boolean(reverse));
  return p;
}
std::vector<ParamSpec> scan_param_specs() {
  return {{.name = kParamBody, .kind = ParamKind::IR},
          {.name = kParamNXs, .value_kind = Kind::Int},
          {.name = kParamReverse, .value_kind = Kind::Bool}};
}
size_t scan_n_xs(const Params& p) { return size_t(p.value(kParamNXs).as_int()); }
bool scan_reverse(const Params& p) { return p.value(kParamReverse).as_bool(); }

namespace {

std::string branch_names(const IRMap& m) {
  std::string s;
  for (size_t i = 0; i < m.size(); ++i) s += (i ? ", " : "") + json_quoted(m[i].first);
  return s;
}

std::vector<bool> or_masks(const std::vector<std::vector<bool>>& masks, size_t n) {
  std::vector<bool> out(n, false);
  for (const auto& m : masks)
    for (size_t i = 0; i < n; ++i) out[i] = out[i] || m[i];
  return out;
}

// ---- switch

AbstractOut switch_abstract(const Params& params, std::span<const Aval> in, const TreeDef& in_tree) {
  const IRMap& br = switch_branches(params);
  if (br.empty()) invalid("switch: there are no branches");
  if (in.empty() || !(in[0] == Aval{Kind::Str, 0}))
    invalid("switch: the key must be a str, found " + (in.empty() ? std::string("nothing") : aval_name(in[0])));
  std::vector<TreeDef> children = in_tree.children();
  TreeDef ops_tree = TreeDef::list_of(std::span<const TreeDef>(children).subspan(1));
  const IR& first = *br[0].second;
  std::vector<Aval> first_out = out_avals(first);
  for (const auto& [name, ir] : br) {
    if (!(ir->in_tree == ops_tree))
      invalid("switch: branch " + json_quoted(name) + " takes " + ir->in_tree.to_string() + " but the operands are " +
              ops_tree.to_string());
    std::vector<Aval> want = in_avals(*ir);
    for (size_t k = 0; k < want.size(); ++k)
      if (!(want[k] == in[k + 1]))
        invalid("switch: branch " + json_quoted(name) + " takes " + aval_name(want[k]) + " as input leaf " +
                std::to_string(k) + " but the operand is " + aval_name(in[k + 1]));
    if (!(ir->out_tree == first.out_tree))
      invalid("switch: the branches return different structures: branch " + json_quoted(br[0].first) + " returns " +
              first.out_tree.to_string() + ", branch " + json_quoted(name) + " returns " + ir->out_tree.to_string());
    std::vector<Aval> out = out_avals(*ir);
    for (size_t k = 0; k < out.size(); ++k)
      if (!(out[k] == first_out[k]))
        invalid("switch: output leaf " + std::to_string(k) + " is " + aval_name(first_out[k]) + " in branch " +
                json_quoted(br[0].first) + " but " + aval_name(out[k]) + " in branch " + json_quoted(name));
  }
  return AbstractOut{first_out, first.out_tree};
}

// The branch the key names; NOT_FOUND listing the branches if none.
const IRPtr& branch_for(const IRMap& br, const std::string& key) {
  auto it = std::lower_bound(br.begin(), br.end(), key,
                             [](const auto& entry, const std::string& k) { return entry.first < k; });
  if (it == br.end() || it->first != key)
    fail(Code::NotFound, "switch: no branch is named " + json_quoted(key) + "; the branches are " + branch_names(br));
  return it->second;
}

// The one implementation: the branch the key names runs as a sub-run (inline
// when it makes no async work; rt/context.h run_sub).
void switch_impl_async(const Eqn& e, std::span<const Value> in, std::shared_ptr<AsyncOp> op, RunEnv& env) {
  const IRPtr& branch = switch_branch(e.params, in[0].as_str());
  if (!env.context) fail(Code::Internal, "switch: no context to run the branch");
  std::shared_ptr<SubRun> run = env.context->run_sub(
      branch, in.subspan(1), env, op, 0, [op](std::vector<Value>* out, const Error* err) {
        if (err) op->fail(*err);
        else op->succeed(std::move(*out));
      }, -1);
  if (run) op->on_cancel([run] { run->cancel(); });
}

void switch_batch(BatchCtx& ctx, const Eqn& e) {
  static const Prim& sw = prim("switch");
  // A batched key: each item takes its own branch.
  if (ctx.batched(0)) return batch_by_map(ctx, e);
  const IRMap& br = switch_branches(e.params);
  std::vector<bool> axes(ctx.n_in() - 1);
  for (size_t k = 0; k + 1 < ctx.n_in(); ++k) axes[k] = ctx.batched(k + 1);
  std::vector<std::vector<bool>> outs_b;
  for (const auto& [name, ir] : br) outs_b.push_back(batch_flat(ir, axes, {}).out_batched);
  std::vector<bool> joined = or_masks(outs_b, e.out.size());
  IRMap m;
  for (const auto& [name, ir] : br) m.emplace_back(name, batch_flat(ir, axes, joined).ir);
  std::vector<Atom> o = ctx.b.emit(sw, switch_params(std::move(m)), ctx.ins);
  for (size_t k = 0; k < o.size(); ++k) ctx.out(k, o[k], joined[k]);
}

void switch_push(PushCtx& ctx, const Eqn& e) {
  static const Prim& sw = prim("switch");
  const IRMap& br = switch_branches(e.params);
  const size_t m = ctx.n_in() - 1, p = e.out.size();
  std::vector<bool> nz(m);
  for (size_t k = 0; k < m; ++k) nz[k] = ctx.tangent(k + 1).has_value();
  std::vector<std::vector<bool>> nz_out;
  for (const auto& [name, ir] : br) nz_out.push_back(pushforward_flat(ir, nz, {}).nz_out);
  std::vector<bool> joined = or_masks(nz_out, p);
  IRMap pushed;
  for (const auto& [name, ir] : br) pushed.emplace_back(name, pushforward_flat(ir, nz, joined).ir);
  std::vector<Atom> in = ctx.primals;
  for (size_t k = 0; k < m; ++k)
    if (nz[k]) in.push_back(*ctx.tangent(k + 1));
  std::vector<Atom> o = ctx.b.emit(sw, switch_params(std::move(pushed)), std::move(in));
  size_t j = p;
  for (size_t k = 0; k < p; ++k) {
    ctx.primal_out(k, o[k]);
    ctx.tangent_out(k, joined[k] ? std::optional<Atom>(o[j++]) : std::nullopt);
  }
}

// Residual layout of a switch's pullback: the residuals of every branch, one
// after the other.
struct SwitchResiduals {
  std::vector<SplitIR> splits;      // per branch, all cotangents non-zero
  std::vector<size_t> offset;       // per branch: first residual slot
  std::vector<Aval> avals;          // per slot
};

SwitchResiduals switch_residuals(const IRMap& br, size_t n_in, size_t n_out) {
  SwitchResiduals r;
  for (const auto& [name, ir] : br) {
    r.splits.push_back(pullback_forward(ir));
    r.offset.push_back(r.avals.size());
    std::vector<Aval> outs = out_avals(*r.splits.back().fwd);
    r.avals.insert(r.avals.end(), outs.begin() + long(n_out), outs.end());
  }
  return r;
}

void switch_pull_fwd(PullCtx& ctx, const Eqn& e) {
  static const Prim& sw = prim("switch");
  const IRMap& br = switch_branches(e.params);
  const size_t m = ctx.n_in() - 1, p = e.out.size();
  SwitchResiduals r = switch_residuals(br, m, p);
  IRMap fwd;
  for (size_t b = 0; b < br.size(); ++b) {
    Builder fb;
    std::vector<Atom> ins;
    for (size_t k = 0; k < m; ++k) ins.push_back(Atom::of_var(fb.var(ctx.in_aval(k + 1))));
    std::vector<Atom> o = inline_into(fb, *r.splits[b].fwd, ins);
    std::vector<Atom> outs(o.begin(), o.begin() + long(p));
    for (size_t c = 0; c < br.size(); ++c) {
      size_t n_res = (c + 1 < br.size() ? r.offset[c + 1] : r.avals.size()) - r.offset[c];
      for (size_t j = 0; j < n_res; ++j)
        outs.push_back(c == b ? o[p + j] : Atom::literal(filler_value(r.avals[r.offset[c] + j])));
    }
    TreeDef in_tree = TreeDef::flat_list(ins.size());
    TreeDef out_tree = TreeDef::flat_list(outs.size());
    fwd.emplace_back(br[b].first, fb.finish(std::move(ins), in_tree, std::move(outs), out_tree));
  }
  std::vector<Atom> o = ctx.b.emit(sw, switch_params(std::move(fwd)), ctx.primals);
  for (size_t k = 0; k < p; ++k) ctx.forward_out(k, o[k]);
  ctx.residuals.assign(o.begin() + long(p), o.end());
}

void switch_pull_bwd(PullCtx& ctx, const Eqn& e) {
  static const Prim& sw = prim("switch");
  const IRMap& br = switch_branches(e.params);
  const size_t m = ctx.n_in() - 1, p = e.out.size();
  const size_t r = ctx.residuals.size();
  std::vector<bool> nz(p);
  for (size_t k = 0; k < p; ++k) nz[k] = ctx.cotangent(k).has_value();
  std::vector<std::vector<bool>> nz_in;
  std::vector<size_t> n_res;
  for (const auto& [name, ir] : br) {
    SplitIR s = pullback_split(ir, nz, {});
    nz_in.push_back(s.nz_in);
    n_res.push_back(s.n_res);
  }
  std::vector<bool> joined = or_masks(nz_in, m);
  // Every backward branch takes [operands, all residual slots, cotangents].
  std::vector<Aval> new_in;
  for (size_t k = 0; k < m; ++k) new_in.push_back(ctx.in_aval(k + 1));
  for (const Atom& a : ctx.residuals) new_in.push_back(ctx.b.aval(a));
  for (size_t k = 0; k < p; ++k)
    if (nz[k]) new_in.push_back(ctx.out_ct_aval(k));
  IRMap bwd;
  size_t offset = 0;
  for (size_t b = 0; b < br.size(); ++b) {
    SplitIR s = pullback_split(br[b].second, nz, joined);
    std::vector<size_t> from;
    for (size_t k = 0; k < m; ++k) from.push_back(k);
    for (size_t j = 0; j < s.n_res; ++j) from.push_back(m + offset + j);
    for (size_t q = 0, c = 0; q < p; ++q)
      if (nz[q]) from.push_back(m + r + c++);
    std::vector<size_t> sel;
    for (size_t j = 0; j < s.bwd->out.size(); ++j) sel.push_back(j);
    bwd.emplace_back(br[b].first, rewire(*s.bwd, new_in, from, sel));
    offset += s.n_res;
  }
  // Nothing flows back and nothing has effects: no backward switch at all.
  if (std::none_of(joined.begin(), joined.end(), [](bool x) { return x; }) &&
      std::none_of(bwd.begin(), bwd.end(), [](const auto& b) { return has_effects(*b.second); }))
    return;
  std::vector<Atom> in = ctx.primals;
  in.insert(in.end(), ctx.residuals.begin(), ctx.residuals.end());
  for (size_t k = 0; k < p; ++k)
    if (nz[k]) in.push_back(*ctx.cotangent(k));
  std::vector<Atom> o = ctx.b.emit(sw, switch_params(std::move(bwd)), std::move(in));
  for (size_t k = 0, j = 0; k < m; ++k)
    if (joined[k]) ctx.add_cotangent(k + 1, o[j++]);
}

void switch_dce(DceCtx& ctx, const Eqn& e) {
  const IRMap& br = switch_branches(e.params);
  const size_t m = e.in.size() - 1;
  std::vector<DcedIR> d;
  std::vector<std::vector<bool>> used;
  for (const auto& [name, ir] : br) {
    d.push_back(dce_flat(ir, ctx.out_used));
    used.push_back(d.back().used_in);
  }
  std::vector<bool> keep = or_masks(used, m);
  IRMap m2;
  for (size_t b = 0; b < br.size(); ++b) m2.emplace_back(br[b].first, drop_inputs(d[b].ir, keep));
  Eqn k;
  k.prim = e.prim;
  k.in.push_back(e.in[0]);
  for (size_t i = 0; i < m; ++i)
    if (keep[i]) k.in.push_back(e.in[i + 1]);
  k.in_tree = TreeDef::flat_list(k.in.size());
  for (size_t o = 0; o < e.out.size(); ++o)
    if (ctx.out_used[o]) k.out.push_back(e.out[o]);
  k.out_tree = TreeDef::flat_list(k.out.size());
  k.params = switch_params(std::move(m2));
  k.notes = e.notes;
  ctx.replace(std::move(k));
}

// ---- while_loop

int64_t max_iters_of(const Params& p) { return loop_max_iters(p).as_int(); }

TreeDef state_tree(size_t n) {
  TreeDef flat = TreeDef::flat_list(n);
  return TreeDef::list_of(std::span<const TreeDef>(&flat, 1));
}

AbstractOut while_abstract(const Params& params, std::span<const Aval> in, const TreeDef& in_tree) {
  const IRPtr& cond = loop_cond(params);
  const IRPtr& body = loop_body(params);
  const Value& max = loop_max_iters(params);
  if (max.kind() != Kind::Int || max.as_int() < 0) invalid("while_loop: max_iters must be a non-negative int");
  if (in_tree.root().n_children != 1) invalid("while_loop: takes one input, the initial state");
  TreeDef state = in_tree.child(0);
  for (const auto& [what, ir] : {std::pair{"cond", cond}, std::pair{"body", body}}) {
    if (!(ir->in_tree == in_tree))
      invalid(std::string("while_loop: the ") + what + " takes " + ir->in_tree.to_string() +
              " but the state is " + state.to_string());
    std::vector<Aval> want = in_avals(*ir);
    for (size_t k = 0; k < want.size(); ++k)
      if (!(want[k] == in[k]))
        invalid(std::string("while_loop: the ") + what + " takes " + aval_name(want[k]) + " as state leaf " +
                std::to_string(k) + " but the state holds " + aval_name(in[k]));
  }
  std::vector<Aval> c = out_avals(*cond);
  if (!cond->out_tree.is_leaf() || !(c[0] == Aval{Kind::Bool, 0}))
    invalid("while_loop: the cond must return one bool, it returns " + cond->out_tree.to_string() +
            (c.size() == 1 ? " of " + aval_name(c[0]) : std::string()));
  if (!(body->out_tree == state))
    invalid("while_loop: the body changes the state structure: it takes " + state.to_string() +
            " and returns " + body->out_tree.to_string());
  std::vector<Aval> o = out_avals(*body);
  for (size_t k = 0; k < o.size(); ++k)
    if (!(o[k] == in[k]))
      invalid("while_loop: the body changes the kind of state leaf " + std::to_string(k) + " from " +
              aval_name(in[k]) + " to " + aval_name(o[k]));
  return AbstractOut{std::vector<Aval>(in.begin(), in.end()), state};
}

// The one implementation: cond and body passes one after another
// (prims/pass_loop.h), until cond says stop or max_iters bodies ran.
class WhileLoop final : public PassLoop {
 public:
  WhileLoop(const Eqn& e, std::span<const Value> in, std::shared_ptr<AsyncOp> op, const RunEnv& env)
      : PassLoop(std::move(op), env), cond_(loop_cond(e.params)), body_(loop_body(e.params)),
        max_(max_iters_of(e.params)), state_(in.begin(), in.end()) {}

 private:
  bool next(IRPtr& ir, std::vector<Value>& in) override {
    if (!in_body_ && it_ >= max_) {
      op_->succeed(std::move(state_));
      return false;
    }
    ir = in_body_ ? body_ : cond_;
    in = state_;
    return true;
  }

  void pass_done(std::vector<Value> out) override {
    if (in_body_) {
      state_ = std::move(out);
      ++it_;
      in_body_ = false;
    } else if (!out[0].as_bool()) {
      op_->succeed(std::move(state_));
    } else {
      in_body_ = true;
    }
  }

  IRPtr cond_, body_;
  int64_t max_, it_ = 0;
  bool in_body_ = false;  // the next pass runs the body (cond said go)
  std::vector<Value> state_;
};

void while_impl_async(const Eqn& e, std::span<const Value> in, std::shared_ptr<AsyncOp> op, RunEnv& env) {
  std::make_shared<WhileLoop>(e, in, std::move(op), env)->start();
}

// cond over a flat state with `extra` unused leaves appended.
IRPtr cond_with_extra(const IR& cond, std::span<const Aval> extra) {
  std::vector<Aval> avals = in_avals(cond);
  std::vector<size_t> from;
  for (size_t k = 0; k < avals.size(); ++k) from.push_back(k);
  avals.insert(avals.end(), extra.begin(), extra.end());
  std::vector<size_t> sel{0};
  return leaf_output(rewire(cond, avals, from, sel));
}

void while_push(PushCtx& ctx, const Eqn& e) {
  static const Prim& wl = prim("while_loop");
  const size_t k = ctx.n_in();
  IRPtr body = flat_signature(loop_body(e.params));
  std::vector<bool> nz(k);
  for (size_t i = 0; i < k; ++i) nz[i] = ctx.tangent(i).has_value();
  // The tangents that can become non-zero inside the loop: a fixpoint.
  PushedIR p;
  for (;;) {
    p = pushforward_flat(body, nz, nz);
    bool grew = false;
    for (size_t i = 0; i < k; ++i)
      if (p.nz_out[i] && !nz[i]) nz[i] = grew = true;
    if (!grew) break;
  }
  std::vector<Aval> extra;
  std::vector<Atom> init = ctx.primals;
  for (size_t i = 0; i < k; ++i)
    if (nz[i]) {
      extra.push_back(ctx.in_aval(i));
      init.push_back(ctx.tangent_or_zero(i));
    }
  IRPtr cond = state_signature(cond_with_extra(*flat_inputs(loop_cond(e.params)), extra));
  Params params = while_loop_params(cond, state_signature(p.ir), max_iters_of(e.params));
  std::vector<Atom> o = ctx.b.emit(wl, std::move(params), init, state_tree(init.size()));
  for (size_t i = 0, j = k; i < k; ++i) {
    ctx.primal_out(i, o[i]);
    ctx.tangent_out(i, nz[i] ? std::optional<Atom>(o[j++]) : std::nullopt);
  }
}

void while_pull_fwd(PullCtx& ctx, const Eqn& e) {
  static const Prim& ws = prim("while_scan");
  const size_t k = ctx.n_in();
  IRPtr body = flat_signature(loop_body(e.params));
  SplitIR s = pullback_forward(body);
  // The recording body: state -> [next state | state, residuals] (the
  // trajectory: every iteration's state and residuals).
  std::vector<Aval> avals = in_avals(*body);
  std::vector<size_t> from, sel;
  for (size_t i = 0; i < k; ++i) from.push_back(i);
  for (size_t i = 0; i < k; ++i) sel.push_back(i);
  const size_t n_fwd_out = k + s.n_res;
  for (size_t i = 0; i < k; ++i) sel.push_back(n_fwd_out + i);
  for (size_t j = 0; j < s.n_res; ++j) sel.push_back(k + j);
  IRPtr rec = rewire(*s.fwd, avals, from, sel);
  Params params =
      while_scan_params(leaf_output(flat_inputs(loop_cond(e.params))), rec, max_iters_of(e.params));
  std::vector<Atom> o = ctx.b.emit(ws, std::move(params), ctx.primals);
  for (size_t i = 0; i < k; ++i) ctx.forward_out(i, o[i]);
  ctx.residuals.assign(o.begin() + long(k), o.end());  // [trajectory states, trajectory residuals, n]
}

void while_pull_bwd(PullCtx& ctx, const Eqn& e) {
  static const Prim& scan = prim("scan");
  const size_t k = ctx.n_in();
  IRPtr body = flat_signature(loop_body(e.params));
  std::vector<bool> c(k);
  for (size_t i = 0; i < k; ++i) c[i] = ctx.cotangent(i).has_value();
  SplitIR s;
  for (;;) {
    s = pullback_split(body, c, c);
    bool grew = false;
    for (size_t i = 0; i < k; ++i)
      if (s.nz_in[i] && !c[i]) c[i] = grew = true;
    if (!grew) break;
  }
  // Backward body: [state_i, residuals_i | cotangent] -> [cotangent], run
  // from the last iteration to the first.
  const Atom& n = ctx.residuals.back();
  std::vector<Atom> in{n};
  in.insert(in.end(), ctx.residuals.begin(), ctx.residuals.end() - 1);
  for (size_t i = 0; i < k; ++i)
    if (c[i]) in.push_back(ctx.cotangent_or_zero(i));
  std::vector<Atom> o = ctx.b.emit(scan, scan_params(s.bwd, k + s.n_res, true), std::move(in));
  for (size_t i = 0, j = 0; i < k; ++i)
    if (c[i]) ctx.add_cotangent(i, o[j++]);
}

void while_dce(DceCtx& ctx, const Eqn& e) {
  const size_t k = e.in.size();
  IRPtr body = flat_signature(loop_body(e.params));
  IRPtr cond = flat_inputs(loop_cond(e.params));
  std::vector<bool> live = ctx.out_used;
  std::vector<bool> one{true};
  DcedIR dc = dce_flat(cond, one);
  for (size_t i = 0; i < k; ++i) live[i] = live[i] || dc.used_in[i];
  DcedIR db;
  for (;;) {
    db = dce_flat(body, live);
    bool grew = false;
    for (size_t i = 0; i < k; ++i)
      if (db.used_in[i] && !live[i]) live[i] = grew = true;
    if (!grew) break;
  }
  Eqn n;
  n.prim = e.prim;
  for (size_t i = 0; i < k; ++i)
    if (live[i]) {
      n.in.push_back(e.in[i]);
      n.out.push_back(e.out[i]);
    }
  n.in_tree = state_tree(n.in.size());
  n.out_tree = TreeDef::flat_list(n.out.size());
  n.params = while_loop_params(state_signature(leaf_output(drop_inputs(dc.ir, live))),
                         state_signature(drop_inputs(db.ir, live)), max_iters_of(e.params));
  n.notes = e.notes;
  ctx.replace(std::move(n));
}

}  // namespace

const IRPtr& switch_branch(const Params& p, const std::string& key) {
  return branch_for(switch_branches(p), key);
}

void add_control_flow_prims(std::vector<Prim>& out) {
  out.push_back(Prim{
      .name = "switch",
      .cost = 0.0,
      .params = switch_param_specs(),
      .impl_async = switch_impl_async,
      .abstract_eval = switch_abstract,
      .batch = switch_batch,
      .pushforward = switch_push,
      .pullback_fwd = switch_pull_fwd,
      .pullback_bwd = switch_pull_bwd,
      .dce = switch_dce,
  });
  out.push_back(Prim{
      .name = "while_loop",
      .cost = 0.0,
      .params = while_loop_param_specs(),
      .impl_async = while_impl_async,
      .abstract_eval = while_abstract,
      .batch = batch_by_map,
      .pushforward = while_push,
      .pullback_fwd = while_pull_fwd,
      .pullback_bwd = while_pull_bwd,
      .dce = while_dce,
  });
}

Value op_switch(const Value& key, std::span<const std::string> names, std::span<const IRPtr> branches,
                std::span<const Value> operands, RunEnv& env) {
  if (names.size() != branches.size())
    invalid("switch: " + std::to_string(names.size()) + " name(s) for " + std::to_string(branches.size()) +
            " branch(es)");
  if (branches.empty()) invalid("switch: there are no branches");
  Kind key_kind = key.kind() == Kind::Placeholder ? key.placeholder_ref().kind : key.kind();
  if (key_kind != Kind::Str) invalid(std::string("switch: the key must be a str, found ") + kind_name(key_kind));
  IRMap m;
  for (size_t i = 0; i < names.size(); ++i) {
    if (!branches[i]) invalid("switch: branch " + json_quoted(names[i]) + " is NULL");
    m.emplace_back(names[i], branches[i]);
  }
  std::sort(m.begin(), m.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 1; i < m.size(); ++i)
    if (m[i].first == m[i - 1].first) invalid("switch: two branches are named " + json_quoted(m[i].first));
  for (const auto& [name, ir] : m) {
    if (ir->num_inputs() != operands.size())
      invalid("switch: branch " + json_quoted(name) + " takes " + std::to_string(ir->num_inputs()) +
              " input(s) but " + std::to_string(operands.size()) + " operand(s) were given");
    try {
      check_inputs(*ir, operands, /*allow_placeholders=*/true);
    } catch (const Error& err) {
      invalid("switch: branch " + json_quoted(name) + ": " + err.what());
    }
  }
  std::vector<Value> in{key};
  in.insert(in.end(), operands.begin(), operands.end());
  static const Prim& p = prim("switch");
  return bind(p, switch_params(std::move(m)), Value::list(std::move(in)), env);
}

Value op_while_loop(const IRPtr& cond, const IRPtr& body, const Value& init, uint64_t max_iters,
                    RunEnv& env) {
  if (!cond || !body) invalid("while_loop: cond and body are required");
  for (const auto& [what, ir] : {std::pair{"cond", &cond}, std::pair{"body", &body}}) {
    if ((*ir)->num_inputs() != 1)
      invalid(std::string("while_loop: the ") + what + " must take one input (the state), it takes " +
              std::to_string((*ir)->num_inputs()));
    try {
      check_inputs(**ir, std::span<const Value>(&init, 1), /*allow_placeholders=*/true);
    } catch (const Error& err) {
      invalid(std::string("while_loop: the ") + what + " does not take the initial state: " + err.what());
    }
  }
  const int64_t max = max_iters > uint64_t(std::numeric_limits<int64_t>::max())
                          ? std::numeric_limits<int64_t>::max()
                          : int64_t(max_iters);
  static const Prim& p = prim("while_loop");
  return bind(p, while_loop_params(cond, body, max), Value::list({init}), env);
}

}  // namespace af
