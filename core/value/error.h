// Error: the one exception type of the core. Codes match AF_ERR_* in af.h;
// the C API turns an Error (and its cause chain) into an af_error_t*.
#pragma once

#include <cstdint>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>

namespace af {

enum class Code : int32_t {
  InvalidArgument = 1,
  NotFound = 2,
  Schema = 3,
  Format = 4,
  Version = 5,
  Provider = 6,
  Timeout = 7,
  Cancelled = 8,
  Callback = 9,
  IO = 10,
  OutOfMemory = 11,
  Internal = 12,
};

class Error : public std::runtime_error {
 public:
  Error(Code code, std::string message, std::shared_ptr<const Error> cause = nullptr,
        std::shared_ptr<void> payload = nullptr)
      : std::runtime_error(std::move(message)), code_(code), cause_(std::move(cause)), payload_(std::move(payload)) {}
  Code code() const noexcept { return code_; }
  const Error* cause() const noexcept { return cause_.get(); }
  const std::shared_ptr<const Error>& cause_ptr() const noexcept { return cause_; }
  // What a host's callback attached to its own error (af_error_new_with):
  // opaque here, released by its destroy when the last error holding it
  // goes. Wrapping an error keeps it as the cause, payload and all.
  const std::shared_ptr<void>& payload() const noexcept { return payload_; }

 private:
  Code code_;
  std::shared_ptr<const Error> cause_;
  std::shared_ptr<void> payload_;
};

[[noreturn]] inline void fail(Code code, std::string message) {
  throw Error(code, std::move(message));
}
[[noreturn]] inline void invalid(std::string message) {
  throw Error(Code::InvalidArgument, std::move(message));
}

// The Error for an exception that is not one, caught where a run's work
// ends: an allocation that failed is OUT_OF_MEMORY (never INTERNAL);
// anything else is a bug of libaf's, INTERNAL.
inline Error error_from(const std::exception& e) {
  if (dynamic_cast<const std::bad_alloc*>(&e))
    return Error(Code::OutOfMemory, "out of memory while running the program (a run option, max_value_bytes, "
                                    "bounds what one equation builds; a deadline bounds the rest)");
  return Error(Code::Internal, std::string("internal error: ") + e.what());
}

}  // namespace af
