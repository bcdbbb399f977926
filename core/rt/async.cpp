#include "rt/async.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <optional>
#include <string>

#include "rt/env.h"
#include "rt/scopes.h"
#include "ir/prim.h"

namespace af {

namespace {
thread_local AsyncOp* t_host_call = nullptr;
}  // namespace

HostCallScope::HostCallScope(AsyncOp* op) noexcept : prev_(t_host_call) { t_host_call = op; }
HostCallScope::~HostCallScope() { t_host_call = prev_; }
AsyncOp* HostCallScope::current() noexcept { return t_host_call; }

bool AsyncOp::succeed(std::vector<Value> out) noexcept {
  if (!claim()) return false;
  on_finish(&out, nullptr);
  return true;
}

bool AsyncOp::fail(const Error& err) noexcept {
  if (!claim()) return false;
  on_finish(nullptr, &err);
  return true;
}

void AsyncOp::on_cancel(std::function<void()> hook) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!cancel_requested_.load(std::memory_order_acquire)) {
      cancel_hook_ = std::move(hook);
      return;
    }
  }
  if (hook) hook();
}

void AsyncOp::cancel(const Error& why) noexcept {
  if (finished()) return;  // nothing left to stop
  std::function<void()> hook;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (cancel_requested_.exchange(true, std::memory_order_acq_rel)) return;
    hook.swap(cancel_hook_);
  }
  fail(why);
  try {
    if (hook) hook();
  } catch (...) {
    // A hook only releases resources; a failure there has nowhere to go.
  }
}

namespace {

class BlockingOp final : public AsyncOp {
 public:
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::vector<Value> out;
  std::optional<Error> err;

 protected:
  void on_finish(std::vector<Value>* o, const Error* e) noexcept override {
    std::lock_guard<std::mutex> lock(mu);
    if (o) out = std::move(*o);
    if (e) err.emplace(detached(*e));
    done = true;
    cv.notify_all();
  }
};

}  // namespace

void run_async_blocking(const Eqn& e, std::span<const Value> in, std::span<Value> out,
                        RunEnv& env) {
  if (!e.prim->impl_async)
    fail(Code::Internal, e.prim->name + ": no asynchronous implementation");
  // Stopped by the context's eager_timeout_ms, or by the token of any cancel
  // scope the calling thread has open (checked every 20 ms; a token already
  // fired stops it before it starts). Either way the request learns it is
  // no longer wanted (af_host_request_cancelled, an LM transfer aborted) and
  // its late answer is ignored.
  const RunScopes* scopes = scopes_of(env);
  std::vector<std::shared_ptr<CancelFlag>> tokens;
  if (scopes) tokens = scopes->cancels();
  const auto fired = [&] {
    return std::any_of(tokens.begin(), tokens.end(), [](const auto& t) { return t->cancelled(); });
  };
  const auto cancelled = [&] {
    return Error(Code::Cancelled, e.prim->name + ": cancelled by the token of this thread's cancel scope "
                                                 "(af_cancel_scope_push); the request was cancelled");
  };
  if (fired()) throw cancelled();
  auto op = std::make_shared<BlockingOp>();
  try {
    e.prim->impl_async(e, in, op, env);
  } catch (const Error& err) {
    op->fail(err);
  }
  using Clock = std::chrono::steady_clock;
  const Clock::time_point deadline = env.eager_timeout_ms > 0
                                         ? Clock::now() + std::chrono::milliseconds(env.eager_timeout_ms)
                                         : Clock::time_point::max();
  std::unique_lock<std::mutex> lock(op->mu);
  const auto done = [&] { return op->done; };
  while (!op->done) {
    const Clock::time_point until =
        tokens.empty() ? deadline : std::min(deadline, Clock::now() + std::chrono::milliseconds(20));
    if (until == Clock::time_point::max()) break;  // nothing can stop it: wait below
    if (op->cv.wait_until(lock, until, done)) break;
    std::optional<Error> why;
    if (fired())
      why.emplace(cancelled());
    else if (Clock::now() >= deadline)
      why.emplace(Code::Timeout, e.prim->name + ": no result within the context's eager_timeout_ms of " +
                                     std::to_string(env.eager_timeout_ms) + " ms; the request was cancelled");
    if (!why) continue;
    lock.unlock();
    op->cancel(*why);
    lock.lock();
    break;
  }
  op->cv.wait(lock, done);
  if (op->err) throw detached(*op->err);
  if (op->out.size() != out.size())
    fail(Code::Internal, e.prim->name + ": produced " + std::to_string(op->out.size()) +
                             " outputs, expected " + std::to_string(out.size()));
  for (size_t i = 0; i < out.size(); ++i) out[i] = std::move(op->out[i]);
}

}  // namespace af
