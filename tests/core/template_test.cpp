// The format template parser (Python-style fields, docs/SEMANTICS.md §3 format).
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "expect_error.h"
#include "prims/template.h"
#include "value/error.h"

namespace af {
namespace {

// A part written compactly: literal text, then the field (if any).
struct Part {
  std::string text;
  bool has_field;
  int64_t index;
  std::string name;
  friend bool operator==(const Part&, const Part&) = default;
  friend std::ostream& operator<<(std::ostream& os, const Part& p) {
    os << '"' << p.text << '"';
    if (p.has_field) os << (p.index >= 0 ? " {#" + std::to_string(p.index) + "}" : " {" + p.name + "}");
    return os;
  }
};
Part Lit(std::string text) { return Part{std::move(text), false, -1, ""}; }
Part Pos(std::string text, int64_t index) { return Part{std::move(text), true, index, ""}; }
Part Named(std::string text, std::string name) {
  return Part{std::move(text), true, -1, std::move(name)};
}

std::vector<Part> parts_of(const Template& t) {
  std::vector<Part> out;
  for (const TemplatePart& p : t.parts) out.push_back(Part{p.text, p.has_field, p.index, p.name});
  return out;
}

struct ParseCase {
  std::string tmpl;
  std::vector<Part> parts;
  size_t max_positional;
  std::vector<std::string> names;
};
void PrintTo(const ParseCase& c, std::ostream* os) { *os << c.tmpl; }

class TemplateParse : public ::testing::TestWithParam<ParseCase> {};

TEST_P(TemplateParse, Parts) {
  const ParseCase& c = GetParam();
  Template t = parse_template(c.tmpl);
  EXPECT_EQ(parts_of(t), c.parts);
  EXPECT_EQ(t.max_positional, c.max_positional);
  EXPECT_EQ(t.names, c.names);
}

INSTANTIATE_TEST_SUITE_P(
    All, TemplateParse,
    ::testing::Values(
        ParseCase{"", {}, 0, {}},
        ParseCase{"abc", {Lit("abc")}, 0, {}},
        ParseCase{"{}", {Pos("", 0)}, 1, {}},
        ParseCase{"Hello, {}!", {Pos("Hello, ", 0), Lit("!")}, 1, {}},
        ParseCase{"{}{}", {Pos("", 0), Pos("", 1)}, 2, {}},
        ParseCase{"{} and {}", {Pos("", 0), Pos(" and ", 1)}, 2, {}},
        ParseCase{"{1}{0}{1}", {Pos("", 1), Pos("", 0), Pos("", 1)}, 2, {}},
        ParseCase{"{0}{0}", {Pos("", 0), Pos("", 0)}, 1, {}},
        ParseCase{"{2}", {Pos("", 2)}, 3, {}},
        ParseCase{"{999999999}", {Pos("", 999999999)}, 1000000000, {}},
        ParseCase{"{{}}", {Lit("{}")}, 0, {}},
        ParseCase{"{{", {Lit("{")}, 0, {}},
        ParseCase{"}}", {Lit("}")}, 0, {}},
        ParseCase{"{{{}}}", {Pos("{", 0), Lit("}")}, 1, {}},
        ParseCase{"a{{b}}c", {Lit("a{b}c")}, 0, {}},
        ParseCase{"{{ }}", {Lit("{ }")}, 0, {}},
        ParseCase{"{{0}}", {Lit("{0}")}, 0, {}},
        ParseCase{"{name}", {Named("", "name")}, 0, {"name"}},
        ParseCase{"{greet}, {name}!", {Named("", "greet"), Named(", ", "name"), Lit("!")}, 0,
                  {"greet", "name"}},
        ParseCase{"{b}{a}{b}", {Named("", "b"), Named("", "a"), Named("", "b")}, 0, {"a", "b"}},
        ParseCase{"{}{x}{}", {Pos("", 0), Named("", "x"), Pos("", 1)}, 2, {"x"}},
        ParseCase{"{1}{x}{0}", {Pos("", 1), Named("", "x"), Pos("", 0)}, 2, {"x"}},
        ParseCase{"{_x1}", {Named("", "_x1")}, 0, {"_x1"}},
        ParseCase{"{Name_2}", {Named("", "Name_2")}, 0, {"Name_2"}},
        ParseCase{"{\xc3\xa9t\xc3\xa9}", {Named("", "\xc3\xa9t\xc3\xa9")}, 0,
                  {"\xc3\xa9t\xc3\xa9"}},
        ParseCase{"\xe2\x82\xac{}\xe2\x82\xac", {Pos("\xe2\x82\xac", 0), Lit("\xe2\x82\xac")}, 1,
                  {}}),
    [](const auto& info) { return "case" + std::to_string(info.index); });

struct BadCase {
  std::string tmpl;
  std::vector<std::string> fragments;
};
void PrintTo(const BadCase& c, std::ostream* os) { *os << c.tmpl; }

class TemplateErrors : public ::testing::TestWithParam<BadCase> {};

TEST_P(TemplateErrors, AreInvalidArgumentNamingTheProblem) {
  const BadCase& c = GetParam();
  for (const std::string& f : c.fragments)
    EXPECT_AF_ERROR(parse_template(c.tmpl), Code::InvalidArgument, f);
}

INSTANTIATE_TEST_SUITE_P(
    All, TemplateErrors,
    ::testing::Values(
        BadCase{"{", {"format template \"{\"", "unbalanced '{'", "at offset 0", "'{{'"}},
        BadCase{"abc{", {"unbalanced '{'", "at offset 3"}},
        BadCase{"{0", {"unbalanced '{'"}},
        BadCase{"{a{b}", {"unbalanced '{'", "at offset 0"}},
        BadCase{"x{}{", {"unbalanced '{'", "at offset 3"}},
        BadCase{"}", {"single '}'", "'}}'", "at offset 0"}},
        BadCase{"a}b", {"format template \"a}b\"", "single '}'", "at offset 1"}},
        BadCase{"{}}", {"single '}'", "at offset 2"}},
        BadCase{"{a}}", {"single '}'", "at offset 3"}},
        BadCase{"{0}{}", {"cannot switch from manual field numbering ({0}) to automatic ({})",
                          "at offset 3"}},
        BadCase{"{}{0}", {"cannot switch from automatic field numbering ({}) to manual ({0})",
                          "at offset 2"}},
        BadCase{"{1} {x} {}", {"cannot switch from manual"}},
        BadCase{"{0:>5}", {"unsupported field \"0:>5\"", "format specs"}},
        BadCase{"{:d}", {"unsupported field \":d\""}},
        BadCase{"{x!r}", {"unsupported field \"x!r\""}},
        BadCase{"{a.b}", {"unsupported field \"a.b\""}},
        BadCase{"{a[0]}", {"unsupported field \"a[0]\""}},
        BadCase{"{ }", {"unsupported field \" \""}},
        BadCase{"{-1}", {"unsupported field \"-1\""}},
        BadCase{"{1a}", {"unsupported field \"1a\""}},
        BadCase{"{1234567890}", {"field index too large"}},
        BadCase{"quote\"{", {R"(format template "quote\"{")"}}),
    [](const auto& info) { return "case" + std::to_string(info.index); });

}  // namespace
}  // namespace af
