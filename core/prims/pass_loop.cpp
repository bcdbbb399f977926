#include "prims/pass_loop.h"

#include "value/error.h"

namespace af {

PassLoop::PassLoop(std::shared_ptr<AsyncOp> op, const RunEnv& env) : op_(std::move(op)) {
  // Not the caller's owned inputs (they are its equation's, only during its
  // impl call); the rest is what every pass inherits.
  env_.context = env.context;
  env_.program = env.program;
  env_.scopes = env.scopes;
  env_.stop = env.stop;
  env_.item_errors = env.item_errors;
  env_.evaluation = env.evaluation;
  env_.journal = env.journal;
  env_.rank = env.rank;
  env_.eqn = env.eqn;
}

void PassLoop::start() {
  if (!env_.context) {
    op_->fail(Error(Code::Internal, "a loop ran without a context"));
    return;
  }
  std::weak_ptr<PassLoop> weak = shared_from_this();
  op_->on_cancel([weak] {
    if (auto self = weak.lock()) self->cancel();
  });
  kick();
}

// One step per kick: start the next pass, or finish. A kick arriving while a
// frame is already stepping is left to that frame's loop.
void PassLoop::kick() {
  if (pending_.fetch_add(1, std::memory_order_acq_rel) != 0) return;
  do step();
  while (pending_.fetch_sub(1, std::memory_order_acq_rel) != 1);
}

void PassLoop::step() {
  if (op_->finished()) return;
  IRPtr ir;
  std::vector<Value> in;
  try {
    env_.check_stop();
    if (!next(ir, in)) return;
  } catch (const Error& e) {
    op_->fail(e);
    return;
  }
  auto self = shared_from_this();
  std::shared_ptr<SubRun> run = env_.context->run_sub(
      ir, in, env_, op_, passes_++, [self](std::vector<Value>* out, const Error* err) {
        try {
          if (err && !self->pass_failed(*err)) {
            self->op_->fail(*err);
            return;
          }
          if (!err) self->pass_done(std::move(*out));
        } catch (const Error& e) {
          self->op_->fail(e);
          return;
        }
        self->kick();
      }, -1);
  std::lock_guard<std::mutex> lock(mu_);
  current_ = std::move(run);
}

void PassLoop::cancel() {
  std::shared_ptr<SubRun> run;
  {
    std::lock_guard<std::mutex> lock(mu_);
    run = current_;
  }
  if (run) run->cancel();
}

}  // namespace af
