// JSON in and out (exact: int vs float kept, shortest round-trip floats) and
// stringify (docs/SEMANTICS.md §1).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include "expect_error.h"
#include "value/error.h"
#include "value/value.h"

namespace af {
namespace {

std::string label_of(size_t index) { return "case" + std::to_string(index); }

// ---- exact round trips: text -> Value -> the same text

struct RoundTripCase {
  std::string json;
  Kind kind;  // of the root
};
void PrintTo(const RoundTripCase& c, std::ostream* os) { *os << c.json; }

class JsonRoundTrip : public ::testing::TestWithParam<RoundTripCase> {};

TEST_P(JsonRoundTrip, ReadsAndWritesTheSameText) {
  const RoundTripCase& c = GetParam();
  Value v = from_json(c.json);
  EXPECT_EQ(v.kind(), c.kind);
  EXPECT_EQ(to_json(v), c.json);
  EXPECT_EQ(from_json(to_json(v)), v);
}

INSTANTIATE_TEST_SUITE_P(
    All, JsonRoundTrip,
    ::testing::Values(
        RoundTripCase{"2", Kind::Int}, RoundTripCase{"2.0", Kind::Float},
        RoundTripCase{"-7", Kind::Int}, RoundTripCase{"0", Kind::Int},
        RoundTripCase{"0.0", Kind::Float}, RoundTripCase{"-0.0", Kind::Float},
        RoundTripCase{"2.5", Kind::Float}, RoundTripCase{"0.1", Kind::Float},
        RoundTripCase{"0.30000000000000004", Kind::Float},
        RoundTripCase{"100000.0", Kind::Float}, RoundTripCase{"1e+30", Kind::Float},
        RoundTripCase{"-1e+30", Kind::Float}, RoundTripCase{"1.5e-05", Kind::Float},
        RoundTripCase{"0.0001", Kind::Float}, RoundTripCase{"1e-05", Kind::Float},
        RoundTripCase{"1000000000000000.0", Kind::Float},
        RoundTripCase{"1e+16", Kind::Float},
        RoundTripCase{"1.2345678901234568e+17", Kind::Float},
        RoundTripCase{"9007199254740992.0", Kind::Float},
        RoundTripCase{"5e-324", Kind::Float},
        RoundTripCase{"1.7976931348623157e+308", Kind::Float},
        RoundTripCase{"9223372036854775807", Kind::Int},
        RoundTripCase{"-9223372036854775808", Kind::Int},
        RoundTripCase{"true", Kind::Bool}, RoundTripCase{"false", Kind::Bool},
        RoundTripCase{"null", Kind::Null},
        RoundTripCase{R"("")", Kind::Str}, RoundTripCase{R"("plain")", Kind::Str},
        RoundTripCase{"\"h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80\"", Kind::Str},  // é € 😀
        RoundTripCase{R"("\"\\\n\r\t\b\f")", Kind::Str},
        RoundTripCase{R"("\u0000\u0001\u001f")", Kind::Str},
        RoundTripCase{"\"\x7f\"", Kind::Str},
        RoundTripCase{R"("/")", Kind::Str},
        RoundTripCase{"[]", Kind::List}, RoundTripCase{"{}", Kind::Dict},
        RoundTripCase{R"([1,2.0,"3",null,true,[],{}])", Kind::List},
        RoundTripCase{R"({"b":1,"a":[1,2.5,"x",null,false],"":{"z":{},"y":[]}})", Kind::Dict}),
    [](const auto& info) { return label_of(info.index); });

// ---- normalizing round trips: text -> Value -> canonical text

struct NormalizeCase {
  std::string in;
  std::string out;
};
void PrintTo(const NormalizeCase& c, std::ostream* os) { *os << c.in; }

class JsonNormalize : public ::testing::TestWithParam<NormalizeCase> {};

TEST_P(JsonNormalize, WritesTheCanonicalForm) {
  EXPECT_EQ(to_json(from_json(GetParam().in)), GetParam().out);
}

INSTANTIATE_TEST_SUITE_P(
    All, JsonNormalize,
    ::testing::Values(
        NormalizeCase{" [ 1 , { \"a\" : 2 } ]\n", R"([1,{"a":2}])"},
        NormalizeCase{"2.50", "2.5"}, NormalizeCase{"1E5", "100000.0"},
        NormalizeCase{"1e2", "100.0"}, NormalizeCase{"1.0e30", "1e+30"},
        NormalizeCase{"1e-4", "0.0001"}, NormalizeCase{"1e16", "1e+16"},
        NormalizeCase{"0.000123", "0.000123"},
        NormalizeCase{"12345678901234567.0", "1.2345678901234568e+16"},
        NormalizeCase{"123456789012345678901234567890.0", "1.2345678901234568e+29"},
        NormalizeCase{"-0", "0"},  // no '.' or 'e': an int
        NormalizeCase{R"("\u00e9")", "\"\xc3\xa9\""},
        NormalizeCase{R"("\ud83d\ude00")", "\"\xf0\x9f\x98\x80\""},
        NormalizeCase{R"("\/")", R"("/")"},
        NormalizeCase{R"("\u0041\u000a")", R"("A\n")"}),
    [](const auto& info) { return label_of(info.index); });

TEST(Json, NumbersKeepTheirKind) {
  struct Case {
    const char* json;
    Kind kind;
    double value;
  };
  const Case cases[] = {{"2", Kind::Int, 2},        {"2.0", Kind::Float, 2},
                        {"1e3", Kind::Float, 1000}, {"-0", Kind::Int, 0},
                        {"-0.0", Kind::Float, 0},   {"-12", Kind::Int, -12}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.json);
    Value v = from_json(c.json);
    ASSERT_EQ(v.kind(), c.kind);
    if (c.kind == Kind::Int) {
      EXPECT_EQ(double(v.as_int()), c.value);
    } else {
      EXPECT_EQ(v.as_float(), c.value);
    }
  }
  EXPECT_TRUE(std::signbit(from_json("-0.0").as_float()));
}

TEST(Json, StringsMayHoldNul) {
  Value v = from_json(R"("a\u0000b")");
  EXPECT_EQ(v.as_str(), std::string("a\0b", 3));
}

// Each thread parses through one padded buffer; a document larger than
// 1 MiB does not stay in it, and what comes after parses alike.
TEST(Json, LargeAndSmallDocumentsInTurn) {
  const std::string big(3 << 20, 'x');
  for (int round = 0; round < 2; ++round) {
    EXPECT_EQ(from_json("\"" + big + "\""), Value::str(big));
    EXPECT_EQ(from_json(R"({"a":[1,2.5,"s"]})"),
              Value::dict({{"a", Value::list({Value::integer(1), Value::floating(2.5), Value::str("s")})}}));
    EXPECT_THROW(from_json("[1,"), Error);
    EXPECT_EQ(from_json("7"), Value::integer(7));
  }
}

TEST(Json, DictsKeepInsertionOrder) {
  Value v = from_json(R"({"zeta":1,"alpha":2,"mid":3})");
  ASSERT_EQ(v.entries().size(), 3u);
  EXPECT_EQ(v.entries()[0].first, "zeta");
  EXPECT_EQ(v.entries()[2].first, "mid");
  EXPECT_EQ(v.find("alpha")->as_int(), 2);
}

TEST(Json, WritesValuesBuiltInCode) {
  struct Case {
    Value v;
    const char* json;
  };
  const Case cases[] = {
      {Value::floating(2), "2.0"},
      {Value::floating(-0.0), "-0.0"},
      {Value::floating(1e30), "1e+30"},
      {Value::floating(0.1 + 0.2), "0.30000000000000004"},
      {Value::floating(1.5e-5), "1.5e-05"},
      {Value::floating(1e16), "1e+16"},
      {Value::floating(9999999999999998.0), "9999999999999998.0"},
      {Value::integer(std::numeric_limits<int64_t>::min()), "-9223372036854775808"},
      {Value::str("\x01\x1f\x7f"), R"("\u0001\u001f)" "\x7f\""},
      {Value::str("tab\there"), R"("tab\there")"},
      {Value::str(std::string("\0", 1)), R"("\u0000")"},
      {Value::list({}), "[]"},
      {Value::dict({{"b", Value()}, {"a", Value::list({Value::boolean(true)})}}),
       R"({"b":null,"a":[true]})"},
      {Value::dict({{"k\"ey", Value::integer(1)}}), R"({"k\"ey":1})"},
  };
  for (const Case& c : cases) EXPECT_EQ(to_json(c.v), c.json);
}

