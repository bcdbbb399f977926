// The primitives the batch transform emits (docs/SEMANTICS.md §4 batch):
//
//   map[axes, body](inputs...) -> outputs     the body once per batch item:
//       input k is a list of per-item values when axes[k], else shared by
//       every item; each output is the list of the body's per-item outputs.
//       On the dataflow executor, a body that makes LM calls runs every
//       item at once (map_impl_async); a body that is one switch with a
//       batched key runs each branch once on the items that take it, in
//       the batched form compile derived for it (map_forms,
//       map_switch_by_branch).
//   batch_check[paths](lists...) -> lists      the batch's entry check: every
//       batched input holds the same, non-zero number of items.
//   broadcast(x, like) -> list                x once per item of `like`.
//
// Each has all of its rules here; map's push / pull / dce recurse into the
// body (pushforward_flat, pullback_split, dce_flat), so a batched program
// is itself transformable.
#include "prims/batching.h"

#include <algorithm>
#include <mutex>

#include "ir/effects.h"
#include "ir/registry.h"
#include "prims/builtins.h"
#include "prims/control_flow.h"
#include "prims/pass_loop.h"
#include "rt/context.h"
#include "value/error_value.h"
#include "rt/scopes.h"
#include "transforms/batch.h"
#include "transforms/dce.h"
#include "transforms/prim_params.h"
#include "transforms/pullback.h"
#include "transforms/pushforward.h"
#include "value/error.h"

