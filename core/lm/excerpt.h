// What a provider may put into an error message from an untrusted server:
// a short, printable excerpt with the provider's secret removed. Servers can
// echo the request (headers included) and send terminal escapes; neither may
// reach a host's logs through libaf.
#pragma once

#include <string>
#include <string_view>

namespace af::lm {

// Every occurrence of `secret` (if non-empty) replaced by "[redacted]",
// control characters (C0, DEL and the C1 range, e.g. an 8-bit CSI) escaped as
// \xNN / \u00NN, newlines and tabs shown as spaces, cut at `max` bytes on a
// character boundary ("..." marks the cut). A body that is not UTF-8 is
// shown as "(binary body, N bytes)".
std::string safe_excerpt(std::string_view body, std::string_view secret, size_t max = 300);

// The same without a length cap: for whole messages built from parts that
// may hold server text.
std::string safe_text(std::string_view text, std::string_view secret);

}  // namespace af::lm
