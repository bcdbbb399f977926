#include "value/error_value.h"

namespace af {

// ---- errors as values

const char* code_name(Code c) noexcept {
  switch (c) {
    case Code::InvalidArgument: return "INVALID_ARGUMENT";
    case Code::NotFound: return "NOT_FOUND";
    case Code::Schema: return "SCHEMA";
    case Code::Format: return "FORMAT";
    case Code::Version: return "VERSION";
    case Code::Provider: return "PROVIDER";
    case Code::Timeout: return "TIMEOUT";
    case Code::Cancelled: return "CANCELLED";
    case Code::Callback: return "CALLBACK";
    case Code::IO: return "IO";
    case Code::OutOfMemory: return "OUT_OF_MEMORY";
    case Code::Internal: return "INTERNAL";
  }
  return "UNKNOWN";
}

Value error_value(const Error& e) {
  return Value::dict({{"error", Value::dict({{"code", Value::integer(int64_t(e.code()))},
                                             {"name", Value::str(code_name(e.code()))},
                                             {"message", Value::str(e.what())}})}});
}

bool is_error_value(const Value& v) noexcept {
  if (v.kind() != Kind::Dict || v.size() != 1) return false;
  const Value* e = v.find("error");
  if (!e || e->kind() != Kind::Dict || e->size() != 3) return false;
  const Value* code = e->find("code");
  const Value* name = e->find("name");
  const Value* message = e->find("message");
  return code && code->kind() == Kind::Int && name && name->kind() == Kind::Str && message &&
         message->kind() == Kind::Str;
}

}  // namespace af
