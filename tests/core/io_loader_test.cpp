// The loader on untrusted bytes: every check of core/io/README.md, "Loading" rejects what it
// must, with FORMAT for damage and VERSION for what a newer libaf may read,
// and no input crashes it (run under ASan/UBSan by tools/test.sh).
#include <zstd.h>

#include <cstring>

#include "af_graph_generated.h"
#include "io_test_util.h"

namespace af {
namespace {

using iotest::as_span;

// Loads bytes; expects an Error with `code` whose message has every fragment.
void expect_load_error(const std::string& bytes, Code code, std::vector<std::string> fragments) {
  try {
    io::load_ir(as_span(bytes));
    ADD_FAILURE() << "loaded; expected code " << int(code) << " with \"" << fragments[0] << "\"";
  } catch (const Error& e) {
    EXPECT_EQ(int(e.code()), int(code)) << e.what();
    for (const std::string& f : fragments)
      EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << "\"" << f << "\" not in: " << e.what();
  }
}

std::string hello_bytes() { return iotest::save(iotest::hello()); }

void put_le(std::string& b, size_t at, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) b[at + size_t(i)] = char(uint8_t(v >> (8 * i)));
}

// Recomputes the header checksum after a deliberate edit, so the check
// under test is the one that fires.
void fix_crc(std::string& b) {
  const auto* p = reinterpret_cast<const uint8_t*>(b.data());
  uint64_t header_len = uint8_t(b[8]) | uint8_t(b[9]) << 8 | uint8_t(b[10]) << 16 | uint64_t(uint8_t(b[11])) << 24;
  if (header_len < io::kHeaderSize || header_len > b.size()) header_len = io::kHeaderSize;
  uint32_t crc = io::crc32(0, p, 40);
  crc = io::crc32(crc, p + 44, size_t(header_len - 44));
  crc = io::crc32(crc, p + header_len, b.size() - header_len);
  put_le(b, 40, crc, 4);
}

// A RawGraph of hello, to mutate and write back.
io::RawGraph hello_raw() { return io::encode(*iotest::hello()); }
std::string sealed(const io::RawGraph& g) { return io::seal(io::write_flatbuffer(g)); }

// ---- 1. size cap and 2. header

TEST(Loader, EveryTruncationIsFormat) {
  std::string b = hello_bytes();
  for (size_t n = 0; n < b.size(); ++n) {
    try {
      io::load_ir(as_span(b.substr(0, n)));
      ADD_FAILURE() << "a file truncated to " << n << " bytes loaded";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Code::Format) << n << ": " << e.what();
    }
  }
}

TEST(Loader, EverySingleByteChangeIsCaught) {
  std::string b = hello_bytes();
  for (size_t i = 0; i < b.size(); ++i) {
    for (uint8_t x : {uint8_t(0x01), uint8_t(0x80), uint8_t(0xff)}) {
      std::string d = b;
      d[i] = char(uint8_t(d[i]) ^ x);
      try {
        io::load_ir(as_span(d));
        // The reserved header bytes are covered by the checksum too, so no
        // change may go unnoticed.
        ADD_FAILURE() << "byte " << i << " ^ " << int(x) << " went unnoticed";
      } catch (const Error& e) {
        EXPECT_TRUE(e.code() == Code::Format || e.code() == Code::Version) << i << ": " << e.what();
      }
    }
  }
}

TEST(Loader, MagicNamesLineEndingAndTextDamage) {
  std::string b = hello_bytes();
  std::string crlf_to_lf = b.substr(0, 4) + "\n" + b.substr(6);
  expect_load_error(crlf_to_lf, Code::Format, {"line endings", "binary mode"});
  std::string lf_to_crlf = b.substr(0, 4) + "\r\r\n" + b.substr(6);
  expect_load_error(lf_to_crlf, Code::Format, {"line endings"});
  std::string seven_bit = b;
  seven_bit[0] = 0x09;
  expect_load_error(seven_bit, Code::Format, {"7-bit"});
  expect_load_error("{\"afg\": 1}", Code::Format, {"JSON", "af convert"});
  expect_load_error("", Code::Format, {"magic"});
  expect_load_error("hello world, not a graph", Code::Format, {"magic"});
}

