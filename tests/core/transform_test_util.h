// Shared by the transform and control-flow suites: the test programs (each
// primitive alone and in small combinations), their sample inputs, and
// running IRs on a context with host functions registered.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "exec/context.h"
#include "exec/executor.h"
#include "exec/sequential.h"
#include "ir/ir.h"
#include "prims/control_flow.h"
#include "prims/host.h"
#include "prims/ops.h"
#include "trace/trace.h"
#include "transforms/transforms.h"
#include "value/error.h"
#include "value/value.h"

namespace af::testing {

#define EXPECT_AF_ERROR(stmt, code_, fragment)                                   \
  do {                                                                           \
    try {                                                                        \
      stmt;                                                                      \
      ADD_FAILURE() << "expected af::Error containing \"" << (fragment) << "\""; \
    } catch (const ::af::Error& e_) {                                            \
      EXPECT_EQ(e_.code(), (code_)) << e_.what();                                \
      EXPECT_NE(std::string(e_.what()).find(fragment), std::string::npos)        \
          << "message: " << e_.what() << "\nexpected fragment: " << (fragment);  \
    }                                                                            \
  } while (0)

inline Value J(const char* json) { return from_json(json); }
inline Value S(const char* s) { return Value::str(s); }

// A context with the test host functions: "upper" (str -> str, upper-cased;
// effectful, as functions are by default), "upper_pure" (the same, registered
// pure) and "pair" (str, str -> {"a": str, "n": int}).
class TestContext {
 public:
  TestContext();
  ExecContext ctx;
  RunEnv env{&ctx};
  std::atomic<int> upper_calls{0};  // batched runs call it from several threads
};

TestContext& test_context();

// Runs ir on the dataflow executor (exec/executor.h), as af_program_call
// does: transform tests check transformed programs where they really run.
inline Value run(const IRPtr& ir, const std::vector<Value>& in) {
  return run_sync(test_context().env, compile(ir), check_inputs(*ir, in));
}
inline std::string run_json(const IRPtr& ir, const char* inputs_json) {
  Value in = J(inputs_json);
  return to_json(run(ir, in.items()));
}

// Traces fn on the examples (a JSON list of positional inputs).
IRPtr trace_json(const std::function<Value(std::span<const Value>)>& fn, const char* examples,
                 const char* static_mask = nullptr);

// A test program: its IR and two sets of inputs (different values, same
// structure) that make it take different paths where it can.
struct Program {
  std::string name;
  IRPtr ir;
  std::vector<Value> a, b;
};
std::vector<Program> programs();

// Helpers IR text checks use.
size_t count_prim(const IR& ir, const std::string& prim, bool recursive = true);

}  // namespace af::testing
