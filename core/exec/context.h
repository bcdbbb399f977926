// Context: what running programs share inside one af_context_t. Each part
// is owned by the layer that defines it; the context only holds them:
//   - host functions registered by name (prims/host)
//   - LM providers and model routes, the shared scheduler (lm/, exec/)
//   - the cache of compiled programs (exec/plan_cache.h)
// Thread safety: members synchronize themselves; the context is shared by
// every run started from it.
#pragma once

#include <memory>

#include "exec/plan_cache.h"
#include "exec/scopes.h"
#include "prims/host.h"

namespace af {

namespace lm {
class Router;
}
class Scheduler;
std::shared_ptr<lm::Router> make_router();            // lm/router.cpp
std::shared_ptr<Scheduler> make_scheduler();          // exec/executor.cpp

class Context {
 public:
  Context() = default;
  // Cancels the runs still in flight and joins the scheduler's threads
  // (exec/executor.cpp). Never call it from a libaf callback.
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  // LM providers by model pattern (lm/router.h).
  lm::Router& router() const noexcept { return *router_; }
  // The dataflow scheduler shared by every run of this context
  // (exec/executor.h); its threads start with the first run that needs them.
  const std::shared_ptr<Scheduler>& scheduler() const noexcept { return scheduler_; }

  // Host functions registered by name (prims/host.h).
  HostRegistry hosts;
  // collect / inject / memoize scopes open on this context, per thread
  // (exec/scopes.h).
  ThreadScopes scopes;
  // Compiled programs of this context: af_compile, af_ir_call and the lazy
  // evaluator share it (exec/plan_cache.h).
  PlanCache plans;

 private:
  std::shared_ptr<lm::Router> router_ = make_router();
  std::shared_ptr<Scheduler> scheduler_ = make_scheduler();  // destroyed before router_
};

}  // namespace af