TEST(Json, AppendJsonAppends) {
  std::string out = "prefix:";
  append_json(out, Value::list({Value::integer(1)}));
  EXPECT_EQ(out, "prefix:[1]");
  append_json_string(out, "q\"");
  EXPECT_EQ(out, R"(prefix:[1]"q\"")");
}

// ---- errors

struct BadJsonCase {
  std::string json;
  const char* fragment;
};
void PrintTo(const BadJsonCase& c, std::ostream* os) { *os << ::testing::PrintToString(c.json); }

class JsonErrors : public ::testing::TestWithParam<BadJsonCase> {};

TEST_P(JsonErrors, AreInvalidArgument) {
  EXPECT_AF_ERROR(from_json(GetParam().json), Code::InvalidArgument, GetParam().fragment);
}

INSTANTIATE_TEST_SUITE_P(
    Malformed, JsonErrors,
    ::testing::Values(BadJsonCase{"", "invalid JSON"}, BadJsonCase{"   ", "invalid JSON"},
                      BadJsonCase{"[1,]", "invalid JSON"}, BadJsonCase{"[1 2]", "invalid JSON"},
                      BadJsonCase{"[", "invalid JSON"}, BadJsonCase{"]", "invalid JSON"},
                      BadJsonCase{R"({"a":})", "invalid JSON"},
                      BadJsonCase{R"({"a" 1})", "invalid JSON"},
                      BadJsonCase{"{a:1}", "invalid JSON"}, BadJsonCase{"'a'", "invalid JSON"},
                      BadJsonCase{R"("unterminated)", "invalid JSON"},
                      BadJsonCase{"1 2", "invalid JSON"}, BadJsonCase{"tru", "invalid JSON"},
                      BadJsonCase{"nul", "invalid JSON"}, BadJsonCase{"01", "invalid JSON"},
                      BadJsonCase{"1.", "invalid JSON"}, BadJsonCase{".5", "invalid JSON"},
                      BadJsonCase{"+1", "invalid JSON"}, BadJsonCase{"NaN", "invalid JSON"},
                      BadJsonCase{"Infinity", "invalid JSON"},
                      BadJsonCase{"-Infinity", "invalid JSON"},
                      BadJsonCase{R"("\x")", "invalid JSON"},
                      BadJsonCase{R"("\u12")", "invalid JSON"},
                      BadJsonCase{R"("\ud800")", "invalid JSON"},  // lone surrogate
                      BadJsonCase{"\"raw\x01" "control\"", "invalid JSON"},
                      BadJsonCase{"\"raw\nnewline\"", "invalid JSON"}),
    [](const auto& info) { return label_of(info.index); });

