// The pipeline primitive (docs/SEMANTICS.md §4 batch):
//
//   pipeline[axes, body, chunk](inputs...) -> outputs    body(inputs...)
//
// It means its body, run on its inputs. What it adds is how a large batch
// runs: the body is a batched program whose every output is a list with one
// item per batch item, item by item in the inputs `axes` marks (the sliced
// form of batch's output, transforms/pipeline.h, wraps such a body), so it
// can run on consecutive slices of the batch as well as on the whole. On
// more than `chunk` items the body runs once per slice of about `chunk`
// items, every slice a sub-run of its own, all in flight together, and the
// outputs are put back together in item order. Each slice then goes from
// one LM stage to the next as soon as its own replies are in, instead of
// every stage waiting for the last reply of the whole batch: the stages
// overlap.
//
// The body runs whole (one sub-run) on `chunk` items or fewer, when it
// waits on nothing (no LM call, no host function: slicing would only add
// work), while a collect or inject scope is open (their checkpoint hits are
// ranked, and served, in program order, which slices would interleave) and
// while the run streams (pieces are reported per item of the equation that
// streams).
//
// Under a transform a pipeline is its body: batch maps it over the outer
// items, pushforward and pullback transform the body inline; dce drops the
// body's unread outputs and the inputs they alone read.
#include <algorithm>
#include <mutex>

#include "ir/registry.h"
#include "prims/batching.h"
#include "prims/builtins.h"
#include "rt/context.h"
#include "rt/scopes.h"
#include "transforms/batch.h"
#include "transforms/prim_params.h"
#include "transforms/pullback.h"
#include "transforms/pushforward.h"
#include "value/error.h"

