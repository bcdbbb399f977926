// The readers of the C API's own JSON options (lm/options.h: each also
// describes what it reads, for af_options_json in options.cpp).
#pragma once

#include "exec/plan_cache.h"
#include "value/value.h"

namespace af::capi {

// af_context_new_with's options (context.cpp).
struct ContextOptions {
  bool lazy = false;
  PlanCacheOptions cache;
  int64_t host_threads = 0, eager_timeout_ms = 0, host_wait_ms = 0, eval_timeout_ms = 0;
};
ContextOptions read_context_options(const Value& v);

// af_cse_with's options: whether LM calls merge too (transforms.cpp).
bool read_cse_options(const Value& v);

}  // namespace af::capi