INSTANTIATE_TEST_SUITE_P(
    InvalidUtf8, JsonErrors,
    ::testing::Values(BadJsonCase{"\"\xff\"", "not valid UTF-8"},
                      BadJsonCase{"\"\xc3\"", "not valid UTF-8"},           // truncated
                      BadJsonCase{"\"\xc0\xaf\"", "not valid UTF-8"},       // overlong
                      BadJsonCase{"\"\xed\xa0\x80\"", "not valid UTF-8"},   // encoded surrogate
                      BadJsonCase{"\"\xf4\x90\x80\x80\"", "not valid UTF-8"},  // > U+10FFFF
                      BadJsonCase{"{\"\xfe\":1}", "not valid UTF-8"}),
    [](const auto& info) { return label_of(info.index); });

INSTANTIATE_TEST_SUITE_P(
    DuplicateKeys, JsonErrors,
    ::testing::Values(BadJsonCase{R"({"a":1,"a":2})", R"(duplicate dict key "a")"},
                      BadJsonCase{R"({"a":1,"b":2,"a":1})", R"(duplicate dict key "a")"},
                      BadJsonCase{R"([{"x":{"k":1,"k":1}}])", R"(duplicate dict key "k")"}),
    [](const auto& info) { return label_of(info.index); });

INSTANTIATE_TEST_SUITE_P(
    NumberRange, JsonErrors,
    ::testing::Values(BadJsonCase{"-9223372036854775809", "out of range"},
                      BadJsonCase{"9223372036854775808", "outside the int64 range"},
                      BadJsonCase{"18446744073709551615", "outside the int64 range"},
                      BadJsonCase{"18446744073709551616", "invalid JSON"},
                      BadJsonCase{"[1e400]", "invalid JSON"},
                      BadJsonCase{"-1e400", "invalid JSON"}),
    [](const auto& info) { return label_of(info.index); });

