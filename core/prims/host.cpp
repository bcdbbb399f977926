// host_call[name, result, pure?](args...) -> result: calls the host function
// registered under `name` on the running context; `result` is the tree of
// kind names declared at registration, kept in the IR so a saved graph
// knows its output kinds without the function; `pure` (true, or absent) is
// how the function was registered when the call was recorded.
//
// Modes (HostFunction::Mode): sync functions run inline, blocking ones on
// the context's host pool, async ones finish a HostRequest later. The
// equation is async for the executor in every mode (the mode belongs to the
// registration, which may change after compiling); a sync function still
// runs on the thread that reached it.
//
// Flags (flags_of): a call of an effectful function (the default) is
// effectful and observable: dce never removes it, cse never merges it,
// memoize never answers it and a lazy context runs it even when nothing
// reads its result — so it runs exactly once per run in
// compiled and lazy mode alike. A call of a function registered pure
// (AF_FUNCTION_PURE) has no flags: removed when unused, merged with an equal
// call, memoized, dropped unread on a lazy context. Effectful is the default
// because the two mistakes cost differently: a pure function taken for
// effectful costs a call that was not needed; an effectful one taken for
// pure silently loses a message sent, a row written, a charge made.
// Rules: batch maps it over the items (one host call per item). push and
// pull are not supported (docs/SEMANTICS.md §3): transforming a program whose
// tangent / cotangent reaches a host call is INVALID_ARGUMENT naming the
// function (wrap its result in stop_gradient to cut it out); a host call no
// tangent / cotangent reaches transforms fine (it just runs forward).
#include "prims/host.h"

#include <new>

#include "ir/effects.h"
#include "ir/registry.h"
#include "prims/builtins.h"
#include "trace/trace.h"
#include "transforms/batch.h"
#include "transforms/dce.h"
#include "transforms/pullback.h"
#include "transforms/pushforward.h"
#include "rt/context.h"
#include "rt/journal.h"
#include "value/error.h"
#include "value/hash.h"

namespace af {

// ---- params (prims/host.h): each name spelled once

namespace {
constexpr const char* kParamName = "name";
constexpr const char* kParamResult = "result";
constexpr const char* kParamPure = "pure";
}  // namespace

Params host_call_params(std::string name, Value result, bool pure) {
  Params p;
  p.set(kParamName, Value::str(std::move(name)));
  p.set(kParamResult, std::move(result));
  if (pure) p.set(kParamPure, Value::boolean(true));
  return p;
}
std::vector<ParamSpec> host_call_param_specs() {
  return {{.name = kParamName, .value_kind = Kind::Str, .names_host_function = true},
          {.name = kParamResult},
          {.name = kParamPure, .value_kind = Kind::Bool, .optional = true}};
}
const std::string& host_call_name(const Params& p) { return p.value(kParamName).as_str(); }
const Value& host_call_result(const Params& p) { return p.value(kParamResult); }
bool host_call_pure(const Params& p) {
  const Param* pure = p.find(kParamPure);
  return pure && std::get<Value>(*pure).as_bool();  // a bool Value: checked by every loader
}

namespace {

AbstractOut host_abstract(const Params& params, std::span<const Aval>, const TreeDef&) {
  return parse_result_kinds(host_call_result(params));
}

// Calls a Sync / Blocking function and finishes op with its checked result.
void call_and_finish(const HostFunction& fn, const Value& declared, std::span<const Value> args,
                     AsyncOp& op) noexcept {
  try {
    op.succeed(result_leaves(fn.name, declared, fn.call(args)));
  } catch (const Error& e) {
    op.fail(e);
  } catch (const std::bad_alloc&) {
    op.fail(Error(Code::OutOfMemory, "out of memory in host function " + json_quoted(fn.name)));
  } catch (const std::exception& e) {
    op.fail(Error(Code::Internal, "host function " + json_quoted(fn.name) + ": internal error: " + e.what()));
  }
}

// A journal's key of a host call (rt/journal.h): the function's name and
// its arguments' exact JSON, length-prefixed after a tag no LM request key
// starts with.
JournalKey host_key(const std::string& name, std::span<const Value> args) {
  std::string b;
  append_key_part(b, "host_call");
  append_key_part(b, name);
  append_key_part(b, to_json(Value::list(std::vector<Value>(args.begin(), args.end()))));
  return hash128_bytes(b);
}

// The op an effectful call runs under when its run has a journal: its
// result reaches the run (`outer`) only once its row is committed, so a
// resumed run never does the call again once anything used its result.
class JournaledOp final : public AsyncOp {
 public:
  JournaledOp(std::shared_ptr<AsyncOp> outer, std::shared_ptr<Journal> journal, JournalKey key, Value declared,
              std::string fn, std::string name_path)
      : outer_(std::move(outer)), journal_(std::move(journal)), key_(std::move(key)),
        declared_(std::move(declared)), fn_(std::move(fn)), name_path_(std::move(name_path)) {}
  bool profiling() const noexcept override { return outer_->profiling(); }
  void record_event(const HostEvent& ev) noexcept override { outer_->record_event(ev); }