namespace af {

std::vector<bool> bools(const Value& list) {
  std::vector<bool> out;
  out.reserve(list.size());
  for (const Value& v : list.items()) out.push_back(v.as_bool());
  return out;
}

size_t batch_length(const char* prim, std::span<const Value> in, const std::vector<bool>& axes) {
  size_t n = SIZE_MAX, first = 0;
  for (size_t k = 0; k < in.size(); ++k) {
    if (!axes[k]) continue;
    if (in[k].kind() != Kind::List)
      invalid(std::string(prim) + ": batched input " + std::to_string(k) + " is " + kind_name(in[k].kind()) +
              ", not a list of items");
    if (n == SIZE_MAX) {
      n = in[k].size();
      first = k;
    } else if (in[k].size() != n) {
      invalid(std::string(prim) + ": batched inputs have different lengths: input " + std::to_string(first) +
              " has " + std::to_string(n) + " items, input " + std::to_string(k) + " has " +
              std::to_string(in[k].size()));
    }
  }
  return n == SIZE_MAX ? 0 : n;
}

void SubRunSet::track(std::shared_ptr<SubRun> run) {
  if (!run) return;
  std::lock_guard<std::mutex> lock(mu);
  if (left_ != 0) runs_.push_back(std::move(run));
}

bool SubRunSet::finish_one_locked() {
  if (--left_ != 0) return false;
  runs_.clear();  // the runs are done; drop the references
  return true;
}

void SubRunSet::cancel_all() {
  std::vector<std::shared_ptr<SubRun>> runs;
  {
    std::lock_guard<std::mutex> lock(mu);
    runs = runs_;
  }
  for (const auto& r : runs) r->cancel();
}

void dce_axes_body(DceCtx& ctx, const Eqn& e) {
  const std::vector<bool> axes = bools(map_axes(e.params));
  DcedIR d = dce_flat(map_body(e.params), ctx.out_used);
  Eqn k;
  k.prim = e.prim;
  std::vector<Value> new_axes;
  for (size_t i = 0; i < e.in.size(); ++i)
    if (d.used_in[i]) {
      k.in.push_back(e.in[i]);
      new_axes.push_back(Value::boolean(axes[i]));
    }
  if (std::none_of(new_axes.begin(), new_axes.end(), [](const Value& v) { return v.as_bool(); })) return;
  k.in_tree = TreeDef::flat_list(k.in.size());
  for (size_t o = 0; o < e.out.size(); ++o)
    if (ctx.out_used[o]) k.out.push_back(e.out[o]);
  k.out_tree = TreeDef::flat_list(k.out.size());
  k.params = with_axes_and_body(e.params, Value::list(std::move(new_axes)), drop_inputs(d.ir, d.used_in));
  k.notes = e.notes;
  ctx.replace(std::move(k));
}

namespace {

Aval up(Aval a) { return Aval{a.kind, uint8_t(a.list_depth + 1)}; }

// ---- map

AbstractOut map_abstract(const Params& params, std::span<const Aval> in, const TreeDef&) {
  const IRPtr& body = map_body(params);
  const Value& axes = map_axes(params);
  if (axes.kind() != Kind::List || axes.size() != in.size() || body->in.size() != in.size())
    invalid("map: the body takes " + std::to_string(body->in.size()) + " input(s), axes has " +
            std::to_string(axes.size()) + ", the equation has " + std::to_string(in.size()));
  std::vector<Aval> body_in = in_avals(*body);
  bool any = false;
  for (size_t k = 0; k < in.size(); ++k) {
    if (axes.items()[k].kind() != Kind::Bool) invalid("map: axes must hold bools");
    bool batched = axes.items()[k].as_bool();
    any = any || batched;
    Aval want = batched ? up(body_in[k]) : body_in[k];
    if (!(in[k] == want))
      invalid("map: input " + std::to_string(k) + " is " + aval_name(in[k]) + ", expected " + aval_name(want));
  }
  if (!any) invalid("map: no input is batched");
  AbstractOut out;
  for (const Aval& a : out_avals(*body)) out.out.push_back(up(a));
  out.out_tree = body->out_tree;
  return out;
}

// Per-item errors (RunEnv::item_errors). The error value an earlier map left
// in one of item i's batched inputs, if any: the item is not run and passes
// it on.
const Value* failed_input(std::span<const Value> in, const std::vector<bool>& axes, size_t i) {
  for (size_t k = 0; k < in.size(); ++k)
    if (axes[k] && is_error_value(in[k].items()[i])) return &in[k].items()[i];
  return nullptr;
}
bool fails_item(bool item_errors, const Error& err) { return item_errors && is_item_failure(err); }

// A body of one synchronous equation with no sub-IR (what batch_by_map
// makes of format, concat, ...): applied directly per item, on this thread,
// with no sub-run. The hot path of batched string programs.
bool applies_directly(const IR& body) {
  if (body.eqns.size() != 1) return false;
  const Eqn& e = body.eqns[0];
  return e.prim->impl && !e.prim->impl_async && !e.params.any_ir([](const IR&) { return true; });
}

// Every item's flat outputs -> the output lists, then op succeeds.
void succeed_with_columns(AsyncOp& op, std::vector<std::vector<Value>>& rows, size_t n_out) {
  std::vector<Value> cols(n_out);
  for (size_t o = 0; o < n_out; ++o) {
    std::vector<Value> col;
    col.reserve(rows.size());
    for (auto& r : rows) col.push_back(std::move(r[o]));
    cols[o] = Value::list(std::move(col));
  }
  op.succeed(std::move(cols));
}

void map_directly(const Eqn& e, std::span<const Value> in, const std::vector<bool>& axes, size_t n,
                  AsyncOp& op, RunEnv& env) {
  const IR& body = *map_body(e.params);
  const Eqn& be = body.eqns[0];
  // Where each input of the equation comes from: body input k (>= 0) or
  // its own literal (-1).
  std::vector<int64_t> src_of_var(body.vars.size(), -1);
  for (size_t k = 0; k < body.in.size(); ++k)
    if (body.in[k].is_var()) src_of_var[body.in[k].var] = int64_t(k);
  std::vector<int64_t> arg_src(be.in.size());
  std::vector<Value> args(be.in.size());
  for (size_t j = 0; j < be.in.size(); ++j) {
    arg_src[j] = be.in[j].is_var() ? src_of_var[be.in[j].var] : -1;
    if (arg_src[j] < 0) args[j] = be.in[j].lit;
  }
  // Where each body output comes from: output j of the equation (>= 0),
  // body input (-2 - k), or a literal (-1).
  std::vector<int64_t> out_src(body.out.size());
  for (size_t o = 0; o < body.out.size(); ++o) {
    const Atom& a = body.out[o];
    out_src[o] = -1;
    if (!a.is_var()) continue;
    for (size_t j = 0; j < be.out.size(); ++j)
      if (be.out[j] == a.var) out_src[o] = int64_t(j);
    if (out_src[o] < 0 && src_of_var[a.var] >= 0) out_src[o] = -2 - src_of_var[a.var];
  }
  std::vector<std::vector<Value>> cols(body.out.size());
  for (auto& c : cols) c.reserve(n);
  std::vector<Value> res(be.out.size());
  // A checkpoint in the body is hit once per item, at the item's place in
  // program order (rt/scopes.h sub_rank).
  const RunScopes* scopes = scopes_of(env);
  const bool ranked = scopes && scopes->any_checkpoint_scope();
  RunEnv item_env;
  if (ranked) {
    item_env = env;
    item_env.owned_in = {};
    item_env.eqn = 0;
  }
  for (size_t i = 0; i < n; ++i) {
    env.check_stop();
    const Value* failed = env.item_errors ? failed_input(in, axes, i) : nullptr;
    if (failed) {
      for (auto& c : cols) c.push_back(*failed);
      continue;
    }
    for (size_t j = 0; j < args.size(); ++j) {
      int64_t k = arg_src[j];
      if (k >= 0) args[j] = axes[size_t(k)] ? in[size_t(k)].items()[i] : in[size_t(k)];
    }
    try {
      if (ranked) item_env.rank = sub_rank(env, i);
      invoke(be, args, res, ranked ? item_env : env);
    } catch (const Error& err) {
      if (!fails_item(env.item_errors, err)) throw;
      for (auto& c : cols) c.push_back(error_value(err));
      continue;
    }
    for (size_t o = 0; o < cols.size(); ++o) {
      int64_t s = out_src[o];
      if (s >= 0) {
        cols[o].push_back(res[size_t(s)]);  // copied: an output may be listed twice
      } else if (s == -1) {
        cols[o].push_back(body.out[o].lit);
      } else {
        size_t k = size_t(-2 - s);
        cols[o].push_back(axes[k] ? in[k].items()[i] : in[k]);
      }
    }
  }
  std::vector<Value> out(cols.size());
  for (size_t o = 0; o < cols.size(); ++o) out[o] = Value::list(std::move(cols[o]));
  op.succeed(std::move(out));
}

// ---- a batched switch, branch by branch

// Whether an equation must run once per item: it has effects, is sampled
// (an LM call) or observable, or holds a sub-IR with such an equation.
bool runs_per_item(const Eqn& e) {
  if (eqn_flags(e) & (kEffectful | kNondeterministic | kObservable | kNoMerge)) return true;
  return e.params.any_ir(
      [](const IR& ir) { return std::any_of(ir.eqns.begin(), ir.eqns.end(), runs_per_item); });
}

// Whether running `branch` batched over its items (inputs batched as `axes`
// says) does what running it once per item does: batch copies an equation
// with no batched input, which then runs once for all the items, so every
// equation that must run per item has to depend on a batched input.
bool batches_exactly(const IR& branch, const std::vector<bool>& axes) {
  std::vector<bool> batched(branch.vars.size(), false);
  for (size_t k = 0; k < branch.in.size(); ++k)
    if (axes[k] && branch.in[k].is_var()) batched[branch.in[k].var] = true;
  for (const Eqn& e : branch.eqns) {
    bool b = std::any_of(e.in.begin(), e.in.end(),
                         [&](const Atom& a) { return a.is_var() && batched[a.var]; });
    if (b) {
      for (VarId v : e.out) batched[v] = true;
    } else if (runs_per_item(e)) {
      return false;
    }
  }
  return true;
}

// What compile derives for a map whose body is one switch with a batched key
// (what batch makes of a switch whose key is batched): every branch batched
// over the items that take it, so that each branch taken runs once for its
// items (map_switch_by_branch).
struct SwitchForms final : Forms {
  std::vector<int64_t> src;      // switch input j: body input src[j] (>= 0), else its own literal
  std::vector<bool> op_axes;     // per switch operand: batched
  std::vector<const IR*> branch; // per branch, beside irs: irs[k] null = runs item by item
  std::vector<std::vector<bool>> out_batched;  // per branch: which outputs are per-item lists
};

// map's forms rule. A branch whose batched form would not do what running it
// per item does (batches_exactly), or that batch refuses, has none: when an
// item takes it, the map runs item by item.
std::shared_ptr<const Forms> map_forms(const Eqn& e) {
  static const Prim& sw = prim("switch");
  const IR& body = *map_body(e.params);
  if (body.eqns.size() != 1 || body.eqns[0].prim != &sw) return nullptr;
  const Eqn& s = body.eqns[0];
  if (body.out.size() != s.out.size()) return nullptr;
  for (size_t o = 0; o < s.out.size(); ++o)
    if (!body.out[o].is_var() || body.out[o].var != s.out[o]) return nullptr;
  const std::vector<bool> axes = bools(map_axes(e.params));
  auto f = std::make_shared<SwitchForms>();
  f->src.assign(s.in.size(), -1);
  for (size_t j = 0; j < s.in.size(); ++j)
    for (size_t k = 0; k < body.in.size() && s.in[j].is_var(); ++k)
      if (body.in[k].is_var() && body.in[k].var == s.in[j].var) f->src[j] = int64_t(k);
  if (f->src[0] < 0 || !axes[size_t(f->src[0])]) return nullptr;  // the key is not batched
  const size_t m = s.in.size() - 1;
  f->op_axes.resize(m);
  for (size_t j = 0; j < m; ++j) f->op_axes[j] = f->src[j + 1] >= 0 && axes[size_t(f->src[j + 1])];
  for (const auto& [name, branch] : switch_branches(s.params)) {
    f->branch.push_back(branch.get());
    BatchedIR b;
    if (batches_exactly(*branch, f->op_axes)) {
      try {
        b = batch_flat(branch, f->op_axes, {});
      } catch (const Error&) {
        b = BatchedIR{};  // runs item by item, where the error (if any) is the item's
      }
    }
    f->irs.push_back(std::move(b.ir));
    f->out_batched.push_back(std::move(b.out_batched));
  }
  return f;
}

// A map with switch forms (map_forms), run branch by branch. Rather than a
// sub-run per item, the items are grouped by key and each branch taken runs
// its batched form once over its items (one sub-run whose LM calls are
// batched calls); the results are put back in item order. Items that fail
// before running (an unknown key, an error value under per-item errors) get
// their error as the per-item path would. Returns false, having started
// nothing, when the map has no such forms or a branch taken has none.
bool map_switch_by_branch(const Eqn& e, std::span<const Value> in, const std::vector<bool>& axes,
                          size_t n, const std::shared_ptr<AsyncOp>& op, RunEnv& env) {
  if (n == 0 || !env.context) return false;
  const auto* f = dynamic_cast<const SwitchForms*>(env.context->forms(e, env));
  if (!f) return false;
  const Eqn& s = map_body(e.params)->eqns[0];
  const size_t n_out = e.out.size(), m = s.in.size() - 1;
  const std::vector<int64_t>& src = f->src;
  const std::vector<bool>& op_axes = f->op_axes;

  // Group the items by branch.
  struct Group {
    size_t branch = 0;  // index into f's forms
    std::shared_ptr<std::vector<uint32_t>> items = std::make_shared<std::vector<uint32_t>>();
  };
  std::vector<Group> groups;
  std::vector<std::vector<Value>> cols(n_out, std::vector<Value>(n));
  const Value& keys = in[size_t(src[0])];
  for (size_t i = 0; i < n; ++i) {
    env.check_stop();
    if (const Value* failed = env.item_errors ? failed_input(in, axes, i) : nullptr) {
      for (auto& c : cols) c[i] = *failed;
      continue;
    }
    size_t branch;
    try {
      const IR* taken = switch_branch(s.params, keys.items()[i].as_str()).get();
      branch = size_t(std::find(f->branch.begin(), f->branch.end(), taken) - f->branch.begin());
    } catch (const Error& err) {
      if (!fails_item(env.item_errors, err)) throw;
      for (auto& c : cols) c[i] = error_value(err);
      continue;
    }
    auto g = std::find_if(groups.begin(), groups.end(), [&](const Group& x) { return x.branch == branch; });
    if (g == groups.end()) {
      if (!f->irs[branch]) return false;  // a branch taken runs item by item
      g = groups.emplace(groups.end());
      g->branch = branch;
    }
    g->items->push_back(uint32_t(i));
  }

  struct Join : SubRunSet {
    using SubRunSet::SubRunSet;
    std::vector<std::vector<Value>> cols;
  };
  auto join = std::make_shared<Join>(groups.size());
  join->cols = std::move(cols);
  if (groups.empty()) {
    std::vector<Value> out;
    for (auto& c : join->cols) out.push_back(Value::list(std::move(c)));
    op->succeed(std::move(out));
    return true;
  }
  auto cancel_all = [join] { join->cancel_all(); };
  op->on_cancel(cancel_all);
  const bool item_errors = env.item_errors;
  for (Group& g : groups) {
    if (op->finished()) break;
    const std::vector<uint32_t>& items = *g.items;
    std::vector<Value> sub(m);
    for (size_t j = 0; j < m; ++j) {
      if (src[j + 1] < 0) {
        sub[j] = s.in[j + 1].lit;
      } else if (!op_axes[j]) {
        sub[j] = in[size_t(src[j + 1])];
      } else {
        const std::vector<Value>& all = in[size_t(src[j + 1])].items();
        std::vector<Value> picked;
        picked.reserve(items.size());
        for (uint32_t i : items) picked.push_back(all[i]);
        sub[j] = Value::list(std::move(picked));
      }
    }
    auto done = [op, join, items = g.items, out_batched = f->out_batched[g.branch], n_out, item_errors,
                 cancel_all](std::vector<Value>* out, const Error* err) {
      std::unique_lock<std::mutex> lock(join->mu);
      if (err && !(fails_item(item_errors, *err) && !op->finished())) {
        lock.unlock();
        if (op->fail(*err)) cancel_all();
        return;
      }
      for (size_t o = 0; o < n_out && !err; ++o)
        if (out_batched[o] &&
            ((*out)[o].kind() != Kind::List || (*out)[o].size() != items->size())) {
          lock.unlock();
          op->fail(Error(Code::Internal, "map: a batched branch returned " +
                                             std::to_string((*out)[o].size()) + " items for " +
                                             std::to_string(items->size())));
          return cancel_all();
        }
      for (size_t o = 0; o < n_out; ++o) {
        for (size_t p = 0; p < items->size(); ++p) {
          Value& cell = join->cols[o][(*items)[p]];
          if (err)
            cell = error_value(*err);
          else if (!out_batched[o])
            cell = (*out)[o];  // the same for each item of the branch
          else
            cell = (*out)[o].items()[p];
        }
      }
      if (!join->finish_one_locked()) return;
      std::vector<Value> cols;
      for (auto& c : join->cols) cols.push_back(Value::list(std::move(c)));
      lock.unlock();
      op->succeed(std::move(cols));
    };
    // Index: the group's place (no checkpoint scope is open here, so no hit
    // is ranked by it).
    const uint64_t index = uint64_t(&g - groups.data());
    join->track(env.context->run_sub(f->irs[g.branch], sub, env, op, index, std::move(done), -1));
  }
  return true;
}

// Items one at a time, in order (prims/pass_loop.h): the map of a body that
// hits a key an inject scope queues values for, so that the queued values
// reach the items in item order (docs/SEMANTICS.md §4 inject).
class MapInOrder final : public PassLoop {
 public:
  MapInOrder(const Eqn& e, std::span<const Value> in, std::vector<bool> axes, size_t n,
             std::shared_ptr<AsyncOp> op, const RunEnv& env)
      : PassLoop(std::move(op), env),
        body_(map_body(e.params)),
        in_(in.begin(), in.end()),
        axes_(std::move(axes)),
        n_(n),
        n_out_(e.out.size()),
        item_errors_(env.item_errors) {}

