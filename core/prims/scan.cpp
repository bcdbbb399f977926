// The loops pullback emits (docs/SEMANTICS.md §3 while_loop, pull): the forward
// records a trajectory, the backward walks it in reverse.
//
//   while_scan[cond, body, max_iters](carry...) -> (carry..., ys..., n)
//       while_loop that also records per-iteration values: body maps the
//       carry (flat leaves) to [next carry..., y...]; output y_j is the list
//       of y_j over the n iterations that ran.
//   scan[body, n_xs, reverse](n, xs..., carry...) -> (carry..., ys...)
//       n iterations (last to first when reverse); iteration i reads item i
//       of every xs list; body maps [x_i..., carry...] to [next carry...,
//       y_i...]; output y_j holds y_j of iteration i at index i.
//   length(list) -> int
//       the number of items of a list: the count of a scan a program asks
//       for (op_scan) over a list it receives.
//
// Both have every rule, so pullback(pullback(while_loop)) and the other
// compositions work: batch maps them over the items; push carries the
// tangents along (a fixpoint decides which carry tangents can be non-zero);
// pull records this loop's own trajectory with another while_scan / scan and
// walks it back with a scan in the other direction.
#include <algorithm>

#include "ir/registry.h"
#include "prims/builtins.h"
#include "prims/control_flow.h"
#include "prims/pass_loop.h"
#include "transforms/builder.h"
#include "transforms/batch.h"
#include "transforms/dce.h"
#include "transforms/pullback.h"
#include "transforms/pushforward.h"
#include "trace/trace.h"
#include "value/error.h"

namespace af {

namespace {

Aval up(Aval a) { return Aval{a.kind, uint8_t(a.list_depth + 1)}; }

std::vector<size_t> iota(size_t from, size_t n) {
  std::vector<size_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = from + i;
  return v;
}

void append(std::vector<size_t>& v, const std::vector<size_t>& w) { v.insert(v.end(), w.begin(), w.end()); }

size_t count(const std::vector<bool>& m) { return size_t(std::count(m.begin(), m.end(), true)); }

// ---- while_scan

AbstractOut while_scan_abstract(const Params& params, std::span<const Aval> in, const TreeDef&) {
  const IRPtr& cond = loop_cond(params);
  const IRPtr& body = loop_body(params);
  const size_t k = in.size();
  std::vector<Aval> ci = in_avals(*cond), bi = in_avals(*body), bo = out_avals(*body), co = out_avals(*cond);
  if (ci.size() != k || bi.size() != k || bo.size() < k || co.size() != 1 || !(co[0] == Aval{Kind::Bool, 0}))
    invalid("while_scan: cond / body do not match the carry");
  for (size_t i = 0; i < k; ++i)
    if (!(ci[i] == in[i]) || !(bi[i] == in[i]) || !(bo[i] == in[i]))
      invalid("while_scan: carry leaf " + std::to_string(i) + " kind mismatch");
  AbstractOut out;
  out.out.assign(in.begin(), in.end());
  for (size_t j = k; j < bo.size(); ++j) out.out.push_back(up(bo[j]));
  out.out.push_back(Aval{Kind::Int, 0});
  out.out_tree = TreeDef::flat_list(out.out.size());
  return out;
}

// The one implementation: while_loop's passes (prims/pass_loop.h) that also
// keep every iteration's extra body outputs.
class WhileScan final : public PassLoop {
 public:
  WhileScan(const Eqn& e, std::span<const Value> in, std::shared_ptr<AsyncOp> op, const RunEnv& env)
      : PassLoop(std::move(op), env), cond_(loop_cond(e.params)), body_(loop_body(e.params)),
        max_(loop_max_iters(e.params).as_int()), carry_(in.begin(), in.end()),
        ys_(body_->out.size() - in.size()) {}

 private:
  bool next(IRPtr& ir, std::vector<Value>& in) override {
    if (!in_body_ && n_ >= max_) {
      finish();
      return false;
    }
    ir = in_body_ ? body_ : cond_;
    in = carry_;
    return true;
  }

  void pass_done(std::vector<Value> out) override {
    if (!in_body_) {
      if (out[0].as_bool()) in_body_ = true;
      else finish();
      return;
    }
    const size_t k = carry_.size();
    for (size_t i = 0; i < k; ++i) carry_[i] = std::move(out[i]);
    for (size_t j = 0; j < ys_.size(); ++j) ys_[j].push_back(std::move(out[k + j]));
    ++n_;
    in_body_ = false;
  }

  void finish() {
    std::vector<Value> out = std::move(carry_);
    for (auto& y : ys_) out.push_back(Value::list(std::move(y)));
    out.push_back(Value::integer(n_));
    op_->succeed(std::move(out));
  }

