// Tracing and the operations (recorded inside a trace, evaluated outside).
#include "handles.h"
#include "prims/ops.h"
#include "trace/trace.h"

using namespace af;
using namespace af::capi;

namespace {


af_error_t* trace_with(const char* name, af_context_t* ctx, af_trace_fn fn, void* user_data,
                       const af_value_t* const* examples, size_t n_examples,
                       const af_value_t* static_mask, const af_value_t* list_mask, af_ir_t** out) {
  if (out) *out = nullptr;
  return guard([&] {
    require(ctx, name, "ctx");
    if (!fn) invalid(std::string(name) + ": `fn` is NULL");
    require(out, name, "out");
    std::vector<Value> ex = unwrap_all(examples, n_examples, name, "examples");
    Value mask = static_mask ? unwrap(static_mask) : Value();
    Value lists = list_mask ? unwrap(list_mask) : Value();
    auto run = [&](std::span<const Value> inputs) -> Value {
      // Input handles are borrowed by the callback; freed here.
      std::vector<af_value_t*> handles;
      struct Free {
        std::vector<af_value_t*>& h;
        ~Free() { for (af_value_t* v : h) af_value_free(v); }
      } free_inputs{handles};
      for (const Value& v : inputs) handles.push_back(wrap(v));
      af_value_t* result = nullptr;
      af_error_t* err = fn(user_data, ctx, handles.data(), handles.size(), &result);
      if (err) {
        af_value_free(result);
        throw from_callback(err, "the traced function");
      }
      if (!result) invalid("the traced function returned no output and no error");
      Value v = result->v;
      af_value_free(result);
      return v;
    };
    *out = wrap(trace(run, ex, mask, lists));
  });
}

}  // namespace

extern "C" {

af_error_t* af_trace(af_context_t* ctx, af_trace_fn fn, void* user_data,
                     const af_value_t* const* examples, size_t n_examples,
                     const af_value_t* static_mask, af_ir_t** out) {
  return trace_with("af_trace", ctx, fn, user_data, examples, n_examples, static_mask, nullptr,
                    out);
}

af_error_t* af_trace_with(af_context_t* ctx, af_trace_fn fn, void* user_data,
                          const af_value_t* const* examples, size_t n_examples,
                          const af_trace_options_t* options, af_ir_t** out) {
  if (options && options->struct_size < sizeof(af_trace_options_t)) {
    if (out) *out = nullptr;
    return guard([&] {
      invalid("af_trace_with: options->struct_size is " + std::to_string(options->struct_size) +
              "; set it to sizeof(af_trace_options_t)");
    });
  }
  return trace_with("af_trace_with", ctx, fn, user_data, examples, n_examples,
                    options ? options->static_mask : nullptr,
                    options ? options->list_mask : nullptr, out);
}

int32_t af_is_tracing(void) { return is_tracing() ? 1 : 0; }

af_error_t* af_tag_push(af_context_t* ctx, const char* tag, size_t len) {
  return guard([&] {
    require(ctx, "af_tag_push", "ctx");
    std::string_view t = text(tag, len, "af_tag_push", "tag");
    if (t.empty()) invalid("af_tag_push: the tag is empty");
    // Outside a trace, a lazy context tags the operations it records.
    if (ctx->lazy && !is_tracing()) ctx->lazy->push_tag(std::string(t));
    else push_tag(std::string(t));
  });
}
af_error_t* af_tag_pop(af_context_t* ctx) {
  return guard([&] {
    require(ctx, "af_tag_pop", "ctx");
    if (ctx->lazy && !is_tracing()) ctx->lazy->pop_tag();
    else pop_tag();
  });
}
af_error_t* af_name_push(af_context_t* ctx, const char* name, size_t len) {
  return guard([&] {
    require(ctx, "af_name_push", "ctx");
    std::string n(text(name, len, "af_name_push", "name"));
    if (ctx->lazy && !is_tracing())
      ctx->lazy->push_name(std::move(n));
    else
      push_name(std::move(n));
  });
}
af_error_t* af_name_pop(af_context_t* ctx) {
  return guard([&] {
    require(ctx, "af_name_pop", "ctx");
    if (ctx->lazy && !is_tracing())
      ctx->lazy->pop_name();
    else
      pop_name();
  });
}
af_error_t* af_fold_push(af_context_t* ctx) {
  return guard([&] {
    require(ctx, "af_fold_push", "ctx");
    push_fold();
  });
}
af_error_t* af_fold_pop(af_context_t* ctx) {
  return guard([&] {
    require(ctx, "af_fold_pop", "ctx");
    pop_fold();
  });
}

af_error_t* af_format(af_context_t* ctx, const char* tmpl, size_t tmpl_len,
                      const af_value_t* const* args, size_t n_args, const af_value_t* named,
                      af_value_t** out) {
  return op("af_format", ctx, out, [&](RunEnv& env) {
    std::string_view t = text(tmpl, tmpl_len, "af_format", "tmpl");
    return op_format(t, unwrap_all(args, n_args, "af_format", "args"),
                     named ? unwrap(named) : Value(), env);
  });
}

af_error_t* af_concat(af_context_t* ctx, const af_value_t* const* args, size_t n,
                      af_value_t** out) {
  return op("af_concat", ctx, out,
            [&](RunEnv& env) { return op_concat(unwrap_all(args, n, "af_concat", "args"), env); });
}

af_error_t* af_match(af_context_t* ctx, const af_value_t* a, const af_value_t* b,
                     af_value_t** out) {
  return op("af_match", ctx, out, [&](RunEnv& env) {
    require(a, "af_match", "a");
    require(b, "af_match", "b");
    return op_match(unwrap(a), unwrap(b), env);
  });
}

af_error_t* af_stop_gradient(af_context_t* ctx, const af_value_t* v, af_value_t** out) {
  return op("af_stop_gradient", ctx, out, [&](RunEnv& env) {
    require(v, "af_stop_gradient", "v");
    return op_stop_gradient(unwrap(v), env);
  });
}

af_error_t* af_depends(af_context_t* ctx, const af_value_t* value, const af_value_t* const* deps,
                       size_t n_deps, af_value_t** out) {
  return op("af_depends", ctx, out, [&](RunEnv& env) {
    require(value, "af_depends", "value");
    return op_depends(unwrap(value), unwrap_all(deps, n_deps, "af_depends", "deps"), env);
  });
}

af_error_t* af_checkpoint(af_context_t* ctx, const af_value_t* v, const char* key, size_t key_len,
                          const char* collection, size_t collection_len, af_value_t** out) {
  return op("af_checkpoint", ctx, out, [&](RunEnv& env) {
    require(v, "af_checkpoint", "v");
    return op_checkpoint(unwrap(v), text(key, key_len, "af_checkpoint", "key"),
                         text(collection, collection_len, "af_checkpoint", "collection"), env);
  });
}

}  // extern "C"
