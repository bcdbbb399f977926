// Run journals (af.h "Run journals"): what a journal holds, and compacting it.
#include "handles.h"
#include "rt/journal.h"

using namespace af;
using namespace af::capi;

af_error_t* af_journal_summary_json(const char* path, size_t path_len, af_bytes_t* out) {
  if (out) *out = af_bytes_t{nullptr, 0};
  return guard([&] {
    require(out, "af_journal_summary_json", "out");
    std::string p(text(path, path_len, "af_journal_summary_json", "path"));
    to_bytes(Journal::summary_json(p), out);
  });
}

af_error_t* af_journal_compact(const char* path, size_t path_len) {
  return guard([&] { Journal::compact(std::string(text(path, path_len, "af_journal_compact", "path"))); });
}
