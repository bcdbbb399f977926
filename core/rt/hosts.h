// Host functions: functions the host registers by name on a context, with
// declared result kinds, called by the `host_call` primitive (core/prims/host.cpp)
// in traces, outside them, and from saved graphs loaded elsewhere: the IR holds
// only the name and the declared kinds. docs/SEMANTICS.md §3 "host function".
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/prim.h"
#include "rt/async.h"
#include "rt/host_pool.h"
#include "value/value.h"

namespace af {

class HostRequest;

struct HostFunction {
  // How a call runs (docs/SEMANTICS.md §3 "host function"):
  //   Sync     — `call` on the thread that reached the equation;
  //   Blocking — `call` on the context's host pool (HostRegistry::pool), so a
  //              slow tool never holds a scheduler thread;
  //   Async    — `start` begins the work and returns; the host finishes the
  //              HostRequest later, from any thread. No libaf thread waits.
  enum class Mode { Sync, Blocking, Async };

  std::string name;
  Mode mode = Mode::Sync;
  // Sync / Blocking: called with the positional argument trees; returns the
  // result tree. Throws Error (a host callback failure is CALLBACK with the
  // cause).
  std::function<Value(std::span<const Value> args)> call;
  // Async: called with the argument trees and the request to finish. A throw
  // fails the call (the request is then finished already).
  std::function<void(std::span<const Value> args, std::shared_ptr<HostRequest> req)> start;
  // Registered pure (same arguments, same result, no effects): its calls may
  // be removed, merged and memoized (prims/host.cpp). Recorded into each
  // call's equation when it is traced or recorded.
  bool pure = false;
  Value result_kinds;  // as declared: a tree of kind names ("str", "list<int>")
  AbstractOut result;  // parsed from result_kinds
};

// One call of an async host function in flight. The host finishes it once,
// from any thread; a call the run gave up on (cancelled, timed out, failed
// elsewhere) accepts the finish and ignores it. Dropping the last reference
// without finishing fails the call (CALLBACK), so a forgotten request never
// hangs a run.
class HostRequest {
 public:
  HostRequest(std::shared_ptr<AsyncOp> op, std::string name, Value declared_kinds);
  ~HostRequest();
  HostRequest(const HostRequest&) = delete;
  HostRequest& operator=(const HostRequest&) = delete;

  // Finishes the call with its result tree. INVALID_ARGUMENT naming the
  // function when the result does not have the declared structure and kinds
  // (the call then fails with that error) or when the host already finished
  // this request.
  void complete(Value result);
  // Fails the call with err (a host callback failure: CALLBACK with cause).
  // INVALID_ARGUMENT when the host already finished this request.
  void fail(const Error& err);
  // Whether the run no longer wants the result (cancelled, timed out, or
  // failed elsewhere); the host may stop working but must still finish.
  bool cancelled() const noexcept;
  const std::string& name() const noexcept { return name_; }

 private:
  void claim(const char* what);
  std::shared_ptr<AsyncOp> op_;
  std::string name_;
  Value declared_;
  std::atomic<bool> finished_by_host_{false};
};

// Per context (rt/context.h). Thread safe.
class HostRegistry {
 public:
  // Where Blocking functions run. Bounded; its size is a context option.
  HostPool& pool() noexcept { return pool_; }

  // Registers `fn` under fn->name, replacing (and releasing) an earlier one.
  void add(std::shared_ptr<const HostFunction> fn);
  // nullptr if absent.
  std::shared_ptr<const HostFunction> find(std::string_view name) const;
  // NOT_FOUND naming the function and the registered names if absent.
  std::shared_ptr<const HostFunction> require(std::string_view name) const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<const HostFunction>, std::less<>> fns_;
  HostPool pool_;  // last member: joined first, while the functions still exist
};

// Parses a result-kinds tree: leaves are kind names "str", "int", "float",
// "bool" or "list<...>" of them; containers give the result structure.
// INVALID_ARGUMENT on anything else.
AbstractOut parse_result_kinds(const Value& kinds);

// A host function's result as flat leaves, checked against the kinds the IR
// declares for it. INVALID_ARGUMENT naming the function otherwise.
std::vector<Value> result_leaves(const std::string& name, const Value& declared, const Value& result);

}  // namespace af