  IRPtr cond_, body_;
  int64_t max_, n_ = 0;
  bool in_body_ = false;
  std::vector<Value> carry_;
  std::vector<std::vector<Value>> ys_;
};

void while_scan_impl_async(const Eqn& e, std::span<const Value> in, std::shared_ptr<AsyncOp> op,
                           RunEnv& env) {
  std::make_shared<WhileScan>(e, in, std::move(op), env)->start();
}

IRPtr cond_with_extra(const IR& cond, std::span<const Aval> extra) {
  std::vector<Aval> avals = in_avals(cond);
  std::vector<size_t> from = iota(0, avals.size());
  avals.insert(avals.end(), extra.begin(), extra.end());
  std::vector<size_t> sel{0};
  return leaf_output(rewire(cond, avals, from, sel));
}

void while_scan_push(PushCtx& ctx, const Eqn& e) {
  static const Prim& ws = prim("while_scan");
  const IRPtr& body = loop_body(e.params);
  const size_t k = ctx.n_in(), m = body->out.size() - k;
  std::vector<bool> nz(k);
  for (size_t i = 0; i < k; ++i) nz[i] = ctx.tangent(i).has_value();
  std::vector<bool> mat;
  PushedIR p;
  for (;;) {
    mat = nz;
    mat.resize(k + m, false);
    p = pushforward_flat(body, nz, mat);
    bool grew = false;
    for (size_t i = 0; i < k; ++i)
      if (p.nz_out[i] && !nz[i]) nz[i] = grew = true;
    if (!grew) break;
  }
  const size_t t = count(nz);
  std::vector<bool> nz_y(p.nz_out.begin() + long(k), p.nz_out.end());
  const size_t ty = count(nz_y);
  // p.ir: [c, tc] -> [c', y, tc', ty]; the loop wants carry [c, tc] -> [c', tc' | y, ty].
  std::vector<Aval> avals = in_avals(*p.ir);
  std::vector<size_t> sel = iota(0, k);
  append(sel, iota(k + m, t));
  append(sel, iota(k, m));
  append(sel, iota(k + m + t, ty));
  IRPtr new_body = rewire(*p.ir, avals, iota(0, avals.size()), sel);
  std::vector<Aval> extra;
  std::vector<Atom> init = ctx.primals;
  for (size_t i = 0; i < k; ++i)
    if (nz[i]) {
      extra.push_back(ctx.in_aval(i));
      init.push_back(ctx.tangent_or_zero(i));
    }
  Params params = while_scan_params(cond_with_extra(*loop_cond(e.params), extra), new_body,
                                    loop_max_iters(e.params).as_int());
  std::vector<Atom> o = ctx.b.emit(ws, std::move(params), std::move(init));
  // o: [c (k), tc (t), y (m), ty (ty), n]
  for (size_t i = 0, j = k; i < k; ++i) {
    ctx.primal_out(i, o[i]);
    ctx.tangent_out(i, nz[i] ? std::optional<Atom>(o[j++]) : std::nullopt);
  }
  for (size_t j = 0, q = k + t + m; j < m; ++j) {
    ctx.primal_out(k + j, o[k + t + j]);
    ctx.tangent_out(k + j, nz_y[j] ? std::optional<Atom>(o[q++]) : std::nullopt);
  }
  ctx.primal_out(k + m, o.back());
  ctx.tangent_out(k + m, std::nullopt);
}

void while_scan_pull_fwd(PullCtx& ctx, const Eqn& e) {
  static const Prim& ws = prim("while_scan");
  const IRPtr& body = loop_body(e.params);
  const size_t k = ctx.n_in(), m = body->out.size() - k;
  SplitIR s = pullback_forward(body);
  // s.fwd: c -> [c', y, R]; recording body: c -> [c' | y, c, R].
  const size_t r = s.n_res;
  std::vector<size_t> sel = iota(0, k + m);
  append(sel, iota(k + m + r, k));
  append(sel, iota(k + m, r));
  IRPtr rec = rewire(*s.fwd, in_avals(*s.fwd), iota(0, k), sel);
  Params params = while_scan_params(loop_cond(e.params), rec, loop_max_iters(e.params).as_int());
  std::vector<Atom> o = ctx.b.emit(ws, std::move(params), ctx.primals);
  // o: [c (k), y (m), traj_c (k), traj_R (r), n]
  for (size_t i = 0; i < k + m; ++i) ctx.forward_out(i, o[i]);
  ctx.forward_out(k + m, o.back());
  ctx.residuals.assign(o.begin() + long(k + m), o.end());  // [traj_c, traj_R, n]
}

void while_scan_pull_bwd(PullCtx& ctx, const Eqn& e) {
  static const Prim& scan = prim("scan");
  const IRPtr& body = loop_body(e.params);
  const size_t k = ctx.n_in(), m = body->out.size() - k;
  std::vector<bool> c(k), py(m);
  for (size_t i = 0; i < k; ++i) c[i] = ctx.cotangent(i).has_value();
  for (size_t j = 0; j < m; ++j) py[j] = ctx.cotangent(k + j).has_value();
  SplitIR s;
  for (;;) {
    std::vector<bool> nz_out = c;
    nz_out.insert(nz_out.end(), py.begin(), py.end());
    s = pullback_split(body, nz_out, c);
    bool grew = false;
    for (size_t i = 0; i < k; ++i)
      if (s.nz_in[i] && !c[i]) c[i] = grew = true;
    if (!grew) break;
  }
  const size_t r = s.n_res, nc = count(c), ny = count(py);
  // s.bwd: [c_i (k), R_i (r), ct_c (nc), ct_y (ny)] -> [ct_c (nc)];
  // the scan body wants [c_i, R_i, ct_y_i | ct_c].
  std::vector<Aval> bin = in_avals(*s.bwd);
  std::vector<Aval> avals(bin.begin(), bin.begin() + long(k + r));
  avals.insert(avals.end(), bin.begin() + long(k + r + nc), bin.end());
  avals.insert(avals.end(), bin.begin() + long(k + r), bin.begin() + long(k + r + nc));
  std::vector<size_t> from = iota(0, k + r);
  append(from, iota(k + r + ny, nc));
  append(from, iota(k + r, ny));
  IRPtr back = rewire(*s.bwd, avals, from, iota(0, nc));
  std::vector<Atom> in{ctx.residuals.back()};
  in.insert(in.end(), ctx.residuals.begin(), ctx.residuals.end() - 1);
  for (size_t j = 0; j < m; ++j)
    if (py[j]) in.push_back(*ctx.cotangent(k + j));
  for (size_t i = 0; i < k; ++i)
    if (c[i]) in.push_back(ctx.cotangent_or_zero(i));
  std::vector<Atom> o = ctx.b.emit(scan, scan_params(back, k + r + ny, true), std::move(in));
  for (size_t i = 0, j = 0; i < k; ++i)
    if (c[i]) ctx.add_cotangent(i, o[j++]);
}

// ---- scan

AbstractOut scan_abstract(const Params& params, std::span<const Aval> in, const TreeDef&) {
  const IRPtr& body = loop_body(params);
  const size_t a = scan_n_xs(params);
  std::vector<Aval> bi = in_avals(*body), bo = out_avals(*body);
  if (in.empty() || !(in[0] == Aval{Kind::Int, 0})) invalid("scan: the first input must be the int count");
  if (in.size() != 1 + bi.size() || bi.size() < a) invalid("scan: the inputs do not match the body");
  const size_t k = bi.size() - a;
  if (bo.size() < k) invalid("scan: the body returns fewer leaves than the carry has");
  for (size_t i = 0; i < a; ++i)
    if (!(in[1 + i] == up(bi[i]))) invalid("scan: xs " + std::to_string(i) + " kind mismatch");
  for (size_t i = 0; i < k; ++i)
    if (!(in[1 + a + i] == bi[a + i]) || !(bo[i] == bi[a + i]))
      invalid("scan: carry " + std::to_string(i) + " kind mismatch");
  AbstractOut out;
  out.out.assign(bo.begin(), bo.begin() + long(k));
  for (size_t j = k; j < bo.size(); ++j) out.out.push_back(up(bo[j]));
  out.out_tree = TreeDef::flat_list(out.out.size());
  return out;
}

// Checks scan's count and xs; returns the count.
size_t scan_count(std::span<const Value> in, size_t n_xs) {
  const int64_t n = in[0].as_int();
  if (n < 0) invalid("scan: negative count");
  for (size_t i = 0; i < n_xs; ++i)
    if (in[1 + i].kind() != Kind::List || in[1 + i].size() != size_t(n))
      invalid("scan: list " + std::to_string(i) + " of xs has " +
              (in[1 + i].kind() == Kind::List ? std::to_string(in[1 + i].size()) + " items" : std::string("no items")) +
              " where the count is " + std::to_string(n) + " (all lists of xs must have one length)");
  return size_t(n);
}

// The one implementation: one pass per iteration (prims/pass_loop.h), the
// carry threaded from each to the next. ys grow as iterations run (a reverse
// scan's are reversed at the end): the count may be a huge literal of an
// untrusted graph, so nothing is sized by it up front.
class Scan final : public PassLoop {
 public:
  Scan(const Eqn& e, std::span<const Value> in, std::shared_ptr<AsyncOp> op, const RunEnv& env)
      : PassLoop(std::move(op), env), body_(loop_body(e.params)), a_(scan_n_xs(e.params)),
        rev_(scan_reverse(e.params)), n_(scan_count(in, a_)), xs_(in.begin() + 1, in.begin() + 1 + long(a_)),
        carry_(in.begin() + 1 + long(a_), in.end()), ys_(body_->out.size() - carry_.size()) {}

