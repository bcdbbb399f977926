// A C run's options (af_run_options_t) as the executor takes them, for
// af_program_call_with / af_program_call_async and af_eval_with.
#pragma once

#include "exec/executor.h"
#include "handles.h"

struct af_cancel {
  std::shared_ptr<af::CancelToken> token;
};

namespace af::capi {

// Owns a C callback's user_data: destroy runs exactly once, when the last
// copy of the std::function holding it goes.
struct UserData {
  void* data;
  void (*destroy)(void*);
  UserData(void* d, void (*fn)(void*)) : data(d), destroy(fn) {}
  ~UserData() {
    if (destroy) destroy(data);
  }
};

// Checks o (NULL = defaults; INVALID_ARGUMENT naming fn and the field) and
// converts it; the callbacks' user_data is owned from here on (destroy runs
// once whatever fails next). summary_out: where a synchronous call writes
// the run summary (set from options.summary, which only a synchronous call
// may give: asynchronous ones pass NULL and read af_future_summary_json).
RunOptions run_options(const af_run_options_t* o, const char* fn, af_bytes_t** summary_out);
// Writes summary's JSON to out when both are set.
void write_summary(const RunSummary* summary, af_bytes_t* out);

}  // namespace af::capi