TEST(Loader, HeaderChecks) {
  std::string b = hello_bytes();
  auto edited = [&](size_t at, uint64_t v, int n, bool crc = true) {
    std::string d = b;
    put_le(d, at, v, n);
    if (crc) fix_crc(d);
    return d;
  };
  expect_load_error(b.substr(0, 20), Code::Format, {"shorter than the 48 bytes header"});
  expect_load_error(edited(12, 2, 2), Code::Version, {"container version 2", "upgrade"});
  expect_load_error(edited(12, 0, 2), Code::Format, {"container version 0"});
  expect_load_error(edited(16, 1ull << 5, 8), Code::Version, {"feature bits 0x20"});
  expect_load_error(edited(8, 47, 4), Code::Format, {"header length is 47"});
  expect_load_error(edited(8, 1u << 30, 4), Code::Format, {"past the end"});
  expect_load_error(edited(24, 5, 8), Code::Format, {"trailing bytes"});
  expect_load_error(edited(24, ~0ull, 8), Code::Format, {"truncated"});
  expect_load_error(edited(32, 0, 8), Code::Format, {"declared graph size"});
  expect_load_error(edited(32, ~0ull, 8), Code::Format, {"declared graph size"});
  expect_load_error(edited(40, 0, 4, false), Code::Format, {"checksum mismatch"});
  std::string trailing = b + "x";
  expect_load_error(trailing, Code::Format, {"trailing bytes"});
  // A longer header (a later container version may append fields) is fine
  // as long as its bytes are covered by the checksum.
  std::string longer = b.substr(0, io::kHeaderSize) + std::string(8, '\0') + b.substr(io::kHeaderSize);
  put_le(longer, 8, io::kHeaderSize + 8, 4);
  fix_crc(longer);
  EXPECT_TRUE(ir_equal(*io::load_ir(as_span(longer)), *iotest::hello()));
  // Flags are informational: unknown ones are ignored.
  EXPECT_NO_THROW(io::load_ir(as_span(edited(14, 0x8000, 2))));
}

TEST(Loader, OversizedInputIsRejectedBeforeReading) {
  // A span claiming more than the cap is refused on its size alone.
  static const uint8_t byte = 0;
  std::span<const uint8_t> huge(&byte, size_t(io::kMaxFileBytes) + 1);
  try {
    io::load_ir(huge);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::Format);
    EXPECT_NE(std::string(e.what()).find("limit"), std::string::npos) << e.what();
  }
}

// ---- 3. zstd

std::string reseal_payload(const std::string& payload, uint64_t content_len) {
  std::string d(io::kHeaderSize, '\0');
  std::memcpy(d.data(), io::kMagic, 8);
  put_le(d, 8, io::kHeaderSize, 4);
  put_le(d, 12, 1, 2);
  put_le(d, 24, payload.size(), 8);
  put_le(d, 32, content_len, 8);
  d += payload;
  fix_crc(d);
  return d;
}

std::string zstd(const std::string& raw, bool with_size) {
  std::string out(ZSTD_compressBound(raw.size()), '\0');
  ZSTD_CCtx* c = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, with_size ? 1 : 0);
  size_t n;
  if (with_size) {
    n = ZSTD_compress2(c, out.data(), out.size(), raw.data(), raw.size());
  } else {
    // Streaming without a pledged size leaves the size out of the frame.
    ZSTD_outBuffer o{out.data(), out.size(), 0};
    ZSTD_inBuffer i{raw.data(), raw.size(), 0};
    n = ZSTD_compressStream2(c, &o, &i, ZSTD_e_end);
    EXPECT_EQ(n, 0u);
    n = o.pos;
  }
  ZSTD_freeCCtx(c);
  out.resize(n);
  return out;
}

