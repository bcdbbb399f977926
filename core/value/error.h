// Error: the one exception type of the core. Codes match AF_ERR_* in af.h;
// the C API turns an Error (and its cause chain) into an af_error_t*.
#pragma once

#include <cstdint>
#include <memory>
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
  Error(Code code, std::string message, std::shared_ptr<const Error> cause = nullptr)
      : std::runtime_error(std::move(message)), code_(code), cause_(std::move(cause)) {}
  Code code() const noexcept { return code_; }
  const Error* cause() const noexcept { return cause_.get(); }
  const std::shared_ptr<const Error>& cause_ptr() const noexcept { return cause_; }

 private:
  Code code_;
  std::shared_ptr<const Error> cause_;
};

[[noreturn]] inline void fail(Code code, std::string message) {
  throw Error(code, std::move(message));
}
[[noreturn]] inline void invalid(std::string message) {
  throw Error(Code::InvalidArgument, std::move(message));
}

}  // namespace af
