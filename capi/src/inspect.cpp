// Inspection and graph queries: JSON descriptions, sub-IRs, reachability,
// slices and the dry-run cost (the work is core/ir/query.h's).
#include "handles.h"
#include "ir/query.h"

#include <cstring>

using namespace af;
using namespace af::capi;

namespace {

// Names the C function in an error the core raised.
template <class F>
void naming(const char* fn, F&& f) {
  try {
    f();
  } catch (const Error& e) {
    throw Error(e.code(), std::string(fn) + ": " + e.what(), e.cause_ptr());
  }
}

std::vector<std::string> paths_arg(const char* const* paths, const size_t* lens, size_t n, const char* fn,
                                   const char* name) {
  if (!paths && n) invalid(std::string(fn) + ": `" + name + "` is NULL with count " + std::to_string(n));
  std::vector<std::string> out;
  for (size_t k = 0; k < n; ++k) {
    const std::string what = std::string(name) + "[" + std::to_string(k) + "]";
    out.emplace_back(text(paths[k], lens ? lens[k] : (paths[k] ? std::strlen(paths[k]) : 0), fn, what.c_str()));
  }
  return out;
}

}  // namespace

extern "C" {

af_error_t* af_ir_json(const af_ir_t* ir, af_bytes_t* out) {
  if (out) *out = af_bytes_t{nullptr, 0};
  return guard([&] {
    require(ir, "af_ir_json", "ir");
    require(out, "af_ir_json", "out");
    naming("af_ir_json", [&] { to_bytes(ir_json(*ir->ir), out); });
  });
}

af_error_t* af_ir_eqn_json(const af_ir_t* ir, size_t i, af_bytes_t* out) {
  if (out) *out = af_bytes_t{nullptr, 0};
  return guard([&] {
    require(ir, "af_ir_eqn_json", "ir");
    require(out, "af_ir_eqn_json", "out");
    naming("af_ir_eqn_json", [&] { to_bytes(eqn_json(*ir->ir, i), out); });
  });
}

af_error_t* af_ir_var_json(const af_ir_t* ir, uint32_t var, af_bytes_t* out) {
  if (out) *out = af_bytes_t{nullptr, 0};
  return guard([&] {
    require(ir, "af_ir_var_json", "ir");
    require(out, "af_ir_var_json", "out");
    naming("af_ir_var_json", [&] { to_bytes(var_json(*ir->ir, var), out); });
  });
}

af_error_t* af_ir_sub(const af_ir_t* ir, size_t i, const char* path, size_t path_len, af_ir_t** out) {
  if (out) *out = nullptr;
  return guard([&] {
    require(ir, "af_ir_sub", "ir");
    require(out, "af_ir_sub", "out");
    std::string_view p = text(path, path_len, "af_ir_sub", "path");
    naming("af_ir_sub", [&] { *out = wrap(sub_ir(*ir->ir, i, p)); });
  });
}

af_error_t* af_ir_related_json_with(const af_ir_t* ir, size_t i, uint32_t flags, uint64_t max_bytes,
                                    af_bytes_t* out) {
  if (out) *out = af_bytes_t{nullptr, 0};
  return guard([&] {
    require(ir, "af_ir_related_json", "ir");
    require(out, "af_ir_related_json", "out");
    if (flags & ~uint32_t(AF_IR_DESCENDANTS | AF_IR_DEEP))
      invalid("af_ir_related_json: unknown flags " + std::to_string(flags));
    naming("af_ir_related_json", [&] {
      to_bytes(related_json(*ir->ir, i, !(flags & AF_IR_DESCENDANTS), (flags & AF_IR_DEEP) != 0,
                            max_bytes ? max_bytes : kDefaultInspectBytes),
               out);
    });
  });
}

af_error_t* af_ir_related_json(const af_ir_t* ir, size_t i, uint32_t flags, af_bytes_t* out) {
  return af_ir_related_json_with(ir, i, flags, 0, out);
}

af_error_t* af_ir_slice(const af_ir_t* ir, const char* const* outputs, const size_t* output_lens,
                        size_t n_outputs, const char* const* inputs, const size_t* input_lens, size_t n_inputs,
                        af_ir_t** out) {
  if (out) *out = nullptr;
  return guard([&] {
    require(ir, "af_ir_slice", "ir");
    require(out, "af_ir_slice", "out");
    auto outs = paths_arg(outputs, output_lens, n_outputs, "af_ir_slice", "outputs");
    auto ins = paths_arg(inputs, input_lens, n_inputs, "af_ir_slice", "inputs");
    naming("af_ir_slice", [&] { *out = wrap(slice(*ir->ir, outs, ins, inputs == nullptr)); });
  });
}

af_error_t* af_ir_cost_json(const af_ir_t* ir, int64_t batch, af_bytes_t* out) {
  if (out) *out = af_bytes_t{nullptr, 0};
  return guard([&] {
    require(ir, "af_ir_cost_json", "ir");
    require(out, "af_ir_cost_json", "out");
    naming("af_ir_cost_json", [&] { to_bytes(cost_json(*ir->ir, batch), out); });
  });
}

}  // extern "C"