TEST(Loader, ZstdFrameChecks) {
  io::Unsealed u = io::unseal(as_span(hello_bytes()));
  std::string raw(reinterpret_cast<const char*>(u.data()), u.size);
  // The valid path through reseal, as a control.
  EXPECT_NO_THROW(io::load_ir(as_span(reseal_payload(zstd(raw, true), raw.size()))));
  expect_load_error(reseal_payload(zstd(raw, false), raw.size()), Code::Format, {"does not declare its content size"});
  expect_load_error(reseal_payload(zstd(raw, true), raw.size() + 1), Code::Format, {"declares"});
  expect_load_error(reseal_payload(zstd(raw, true) + zstd(raw, true), raw.size()), Code::Format, {"more than one zstd frame"});
  expect_load_error(reseal_payload(raw, raw.size()), Code::Format, {"not a zstd frame"});
  std::string damaged = zstd(raw, true);
  damaged[damaged.size() / 2] ^= 0x55;
  try {
    io::load_ir(as_span(reseal_payload(damaged, raw.size())));
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::Format) << e.what();
  }
}

// ---- 4. FlatBuffers verifier

TEST(Loader, VerifierChecks) {
  io::Unsealed u = io::unseal(as_span(hello_bytes()));
  std::string raw(reinterpret_cast<const char*>(u.data()), u.size);
  std::string wrong_id = raw;
  wrong_id[4] = 'X';
  expect_load_error(io::seal(wrong_id), Code::Format, {"AFG1"});
  expect_load_error(io::seal(std::string(64, '\0')), Code::Format, {"AFG1"});
  // Corrupt offsets everywhere past the identifier: verified, never read.
  for (size_t i = 8; i < raw.size(); i += 3) {
    std::string d = raw;
    d[i] = char(0xff);
    try {
      io::load_ir(as_span(io::seal(d)));
    } catch (const Error& e) {
      EXPECT_TRUE(e.code() == Code::Format || e.code() == Code::Version) << e.what();
    }
  }
}

TEST(Loader, FormatVersion) {
  io::RawGraph g = hello_raw();
  g.format_version = io::kFormatVersion + 1;
  expect_load_error(sealed(g), Code::Version, {"format version 2", "upgrade"});
  g.format_version = 0;
  expect_load_error(sealed(g), Code::Format, {"format_version is missing"});
}

// ---- 5. semantic validation

TEST(Loader, UnknownPrimitiveIsVersionAndNamed) {
  io::RawGraph g = hello_raw();
  g.prims[1].first = "no_such_prim";
  expect_load_error(sealed(g), Code::Version, {"\"no_such_prim\"", "does not have"});
  g = hello_raw();
  g.prims[1].second = 7;
  expect_load_error(sealed(g), Code::Version, {"\"concat\" version 7", "has version 1"});
  g.prims[1].second = 0;
  expect_load_error(sealed(g), Code::Format, {"version 0"});
}

TEST(Loader, IndicesOutOfRange) {
  auto mutate = [](auto f, Code code, std::vector<std::string> frag) {
    io::RawGraph g = hello_raw();
    f(g, g.irs.back());
    expect_load_error(sealed(g), code, frag);
  };
  mutate([](io::RawGraph&, io::RawIr& r) { r.eqn_prim[0] = 9; }, Code::Format, {"primitive 9"});
  mutate([](io::RawGraph&, io::RawIr& r) { r.eqn_in[0] = 99; }, Code::Format, {"uses %99"});
  mutate([](io::RawGraph&, io::RawIr& r) { r.eqn_in[1] = io::kLiteralBit | 50; }, Code::Format, {"literal 50"});
  mutate([](io::RawGraph&, io::RawIr& r) { r.eqn_in_tree[0] = 40; }, Code::Format, {"tree 40"});
  mutate([](io::RawGraph&, io::RawIr& r) { r.in_tree = 40; }, Code::Format, {"tree 40"});
  mutate([](io::RawGraph&, io::RawIr& r) { r.eqn_out_tree[1] = 40; }, Code::Format, {"tree 40"});
  mutate([](io::RawGraph&, io::RawIr& r) { r.out_atoms[0] = 77; }, Code::Format, {"uses %77"});
  mutate([](io::RawGraph&, io::RawIr& r) { r.eqn_out[0] = 3; }, Code::Format, {"defines %3"});
  mutate([](io::RawGraph&, io::RawIr& r) { r.eqn_params[1] = 5; }, Code::Format, {"param set 4"});
  mutate([](io::RawGraph&, io::RawIr& r) { r.eqn_tags[1] = 2; }, Code::Format, {"tag set 1"});
  mutate([](io::RawGraph&, io::RawIr& r) { r.vars[0] = 9; }, Code::Format, {"unknown kind 9"});
  mutate([](io::RawGraph& g, io::RawIr&) { g.irs.clear(); }, Code::Format, {"no IR"});
}

