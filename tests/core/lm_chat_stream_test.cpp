// ChatStream: a streamed chat completion read from server-sent events as
// its bytes arrive, in any split; the end, usage, error events and
// malformed or oversized events. Also the JSON Schema for grammars without
// numeric bounds (small int ranges as enums).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lm/chat_stream.h"
#include "lm/schema.h"
#include "value/value.h"

namespace af::lm {
namespace {

const std::string kEvents =
    ": a comment\r\n"
    "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"},\"finish_reason\":null}]}\r\n\r\n"
    "event: message\n"
    "data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"},\"finish_reason\":null}]}\n\n"
    "data: {\"choices\":[{\"delta\":{\"content\":\"lo \\u00e9\"},\"finish_reason\":null}]}\n\n"
    "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":3}}\n\n"
    "data: [DONE]\n\n"
    "data: {\"choices\":[{\"delta\":{\"content\":\"after the end\"}}]}\n\n";

TEST(LmChatStream, ReadsTheSameInAnySplit) {
  for (size_t chunk : {size_t(1), size_t(3), size_t(17), kEvents.size()}) {
    std::vector<std::string> pieces;
    ChatStream s([&](std::string_view t) { pieces.emplace_back(t); }, 1 << 20);
    for (size_t i = 0; i < kEvents.size(); i += chunk)
      ASSERT_TRUE(s.feed(std::string_view(kEvents).substr(i, chunk))) << s.error();
    EXPECT_TRUE(s.ended());
    EXPECT_EQ(s.text(), "Hello \xC3\xA9");
    EXPECT_EQ(pieces, (std::vector<std::string>{"Hel", "lo \xC3\xA9"})) << "chunk " << chunk;
    EXPECT_EQ(s.prompt_tokens(), 5u);
    EXPECT_EQ(s.completion_tokens(), 3u);
  }
}

TEST(LmChatStream, AStreamCutOffHasNotEnded) {
  ChatStream s([](std::string_view) {}, 1 << 20);
  ASSERT_TRUE(s.feed("data: {\"choices\":[{\"delta\":{\"content\":\"par\"}}]}\n\ndata: {\"choi"));
  EXPECT_FALSE(s.ended());
  EXPECT_EQ(s.text(), "par");
}

// Two events of n characters of text each.
std::string two_events(size_t n) {
  std::string e =
      "data: {\"choices\":[{\"delta\":{\"content\":\"" + std::string(n, 'x') + "\"}}]}\n\n";
  return e + e;
}

TEST(LmChatStream, BadEventsAreErrors) {
  struct Case {
    std::string bytes;
    std::string fragment;
  };
  for (const Case& c : std::vector<Case>{
           {"data: {not json\n\n", "not valid JSON"},
           {"data: [1,2]\n\n", "not a JSON object"},
           {"data: {\"error\":{\"message\":\"overloaded\"}}\n\n", "overloaded"},
           {"data: {\"choices\":[7]}\n\n", "choices[0]"},
           {two_events(120), "larger than 200 bytes"},
           {"data: " + std::string(300, 'y'), "longer than 200 bytes"},
       }) {
    ChatStream s([](std::string_view) {}, 200);
    EXPECT_FALSE(s.feed(c.bytes));
    EXPECT_NE(s.error().find(c.fragment), std::string::npos) << s.error();
    EXPECT_FALSE(s.feed("data: [DONE]\n\n"));  // unusable from then on
  }
}

TEST(LmSchema, GrammarSchemaEnumeratesSmallIntRanges) {
  Schema s = Schema::parse(from_json(R"({"small":{"type":"int","min":1,"max":3},
                                         "wide":{"type":"int","min":0,"max":100},
                                         "open":{"type":"int","min":0}})"));
  EXPECT_EQ(s.grammar_json_schema(),
            R"({"type":"object","properties":{"small":{"type":"integer","minimum":1,"maximum":3,)"
            R"("enum":[1,2,3]},"wide":{"type":"integer","minimum":0,"maximum":100},)"
            R"("open":{"type":"integer","minimum":0}},"required":["small","wide","open"],)"
            R"("additionalProperties":false})");
  EXPECT_EQ(s.json_schema().find("enum"), std::string::npos);
}

}  // namespace
}  // namespace af::lm