 private:
  bool next(IRPtr& ir, std::vector<Value>& in) override {
    if (step_ >= n_) {
      std::vector<Value> out = std::move(carry_);
      for (auto& y : ys_) {
        if (rev_) std::reverse(y.begin(), y.end());
        out.push_back(Value::list(std::move(y)));
      }
      op_->succeed(std::move(out));
      return false;
    }
    const size_t it = rev_ ? n_ - 1 - step_ : step_;
    ir = body_;
    in.clear();
    for (const Value& x : xs_) in.push_back(x.items()[it]);
    in.insert(in.end(), carry_.begin(), carry_.end());
    return true;
  }

  void pass_done(std::vector<Value> out) override {
    const size_t k = carry_.size();
    for (size_t i = 0; i < k; ++i) carry_[i] = std::move(out[i]);
    for (size_t j = 0; j < ys_.size(); ++j) ys_[j].push_back(std::move(out[k + j]));
    ++step_;
  }

  IRPtr body_;
  size_t a_;
  bool rev_;
  size_t n_, step_ = 0;
  std::vector<Value> xs_, carry_;
  std::vector<std::vector<Value>> ys_;
};

// Above this many equations (count x body), a scan whose body waits on LM
// calls runs pass by pass instead of unrolled.
constexpr size_t kUnrollLimit = 100000;

// A scan whose body waits on async work (the backward pass of a loop around
// LM calls) runs unrolled: every iteration's body inlined into one IR whose
// carries chain from each to the next, run as one sub-run on the dataflow
// executor. So an iteration's LM calls start as soon as what they read
// exists, not when the previous iteration has finished everything: the
// independent feedback calls of a loop's pullback run concurrently.
// Inputs: the xs items of every iteration (in run order), then the carry;
// outputs: the last carry, then every iteration's ys.
IRPtr unrolled_scan(const IR& body, size_t n_xs, size_t n) {
  std::vector<Aval> bi = in_avals(body);
  const size_t k = bi.size() - n_xs;
  Builder b;
  std::vector<Atom> ins, carry(k), outs;
  std::vector<std::vector<Atom>> ys;
  for (size_t i = 0; i < k; ++i) carry[i] = Atom::of_var(b.var(bi[n_xs + i]));
  const std::vector<Atom> init = carry;
  for (size_t t = 0; t < n; ++t) {
    std::vector<Atom> pass;
    for (size_t j = 0; j < n_xs; ++j) {
      pass.push_back(Atom::of_var(b.var(bi[j])));
      ins.push_back(pass.back());
    }
    pass.insert(pass.end(), carry.begin(), carry.end());
    std::vector<Atom> o = inline_into(b, body, pass);
    carry.assign(o.begin(), o.begin() + long(k));
    ys.emplace_back(o.begin() + long(k), o.end());
  }
  ins.insert(ins.end(), init.begin(), init.end());
  outs = carry;
  for (auto& y : ys) outs.insert(outs.end(), y.begin(), y.end());
  const size_t n_in = ins.size(), n_out = outs.size();
  return b.finish(std::move(ins), TreeDef::flat_list(n_in), std::move(outs), TreeDef::flat_list(n_out));
}

void scan_impl_async(const Eqn& e, std::span<const Value> in, std::shared_ptr<AsyncOp> op, RunEnv& env) {
  if (!env.context) fail(Code::Internal, "scan: no context to run the body");
  const IRPtr& body = loop_body(e.params);
  const size_t a = scan_n_xs(e.params), k = body->in.size() - a, m = body->out.size() - k;
  const size_t n = scan_count(in, a);
  if (n == 0 || n > kUnrollLimit / std::max<size_t>(1, body->eqns.size()) || !env.context->runs_async(body, env))
    return std::make_shared<Scan>(e, in, std::move(op), env)->start();
  const bool rev = scan_reverse(e.params);
  std::vector<Value> leaves;
  leaves.reserve(n * a + k);
  for (size_t t = 0; t < n; ++t)
    for (size_t j = 0; j < a; ++j) leaves.push_back(in[1 + j].items()[rev ? n - 1 - t : t]);
  leaves.insert(leaves.end(), in.begin() + 1 + long(a), in.end());
  auto done = [op, n, k, m, rev](std::vector<Value>* out, const Error* err) {
    if (err) {
      op->fail(*err);
      return;
    }
    std::vector<Value> res(out->begin(), out->begin() + long(k));
    for (size_t j = 0; j < m; ++j) {
      std::vector<Value> y(n);
      for (size_t t = 0; t < n; ++t) y[rev ? n - 1 - t : t] = std::move((*out)[k + t * m + j]);
      res.push_back(Value::list(std::move(y)));
    }
    op->succeed(std::move(res));
  };
  // The unrolled form depends on the count: compiled once per count and
  // kept with the program (rt/context.h run_keyed_form).
  std::shared_ptr<SubRun> run = env.context->run_keyed_form(
      e, n, [&] { return unrolled_scan(*body, a, n); }, leaves, env, op, 0, std::move(done), -1);
  if (run) op->on_cancel([run] { run->cancel(); });
}

void scan_push(PushCtx& ctx, const Eqn& e) {
  static const Prim& scan = prim("scan");
  const IRPtr& body = loop_body(e.params);
  const size_t a = scan_n_xs(e.params), k = body->in.size() - a, m = body->out.size() - k;
  std::vector<bool> nzx(a), nzc(k);
  for (size_t i = 0; i < a; ++i) nzx[i] = ctx.tangent(1 + i).has_value();
  for (size_t i = 0; i < k; ++i) nzc[i] = ctx.tangent(1 + a + i).has_value();
  PushedIR p;
  for (;;) {
    std::vector<bool> nz_in = nzx;
    nz_in.insert(nz_in.end(), nzc.begin(), nzc.end());
    std::vector<bool> mat = nzc;
    mat.resize(k + m, false);
    p = pushforward_flat(body, nz_in, mat);
    bool grew = false;
    for (size_t i = 0; i < k; ++i)
      if (p.nz_out[i] && !nzc[i]) nzc[i] = grew = true;
    if (!grew) break;
  }
  const size_t tx = count(nzx), tc = count(nzc);
  std::vector<bool> nz_y(p.nz_out.begin() + long(k), p.nz_out.end());
  const size_t ty = count(nz_y);
  // p.ir: [x (a), c (k), tx, tc] -> [c', y, tc', ty]; the scan body wants
  // [x, tx | c, tc] -> [c', tc' | y, ty].
  std::vector<Aval> pin = in_avals(*p.ir);
  std::vector<Aval> avals(pin.begin(), pin.begin() + long(a));
  avals.insert(avals.end(), pin.begin() + long(a + k), pin.begin() + long(a + k + tx));
  avals.insert(avals.end(), pin.begin() + long(a), pin.begin() + long(a + k));
  avals.insert(avals.end(), pin.begin() + long(a + k + tx), pin.end());
  std::vector<size_t> from = iota(0, a);
  append(from, iota(a + tx, k));
  append(from, iota(a, tx));
  append(from, iota(a + tx + k, tc));
  std::vector<size_t> sel = iota(0, k);
  append(sel, iota(k + m, tc));
  append(sel, iota(k, m));
  append(sel, iota(k + m + tc, ty));
  IRPtr new_body = rewire(*p.ir, avals, from, sel);
  std::vector<Atom> in{ctx.primal(0)};
  for (size_t i = 0; i < a; ++i) in.push_back(ctx.primal(1 + i));
  for (size_t i = 0; i < a; ++i)
    if (nzx[i]) in.push_back(*ctx.tangent(1 + i));
  for (size_t i = 0; i < k; ++i) in.push_back(ctx.primal(1 + a + i));
  for (size_t i = 0; i < k; ++i)
    if (nzc[i]) in.push_back(ctx.tangent_or_zero(1 + a + i));
  std::vector<Atom> o = ctx.b.emit(scan, scan_params(new_body, a + tx, scan_reverse(e.params)), std::move(in));
  // o: [c (k), tc, y (m), ty]
  for (size_t i = 0, j = k; i < k; ++i) {
    ctx.primal_out(i, o[i]);
    ctx.tangent_out(i, nzc[i] ? std::optional<Atom>(o[j++]) : std::nullopt);
  }
  for (size_t j = 0, q = k + tc + m; j < m; ++j) {
    ctx.primal_out(k + j, o[k + tc + j]);
    ctx.tangent_out(k + j, nz_y[j] ? std::optional<Atom>(o[q++]) : std::nullopt);
  }
}

void scan_pull_fwd(PullCtx& ctx, const Eqn& e) {
  static const Prim& scan = prim("scan");
  const IRPtr& body = loop_body(e.params);
  const size_t a = scan_n_xs(e.params), k = body->in.size() - a, m = body->out.size() - k;
  SplitIR s = pullback_forward(body);
  const size_t r = s.n_res;
  // s.fwd: [x, c] -> [c', y, R]; recording body: [x, c] -> [c' | y, c, R].
  std::vector<size_t> sel = iota(0, k + m);
  append(sel, iota(k + m + r + a, k));
  append(sel, iota(k + m, r));
  IRPtr rec = rewire(*s.fwd, in_avals(*s.fwd), iota(0, a + k), sel);
  std::vector<Atom> o = ctx.b.emit(scan, scan_params(rec, a, scan_reverse(e.params)), ctx.primals);
  for (size_t i = 0; i < k + m; ++i) ctx.forward_out(i, o[i]);
  ctx.residuals.assign(o.begin() + long(k + m), o.end());  // [traj_c (k), traj_R (r)]
}

void scan_pull_bwd(PullCtx& ctx, const Eqn& e) {
  static const Prim& scan = prim("scan");
  const IRPtr& body = loop_body(e.params);
  const size_t a = scan_n_xs(e.params), k = body->in.size() - a, m = body->out.size() - k;
  std::vector<bool> c(k), py(m);
  for (size_t i = 0; i < k; ++i) c[i] = ctx.cotangent(i).has_value();
  for (size_t j = 0; j < m; ++j) py[j] = ctx.cotangent(k + j).has_value();
  SplitIR s;
  for (;;) {
    std::vector<bool> nz_out = c;
    nz_out.insert(nz_out.end(), py.begin(), py.end());
    std::vector<bool> mat(a, false);
    mat.insert(mat.end(), c.begin(), c.end());
    s = pullback_split(body, nz_out, mat);
    bool grew = false;
    for (size_t i = 0; i < k; ++i)
      if (s.nz_in[a + i] && !c[i]) c[i] = grew = true;
    if (!grew) break;
  }
  const size_t r = s.n_res, nc = count(c), ny = count(py);
  std::vector<bool> nzx(s.nz_in.begin(), s.nz_in.begin() + long(a));
  const size_t nx = count(nzx);
  // s.bwd: [x (a), c_i (k), R_i (r), ct_c (nc), ct_y (ny)] -> [ct_x (nx), ct_c (nc)];
  // the scan body wants [x, c_i, R_i, ct_y_i | ct_c] -> [ct_c | ct_x_i].
  std::vector<Aval> bin = in_avals(*s.bwd);
  std::vector<Aval> avals(bin.begin(), bin.begin() + long(a + k + r));
  avals.insert(avals.end(), bin.begin() + long(a + k + r + nc), bin.end());
  avals.insert(avals.end(), bin.begin() + long(a + k + r), bin.begin() + long(a + k + r + nc));
  std::vector<size_t> from = iota(0, a + k + r);
  append(from, iota(a + k + r + ny, nc));
  append(from, iota(a + k + r, ny));
  std::vector<size_t> sel = iota(nx, nc);
  append(sel, iota(0, nx));
  IRPtr back = rewire(*s.bwd, avals, from, sel);
  std::vector<Atom> in{ctx.primal(0)};
  for (size_t i = 0; i < a; ++i) in.push_back(ctx.primal(1 + i));
  in.insert(in.end(), ctx.residuals.begin(), ctx.residuals.end());
  for (size_t j = 0; j < m; ++j)
    if (py[j]) in.push_back(*ctx.cotangent(k + j));
  for (size_t i = 0; i < k; ++i)
    if (c[i]) in.push_back(ctx.cotangent_or_zero(i));
  std::vector<Atom> o =
      ctx.b.emit(scan, scan_params(back, a + k + r + ny, !scan_reverse(e.params)), std::move(in));
  // o: [ct_c (nc), ct_xs (nx)]
  for (size_t i = 0, j = 0; i < k; ++i)
    if (c[i]) ctx.add_cotangent(1 + a + i, o[j++]);
  for (size_t i = 0, j = nc; i < a; ++i)
    if (nzx[i]) ctx.add_cotangent(1 + i, o[j++]);
}

// ---- length

void length_impl(const Eqn&, std::span<const Value> in, std::span<Value> out, RunEnv&) {
  out[0] = Value::integer(int64_t(in[0].size()));
}

AbstractOut length_abstract(const Params&, std::span<const Aval> in, const TreeDef&) {
  if (in.size() != 1 || in[0].list_depth == 0) invalid("length: takes one list");
  return AbstractOut{{Aval{Kind::Int, 0}}, TreeDef::leaf()};
}

// An int has no tangent or cotangent (as stop_gradient's).
void length_push(PushCtx& ctx, const Eqn&) {
  ctx.emit_primal();
  ctx.tangent_out(0, std::nullopt);
}

void length_pull_bwd(PullCtx&, const Eqn&) {}

// ---- dce: a loop keeps its whole carry; unread per-iteration outputs (ys)
// go, and so do the xs the remaining body no longer reads (scan).

void while_scan_dce(DceCtx& ctx, const Eqn& e) {
  const IRPtr& body = loop_body(e.params);
  const size_t k = e.in.size(), m = body->out.size() - k;
  std::vector<bool> keep(k + m, true);
  bool any_dropped = false;
  for (size_t j = 0; j < m; ++j)
    if (!ctx.used(k + j)) keep[k + j] = false, any_dropped = true;
  if (!any_dropped) return;
  DcedIR d = dce_flat(body, keep);
  Eqn n = e;
  n.params = while_scan_params(loop_cond(e.params), d.ir, loop_max_iters(e.params).as_int());
  n.out.clear();
  for (size_t i = 0; i < e.out.size(); ++i)
    if (i >= k + m || keep[i]) n.out.push_back(e.out[i]);
  n.out_tree = TreeDef::flat_list(n.out.size());
  ctx.replace(std::move(n));
}

void scan_dce(DceCtx& ctx, const Eqn& e) {
  const IRPtr& body = loop_body(e.params);
  const size_t a = scan_n_xs(e.params), k = body->in.size() - a, m = body->out.size() - k;
  std::vector<bool> keep(k + m, true);
  for (size_t j = 0; j < m; ++j) keep[k + j] = ctx.used(k + j);
  DcedIR d = dce_flat(body, keep);
  // Every carry input stays (the loop threads it), xs only if read.
  std::vector<bool> keep_in = d.used_in;
  for (size_t i = 0; i < k; ++i) keep_in[a + i] = true;
  size_t new_a = 0;
  Eqn n;
  n.prim = e.prim;
  n.in.push_back(e.in[0]);
  for (size_t i = 0; i < a + k; ++i)
    if (keep_in[i]) {
      n.in.push_back(e.in[1 + i]);
      if (i < a) ++new_a;
    }
  n.in_tree = TreeDef::flat_list(n.in.size());
  for (size_t i = 0; i < k + m; ++i)
    if (keep[i]) n.out.push_back(e.out[i]);
  n.out_tree = TreeDef::flat_list(n.out.size());
  n.params = scan_params(drop_inputs(d.ir, keep_in), new_a, scan_reverse(e.params));
  n.notes = e.notes;
  ctx.replace(std::move(n));
}

}  // namespace

void add_scan_prims(std::vector<Prim>& out) {
  out.push_back(Prim{
      .name = "while_scan",
      .cost = 0.0,
      .params = while_scan_param_specs(),
      .impl_async = while_scan_impl_async,
      .abstract_eval = while_scan_abstract,
      .batch = batch_by_map,
      .pushforward = while_scan_push,
      .pullback_fwd = while_scan_pull_fwd,
      .pullback_bwd = while_scan_pull_bwd,
      .dce = while_scan_dce,
  });
  out.push_back(Prim{
      .name = "scan",
      .cost = 0.0,
      .params = scan_param_specs(),
      .impl_async = scan_impl_async,
      .abstract_eval = scan_abstract,
      .batch = batch_by_map,
      .pushforward = scan_push,
      .pullback_fwd = scan_pull_fwd,
      .pullback_bwd = scan_pull_bwd,
      .dce = scan_dce,
  });
  out.push_back(Prim{
      .name = "length",
      .cost = 0.0,
      .params = {},
      .impl = length_impl,
      .abstract_eval = length_abstract,
      .batch = batch_by_map,
      .pushforward = length_push,
      .pullback_fwd = pull_fwd_copy,
      .pullback_bwd = length_pull_bwd,
      .dce = dce_whole,
  });
}

namespace {

// The values of v at the leaves of def (a leaf of def may hold a whole
// list: a list<T> input, or the list of one xs leaf's items).
void values_at(const Value& v, const TreeDef& def, const std::string& path, std::vector<Value>& out) {
  const TreeDef::Node& n = def.root();
  auto mismatch = [&] { invalid("scan: " + path + " does not have the structure the body takes: " + def.to_string()); };
  switch (n.type) {
    case TreeDef::NodeType::Leaf:
      out.push_back(v);
      return;
    case TreeDef::NodeType::Null:
      if (!v.is_null()) mismatch();
      return;
    case TreeDef::NodeType::List:
      if (v.kind() != Kind::List || v.size() != n.n_children) mismatch();
      for (uint32_t c = 0; c < n.n_children; ++c)
        values_at(v.items()[c], def.child(c), path + "[" + std::to_string(c) + "]", out);
      return;
    case TreeDef::NodeType::Dict:
      if (v.kind() != Kind::Dict || v.size() != n.n_children) mismatch();
      for (uint32_t c = 0; c < n.n_children; ++c) {
        const Value* item = v.find(n.keys[c]);
        if (!item) mismatch();
        values_at(*item, def.child(c), path + "[" + json_quoted(n.keys[c]) + "]", out);
      }
      return;
  }
}

}  // namespace

Value op_scan(const IRPtr& body, const Value& init, const Value& xs, bool reverse, RunEnv& env) {
  if (!body) invalid("scan: the body is required");
  if (body->num_inputs() != 2)
    invalid("scan: the body must take two inputs (the carry and one item of xs), it takes " +
            std::to_string(body->num_inputs()));
  const TreeDef in_def = body->in_tree, carry_def = in_def.child(0);
  std::vector<Value> carry, lists;
  values_at(init, carry_def, "init", carry);
  values_at(xs, in_def.child(1), "xs", lists);
  if (lists.empty()) invalid("scan: xs holds no list (give a list, or a tree whose leaves are lists of one length)");
  const size_t k = carry.size(), a = lists.size();
  const std::vector<Aval> bi = in_avals(*body), bo = out_avals(*body);
  for (size_t i = 0; i < k; ++i)
    if (!(aval_of(carry[i]) == bi[i]))
      invalid("scan: carry leaf " + std::to_string(i) + " is " + aval_name(aval_of(carry[i])) +
              ", the body takes " + aval_name(bi[i]));
  const TreeDef out_def = body->out_tree;
  auto is_empty = [](const Value& v) { return v.kind() == Kind::List && v.size() == 0; };
  if (std::all_of(lists.begin(), lists.end(), is_empty)) {  // no items: nothing runs, no kinds to check
    std::vector<Value> ys(out_def.num_leaves() - k, Value::list({}));
    return Value::list({init, out_def.child(1).unflatten(ys)});
  }
  for (size_t j = 0; j < a; ++j) {
    const Aval x = aval_of(lists[j]);
    if (x.list_depth == 0 && !is_empty(lists[j]))
      invalid("scan: xs leaf " + std::to_string(j) + " is " + aval_name(x) +
              ", not a list (xs is a list of items, or a tree whose leaves are such lists)");
    if (is_empty(lists[j])) continue;  // the run says it differs in length from the others
    if (x.list_depth == 0 || !(Aval{x.kind, uint8_t(x.list_depth - 1)} == bi[k + j]))
      invalid("scan: xs leaf " + std::to_string(j) + " is " + aval_name(x) + ", the body takes items " +
              aval_name(bi[k + j]) + " (xs leaves are lists of the items)");
  }
  if (out_def.root().type != TreeDef::NodeType::List || out_def.root().n_children != 2 ||
      !(out_def.child(0) == carry_def))
    invalid("scan: the body must return [next carry, y] with the carry's structure " + carry_def.to_string() +
            ", it returns " + out_def.to_string());
  for (size_t i = 0; i < k; ++i)
    if (!(bo[i] == bi[i]))
      invalid("scan: the body changes carry leaf " + std::to_string(i) + " from " + aval_name(bi[i]) + " to " +
              aval_name(bo[i]));
  // The primitive's body: [x..., carry...] -> [next carry..., y...], flat.
  std::vector<Aval> flat_in(bi.begin() + long(k), bi.end());
  flat_in.insert(flat_in.end(), bi.begin(), bi.begin() + long(k));
  std::vector<size_t> in_from(k + a), out_select(bo.size());
  for (size_t i = 0; i < k; ++i) in_from[i] = a + i;
  for (size_t j = 0; j < a; ++j) in_from[k + j] = j;
  for (size_t o = 0; o < bo.size(); ++o) out_select[o] = o;
  IRPtr flat = rewire(*body, flat_in, in_from, out_select);
  static const Prim& length = prim("length");
  static const Prim& scan = prim("scan");
  std::vector<Value> in{bind_flat(length, Params(), {lists[0]}, env)};
  in.insert(in.end(), lists.begin(), lists.end());
  in.insert(in.end(), carry.begin(), carry.end());
  Value out = bind_flat(scan, scan_params(std::move(flat), a, reverse), std::move(in), env);
  std::vector<Value> leaves = out.items();
  return Value::list({carry_def.unflatten(std::span<const Value>(leaves).first(k)),
                      out_def.child(1).unflatten(std::span<const Value>(leaves).subspan(k))});
}

}  // namespace af