 private:
  void on_finish(std::vector<Value>* out, const Error* err) noexcept override {
    if (err) {
      outer_->fail(*err);
      return;
    }
    try {
      JournalEntry entry{to_json(parse_result_kinds(declared_).out_tree.unflatten(*out)), fn_, "host function",
                         name_path_, 0, 0, /*host_function=*/true};
      journal_->record(std::move(key_), std::move(entry),
                       [outer = outer_, leaves = std::move(*out)](const Error* failed) mutable {
                         if (failed) outer->fail(*failed);
                         else outer->succeed(std::move(leaves));
                       });
    } catch (const Error& e) {
      outer_->fail(e);
    } catch (const std::exception& e) {
      outer_->fail(Error(Code::Internal, std::string("journal of host function ") + json_quoted(fn_) + ": " + e.what()));
    }
  }
  std::shared_ptr<AsyncOp> outer_;
  std::shared_ptr<Journal> journal_;
  JournalKey key_;
  Value declared_;
  std::string fn_, name_path_;
};

// Every host_call runs through here in the dataflow executor (it is an
// async equation whatever the function's mode: the mode is the
// registration's, known only at run time).
void host_impl_async(const Eqn& e, std::span<const Value> in, std::shared_ptr<AsyncOp> op, RunEnv& env) {
  const std::string& name = host_call_name(e.params);
  if (!env.context) fail(Code::NotFound, "host function " + json_quoted(name) + " is not registered (no context)");
  std::shared_ptr<const HostFunction> fn = env.context->hosts.require(name);
  const Value& declared = host_call_result(e.params);
  std::vector<Value> args = e.in_tree.unflatten(in).items();
  // An effectful call of a run with a journal: answered from the journal
  // when an earlier run recorded it (not done again), else recorded once
  // done. Pure calls run again, as any pure equation does.
  if (env.journal && (eqn_flags(e) & kEffectful)) {
    JournalKey key = host_key(name, args);
    if (std::optional<JournalEntry> recorded = env.journal->take(key)) {
      try {
        op->succeed(result_leaves(fn->name, declared, from_json(recorded->reply)));
      } catch (const Error& err) {  // the program's hash binds the kinds: a damaged journal
        op->fail(Error(Code::Format, "host function " + json_quoted(name) +
                                         ": the journal's result does not fit its declared kinds: " + err.what()));
      }
      return;
    }
    auto inner = std::make_shared<JournaledOp>(op, env.journal, std::move(key), declared, name,
                                               name_path_text(e.name_path()));
    op->on_cancel([weak = std::weak_ptr<JournaledOp>(inner)] {
      if (auto i = weak.lock()) i->cancel(Error(Code::Cancelled, "the run no longer wants this host call"));
    });
    op = std::move(inner);
  }
  // The function's thread serves the run's lazy evaluation, if any, while
  // it runs: reading a promise that evaluation runs then fails at once
  // (core/lazy) instead of waiting for itself.
  switch (fn->mode) {
    case HostFunction::Mode::Sync: {
      ServingScope serving(env.evaluation);
      HostCallScope calling(op.get());
      call_and_finish(*fn, declared, args, *op);
      return;
    }
    case HostFunction::Mode::Blocking: {
      HostPool& pool = env.context->hosts.pool();
      if (pool.on_pool_thread()) {  // called from a blocking function: see HostPool::on_pool_thread
        ServingScope serving(env.evaluation);
        HostCallScope calling(op.get());
        call_and_finish(*fn, declared, args, *op);
        return;
      }
      AsyncOp* raw = op.get();  // the job holds op alive while it runs
      pool.submit(std::move(op), [fn, declared, args = std::move(args), raw, ev = env.evaluation] {
        ServingScope serving(ev);
        HostCallScope calling(raw);
        call_and_finish(*fn, declared, args, *raw);
      });
      return;
    }
    case HostFunction::Mode::Async: {
      AsyncOp* raw = op.get();  // the request holds op alive
      auto req = std::make_shared<HostRequest>(op, name, declared);
      ServingScope serving(env.evaluation);
      HostCallScope calling(raw);
      fn->start(args, std::move(req));
      return;
    }
  }
}

uint32_t host_flags(const Params& params) {
  return host_call_pure(params) ? kPure : kEffectful | kNondeterministic | kObservable;
}

void host_push(PushCtx&, const Eqn& e) {
  invalid("pushforward: host function " + json_quoted(host_call_name(e.params)) +
          " has no pushforward rule (a tangent reaches its arguments; wrap them in stop_gradient if the "
          "host call should not be differentiated)");
}

void host_pull_bwd(PullCtx&, const Eqn& e) {
  invalid("pullback: host function " + json_quoted(host_call_name(e.params)) +
          " has no pullback rule (a cotangent reaches its result; wrap the result in stop_gradient if the "
          "host call should not be differentiated)");
}

}  // namespace

void add_host_prims(std::vector<Prim>& out) {
  out.push_back(Prim{
      .name = "host_call",
      .flags = kEffectful | kNondeterministic | kObservable,
      .flags_of = host_flags,
      .params = host_call_param_specs(),
      .impl_async = host_impl_async,
      .abstract_eval = host_abstract,
      .batch = batch_by_map,
      .pushforward = host_push,
      .pullback_fwd = pull_fwd_copy,
      .pullback_bwd = host_pull_bwd,
      .dce = dce_whole,
  });
}

Value op_host_call(std::string_view name, std::span<const Value> args, RunEnv& env) {
  if (!valid_utf8(name)) invalid("host_call: the name is not valid UTF-8");
  if (!env.context) invalid("host_call: no context");
  std::shared_ptr<const HostFunction> fn = env.context->hosts.require(name);
  static const Prim& p = prim("host_call");
  return bind(p, host_call_params(std::string(name), fn->result_kinds, fn->pure),
              Value::list(std::vector<Value>(args.begin(), args.end())), env);
}

}  // namespace af