 private:
  bool next(IRPtr& ir, std::vector<Value>& item) override {
    while (rows_.size() < n_) {
      const size_t i = rows_.size();
      if (const Value* failed = item_errors_ ? failed_input(in_, axes_, i) : nullptr) {
        rows_.emplace_back(n_out_, *failed);
        continue;
      }
      item.resize(in_.size());
      for (size_t k = 0; k < in_.size(); ++k) item[k] = axes_[k] ? in_[k].items()[i] : in_[k];
      ir = body_;
      return true;
    }
    succeed_with_columns(*op_, rows_, n_out_);
    return false;
  }
  void pass_done(std::vector<Value> out) override { rows_.push_back(std::move(out)); }
  bool pass_failed(const Error& err) override {
    if (!fails_item(item_errors_, err)) return false;
    rows_.emplace_back(n_out_, error_value(err));
    return true;
  }

  IRPtr body_;
  std::vector<Value> in_;
  std::vector<bool> axes_;
  size_t n_, n_out_;
  bool item_errors_;
  std::vector<std::vector<Value>> rows_;  // per item run so far, its flat outputs
};

// The one implementation: every item is a sub-run of the body (rt/context.h
// run_sub), started at once — inline, one after another, when the body makes
// no async work; on the scheduler otherwise, all items in flight together
// (their calls queue under the providers' limits) while the equation holds
// no thread. The first failing item fails the equation and cancels the
// others, unless per-item errors are on: then it becomes its error value and
// the others go on.
void map_impl_async(const Eqn& e, std::span<const Value> in, std::shared_ptr<AsyncOp> op, RunEnv& env) {
  const IRPtr& body = map_body(e.params);
  const std::vector<bool> axes = bools(map_axes(e.params));
  const size_t n = batch_length("map", in, axes), n_out = e.out.size();
  if (applies_directly(*body)) return map_directly(e, in, axes, n, *op, env);
  const RunScopes* scopes = scopes_of(env);
  // Branch by branch only while no collect or inject scope is open (their
  // checkpoint hits are ranked, and served, in item order) and the run does
  // not stream (pieces are reported per item of this map).
  if (!(scopes && scopes->any_checkpoint_scope()) && !op->streaming() &&
      map_switch_by_branch(e, in, axes, n, op, env))
    return;
  if (!env.context) fail(Code::Internal, "map: no context to run the body");
  if (scopes && scopes->injected().hit_by(*body))
    return std::make_shared<MapInOrder>(e, in, axes, n, std::move(op), env)->start();
  struct Join : SubRunSet {
    explicit Join(size_t n) : SubRunSet(n), rows(n) {}
    std::vector<std::vector<Value>> rows;  // per item, its flat outputs
  };
  auto join = std::make_shared<Join>(n);
  auto cancel_all = [join] { join->cancel_all(); };
  if (n == 0) {
    op->succeed(std::vector<Value>(n_out, Value::list(std::vector<Value>{})));
    return;
  }
  op->on_cancel(cancel_all);
  // Item i's flat outputs; the last item assembles the output lists.
  auto finish = [op, join, n_out](size_t i, std::vector<Value> row) {
    std::lock_guard<std::mutex> lock(join->mu);
    join->rows[i] = std::move(row);
    if (join->finish_one_locked()) succeed_with_columns(*op, join->rows, n_out);
  };
  std::vector<Value> item(in.size());
  for (size_t i = 0; i < n && !op->finished(); ++i) {
    env.check_stop();
    if (const Value* failed = env.item_errors ? failed_input(in, axes, i) : nullptr) {
      finish(i, std::vector<Value>(n_out, *failed));
      continue;
    }
    for (size_t k = 0; k < in.size(); ++k) item[k] = axes[k] ? in[k].items()[i] : in[k];
    const bool item_errors = env.item_errors;
    auto done = [op, i, n_out, cancel_all, finish, item_errors](std::vector<Value>* out, const Error* err) {
      if (err && fails_item(item_errors, *err) && !op->finished())
        return finish(i, std::vector<Value>(n_out, error_value(*err)));
      if (err) {
        if (op->fail(*err)) cancel_all();
        return;
      }
      finish(i, std::move(*out));
    };
    join->track(env.context->run_sub(body, item, env, op, i, std::move(done), int64_t(i)));
  }
}

void map_push(PushCtx& ctx, const Eqn& e) {
  static const Prim& map = prim("map");
  const std::vector<bool> axes = bools(map_axes(e.params));
  std::vector<bool> nz(ctx.n_in());
  for (size_t k = 0; k < ctx.n_in(); ++k) nz[k] = ctx.tangent(k).has_value();
  PushedIR p = pushforward_flat(map_body(e.params), nz, {});
  std::vector<Atom> in = ctx.primals;
  std::vector<Value> new_axes;
  for (bool a : axes) new_axes.push_back(Value::boolean(a));
  for (size_t k = 0; k < ctx.n_in(); ++k)
    if (nz[k]) {
      in.push_back(*ctx.tangent(k));
      new_axes.push_back(Value::boolean(axes[k]));
    }
  std::vector<Atom> o = ctx.b.emit(map, map_params(Value::list(std::move(new_axes)), p.ir), std::move(in));
  const size_t n_out = e.out.size();
  size_t j = n_out;
  for (size_t k = 0; k < n_out; ++k) {
    ctx.primal_out(k, o[k]);
    ctx.tangent_out(k, p.nz_out[k] ? std::optional<Atom>(o[j++]) : std::nullopt);
  }
}

void map_pull_fwd(PullCtx& ctx, const Eqn& e) {
  static const Prim& map = prim("map");
  SplitIR s = pullback_forward(map_body(e.params));
  std::vector<Atom> o = ctx.b.emit(map, map_params(map_axes(e.params), s.fwd), ctx.primals);
  for (size_t k = 0; k < e.out.size(); ++k) ctx.forward_out(k, o[k]);
  ctx.residuals.assign(o.begin() + long(e.out.size()), o.end());
}

// True (and `out` set) when body has no equation and every output is a
// batched input: mapping it would only copy lists.
bool passes_through(const IR& body, const std::vector<Atom>& in, const std::vector<Value>& axes,
                    std::vector<Atom>& out) {
  if (!body.eqns.empty()) return false;
  for (const Atom& o : body.out) {
    if (!o.is_var()) return false;
    size_t k = 0;
    while (k < body.in.size() && !(body.in[k].is_var() && body.in[k].var == o.var)) ++k;
    if (k == body.in.size() || !axes[k].as_bool()) return false;
    out.push_back(in[k]);
  }
  return true;
}

void map_pull_bwd(PullCtx& ctx, const Eqn& e) {
  static const Prim& map = prim("map");
  static const Prim& accumulate_items = prim("accumulate_items");
  const std::vector<bool> axes = bools(map_axes(e.params));
  std::vector<bool> nz(e.out.size());
  for (size_t k = 0; k < e.out.size(); ++k) nz[k] = ctx.cotangent(k).has_value();
  SplitIR s = pullback_split(map_body(e.params), nz, {});
  if (std::none_of(s.nz_in.begin(), s.nz_in.end(), [](bool x) { return x; })) return;
  std::vector<Atom> in = ctx.primals;
  std::vector<Value> new_axes;
  for (bool a : axes) new_axes.push_back(Value::boolean(a));
  for (const Atom& r : ctx.residuals) {
    in.push_back(r);
    new_axes.push_back(Value::boolean(true));
  }
  for (size_t k = 0; k < e.out.size(); ++k)
    if (nz[k]) {
      in.push_back(*ctx.cotangent(k));
      new_axes.push_back(Value::boolean(true));
    }
  std::vector<Atom> o;
  if (std::vector<Atom> direct; passes_through(*s.bwd, in, new_axes, direct)) {
    // The backward body only routes batched inputs to outputs: no map needed.
    o = std::move(direct);
  } else {
    o = ctx.b.emit(map, map_params(Value::list(std::move(new_axes)), s.bwd), std::move(in));
  }
  size_t j = 0;
  for (size_t k = 0; k < e.in.size(); ++k) {
    if (!s.nz_in[k]) continue;
    Atom ct = o[j++];
    // A shared (unbatched) input gets the sum over the items.
    if (!axes[k]) ct = ctx.b.emit1(accumulate_items, Params(), {ct});
    ctx.add_cotangent(k, ct);
  }
}

// ---- batch_check

AbstractOut batch_check_abstract(const Params&, std::span<const Aval> in, const TreeDef&) {
  if (in.empty()) invalid("batch_check: no batched input");
  for (size_t k = 0; k < in.size(); ++k)
    if (in[k].list_depth == 0)
      invalid("batch_check: input " + std::to_string(k) + " is " + aval_name(in[k]) + ", not a batched list");
  return AbstractOut{std::vector<Aval>(in.begin(), in.end()), TreeDef::flat_list(in.size())};
}

void batch_check_impl(const Eqn& e, std::span<const Value> in, std::span<Value> out, RunEnv&) {
  const Value* paths = batch_check_paths(e.params);
  auto name = [&](size_t k) {
    if (paths && k < paths->size()) return paths->items()[k].as_str();
    return "batched input " + std::to_string(k);
  };
  size_t n = 0;
  for (size_t k = 0; k < in.size(); ++k) {
    if (in[k].kind() != Kind::List)
      invalid("batch: " + name(k) + " must be a list of items, found " + kind_name(in[k].kind()));
    if (k == 0) {
      n = in[k].size();
    } else if (in[k].size() != n) {
      invalid("batch: batched inputs have different lengths: " + name(0) + " has " + std::to_string(n) +
              " items but " + name(k) + " has " + std::to_string(in[k].size()) +
              " (every batched input holds one value per batch item)");
    }
  }
  if (n == 0) invalid("batch: the batch is empty (" + name(0) + " has 0 items); pass at least one item");
  for (size_t k = 0; k < in.size(); ++k) out[k] = in[k];
}

void batch_check_push(PushCtx& ctx, const Eqn&) {
  std::vector<Atom> o = ctx.emit_primal();
  for (size_t k = 0; k < o.size(); ++k) ctx.tangent_out(k, ctx.tangent(k));
}

void pass_pull_bwd(PullCtx& ctx, const Eqn&) {
  for (size_t k = 0; k < ctx.n_out(); ++k)
    if (ctx.cotangent(k)) ctx.add_cotangent(k, *ctx.cotangent(k));
}

// ---- broadcast

AbstractOut broadcast_abstract(const Params&, std::span<const Aval> in, const TreeDef&) {
  if (in.size() != 2) invalid("broadcast: takes (value, like), got " + std::to_string(in.size()) + " inputs");
  if (in[1].list_depth == 0) invalid("broadcast: `like` is " + aval_name(in[1]) + ", not a batched list");
  return AbstractOut{{up(in[0])}, TreeDef::leaf()};
}

void broadcast_impl(const Eqn&, std::span<const Value> in, std::span<Value> out, RunEnv&) {
  if (in[1].kind() != Kind::List) invalid("broadcast: `like` is not a list");
  out[0] = Value::list(std::vector<Value>(in[1].size(), in[0]));
}

void broadcast_push(PushCtx& ctx, const Eqn& e) {
  ctx.emit_primal();
  if (!ctx.tangent(0)) return ctx.tangent_out(0, std::nullopt);
  ctx.tangent_out(0, ctx.b.emit1(*e.prim, Params(), {*ctx.tangent(0), ctx.primal(1)}));
}

void broadcast_pull_bwd(PullCtx& ctx, const Eqn&) {
  static const Prim& accumulate_items = prim("accumulate_items");
  ctx.add_cotangent(0, ctx.b.emit1(accumulate_items, Params(), {*ctx.cotangent(0)}));
}

}  // namespace

void add_batching_prims(std::vector<Prim>& out) {
  out.push_back(Prim{
      .name = "map",
      .params = map_param_specs(),
      .impl_async = map_impl_async,
      .forms = map_forms,
      .abstract_eval = map_abstract,
      .batch = batch_by_map,
      .pushforward = map_push,
      .pullback_fwd = map_pull_fwd,
      .pullback_bwd = map_pull_bwd,
      .dce = dce_axes_body,
  });
  out.push_back(Prim{
      .name = "batch_check",
      .cost = 0.0,
      .params = batch_check_param_specs(),
      .impl = batch_check_impl,
      .abstract_eval = batch_check_abstract,
      .batch = batch_by_map,
      .pushforward = batch_check_push,
      .pullback_fwd = pull_fwd_copy,
      .pullback_bwd = pass_pull_bwd,
      .dce = dce_whole,
  });
  out.push_back(Prim{
      .name = "broadcast",
      .cost = 0.0,
      .params = {},
      .impl = broadcast_impl,
      .abstract_eval = broadcast_abstract,
      .batch = batch_by_map,
      .pushforward = broadcast_push,
      .pullback_fwd = pull_fwd_copy,
      .pullback_bwd = broadcast_pull_bwd,
      .dce = dce_whole,
  });
}

}  // namespace af
