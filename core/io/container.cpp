// The .afg container: a fixed little-endian header, then the flatbuffer as
// one zstd frame. Header (container version 1, 48 bytes):
//   0  8  magic "\x89AFG\r\n\x1a\n"
//   8  4  header_len: bytes before the payload (>= 48; later versions may
//         append fields, which older readers skip)
//  12  2  container_version
//  14  2  flags (informational)
//  16  8  required_features (unknown bit -> VERSION)
//  24  8  payload_len: compressed bytes after the header (exactly to the end)
//  32  8  content_len: decompressed flatbuffer bytes (also the zstd frame's
//         declared content size)
//  40  4  crc32 of bytes [0, 40) + [44, header_len) + the payload
//  44  4  reserved, 0
#include <zlib.h>
#include <zstd.h>

#include <cstdio>
#include <cstring>
#include <memory>

#include "io/afg.h"
#include "value/error.h"
#include "value/huge_pages.h"

namespace af::io {

namespace {

[[noreturn]] void bad(const std::string& why) { fail(Code::Format, "invalid graph: " + why); }

uint64_t get_le(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

void put_le(std::string& out, size_t at, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out[at + size_t(i)] = char(uint8_t(v >> (8 * i)));
}

std::string size_text(uint64_t n) { return std::to_string(n) + " bytes"; }

// Names the usual ways a binary file gets damaged in transit.
std::string magic_problem(std::span<const uint8_t> b) {
  auto starts = [&](std::string_view s) {
    return b.size() >= s.size() && std::memcmp(b.data(), s.data(), s.size()) == 0;
  };
  if (starts("\x89" "AFG\n")) return "its line endings were converted (CR LF -> LF); copy it in binary mode";
  if (starts("\x89" "AFG\r\r\n")) return "its line endings were converted (LF -> CR LF); copy it in binary mode";
  if (starts("\x09" "AFG") || starts("AFG")) return "it went through a 7-bit channel; copy it in binary mode";
  if (starts("{")) return "it looks like JSON; convert it with `af convert FILE --from json`";
  return "it does not start with the .afg magic bytes (not a libaf graph)";
}

}  // namespace

uint32_t crc32(uint32_t crc, const uint8_t* data, size_t n) {
  return uint32_t(::crc32_z(crc, data, n));
}

std::string seal(std::string_view flatbuffer, uint16_t flags, uint64_t required) {
  if (flatbuffer.size() > kMaxContentBytes)
    invalid("save graph: the graph is " + size_text(flatbuffer.size()) + ", over the " +
            size_text(kMaxContentBytes) + " limit");
  std::string out(kHeaderSize + ZSTD_compressBound(flatbuffer.size()), '\0');
  std::unique_ptr<ZSTD_CCtx, size_t (*)(ZSTD_CCtx*)> cctx(ZSTD_createCCtx(), ZSTD_freeCCtx);
  if (!cctx) throw std::bad_alloc();
  // Level 3, single thread, content size in the frame: deterministic bytes.
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_compressionLevel, 3);
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_contentSizeFlag, 1);
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_checksumFlag, 0);
  size_t n = ZSTD_compress2(cctx.get(), out.data() + kHeaderSize, out.size() - kHeaderSize,
                            flatbuffer.data(), flatbuffer.size());
  if (ZSTD_isError(n)) fail(Code::Internal, std::string("save graph: zstd: ") + ZSTD_getErrorName(n));
  out.resize(kHeaderSize + n);
  std::memcpy(out.data(), kMagic, 8);
  put_le(out, 8, kHeaderSize, 4);
  put_le(out, 12, kContainerVersion, 2);
  put_le(out, 14, flags, 2);
  put_le(out, 16, required, 8);
  put_le(out, 24, n, 8);
  put_le(out, 32, flatbuffer.size(), 8);
  put_le(out, 44, 0, 4);
  const auto* b = reinterpret_cast<const uint8_t*>(out.data());
  uint32_t crc = crc32(0, b, 40);
  crc = crc32(crc, b + 44, kHeaderSize - 44);
  crc = crc32(crc, b + kHeaderSize, n);
  put_le(out, 40, crc, 4);
  return out;
}

