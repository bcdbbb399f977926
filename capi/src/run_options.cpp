// af_run_options_t -> RunOptions, shared by program calls and af_eval_with.
#include "run_options.h"

#include <cstring>

#include "exec/summary.h"

namespace af::capi {

RunOptions run_options(const af_run_options_t* o, const char* fn, af_bytes_t** summary_out) {
  RunOptions r;
  if (!o) return r;
  if (o->struct_size < sizeof(uint32_t) * 2)
    invalid(std::string(fn) + ": options.struct_size is " + std::to_string(o->struct_size) +
            "; set it to sizeof(af_run_options_t)");
  // Fields beyond what the caller's struct holds keep their defaults, so a
  // program built against an older af.h keeps working.
  af_run_options_t c{};
  std::memcpy(&c, o, std::min<size_t>(o->struct_size, sizeof c));
  // Own user_data first: destroy then runs exactly once whatever fails next.
  std::shared_ptr<UserData> ud, stream_ud;
  if (c.progress || c.progress_destroy) ud = std::make_shared<UserData>(c.progress_user_data, c.progress_destroy);
  if (c.stream || c.stream_destroy) stream_ud = std::make_shared<UserData>(c.stream_user_data, c.stream_destroy);
  if (c.flags & ~uint32_t(AF_RUN_KEEP_GOING | AF_RUN_PROFILE | AF_RUN_ITEM_ERRORS | AF_RUN_SUMMARY))
    invalid(std::string(fn) + ": unknown bits in options.flags");
  if (c.summary) {
    if (!summary_out)
      invalid(std::string(fn) +
              ": options.summary is for af_program_call_with; an asynchronous run's summary "
              "comes from af_future_summary_json (set AF_RUN_SUMMARY in options.flags)");
    *c.summary = af_bytes_t{nullptr, 0};
    *summary_out = c.summary;
  } else if (summary_out && (c.flags & AF_RUN_SUMMARY)) {
    invalid(std::string(fn) +
            ": AF_RUN_SUMMARY needs options.summary, where the summary is written");
  }
  if (c.summary || (c.flags & AF_RUN_SUMMARY)) r.summary = std::make_shared<RunSummary>();
  if (c.timeout_ms > uint64_t(INT64_MAX / 1000000))
    invalid(std::string(fn) + ": options.timeout_ms is too large");
  r.timeout_ms = int64_t(c.timeout_ms);
  r.keep_going = c.flags & AF_RUN_KEEP_GOING;
  r.profile = c.flags & AF_RUN_PROFILE;
  r.item_errors = c.flags & AF_RUN_ITEM_ERRORS;
  r.max_value_bytes = c.max_value_bytes;
  if (c.progress) {
    af_progress_fn progress = c.progress;
    r.progress = [ud, progress](uint64_t done, uint64_t total) { progress(ud->data, done, total); };
  }
  if (c.cancel) r.cancel = c.cancel->token;
  if (c.stream) {
    af_stream_fn stream = c.stream;
    r.stream = [stream_ud, stream](uint32_t eqn, uint64_t item, const char* data, size_t len) {
      stream(stream_ud->data, eqn, item, data, len);
    };
  }
  if (c.stream_tag_len) {
    if (!c.stream) invalid(std::string(fn) + ": options.stream_tag is set but options.stream is NULL");
    r.stream_tag = std::string(text(c.stream_tag, c.stream_tag_len, fn, "options.stream_tag"));
  }
  if (c.profile_path_len) r.profile_path = std::string(text(c.profile_path, c.profile_path_len, fn, "options.profile_path"));
  if (c.journal_path_len) r.journal_path = std::string(text(c.journal_path, c.journal_path_len, fn, "options.journal_path"));
  return r;
}

void write_summary(const RunSummary* summary, af_bytes_t* out) {
  if (summary && out) to_bytes(summary->to_json(), out);
}

}  // namespace af::capi