TEST(Loader, SsaAndStructure) {
  auto mutate = [](auto f, std::vector<std::string> frag) {
    io::RawGraph g = hello_raw();
    f(g.irs.back());
    expect_load_error(sealed(g), Code::Format, frag);
  };
  // concat reads %2 before the equation that defines it.
  mutate([](io::RawIr& r) { r.eqn_in[1] = 2; }, {"equation 1 (concat) uses %2 before it is defined"});
  // format defines %0, the input.
  mutate([](io::RawIr& r) { r.eqn_out[0] = 0; }, {"already defined"});
  mutate([](io::RawIr& r) { r.in_atoms.push_back(0); }, {"input %0 is defined twice"});
  mutate([](io::RawIr& r) { r.eqn_in_end[1] = 0; }, {"out of order"});
  mutate([](io::RawIr& r) { r.eqn_in_end[1] = 9; }, {"out of bounds"});
  mutate([](io::RawIr& r) { r.eqn_in.push_back(0); }, {"left over"});
  mutate([](io::RawIr& r) { r.eqn_prim.push_back(0); }, {"column eqn_in_end has 2 entries for 3"});
  mutate([](io::RawIr& r) { r.eqn_params.pop_back(); }, {"column eqn_params has 1 entries for 2"});
  mutate([](io::RawIr& r) { r.out_atoms.push_back(1); }, {"output atoms"});
  // A cycle: format reads what concat defines (and concat reads format).
  mutate([](io::RawIr& r) { r.eqn_in[0] = 2; }, {"uses %2 before it is defined"});
}

TEST(Loader, ArityKindsAndOutputsAgainstTheRegistry) {
  io::RawGraph g = hello_raw();
  // match takes exactly two arguments: give it concat's inputs... via format's slot.
  g.prims[0] = {"match", 1};
  g.irs.back().eqn_params[0] = 0;  // match takes no params (format's would be refused first)
  expect_load_error(sealed(g), Code::Format, {"equation 0 (match)", "takes 2 arguments"});
  g = hello_raw();
  g.irs.back().vars[2] = io::pack_aval(Aval{Kind::Int, 0});
  expect_load_error(sealed(g), Code::Format, {"declared int", "produces str"});
  g = hello_raw();
  // concat of an int literal.
  g.literals[g.irs.back().eqn_in[2] & ~io::kLiteralBit] = Value::integer(3);
  expect_load_error(sealed(g), Code::Format, {"concat", "must be str"});
}

TEST(Loader, DeclaredParamsAreCheckedGenerically) {
  auto corpus = iotest::corpus();
  IRPtr ir;
  for (auto& c : corpus)
    if (c.name == "odd_literals") ir = c.ir;
  io::RawGraph base = io::encode(*ir);
  auto with = [&](auto f, std::vector<std::string> frag) {
    io::RawGraph g = base;
    f(g.param_sets[0]);
    expect_load_error(sealed(g), Code::Format, frag);
  };
  with([&](std::vector<io::RawParam>& ps) { ps[0].name = "zzz"; }, {"unknown param \"zzz\""});
  with([&](std::vector<io::RawParam>& ps) { ps[0].value = 0; },
       {"param \"label\" is a list, expected a str"});
  with([&](std::vector<io::RawParam>& ps) { ps[0].kind = 1; ps[0].value = 0; },
       {"names IR 0, which is not before this one"});
  // A required param that is missing.
  static const Prim* req =
      register_prim(iotest::test_prim("io_test.required", 1, {{.name = "must", .value_kind = Kind::Str}}));
  io::RawGraph g = base;
  g.prims[0] = {req->name, 1};
  g.param_sets.clear();
  g.irs.back().eqn_params[0] = 0;
  expect_load_error(sealed(g), Code::Format, {"missing param \"must\""});
}

