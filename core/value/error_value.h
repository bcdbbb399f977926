// Errors as values: what keep-going runs put in place of a failed output
// leaf, and what per-item errors put in place of a failed batch item
// (exec/executor.h RunOptions; map and lm_call pass them through):
//   {"error": {"code": 6, "name": "PROVIDER", "message": "..."}}
#pragma once

#include "value/error.h"
#include "value/value.h"

namespace af {

// The error value keep_going puts in place of a failed output leaf.
Value error_value(const Error& e);
// Per-item errors: whether e fails only its batch item (a cancellation
// never does: it ends the whole run).
inline bool is_item_failure(const Error& e) noexcept { return e.code() != Code::Cancelled; }
// True for a value shaped like error_value's: {"error": {"code", "name",
// "message"}} and nothing else.
bool is_error_value(const Value& v) noexcept;
// "INVALID_ARGUMENT", "PROVIDER", ...
const char* code_name(Code c) noexcept;

}  // namespace af
