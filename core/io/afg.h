// Saved graphs (.afg): an IR as a FlatBuffers `Graph` (schemas/af_graph.fbs)
// compressed as one zstd frame behind a small fixed header. Saving is
// deterministic (the same IR gives the same bytes); loading treats the bytes
// as untrusted and runs every check in the order of core/io/README.md, "Loading" before it
// builds anything. Layout, limits and error codes: core/io/README.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "io/plan_data.h"
#include "ir/ir.h"

namespace af::io {

// ---- Container and format versions (schemas/README.md keeps the history).
inline constexpr uint32_t kFormatVersion = 1;     // Graph.format_version written
inline constexpr uint16_t kContainerVersion = 1;  // header layout written
inline constexpr size_t kHeaderSize = 48;         // header bytes written (v1)
// "\x89AFG\r\n\x1a\n": the high byte catches 7-bit transfers, CR LF and LF
// catch line-ending conversion in either direction, ^Z stops DOS `type`.
inline constexpr uint8_t kMagic[8] = {0x89, 'A', 'F', 'G', '\r', '\n', 0x1a, '\n'};
// Header flags (informational: readers ignore unknown ones).
inline constexpr uint16_t kFlagHasHostFunctions = 1u << 0;
// Required-feature bits: a reader that does not know one refuses the file
// with VERSION. None are defined in container version 1.
inline constexpr uint64_t kKnownFeatures = 0;

// ---- Limits. The saver enforces the same ones, so whatever saves loads.
inline constexpr uint64_t kMaxFileBytes = 1ull << 30;     // whole file
inline constexpr uint64_t kMaxContentBytes = 1ull << 30;  // decompressed flatbuffer
inline constexpr uint32_t kMaxVerifierDepth = 16;         // tables + vectors nesting
inline constexpr uint32_t kMaxVerifierTables = 1u << 24;
inline constexpr uint32_t kMaxTreeDepth = 256;    // nesting of literal values and trees
inline constexpr uint32_t kMaxIrDepth = 64;       // IRs nested in params
inline constexpr uint32_t kMaxIndex = 0x7fffffffu;  // vars, literals (atoms use bit 31)
// Equations counted through every param reference (a shared sub-IR counts
// each time it is referenced), so a few bytes cannot expand into more work
// than printing or validating a real program would.
inline constexpr uint64_t kMaxExpandedEqns = 1ull << 32;

// The producer string written into every graph ("libaf 0.1.0").
const std::string& producer();

// ---- IR <-> bytes.


// IR (and, for a program, its plan) -> .afg bytes. INVALID_ARGUMENT if the
// IR is beyond a limit (nesting, sizes) or holds what no graph can (a
// placeholder, a null sub-IR).
std::string save_ir(const IR& ir, const PlanData* plan = nullptr);

// What a loaded graph holds besides its IR.
struct Loaded {
  IRPtr ir;
  uint16_t container_version = 0;
  uint32_t format_version = 0;
  std::string producer;
  std::vector<std::string> host_functions;  // sorted
  std::vector<std::string> prims;           // "name" or "name@version", in graph order
  uint64_t file_bytes = 0;
  uint64_t content_bytes = 0;  // decompressed flatbuffer
  size_t n_irs = 0;
  size_t n_eqns = 0;            // over every IR of the graph
  std::optional<PlanData> plan;  // a saved program's plan (shape checked only)
};

// .afg bytes -> IR, after every check. FORMAT: damaged or inconsistent
// bytes; VERSION: a newer container, format, feature or an unknown
// primitive (named). Never reads outside `bytes`, never crashes.
Loaded load(std::span<const uint8_t> bytes);
inline IRPtr load_ir(std::span<const uint8_t> bytes) { return load(bytes).ir; }

// ---- The readable JSON form (af convert). Round trip exact: bytes -> JSON
// -> bytes gives the same bytes; JSON is checked exactly like bytes.
std::string graph_to_json(const IR& ir, const PlanData* plan = nullptr);
Loaded graph_from_json(std::string_view json);

// A one-line JSON summary of a loaded graph (af verify).
std::string summary_json(const Loaded& g);

// ---- Files.

// Writes bytes to `path` through a unique temporary file in the same
// directory, fsync and a rename (value/file.h), so a crash never leaves a
// half-written graph. IO on failure.
void write_file_atomic(const std::string& path, std::string_view bytes);
// Reads a whole regular file; FORMAT if it is larger than `max_bytes`, IO if
// it cannot be read or is not a regular file (a FIFO is refused, never
// waited on).
std::vector<uint8_t> read_file(const std::string& path, uint64_t max_bytes = kMaxFileBytes);

// ---- Container internals, exposed for tests and the fuzzer.

// Wraps a flatbuffer into header + zstd frame (checksummed).
std::string seal(std::string_view flatbuffer, uint16_t flags = 0, uint64_t required = 0);
// Header and zstd checks; returns the decompressed flatbuffer (8-aligned).
struct Unsealed {
  std::unique_ptr<uint64_t[]> storage;  // the flatbuffer, 8-byte aligned
  size_t size = 0;
  uint16_t container_version = 0;
  uint16_t flags = 0;
  const uint8_t* data() const { return reinterpret_cast<const uint8_t*>(storage.get()); }
};
Unsealed unseal(std::span<const uint8_t> bytes);
// CRC-32 (IEEE 802.3: zlib's crc32), continuing from crc.
uint32_t crc32(uint32_t crc, const uint8_t* data, size_t n);

}  // namespace af::io
