/* af/hpp/error.hpp — part of af.hpp (include <af/af.hpp>): errors.
 *
 * af::Code, af::Error, and the detail helpers that turn libaf's af_error_t
 * into an af::Error (check) and an exception a callback threw into an
 * af_error_t carrying it (error_for_current). Every other part includes
 * this one: every call can fail. */
#ifndef AF_HPP_ERROR_HPP
#define AF_HPP_ERROR_HPP

#include <af/af.h>

#include <cstdint>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace af {

/* ---- Errors -------------------------------------------------------------- */

enum class Code : int32_t {
  InvalidArgument = AF_ERR_INVALID_ARGUMENT,
  NotFound = AF_ERR_NOT_FOUND,
  Schema = AF_ERR_SCHEMA,
  Format = AF_ERR_FORMAT,
  Version = AF_ERR_VERSION,
  Provider = AF_ERR_PROVIDER,
  Timeout = AF_ERR_TIMEOUT,
  Cancelled = AF_ERR_CANCELLED,
  Callback = AF_ERR_CALLBACK,
  IO = AF_ERR_IO,
  OutOfMemory = AF_ERR_OUT_OF_MEMORY,
  Internal = AF_ERR_INTERNAL,
};

/* "NOT_FOUND", ... as in af.h's AF_ERR_* names (af_error_code_name). */
inline const char* code_name(Code c) noexcept { return af_error_code_name(static_cast<int32_t>(c)); }

/* A libaf error: code, message (what()), the error that caused it, and for
 * the error a host callback raised, what the callback threw (origin()). */
class Error : public std::runtime_error {
 public:
  Error(Code code, const std::string& message, std::shared_ptr<const Error> cause = nullptr,
        std::exception_ptr origin = nullptr)
      : std::runtime_error(message), code_(code), cause_(std::move(cause)), origin_(origin) {}

  Code code() const noexcept { return code_; }
  std::string message() const { return what(); }
  /* The next error of the chain, or nullptr. */
  const Error* cause() const noexcept { return cause_.get(); }
  /* For the error standing for a host callback's failure: the exception the
   * callback threw (rethrow it to inspect its type); else nullptr. */
  std::exception_ptr origin() const noexcept { return origin_; }

 private:
  Code code_;
  std::shared_ptr<const Error> cause_;
  std::exception_ptr origin_;
};

namespace detail {

/* An exception a callback threw rides along with the af_error_t it returns
 * as that error's payload (af_error_new_with): libaf keeps it through every
 * wrapping, and converting libaf's error finds it on the node that carries
 * it. The magic number tells this header's payloads from another
 * binding's in the same process. */
struct Payload {
  static constexpr uint64_t kMagic = 0x6166687070657863ULL;  // "afhppexc"
  uint64_t magic = kMagic;
  std::exception_ptr thrown;
};
inline void destroy_payload(void* p) noexcept { delete static_cast<Payload*>(p); }
inline std::exception_ptr thrown_by(const af_error_t* e) noexcept {
  auto* p = static_cast<const Payload*>(af_error_payload(e));
  return p && p->magic == Payload::kMagic ? p->thrown : nullptr;
}

/* libaf's hints name C functions; say what a C++ caller calls instead. */
inline std::string binding_names(std::string msg) {
  static const std::pair<std::string_view, std::string_view> names[] = {
      {"af_register_function_with", "af::Context::register_function"},
      {"af_register_function", "af::Context::register_function"},
      {"af_context_route_fallback", "af::Context::route"},
      {"af_context_route", "af::Context::route"},
  };
  for (const auto& [from, to] : names) {
    for (size_t at = msg.find(from); at != std::string::npos; at = msg.find(from, at + to.size()))
      msg.replace(at, from.size(), to);
  }
  return msg;
}

inline Error convert(const af_error_t* e) {
  Code code = static_cast<Code>(af_error_code(e));
  std::string msg = af_error_message(e);
  if (const af_error_t* c = af_error_cause(e))
    return Error(code, binding_names(msg), std::make_shared<const Error>(convert(c)));
  std::exception_ptr origin = thrown_by(e);
  if (origin) {
    try {
      std::rethrow_exception(origin);
    } catch (const Error& own) {
      return own;  // a callback's own af::Error comes back as itself
    } catch (...) {
    }
  }
  return Error(code, binding_names(msg), nullptr, origin);
}

/* Throws the error (and frees it) if there is one. */
inline void check(af_error_t* e) {
  if (!e) return;
  Error err = convert(e);
  af_error_free(e);
  throw err;
}

/* The af_error_t* a callback returns for the exception in flight (call from
 * a catch block), carrying it for the caller. Never throws. */
inline af_error_t* error_for_current(Code other_code, const char* prefix) noexcept {
  std::exception_ptr ex = std::current_exception();
  int32_t code = static_cast<int32_t>(other_code);
  std::string msg;
  try {
    try {
      throw;
    } catch (const Error& e) {
      code = static_cast<int32_t>(e.code());
      msg = e.what();
    } catch (const std::exception& e) {
      msg = std::string(prefix) + e.what();
    } catch (...) {
      msg = std::string(prefix) + "unknown exception";
    }
    return af_error_new_with(code, msg.data(), msg.size(), new Payload{Payload::kMagic, ex}, destroy_payload);
  } catch (...) {
    return af_error_new(code, "", 0);  // out of memory: code only
  }
}

}  // namespace detail

}  // namespace af

#endif /* AF_HPP_ERROR_HPP */