Unsealed unseal(std::span<const uint8_t> b) {
  // 1. Size cap, before anything is read.
  if (b.size() > kMaxFileBytes)
    bad("the file is " + size_text(b.size()) + ", over the " + size_text(kMaxFileBytes) + " limit");
  // 2. Header.
  if (b.size() < 8 || std::memcmp(b.data(), kMagic, 8) != 0) bad(magic_problem(b));
  if (b.size() < kHeaderSize)
    bad("the file is " + size_text(b.size()) + ", shorter than the " + size_text(kHeaderSize) +
        " header (truncated)");
  const uint64_t header_len = get_le(b.data() + 8, 4);
  const uint64_t version = get_le(b.data() + 12, 2);
  const uint64_t flags = get_le(b.data() + 14, 2);
  const uint64_t required = get_le(b.data() + 16, 8);
  const uint64_t payload_len = get_le(b.data() + 24, 8);
  const uint64_t content_len = get_le(b.data() + 32, 8);
  const uint32_t stored_crc = uint32_t(get_le(b.data() + 40, 4));
  if (version == 0) bad("container version 0 is not a valid version");
  if (version > kContainerVersion)
    fail(Code::Version, "this graph uses container version " + std::to_string(version) +
                            "; this libaf reads up to version " +
                            std::to_string(kContainerVersion) + " (upgrade libaf)");
  if (uint64_t unknown = required & ~kKnownFeatures)
    fail(Code::Version, "this graph requires features this libaf does not have (feature bits 0x" +
                            [&] {
                              char buf[20];
                              std::snprintf(buf, sizeof buf, "%llx", (unsigned long long)unknown);
                              return std::string(buf);
                            }() +
                            "); upgrade libaf");
  if (header_len < kHeaderSize)
    bad("the header length is " + std::to_string(header_len) + ", below the minimum " +
        std::to_string(kHeaderSize));
  if (header_len > b.size()) bad("the header length runs past the end of the file (truncated)");
  // Overflow-safe: header_len <= size, so size - header_len cannot wrap.
  const uint64_t rest = b.size() - header_len;
  if (payload_len != rest)
    bad("the header declares a " + size_text(payload_len) + " payload but " + size_text(rest) +
        (payload_len > rest ? " follow (truncated)" : " follow (trailing bytes)"));
  if (content_len == 0 || content_len > kMaxContentBytes)
    bad("the declared graph size " + size_text(content_len) + " is outside 1.." +
        size_text(kMaxContentBytes));
  uint32_t crc = crc32(0, b.data(), 40);
  crc = crc32(crc, b.data() + 44, size_t(header_len - 44));
  const uint8_t* payload = b.data() + header_len;
  crc = crc32(crc, payload, size_t(payload_len));
  if (crc != stored_crc) bad("checksum mismatch (the file is damaged)");

  // 3. One zstd frame, declared content size required and equal to the header's.
  size_t frame = ZSTD_findFrameCompressedSize(payload, size_t(payload_len));
  if (ZSTD_isError(frame)) bad(std::string("the payload is not a zstd frame (") + ZSTD_getErrorName(frame) + ")");
  if (frame != payload_len) bad("the payload holds more than one zstd frame");
  unsigned long long declared = ZSTD_getFrameContentSize(payload, size_t(payload_len));
  if (declared == ZSTD_CONTENTSIZE_UNKNOWN) bad("the zstd frame does not declare its content size");
  if (declared == ZSTD_CONTENTSIZE_ERROR) bad("the zstd frame header is damaged");
  if (declared != content_len)
    bad("the zstd frame declares " + size_text(declared) + " but the header " + size_text(content_len));

  Unsealed u;
  u.container_version = uint16_t(version);
  u.flags = uint16_t(flags);
  // Not zero-filled: zstd writes every byte, and the size is checked below.
  u.storage.reset(new uint64_t[size_t((content_len + 7) / 8)]);
  u.size = size_t(content_len);
  advise_huge_pages(u.storage.get(), u.size);
  std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> dctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
  if (!dctx) throw std::bad_alloc();
  ZSTD_DCtx_setParameter(dctx.get(), ZSTD_d_windowLogMax, 27);  // bounded decoder memory
  size_t n = ZSTD_decompressDCtx(dctx.get(), u.storage.get(), u.size, payload, size_t(payload_len));
  if (ZSTD_isError(n)) bad(std::string("zstd: ") + ZSTD_getErrorName(n));
  if (n != u.size) bad("the zstd frame decompressed to " + size_text(n) + ", not the declared " + size_text(u.size));
  return u;
}

}  // namespace af::io
