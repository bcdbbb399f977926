// Errors, bytes and version.
#include <cstdlib>
#include <cstring>

#include "handles.h"

namespace af::capi {

namespace {
af_error g_oom{AF_ERR_OUT_OF_MEMORY, "out of memory", nullptr, false, true};

std::string sanitize(const char* msg, size_t len) {
  std::string s(msg ? msg : "", msg ? len : 0);
  if (valid_utf8(s)) return s;
  // Replace each byte of an invalid sequence with U+FFFD, keeping valid runs.
  std::string out;
  for (size_t i = 0; i < s.size();) {
    size_t n = 1;
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0xF0) n = 4; else if (c >= 0xE0) n = 3; else if (c >= 0xC0) n = 2;
    if (i + n <= s.size() && valid_utf8(std::string_view(s).substr(i, n))) {
      out.append(s, i, n);
      i += n;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}
}  // namespace

af_error* out_of_memory() { return &g_oom; }

af_error* to_c(const Error& e) {
  try {
    auto* c = new af_error{int32_t(e.code()), e.what(), nullptr, false, false, e.payload()};
    if (e.cause()) c->cause = to_c(*e.cause());
    return c;
  } catch (...) {
    return out_of_memory();
  }
}

static std::shared_ptr<const Error> to_core(const af_error* e) {
  if (!e) return nullptr;
  return std::make_shared<const Error>(Code(e->code), e->message, to_core(e->cause), e->payload);
}

Error from_callback(af_error* e, const std::string& what) {
  std::shared_ptr<const Error> core = to_core(e);
  bool user_made = e->user_made;
  af_error_free(e);
  if (!user_made) return *core;
  return Error(Code::Callback, what + " failed: " + core->what(), core);
}

std::string_view text(const char* s, size_t len, const char* fn, const char* name) {
  if (!s && len) invalid(std::string(fn) + ": `" + name + "` is NULL with length " + std::to_string(len));
  std::string_view sv(s ? s : "", s ? len : 0);
  if (!valid_utf8(sv)) invalid(std::string(fn) + ": `" + name + "` is not valid UTF-8");
  return sv;
}

void to_bytes(std::string_view s, af_bytes_t* out) {
  auto* data = static_cast<uint8_t*>(std::malloc(s.size() + 1));
  if (!data) throw std::bad_alloc();
  std::memcpy(data, s.data(), s.size());
  data[s.size()] = 0;
  out->data = data;
  out->len = s.size();
}

}  // namespace af::capi

using namespace af::capi;

extern "C" {

int32_t af_error_code(const af_error_t* e) { return e ? e->code : AF_ERR_INVALID_ARGUMENT; }
const char* af_error_code_name(int32_t code) {
  return code >= AF_ERR_INVALID_ARGUMENT && code <= AF_ERR_INTERNAL ? af::code_name(af::Code(code)) : "UNKNOWN";
}
const char* af_error_message(const af_error_t* e) { return e ? e->message.c_str() : ""; }
const af_error_t* af_error_cause(const af_error_t* e) { return e ? e->cause : nullptr; }

af_error_t* af_error_new(int32_t code, const char* msg, size_t len) {
  return af_error_new_with(code, msg, len, nullptr, nullptr);
}

af_error_t* af_error_new_with(int32_t code, const char* msg, size_t len, void* payload,
                              void (*destroy)(void*)) {
  std::shared_ptr<void> held;
  try {
    if (payload) held = std::shared_ptr<void>(payload, [destroy](void* p) {
      if (destroy) destroy(p);
    });
  } catch (...) {  // no room for the count: shared_ptr ran destroy, as promised
    return nullptr;
  }
  try {
    if (code < AF_ERR_INVALID_ARGUMENT || code > AF_ERR_INTERNAL) code = AF_ERR_INTERNAL;
    return new af_error{code, sanitize(msg, len), nullptr, true, false, std::move(held)};
  } catch (...) {
    return nullptr;  // held's destroy has run
  }
}

void* af_error_payload(const af_error_t* e) { return e ? e->payload.get() : nullptr; }

void af_error_free(af_error_t* e) {
  while (e && !e->is_static) {
    af_error* cause = e->cause;
    delete e;
    e = cause;
  }
}

void af_bytes_free(af_bytes_t* b) {
  if (!b) return;
  std::free(b->data);
  b->data = nullptr;
  b->len = 0;
}

const char* af_version(void) { return AF_VERSION_STRING; }
uint32_t af_abi_version(void) { return AF_ABI_VERSION; }

}  // extern "C"
