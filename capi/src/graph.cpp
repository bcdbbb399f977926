// Saved graphs: IR <-> .afg bytes and files, the JSON form, verification.
#include "handles.h"
#include "exec/program.h"
#include "io/afg.h"

using namespace af;
using namespace af::capi;

namespace {

std::string path_arg(const char* path, size_t len, const char* fn) {
  std::string_view p = text(path, len, fn, "path");
  if (p.empty()) invalid(std::string(fn) + ": `path` is empty");
  return std::string(p);
}

std::span<const uint8_t> bytes_arg(const uint8_t* data, size_t len, const char* fn) {
  if (!data && len) invalid(std::string(fn) + ": `data` is NULL with length " + std::to_string(len));
  return {data ? data : reinterpret_cast<const uint8_t*>(""), data ? len : 0};
}

// Every check, the plan's meaning included (core/io checks only its shape,
// since io does not depend on exec). Returns the program when there is a plan.
std::shared_ptr<const Program> check_plan(const io::Loaded& g) {
  if (!g.plan) return nullptr;
  return program_from_plan(g.ir, *g.plan);
}

// bytes: a span, or a file's bytes (a vector rvalue: freed once decompressed).
template <class Bytes>
io::Loaded load_checked(Bytes&& bytes) {
  io::Loaded g = io::load(std::forward<Bytes>(bytes));
  check_plan(g);
  return g;
}

// A file's errors name the file.
template <class F>
auto naming_file(const std::string& path, F&& f) {
  try {
    return f();
  } catch (const Error& e) {
    throw Error(e.code(), "\"" + path + "\": " + e.what(), e.cause_ptr());
  }
}

}  // namespace

extern "C" {

af_error_t* af_ir_save(const af_ir_t* ir, const char* path, size_t path_len) {
  return guard([&] {
    require(ir, "af_ir_save", "ir");
    std::string p = path_arg(path, path_len, "af_ir_save");
    io::write_file_atomic(p, io::save_ir(*ir->ir));
  });
}

af_error_t* af_ir_load(af_context_t* ctx, const char* path, size_t path_len, af_ir_t** out) {
  if (out) *out = nullptr;
  return guard([&] {
    require(ctx, "af_ir_load", "ctx");
    require(out, "af_ir_load", "out");
    std::string p = path_arg(path, path_len, "af_ir_load");
    std::vector<uint8_t> bytes = io::read_file(p);
    *out = wrap(naming_file(p, [&] { return load_checked(std::move(bytes)).ir; }));
  });
}

af_error_t* af_ir_to_bytes(const af_ir_t* ir, af_bytes_t* out) {
  if (out) *out = af_bytes_t{nullptr, 0};
  return guard([&] {
    require(ir, "af_ir_to_bytes", "ir");
    require(out, "af_ir_to_bytes", "out");
    to_bytes(io::save_ir(*ir->ir), out);
  });
}

af_error_t* af_ir_from_bytes(af_context_t* ctx, const uint8_t* data, size_t len, af_ir_t** out) {
  if (out) *out = nullptr;
  return guard([&] {
    require(ctx, "af_ir_from_bytes", "ctx");
    require(out, "af_ir_from_bytes", "out");
    *out = wrap(load_checked(bytes_arg(data, len, "af_ir_from_bytes")).ir);
  });
}

af_error_t* af_graph_verify(af_context_t* ctx, const uint8_t* data, size_t len, af_bytes_t* summary) {
  if (summary) *summary = af_bytes_t{nullptr, 0};
  return guard([&] {
    require(ctx, "af_graph_verify", "ctx");
    io::Loaded g = load_checked(bytes_arg(data, len, "af_graph_verify"));
    if (summary) to_bytes(io::summary_json(g), summary);
  });
}

af_error_t* af_graph_to_json(af_context_t* ctx, const uint8_t* data, size_t len, af_bytes_t* out) {
  if (out) *out = af_bytes_t{nullptr, 0};
  return guard([&] {
    require(ctx, "af_graph_to_json", "ctx");
    require(out, "af_graph_to_json", "out");
    io::Loaded g = load_checked(bytes_arg(data, len, "af_graph_to_json"));
    to_bytes(io::graph_to_json(*g.ir, g.plan ? &*g.plan : nullptr), out);
  });
}

af_error_t* af_graph_from_json(af_context_t* ctx, const char* json, size_t len, af_bytes_t* out) {
  if (out) *out = af_bytes_t{nullptr, 0};
  return guard([&] {
    require(ctx, "af_graph_from_json", "ctx");
    require(out, "af_graph_from_json", "out");
    if (!json && len) invalid("af_graph_from_json: `json` is NULL with length " + std::to_string(len));
    io::Loaded g = io::graph_from_json(std::string_view(json ? json : "", json ? len : 0));
    check_plan(g);
    to_bytes(io::save_ir(*g.ir, g.plan ? &*g.plan : nullptr), out);
  });
}

af_error_t* af_program_save(const af_program_t* p, const char* path, size_t path_len) {
  return guard([&] {
    require(p, "af_program_save", "p");
    std::string file = path_arg(path, path_len, "af_program_save");
    io::write_file_atomic(file, save_program(*program_of(p)));
  });
}

af_error_t* af_program_load(af_context_t* ctx, const char* path, size_t path_len,
                            af_program_t** out) {
  if (out) *out = nullptr;
  return guard([&] {
    require(ctx, "af_program_load", "ctx");
    require(out, "af_program_load", "out");
    std::string file = path_arg(path, path_len, "af_program_load");
    std::vector<uint8_t> bytes = io::read_file(file);
    std::shared_ptr<const Program> prog = naming_file(file, [&] { return load_program(bytes, &ctx->core.plans, &ctx->core.compiles); });
    *out = wrap(std::move(prog));
  });
}

}  // extern "C"
