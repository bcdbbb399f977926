// Host functions: functions the host registers by name on a context, with
// declared result kinds, called by the `host_call` primitive (in traces,
// outside them, and from saved graphs loaded elsewhere: the IR holds only
// the name and the declared kinds). docs/SEMANTICS.md §3 "host function".
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>

#include "exec/env.h"
#include "ir/prim.h"
#include "value/value.h"

namespace af {

struct HostFunction {
  std::string name;
  // Called with the positional argument trees; returns the result tree.
  // Throws Error (a host callback failure is CALLBACK with the cause).
  std::function<Value(std::span<const Value> args)> call;
  Value result_kinds;  // as declared: a tree of kind names ("str", "list<int>")
  AbstractOut result;  // parsed from result_kinds
};

// Per context (exec/context.h). Thread safe.
class HostRegistry {
 public:
  // Registers `fn` under fn->name, replacing (and releasing) an earlier one.
  void add(std::shared_ptr<const HostFunction> fn);
  // nullptr if absent.
  std::shared_ptr<const HostFunction> find(std::string_view name) const;
  // NOT_FOUND naming the function and the registered names if absent.
  std::shared_ptr<const HostFunction> require(std::string_view name) const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<const HostFunction>, std::less<>> fns_;
};

// Parses a result-kinds tree: leaves are kind names "str", "int", "float",
// "bool" or "list<...>" of them; containers give the result structure.
// INVALID_ARGUMENT on anything else.
AbstractOut parse_result_kinds(const Value& kinds);

// Calls host function `name` on positional argument trees: recorded inside a
// trace (as host_call[name, result]), evaluated outside. NOT_FOUND if the
// name is not registered on env's context.
Value op_host_call(std::string_view name, std::span<const Value> args, RunEnv& env);

}  // namespace af
