// af_options_json: every JSON option libaf reads, described by the readers
// themselves (lm/options.h describe_options), and the LM calls' sampling
// params from the table that checks them.
#include "handles.h"
#include "lm/options.h"
#include "lm/providers.h"
#include "option_readers.h"
#include "prims/lm.h"

using namespace af;
using namespace af::capi;

extern "C" {

af_error_t* af_options_json(af_bytes_t* out) {
  if (out) *out = af_bytes_t{nullptr, 0};
  return guard([&] {
    require(out, "af_options_json", "out");
    Value all = Value::dict(
        {{"af_context_new_with", lm::describe_options([] { read_context_options(Value()); })},
         {"af_provider_new", lm::describe_provider_options()},
         {"af_provider_set_options",
          lm::describe_options([] { lm::read_provider_set_options(Value(), lm::CommonOptions{}); })},
         {"af_cse_with", lm::describe_options([] { read_cse_options(Value()); })},
         {"af_lm_call_ex", describe_sampling_params()}});
    to_bytes(to_json(all), out);
  });
}

}  // extern "C"
