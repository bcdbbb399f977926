// Saved graphs round trip: every construct of the corpus saves, loads back
// equal (structure, text, bytes) and converts to JSON and back exactly.
#include "io_test_util.h"

namespace af {
namespace {

using iotest::as_span;

class RoundTrip : public ::testing::TestWithParam<iotest::NamedIR> {};

TEST_P(RoundTrip, LoadsBackEqualWithTheSameTextAndBytes) {
  const IRPtr& ir = GetParam().ir;
  std::string bytes = iotest::save(ir);
  IRPtr back = io::load_ir(as_span(bytes));
  EXPECT_TRUE(ir_equal(*ir, *back));
  EXPECT_EQ(ir_hash(*ir), ir_hash(*back));
  EXPECT_EQ(to_text(*ir), to_text(*back));
  EXPECT_EQ(to_dot(*ir), to_dot(*back));
  EXPECT_EQ(io::save_ir(*back), bytes) << "saving the loaded graph gives other bytes";
}

TEST_P(RoundTrip, SavingTwiceGivesIdenticalBytes) {
  EXPECT_EQ(iotest::save(GetParam().ir), iotest::save(GetParam().ir));
}

TEST_P(RoundTrip, JsonFormRoundTripsExactly) {
  const IRPtr& ir = GetParam().ir;
  std::string json = io::graph_to_json(*ir);
  IRPtr back = io::graph_from_json(json).ir;
  EXPECT_EQ(to_text(*ir), to_text(*back));
  EXPECT_EQ(io::save_ir(*back), iotest::save(ir)) << json;
  EXPECT_EQ(io::graph_to_json(*back), json);
}

TEST_P(RoundTrip, LoadedGraphRunsLikeTheOriginal) {
  const IRPtr& ir = GetParam().ir;
  // Inputs of the traced kinds; static leaves take their literal.
  std::vector<Value> leaves;
  for (const Atom& a : ir->in) {
    if (!a.is_var()) {
      leaves.push_back(a.lit);
      continue;
    }
    switch (ir->vars[a.var].kind) {
      case Kind::Int: leaves.push_back(Value::integer(4)); break;
      case Kind::Float: leaves.push_back(Value::floating(2.5)); break;
      case Kind::Bool: leaves.push_back(Value::boolean(true)); break;
      default: leaves.push_back(Value::str("World")); break;
    }
  }
  std::vector<Value> in = ir->in_tree.unflatten(leaves).items();
  IRPtr back = io::load_ir(as_span(iotest::save(ir)));
  Value want = call(ir, in, iotest::env());
  Value got = call(back, in, iotest::env());
  EXPECT_EQ(to_text(*back), to_text(*ir));
  EXPECT_TRUE(want == got) << GetParam().name;
}

// The roles of a transformed IR's inputs are kept, and checked on load.
TEST(SavedGraph, InputRolesRoundTripAndAreChecked) {
  IRPtr pb = pullback(*pushforward(*iotest::hello()));
  ASSERT_EQ(pb->in_roles.size(), pb->in.size());
  IRPtr back = io::load_ir(as_span(iotest::save(pb)));
  EXPECT_TRUE(back->in_roles == pb->in_roles);
  const std::string json = io::graph_to_json(*pb);
  const std::string key = "\"in_roles\": [";
  const size_t at = json.find(key);
  ASSERT_NE(at, std::string::npos) << json;
  const size_t first = at + key.size(), last = json.find(']', first);
  EXPECT_EQ(json.substr(first, last - first), "0,1,2,2");
  auto refused = [&](const std::string& roles, const char* fragment) {
    std::string bad = json;
    bad.replace(first, last - first, roles);
    try {
      io::graph_from_json(bad);
      ADD_FAILURE() << "in_roles [" << roles << "] was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  refused("0,1,2,7", "in_roles");
  refused("0,1,2", "input roles");
}

INSTANTIATE_TEST_SUITE_P(Corpus, RoundTrip, ::testing::ValuesIn(iotest::corpus()),
                         [](const auto& info) { return info.param.name; });

TEST(SavedGraph, SharedSubIrIsStoredOnceAndStaysShared) {
  auto corpus = iotest::corpus();
  IRPtr ir;
  for (auto& c : corpus)
    if (c.name == "sub_irs") ir = c.ir;
  ASSERT_TRUE(ir);
  io::RawGraph g = io::encode(*ir);
  EXPECT_EQ(g.irs.size(), 3u) << "hello, mid and the root, each once";
  IRPtr back = io::load_ir(as_span(iotest::save(ir)));
  const auto& ps = back->eqns[0].params;
  const auto& many = std::get<IRList>(*ps.find("many"));
  EXPECT_EQ(many[0].get(), many[2].get());
  EXPECT_EQ(std::get<IRMap>(*ps.find("cases"))[0].second.get(), many[0].get());
}

TEST(SavedGraph, HeaderLayoutIsAsDocumented) {
  std::string b = iotest::save(iotest::hello());
  ASSERT_GE(b.size(), io::kHeaderSize);
  EXPECT_EQ(b.substr(0, 8), std::string("\x89" "AFG\r\n\x1a\n", 8));
  auto le = [&](size_t at, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = v << 8 | uint8_t(b[at + size_t(i)]);
    return v;
  };
  EXPECT_EQ(le(8, 4), io::kHeaderSize);
  EXPECT_EQ(le(12, 2), io::kContainerVersion);
  EXPECT_EQ(le(16, 8), 0u);
  EXPECT_EQ(le(24, 8), b.size() - io::kHeaderSize);
  io::Unsealed u = io::unseal(as_span(b));
  EXPECT_EQ(le(32, 8), u.size);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(u.data()) + 4, 4), "AFG1");
  // zstd frame magic right after the header.
  EXPECT_EQ(b.substr(io::kHeaderSize, 4), std::string("\x28\xb5\x2f\xfd", 4));
}

TEST(SavedGraph, Crc32MatchesTheStandardCheckValue) {
  const char* s = "123456789";
  EXPECT_EQ(io::crc32(0, reinterpret_cast<const uint8_t*>(s), 9), 0xcbf43926u);
}

TEST(SavedGraph, SummaryNamesVersionsSizesAndPrimitives) {
  std::string b = iotest::save(iotest::hello());
  io::Loaded g = io::load(as_span(b));
  std::string s = io::summary_json(g);
  EXPECT_NE(s.find("\"format_version\":1"), std::string::npos) << s;
  EXPECT_NE(s.find("\"equations\":2"), std::string::npos) << s;
  EXPECT_NE(s.find("\"primitives\":[\"format\",\"concat\"]"), std::string::npos) << s;
  EXPECT_NE(s.find("\"producer\":\"libaf "), std::string::npos) << s;
  EXPECT_EQ(g.file_bytes, b.size());
}

TEST(SavedGraph, FilesAreWrittenAtomicallyAndReadBack) {
  std::string dir = ::testing::TempDir();
  std::string path = dir + "/io_roundtrip_hello.afg";
  std::string bytes = iotest::save(iotest::hello());
  io::write_file_atomic(path, bytes);
  std::vector<uint8_t> back = io::read_file(path);
  EXPECT_EQ(std::string(back.begin(), back.end()), bytes);
  // Overwriting replaces the whole file.
  io::write_file_atomic(path, "x");
  EXPECT_EQ(io::read_file(path).size(), 1u);
  try {
    io::read_file(path, 0);
    ADD_FAILURE() << "size cap not applied";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::Format);
  }
  try {
    io::write_file_atomic(dir + "/no/such/dir/x.afg", bytes);
    ADD_FAILURE() << "write into a missing directory succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::IO);
    EXPECT_NE(std::string(e.what()).find("no/such/dir"), std::string::npos) << e.what();
  }
  try {
    io::read_file(dir + "/io_roundtrip_missing.afg");
    ADD_FAILURE() << "missing file read";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::IO);
  }
  std::remove(path.c_str());
}

