// Files (through value/file.h: atomic save, bounded reads of regular files
// only); the one-line summary `af verify` prints.
#include "io/afg.h"
#include "value/error.h"
#include "value/file.h"

namespace af::io {

void write_file_atomic(const std::string& path, std::string_view bytes) {
  af::write_file_atomic(path, bytes, "save graph");
}

std::vector<uint8_t> read_file(const std::string& path, uint64_t max_bytes) {
  return read_regular_file(path, max_bytes, "load graph");
}

std::string summary_json(const Loaded& g) {
  std::string out = "{\"ok\":true,\"container_version\":" + std::to_string(g.container_version) +
                    ",\"format_version\":" + std::to_string(g.format_version) + ",\"producer\":";
  append_json_string(out, g.producer);
  out += ",\"file_bytes\":" + std::to_string(g.file_bytes) +
         ",\"content_bytes\":" + std::to_string(g.content_bytes) +
         ",\"irs\":" + std::to_string(g.n_irs) + ",\"equations\":" + std::to_string(g.n_eqns) +
         ",\"primitives\":[";
  for (size_t i = 0; i < g.prims.size(); ++i) {
    if (i) out += ',';
    append_json_string(out, g.prims[i]);
  }
  out += "],\"host_functions\":[";
  for (size_t i = 0; i < g.host_functions.size(); ++i) {
    if (i) out += ',';
    append_json_string(out, g.host_functions[i]);
  }
  return out + "]}";
}

}  // namespace af::io