TEST(Loader, ParamsAndSubIrReferences) {
  auto corpus = iotest::corpus();
  IRPtr ir;
  for (auto& c : corpus)
    if (c.name == "sub_irs") ir = c.ir;
  io::RawGraph base = io::encode(*ir);
  auto with = [&](auto f, Code code, std::vector<std::string> frag) {
    io::RawGraph g = base;
    f(g);
    expect_load_error(sealed(g), code, frag);
  };
  // The root's params name itself: a cycle.
  with([](io::RawGraph& g) { g.param_sets.back()[0].irs[0] = uint32_t(g.irs.size() - 1); }, Code::Format,
       {"not before this one"});
  with([](io::RawGraph& g) { g.param_sets.back()[0].irs[0] = 99; }, Code::Format, {"names IR 99"});
  with([](io::RawGraph& g) { std::swap(g.param_sets.back()[0], g.param_sets.back()[1]); }, Code::Format,
       {"not sorted by name"});
  with([](io::RawGraph& g) { g.param_sets.back()[0].keys = {"b", "a"}; }, Code::Format, {"keys are not sorted"});
  with([](io::RawGraph& g) { g.param_sets.back()[0].keys.pop_back(); }, Code::Format, {"1 keys but 2 IRs"});
  with([](io::RawGraph& g) { g.tag_sets[0] = {"b", "a"}; }, Code::Format, {"tag set 0 is not sorted"});
  with([](io::RawGraph& g) { g.host_functions = {"b", "a"}; }, Code::Format, {"host function list"});
}

TEST(Loader, HostFunctionListMustMatchTheEquations) {
  io::RawGraph g = hello_raw();
  g.host_functions = {"search"};
  expect_load_error(sealed(g), Code::Format, {"host function list does not match"});
  for (auto& c : iotest::corpus()) {
    if (c.name != "host_call") continue;
    io::Loaded l = io::load(as_span(iotest::save(c.ir)));
    // Sorted and once each: host_call's "name" and the test primitive's "fn".
    EXPECT_EQ(l.host_functions, (std::vector<std::string>{"calc", "lookup", "search"}));
    io::RawGraph h = io::encode(*c.ir);
    h.host_functions.clear();
    expect_load_error(sealed(h), Code::Format, {"host function list does not match"});
  }
}

TEST(Loader, StringsMustBeUtf8) {
  io::RawGraph g = hello_raw();
  g.literals[g.irs.back().eqn_in[2] & ~io::kLiteralBit] = Value::str("\xff\xfe");
  expect_load_error(sealed(g), Code::Format, {"not valid UTF-8"});
  g = hello_raw();
  g.producer = "\xc3";
  expect_load_error(sealed(g), Code::Format, {"producer"});
}

// Pools written by hand, to reach what write_flatbuffer never produces.
std::string with_pool(std::vector<uint8_t> kinds, std::vector<uint64_t> data, std::vector<uint32_t> keys,
                      bool tree_pool) {
  io::Unsealed u = io::unseal(as_span(hello_bytes()));
  auto* g = fb::GetGraph(u.data());
  flatbuffers::FlatBufferBuilder fbb;
  std::vector<flatbuffers::Offset<flatbuffers::String>> strs;
  for (auto* s : *g->strings()) strs.push_back(fbb.CreateString(s->str()));
  strs.push_back(fbb.CreateString("k"));
  auto strings = fbb.CreateVector(strs);
  auto pool = fb::CreatePool(fbb, flatbuffers::Offset<flatbuffers::Vector<fb::NodeKind>>(fbb.CreateVector(kinds).o),
                             fbb.CreateVector(data), fbb.CreateVector(keys));
  fb::GraphBuilder b(fbb);
  b.add_format_version(1);
  b.add_strings(strings);
  if (tree_pool) b.add_trees(pool); else b.add_literals(pool);
  fb::FinishGraphBuffer(fbb, b.Finish());
  return io::seal(std::string(reinterpret_cast<const char*>(fbb.GetBufferPointer()), fbb.GetSize()));
}