TEST(SavedGraph, SaveRejectsWhatNoGraphCanHold) {
  auto expect_invalid = [](const IRPtr& ir, const char* fragment) {
    try {
      io::save_ir(*ir);
      ADD_FAILURE() << "saved: " << fragment;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Code::InvalidArgument) << e.what();
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  // A literal nested deeper than the limit.
  Value deep = Value::str("x");
  for (uint32_t i = 0; i < io::kMaxTreeDepth; ++i) deep = Value::list({deep});
  expect_invalid(iotest::flat_ir(2, {iotest::sub_eqn({Atom::literal(deep)}, 1, {})}, Atom::of_var(1)),
                 "nested more than");
  // Exactly at the limit is fine.
  Value ok = Value::str("x");
  for (uint32_t i = 1; i < io::kMaxTreeDepth; ++i) ok = Value::list({ok});
  IRPtr at_limit = iotest::flat_ir(2, {iotest::sub_eqn({Atom::literal(ok)}, 1, {})}, Atom::of_var(1));
  EXPECT_TRUE(ir_equal(*io::load_ir(as_span(io::save_ir(*at_limit))), *at_limit));
  // IRs nested deeper than the limit.
  IRPtr nested = iotest::hello();
  for (uint32_t i = 0; i <= io::kMaxIrDepth; ++i) {
    Params ps;
    ps.set("one", nested);
    nested = iotest::flat_ir(2, {iotest::sub_eqn({Atom::of_var(0)}, 1, ps)}, Atom::of_var(1));
  }
  expect_invalid(nested, "nested in params more than");
  // A sub-IR 60 levels tall, held at depth 1 (fine) and again at depth 6
  // (too deep): the second path counts, though the sub-IR is saved once.
  IRPtr tall = iotest::hello();
  for (uint32_t i = 1; i < 60; ++i) {
    Params ps;
    ps.set("one", tall);
    tall = iotest::flat_ir(2, {iotest::sub_eqn({Atom::of_var(0)}, 1, ps)}, Atom::of_var(1));
  }
  IRPtr deeper = tall;
  for (uint32_t i = 0; i < 5; ++i) {
    Params ps;
    ps.set("one", deeper);
    deeper = iotest::flat_ir(2, {iotest::sub_eqn({Atom::of_var(0)}, 1, ps)}, Atom::of_var(1));
  }
  Params both;
  both.set("one", tall);
  both.set("two", deeper);
  expect_invalid(iotest::flat_ir(2, {iotest::sub_eqn({Atom::of_var(0)}, 1, both)}, Atom::of_var(1)),
                 "nested in params more than");
  // A null sub-IR.
  Params null_ir;
  null_ir.set("one", IRPtr());
  expect_invalid(iotest::flat_ir(2, {iotest::sub_eqn({Atom::of_var(0)}, 1, null_ir)}, Atom::of_var(1)),
                 "null IR");
  // A sub-IR shared so often that it expands past 2^32 equations.
  IRPtr bomb = iotest::hello();
  for (int i = 0; i < 40; ++i) {
    Params ps;
    ps.set("many", IRList{bomb, bomb});
    bomb = iotest::flat_ir(2, {iotest::sub_eqn({Atom::of_var(0)}, 1, ps)}, Atom::of_var(1));
  }
  expect_invalid(bomb, "expands to more than");
}

}  // namespace
}  // namespace af