TEST(Json, DeepNestingIsAnErrorNotACrash) {
  std::string deep = std::string(5000, '[') + std::string(5000, ']');
  EXPECT_AF_ERROR(from_json(deep), Code::InvalidArgument, "invalid JSON");
  std::string ok = std::string(200, '[') + std::string(200, ']');
  EXPECT_EQ(to_json(from_json(ok)), ok);
}

TEST(Json, NonFiniteFloatsCannotBeWritten) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_AF_ERROR(to_json(Value::floating(nan)), Code::InvalidArgument, "non-finite float (nan)");
  EXPECT_AF_ERROR(to_json(Value::floating(inf)), Code::InvalidArgument,
                  "non-finite float (infinity)");
  EXPECT_AF_ERROR(to_json(Value::floating(-inf)), Code::InvalidArgument, "non-finite float");
  EXPECT_AF_ERROR(to_json(Value::list({Value::integer(1), Value::dict({{"x", Value::floating(nan)}})})),
                  Code::InvalidArgument, "non-finite float");
}

TEST(Json, PlaceholdersCannotBeWritten) {
  Value p = Value::placeholder({1, 0, Kind::Str});
  for (const Value& v : {p, Value::list({Value::str("a"), p}), Value::dict({{"k", p}})}) {
    EXPECT_AF_ERROR(to_json(v), Code::InvalidArgument, "switch");
    EXPECT_AF_ERROR(to_json(v), Code::InvalidArgument, "while_loop");
    EXPECT_AF_ERROR(to_json(v), Code::InvalidArgument, "static");
  }
}

TEST(Json, ValidUtf8) {
  struct Case {
    std::string s;
    bool valid;
  };
  const Case cases[] = {{"", true},
                        {"ascii", true},
                        {"\xc3\xa9", true},
                        {"\xf0\x9f\x98\x80", true},
                        {std::string("\0", 1), true},
                        {"\xff", false},
                        {"\xc3", false},
                        {"\xc0\xaf", false},
                        {"\xed\xa0\x80", false},
                        {"a\x80", false}};
  for (const Case& c : cases) EXPECT_EQ(valid_utf8(c.s), c.valid) << testing::PrintToString(c.s);
}

// ---- stringify (what format does with non-string arguments)

struct StringifyCase {
  Value v;
  std::string expected;
};
void PrintTo(const StringifyCase& c, std::ostream* os) { *os << c.expected; }

class JsonStringify : public ::testing::TestWithParam<StringifyCase> {};

TEST_P(JsonStringify, FollowsJsonConventions) { EXPECT_EQ(stringify(GetParam().v), GetParam().expected); }

INSTANTIATE_TEST_SUITE_P(
    All, JsonStringify,
    ::testing::Values(
        StringifyCase{Value::str("x"), "x"},  // strings are not quoted at the top
        StringifyCase{Value::str(""), ""},
        StringifyCase{Value::str("say \"hi\"\n"), "say \"hi\"\n"},
        StringifyCase{Value::integer(42), "42"},
        StringifyCase{Value::integer(-7), "-7"},
        StringifyCase{Value::floating(2.5), "2.5"},
        StringifyCase{Value::floating(2.0), "2.0"},
        StringifyCase{Value::floating(1e30), "1e+30"},
        StringifyCase{Value::floating(0.1), "0.1"},
        StringifyCase{Value::boolean(true), "true"},
        StringifyCase{Value::boolean(false), "false"},
        StringifyCase{Value(), "null"},
        StringifyCase{Value::list({Value::integer(1), Value::str("a")}), R"([1,"a"])"},
        StringifyCase{Value::list({}), "[]"},
        StringifyCase{Value::dict({{"b", Value::integer(1)}, {"a", Value::list({Value::boolean(true)})}}),
                      R"({"b":1,"a":[true]})"}),
    [](const auto& info) { return label_of(info.index); });

TEST(JsonStringify, RejectsNonFiniteAndPlaceholders) {
  EXPECT_AF_ERROR(stringify(Value::floating(std::numeric_limits<double>::quiet_NaN())),
                  Code::InvalidArgument, "non-finite");
  EXPECT_AF_ERROR(stringify(Value::placeholder({1, 0, Kind::Int})), Code::InvalidArgument,
                  "while_loop");
}

}  // namespace
}  // namespace af
