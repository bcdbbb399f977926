// What the requests of one batched LM equation share (prims/lm.cpp): they
// are made together, so what they point to is shared, not copied per request.
#include <gtest/gtest.h>

#include <mutex>
#include <set>
#include <vector>

#include "exec/context.h"
#include "exec/executor.h"
#include "exec/program.h"
#include "lm/call.h"
#include "lm/provider.h"
#include "prims/lm.h"
#include "trace/trace.h"
#include "transforms/batch.h"

namespace af {
namespace {

// Answers at once, noting where each request's model name lies.
class ModelBytes final : public lm::Provider {
 public:
  ModelBytes() : Provider("model-bytes", 0) {}
  ~ModelBytes() override { shutdown(); }
  std::mutex mu;
  std::vector<const char*> names;

 protected:
  void start(std::shared_ptr<lm::Call> call) noexcept override {
    {
      std::lock_guard<std::mutex> lock(mu);
      names.push_back(call->request().model.as_str().data());
    }
    call->complete("ok");
  }
};

Value user_turn(const Value& content) {
  return Value::list({Value::dict({{"role", Value::str("user")}, {"content", content}})});
}

// A batch's requests hold one copy of its model's name (a name longer than
// the string's inline bytes, as most real ones are), below and above the
// size from which the batch makes its own copy (lm::kOwnCountFrom).
TEST(LmBatch, RequestsShareTheirModelsName) {
  auto provider = std::make_shared<ModelBytes>();
  ExecContext ctx;
  ctx.router().route("*", provider);
  RunEnv env{&ctx};
  IRPtr one = trace(
      [&](std::span<const Value> in) { return op_lm_call(user_turn(in[0]), in[1], Value(), env); },
      std::vector<Value>{Value::str("q"), Value::str("m")}, Value());
  auto p = compile(batch(one, from_json("[true, false]")));
  for (size_t n : {size_t(8), size_t(100)}) {
    provider->names.clear();
    std::vector<Value> qs;
    for (size_t i = 0; i < n; ++i) qs.push_back(Value::str("q" + std::to_string(i)));
    Value out = run_sync(env, p, {Value::list(std::move(qs)), Value::str("a-model-name-longer-than-sso")});
    ASSERT_EQ(out.size(), n);
    ASSERT_EQ(provider->names.size(), n);
    EXPECT_EQ(std::set<const char*>(provider->names.begin(), provider->names.end()).size(), 1u) << n << " requests";
  }
}

}  // namespace
}  // namespace af
