/* af/hpp/library.hpp — part of af.hpp (include <af/af.hpp>): functions of
 * the loaded libaf rather than of a handle: its version, whether this thread
 * is tracing, the options it reads, profile markers, run journal files. */
#ifndef AF_HPP_LIBRARY_HPP
#define AF_HPP_LIBRARY_HPP

#include "handle.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace af {

/* "MAJOR.MINOR.PATCH" of the loaded libaf. */
inline std::string version() { return af_version(); }
/* AF_ABI_VERSION of the loaded libaf (equal to this header's AF_ABI_VERSION
 * when the two match). */
inline uint32_t abi_version() noexcept { return af_abi_version(); }
/* True on the thread running a trace function (see Context::trace). */
inline bool is_tracing() noexcept { return af_is_tracing() != 0; }
/* Every option libaf reads from JSON options text (Context's options,
 * Provider::from_spec and the other provider makers, set_options), described
 * as JSON (af_options_json): key, kind, default, range, doc. */
inline std::string options_json() {
  af_bytes_t b{nullptr, 0};
  detail::check(af_options_json(&b));
  return detail::take(b);
}

// af_profile_event: a marker on the profile of the run calling this host
// function (a no-op outside a profiled run). args_json: a JSON object, or
// empty for none.
inline void profile_event(std::string_view name, std::string_view args_json = {}) {
  detail::check(af_profile_event(name.data(), name.size(), args_json.empty() ? nullptr : args_json.data(),
                                 args_json.size()));
}

// Run journals (af.h): what one holds, as JSON (calls, tokens, per model),
// and compacting one no run is writing.
inline std::string journal_summary_json(std::string_view path) {
  af_bytes_t b{};
  detail::check(af_journal_summary_json(path.data(), path.size(), &b));
  return detail::take(b);
}
inline void journal_compact(std::string_view path) {
  detail::check(af_journal_compact(path.data(), path.size()));
}

}  // namespace af

#endif /* AF_HPP_LIBRARY_HPP */