namespace af {

namespace {

AbstractOut pipeline_abstract(const Params& params, std::span<const Aval> in, const TreeDef&) {
  const IRPtr& body = map_body(params);
  const Value& axes = map_axes(params);
  if (axes.kind() != Kind::List || axes.size() != in.size() || body->in.size() != in.size())
    invalid("pipeline: the body takes " + std::to_string(body->in.size()) + " input(s), axes has " +
            std::to_string(axes.size()) + ", the equation has " + std::to_string(in.size()));
  if (pipeline_chunk(params) < 1) invalid("pipeline: chunk must be at least 1 item");
  const std::vector<Aval> body_in = in_avals(*body);
  bool any = false;
  for (size_t k = 0; k < in.size(); ++k) {
    if (axes.items()[k].kind() != Kind::Bool) invalid("pipeline: axes must hold bools");
    const bool batched = axes.items()[k].as_bool();
    if (!(in[k] == body_in[k]))
      invalid("pipeline: input " + std::to_string(k) + " is " + aval_name(in[k]) + ", the body takes " +
              aval_name(body_in[k]));
    if (batched && in[k].list_depth == 0)
      invalid("pipeline: batched input " + std::to_string(k) + " is " + aval_name(in[k]) + ", not a list of items");
    any = any || batched;
  }
  if (!any) invalid("pipeline: no input is batched");
  AbstractOut out{out_avals(*body), body->out_tree};
  for (size_t k = 0; k < out.out.size(); ++k)
    if (out.out[k].list_depth == 0)
      invalid("pipeline: output " + std::to_string(k) + " is " + aval_name(out.out[k]) +
              ", not a list of items (every output of the body holds one item per batch item)");
  return out;
}

// The slices' outputs, concatenated in item order; op succeeds, or fails if
// a slice did not return one item per item of its slice.
void join_slices(AsyncOp& op, std::vector<std::vector<Value>>& rows, const std::vector<size_t>& from,
                 size_t n, size_t n_out) {
  std::vector<Value> out(n_out);
  for (size_t o = 0; o < n_out; ++o) {
    std::vector<Value> items;
    items.reserve(n);
    for (size_t j = 0; j < rows.size(); ++j) {
      const Value& part = rows[j][o];
      const size_t want = from[j + 1] - from[j];
      if (part.kind() != Kind::List || part.size() != want) {
        op.fail(Error(Code::InvalidArgument,
                      "pipeline: the body's output " + std::to_string(o) + " on items " + std::to_string(from[j]) +
                          ".." + std::to_string(from[j + 1] - 1) + " is not a list of " + std::to_string(want) +
                          " items: a pipeline's body must return one item per batch item"));
        return;
      }
      items.insert(items.end(), part.items().begin(), part.items().end());
    }
    out[o] = Value::list(std::move(items));
  }
  op.succeed(std::move(out));
}

void pipeline_impl_async(const Eqn& e, std::span<const Value> in, std::shared_ptr<AsyncOp> op, RunEnv& env) {
  if (!env.context) fail(Code::Internal, "pipeline: no context to run the body");
  const IRPtr& body = map_body(e.params);
  const std::vector<bool> axes = bools(map_axes(e.params));
  const auto chunk = size_t(std::max<int64_t>(1, pipeline_chunk(e.params)));
  const size_t n = batch_length("pipeline", in, axes), n_out = e.out.size();
  const RunScopes* scopes = scopes_of(env);
  const bool whole = n <= chunk || op->streaming() || (scopes && scopes->any_checkpoint_scope()) ||
                     !env.context->runs_async(body, env);
  if (whole) {
    auto done = [op](std::vector<Value>* out, const Error* err) {
      if (err) op->fail(*err);
      else op->succeed(std::move(*out));
    };
    std::shared_ptr<SubRun> run = env.context->run_sub(body, in, env, op, 0, std::move(done), -1);
    if (run) op->on_cancel([run] { run->cancel(); });
    return;
  }
  // As many slices as `chunk` makes, of equal sizes.
  const size_t k = (n + chunk - 1) / chunk;
  struct Join : SubRunSet {
    explicit Join(size_t k) : SubRunSet(k), from(k + 1), rows(k) {}
    std::vector<size_t> from;              // slice j: items [from[j], from[j + 1])
    std::vector<std::vector<Value>> rows;  // per slice, its flat outputs
  };
  auto join = std::make_shared<Join>(k);
  for (size_t j = 0; j <= k; ++j) join->from[j] = n * j / k;
  const std::vector<size_t>& from = join->from;
  auto cancel_all = [join] { join->cancel_all(); };
  op->on_cancel(cancel_all);
  RunEnv slice_env = env;
  slice_env.owned_in = {};
  std::vector<Value> slice(in.size());
  for (size_t j = 0; j < k && !op->finished(); ++j) {
    for (size_t i = 0; i < in.size(); ++i) {
      if (!axes[i]) {
        slice[i] = in[i];
        continue;
      }
      const std::vector<Value>& items = in[i].items();
      slice[i] = Value::list(
          std::vector<Value>(items.begin() + ptrdiff_t(from[j]), items.begin() + ptrdiff_t(from[j + 1])));
    }
    slice_env.batch_base = env.batch_base + from[j];
    auto done = [op, join, j, n, n_out, cancel_all](std::vector<Value>* out, const Error* err) {
      if (err) {
        if (op->fail(*err)) cancel_all();
        return;
      }
      std::lock_guard<std::mutex> lock(join->mu);
      join->rows[j] = std::move(*out);
      if (join->finish_one_locked()) join_slices(*op, join->rows, join->from, n, n_out);
    };
    join->track(env.context->run_sub(body, slice, slice_env, op, j, std::move(done), -1));
  }
}

void pipeline_push(PushCtx& ctx, const Eqn& e) {
  std::vector<bool> nz(ctx.n_in());
  std::vector<Atom> in = ctx.primals;
  for (size_t k = 0; k < ctx.n_in(); ++k)
    if ((nz[k] = ctx.tangent(k).has_value())) in.push_back(*ctx.tangent(k));
  PushedIR p = pushforward_flat(map_body(e.params), nz, {});
  std::vector<Atom> o = inline_into(ctx.b, *p.ir, in);
  const size_t n_out = e.out.size();
  for (size_t k = 0, j = n_out; k < n_out; ++k) {
    ctx.primal_out(k, o[k]);
    ctx.tangent_out(k, p.nz_out[k] ? std::optional<Atom>(o[j++]) : std::nullopt);
  }
}

void pipeline_pull_fwd(PullCtx& ctx, const Eqn& e) {
  SplitIR s = pullback_forward(map_body(e.params));
  std::vector<Atom> o = inline_into(ctx.b, *s.fwd, ctx.primals);
  for (size_t k = 0; k < e.out.size(); ++k) ctx.forward_out(k, o[k]);
  ctx.residuals.assign(o.begin() + ptrdiff_t(e.out.size()), o.end());
}

void pipeline_pull_bwd(PullCtx& ctx, const Eqn& e) {
  std::vector<bool> nz(e.out.size());
  for (size_t k = 0; k < e.out.size(); ++k) nz[k] = ctx.cotangent(k).has_value();
  SplitIR s = pullback_split(map_body(e.params), nz, {});
  if (std::none_of(s.nz_in.begin(), s.nz_in.end(), [](bool x) { return x; }) && !has_effects(*s.bwd)) return;
  std::vector<Atom> in = ctx.primals;
  in.insert(in.end(), ctx.residuals.begin(), ctx.residuals.end());
  for (size_t k = 0; k < e.out.size(); ++k)
    if (nz[k]) in.push_back(*ctx.cotangent(k));
  std::vector<Atom> o = inline_into(ctx.b, *s.bwd, in);
  for (size_t k = 0, j = 0; k < e.in.size(); ++k)
    if (s.nz_in[k]) ctx.add_cotangent(k, o[j++]);
}

}  // namespace

void add_pipeline_prims(std::vector<Prim>& out) {
  out.push_back(Prim{
      .name = "pipeline",
      .cost = 0.0,
      .params = pipeline_param_specs(),
      .impl_async = pipeline_impl_async,
      .abstract_eval = pipeline_abstract,
      .batch = batch_by_map,
      .pushforward = pipeline_push,
      .pullback_fwd = pipeline_pull_fwd,
      .pullback_bwd = pipeline_pull_bwd,
      .dce = dce_axes_body,
  });
}

}  // namespace af