TEST(Loader, PoolPrograms) {
  using K = fb::NodeKind;
  auto k = [](std::initializer_list<K> ks) {
    std::vector<uint8_t> out;
    for (K x : ks) out.push_back(uint8_t(x));
    return out;
  };
  expect_load_error(with_pool(k({K::Int}), {}, {}, false), Code::Format, {"kinds but 0 data"});
  expect_load_error(with_pool(k({K::List}), {1}, {}, false), Code::Format, {"takes 1 children but only 0"});
  expect_load_error(with_pool(k({K::Int, K::Dict}), {1, 1}, {}, false), Code::Format, {"more dict keys"});
  expect_load_error(with_pool(k({K::Int}), {1}, {0}, false), Code::Format, {"no node uses"});
  expect_load_error(with_pool(k({K::Bool}), {2}, {}, false), Code::Format, {"bool other than"});
  expect_load_error(with_pool(k({K::Null}), {3}, {}, false), Code::Format, {"carries data"});
  expect_load_error(with_pool(k({K::Str}), {1000}, {}, false), Code::Format, {"string 1000"});
  expect_load_error(with_pool({9}, {0}, {}, false), Code::Format, {"unknown kind 9"});
  expect_load_error(with_pool(k({K::Leaf}), {0}, {}, false), Code::Format, {"Leaf node", "literal"});
  expect_load_error(with_pool(k({K::Int}), {0}, {}, true), Code::Format, {"Int node", "tree"});
  // Duplicate dict keys.
  expect_load_error(with_pool(k({K::Int, K::Int, K::Dict}), {1, 2, 2}, {0, 0}, false), Code::Format,
                    {"duplicate dict key"});
  // Nesting past the limit, built without recursion.
  std::vector<uint8_t> deep = k({K::Int});
  std::vector<uint64_t> data = {1};
  for (uint32_t i = 0; i < io::kMaxTreeDepth; ++i) {
    deep.push_back(uint8_t(K::List));
    data.push_back(1);
  }
  expect_load_error(with_pool(deep, data, {}, false), Code::Format, {"nests more than 256"});
  // A million-deep list would overflow a recursive reader's stack.
  deep.assign(1, uint8_t(K::Int));
  data.assign(1, 1);
  deep.insert(deep.end(), 1000000, uint8_t(K::List));
  data.insert(data.end(), 1000000, 1);
  expect_load_error(with_pool(deep, data, {}, false), Code::Format, {"nests more than"});
}

TEST(Loader, ExpansionBombIsRejected) {
  // Forty IRs, each naming the previous one twice: tiny on disk, 2^40
  // equations if expanded.
  io::RawGraph g = hello_raw();
  g.prims.emplace_back("io_test.sub", 1);
  iotest::sub_prim();
  uint32_t sub = uint32_t(g.prims.size() - 1);
  uint32_t str_tree = g.irs[0].eqn_out_tree[0];
  uint32_t in_tree = g.irs[0].in_tree;
  for (int i = 0; i < 40; ++i) {
    io::RawParam p;
    p.name = "many";
    p.kind = 2;
    p.irs = {uint32_t(g.irs.size() - 1), uint32_t(g.irs.size() - 1)};
    g.param_sets.push_back({p});
    io::RawIr r;
    r.vars = {io::pack_aval(Aval{Kind::Str, 0}), io::pack_aval(Aval{Kind::Str, 0})};
    r.in_atoms = {0};
    r.in_tree = in_tree;
    r.eqn_prim = {sub};
    r.eqn_in = {0};
    r.eqn_in_end = {1};
    r.eqn_in_tree = {in_tree};
    r.eqn_out = {1};
    r.eqn_out_end = {1};
    r.eqn_out_tree = {str_tree};
    r.eqn_params = {uint32_t(g.param_sets.size())};
    r.eqn_tags = {0};
    r.out_atoms = {1};
    r.out_tree = str_tree;
    g.irs.push_back(r);
  }
  expect_load_error(sealed(g), Code::Format, {"expands to more than 2^32"});
}

TEST(Loader, NothingIsSkipped) {
  // The public entry points offer no way around verification: bytes that are
  // a valid container around an invalid graph never load.
  io::RawGraph g = hello_raw();
  g.irs.back().eqn_in[0] = 42;
  std::string b = sealed(g);
  EXPECT_THROW(io::load(as_span(b)), Error);
  EXPECT_THROW(io::load_ir(as_span(b)), Error);
}

}  // namespace
}  // namespace af
