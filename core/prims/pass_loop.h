// PassLoop: the one way loops run (while_loop, while_scan, scan): each pass
// (a cond or body evaluation, one iteration) is a sub-run started when the
// previous one finishes (rt/context.h run_sub). The executor runs a pass
// inline when its sub-IR makes no async work, so a loop over cheap work
// finishes on the thread that reached it; around LM calls the loop holds no
// thread while they fly. A pass that finishes before run_sub returns (every
// inline pass) continues the loop on the same frame instead of nesting a
// call per iteration, so a long loop cannot grow the stack. The run's stop
// flag is checked before every pass (a deadline or cancel ends a loop
// without LM calls too).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "rt/async.h"
#include "rt/context.h"
#include "rt/env.h"

namespace af {

class PassLoop : public std::enable_shared_from_this<PassLoop> {
 public:
  PassLoop(std::shared_ptr<AsyncOp> op, const RunEnv& env);
  virtual ~PassLoop() = default;
  // Registers the cancel hook and runs passes until the loop ends or a pass
  // goes async. Call once, on a PassLoop held by a shared_ptr.
  void start();

 protected:
  // The next pass: its sub-IR and flat inputs. False when the loop is over
  // (the subclass has finished op_).
  virtual bool next(IRPtr& ir, std::vector<Value>& in) = 0;
  // The outputs of the pass that just ran.
  virtual void pass_done(std::vector<Value> out) = 0;

  const std::shared_ptr<AsyncOp> op_;

 private:
  void kick();
  void step();
  void cancel();

  RunEnv env_;
  std::atomic<int> pending_{0};
  std::mutex mu_;
  std::shared_ptr<SubRun> current_;  // the pass in flight, to cancel it
};

}  // namespace af
