// The C handles and the one place where core exceptions become af_error_t*.
// capi/src is translation only: handles <-> core objects, errors <-> codes.
#pragma once

#include <af/af.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <string_view>

#include "exec/context.h"
#include "rt/env.h"
#include "exec/sequential.h"
#include "exec/program.h"
#include "ir/ir.h"
#include "lazy/graph.h"
#include "value/error.h"
#include "value/value.h"

struct af_error {
  int32_t code;
  std::string message;
  af_error* cause;
  bool user_made;  // made by af_error_new(_with) (a callback's own failure)
  bool is_static;  // the preallocated out-of-memory error: never freed
  std::shared_ptr<void> payload = nullptr;  // af_error_new_with's, shared with the core's copies
};

struct af_context {
  af::ExecContext core;
  af::RunEnv env{&core};
  // Set on a lazy context (capi/src/context.cpp); destroyed first.
  std::shared_ptr<af::lazy::Graph> lazy;
};

struct af_value {
  mutable std::atomic<uint32_t> refs{1};
  af::Value v;
};

struct af_ir {
  mutable std::atomic<uint32_t> refs{1};
  af::IRPtr ir;
  // plan_key(*ir), computed once: the key of the context's plan cache.
  std::once_flag keyed;
  uint64_t key = 0;
};

struct af_walk {
  std::unique_ptr<af::Walker> walker;
  af::RunEnv env;
};

namespace af::capi {

af_error* to_c(const Error& e);
// A callback's error as a core Error: user-made errors become CALLBACK with
// the original as cause; errors libaf made pass through unchanged. Frees e.
Error from_callback(af_error* e, const std::string& what);
af_error* out_of_memory();

// Runs f, turning every exception into an af_error_t*. Never throws.
template <class F>
af_error_t* guard(F&& f) noexcept {
  try {
    f();
    return nullptr;
  } catch (const Error& e) {
    return to_c(e);
  } catch (const std::bad_alloc&) {
    return out_of_memory();
  } catch (const std::exception& e) {
    return to_c(Error(Code::Internal, std::string("internal error: ") + e.what()));
  } catch (...) {
    return to_c(Error(Code::Internal, "internal error: unknown exception"));
  }
}

// Throws INVALID_ARGUMENT "<fn>: `<name>` is NULL" when p is null.
inline void require(const void* p, const char* fn, const char* name) {
  if (!p) invalid(std::string(fn) + ": `" + name + "` is NULL");
}
// A (ptr, len) string argument, validated as UTF-8.
std::string_view text(const char* s, size_t len, const char* fn, const char* name);

af_value* wrap(Value v);
// The common shape of an operation (af_format, af_switch, ...): check ctx
// and out, compute on the context's environment, wrap the value.
template <class F>
af_error_t* op(const char* fn, af_context_t* ctx, af_value_t** out, F&& compute) {
  if (out) *out = nullptr;
  return guard([&] {
    require(ctx, fn, "ctx");
    require(out, fn, "out");
    *out = wrap(compute(ctx->env));
  });
}
inline const Value& unwrap(const af_value* v) { return v->v; }
// n value handles -> Values; INVALID_ARGUMENT naming the NULL entry.
std::vector<Value> unwrap_all(const af_value_t* const* items, size_t n, const char* fn,
                              const char* name);
// v with its promises evaluated (a read, or a value passed where content is
// needed: an eager call's inputs).
inline Value resolved(const af_value* v) { return resolve(v->v); }
std::vector<Value> resolved_all(const af_value_t* const* items, size_t n, const char* fn,
                                const char* name);
af_ir* wrap(IRPtr ir);
// ir's program from ctx's plan cache (compiled on a miss).
std::shared_ptr<const Program> program_of(af_context_t* ctx, const af_ir* ir);
// A program handle's Program, and a new handle for one (saved graphs).
const std::shared_ptr<const Program>& program_of(const af_program* p);
af_program* wrap(std::shared_ptr<const Program> p);
void to_bytes(std::string_view s, af_bytes_t* out);

}  // namespace af::capi
