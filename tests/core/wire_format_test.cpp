// The stream parsers of the HTTP providers' wire formats (Anthropic's
// events, Ollama's NDJSON, OpenAI's chunks through the shared framing):
// every stream is read the same whatever its split — at every byte
// boundary, and a byte at a time — with the end, the usage counts, error
// events and lines, malformed and oversized input. Also the engine's
// helpers (Retry-After, loopback hosts) and the new providers' options.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "lm/anthropic_stream.h"
#include "lm/chat_stream.h"
#include "lm/http_engine.h"
#include "lm/ollama_stream.h"
#include "lm/providers.h"
#include "value/error.h"
#include "value/value.h"

namespace af::lm {
namespace {

enum class Format { Anthropic, Ollama, OpenAI };

std::unique_ptr<StreamParser> parser(Format f, std::vector<std::string>* pieces, size_t max = 1 << 20) {
  auto on_text = [pieces](std::string_view t) {
    if (pieces) pieces->emplace_back(t);
  };
  switch (f) {
    case Format::Anthropic: return std::make_unique<AnthropicStream>(on_text, max);
    case Format::Ollama: return std::make_unique<OllamaStream>(on_text, max);
    case Format::OpenAI: return std::make_unique<ChatStream>(on_text, max);
  }
  return nullptr;
}

struct Read {
  std::string text, error, joined;
  bool ended = false, ok = true;
  uint64_t prompt = 0, completion = 0;
};

// bytes fed in the given pieces.
Read read(Format f, const std::vector<std::string_view>& parts, size_t max = 1 << 20) {
  std::vector<std::string> pieces;
  auto p = parser(f, &pieces, max);
  Read r;
  for (std::string_view part : parts)
    if (r.ok) r.ok = p->feed(part);
  r.text = p->text();
  r.error = p->error();
  r.ended = p->ended();
  r.prompt = p->prompt_tokens();
  r.completion = p->completion_tokens();
  for (const auto& s : pieces) r.joined += s;
  return r;
}

// The same stream read whole, split in two at every byte, and a byte at a
// time, must read the same.
void expect_any_split(Format f, const std::string& bytes, const Read& want) {
  std::vector<std::vector<std::string_view>> splits{{bytes}};
  for (size_t i = 0; i <= bytes.size(); ++i)
    splits.push_back({std::string_view(bytes).substr(0, i), std::string_view(bytes).substr(i)});
  std::vector<std::string_view> bytewise;
  for (size_t i = 0; i < bytes.size(); ++i) bytewise.push_back(std::string_view(bytes).substr(i, 1));
  splits.push_back(bytewise);
  for (size_t k = 0; k < splits.size(); ++k) {
    Read r = read(f, splits[k]);
    SCOPED_TRACE("split " + std::to_string(k));
    EXPECT_EQ(r.ok, want.ok) << r.error;
    EXPECT_EQ(r.text, want.text);
    EXPECT_EQ(r.joined, want.text);  // the pieces reported make up the text
    EXPECT_EQ(r.ended, want.ended);
    EXPECT_EQ(r.prompt, want.prompt);
    EXPECT_EQ(r.completion, want.completion);
    if (!want.error.empty()) {
      EXPECT_NE(r.error.find(want.error), std::string::npos) << r.error;
    }
  }
}

const std::string kAnthropic =
    "event: message_start\r\n"
    "data: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"content\":[],"
    "\"usage\":{\"input_tokens\":25,\"output_tokens\":1}}}\r\n\r\n"
    "event: content_block_start\n"
    "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}\n\n"
    "event: content_block_delta\n"
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"hm\"}}\n\n"
    "event: content_block_start\n"
    "data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
    "event: ping\n"
    "data: {\"type\": \"ping\"}\n\n"
    ": a comment\n"
    "event: content_block_delta\n"
    "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hel\"}}\n\n"
    "event: content_block_delta\n"
    "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"lo \\u00e9\"}}\n\n"
    "event: content_block_stop\n"
    "data: {\"type\":\"content_block_stop\",\"index\":1}\n\n"
    "event: message_delta\n"
    "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":15}}\n\n"
    "event: message_stop\n"
    "data: {\"type\":\"message_stop\"}\n\n"
    "event: content_block_delta\n"
    "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"after\"}}\n\n";

TEST(WireStream, AnthropicReadsTheSameInAnySplit) {
  Read want;
  want.text = "Hello \xC3\xA9";
  want.ended = true;
  want.prompt = 25;
  want.completion = 15;
  expect_any_split(Format::Anthropic, kAnthropic, want);
  std::vector<std::string> pieces;
  auto p = parser(Format::Anthropic, &pieces);
  ASSERT_TRUE(p->feed(kAnthropic));
  EXPECT_EQ(pieces, (std::vector<std::string>{"Hel", "lo \xC3\xA9"}));
}

TEST(WireStream, AnthropicCutOffHasNotEnded) {
  const std::string cut = kAnthropic.substr(0, kAnthropic.find("event: message_stop"));
  Read want;
  want.text = "Hello \xC3\xA9";
  want.prompt = 25;
  want.completion = 15;
  expect_any_split(Format::Anthropic, cut, want);
  EXPECT_STREQ(parser(Format::Anthropic, nullptr)->end_marker(), "message_stop event");
}

TEST(WireStream, AnthropicErrorEventIsAnError) {
  const std::string bytes =
      kAnthropic.substr(0, kAnthropic.find("event: content_block_stop")) +
      "event: error\n"
      "data: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"
      "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
  Read want;
  want.ok = false;
  want.text = "Hello \xC3\xA9";
  want.prompt = 25;
  want.completion = 1;
  want.error = "the stream reported an error: {\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}";
  expect_any_split(Format::Anthropic, bytes, want);
}

const std::string kOllama =
    "{\"model\":\"m\",\"message\":{\"role\":\"assistant\",\"content\":\"Hel\"},\"done\":false}\n"
    "\n"
    "{\"model\":\"m\",\"message\":{\"role\":\"assistant\",\"content\":\"lo \\u00e9\"},\"done\":false}\r\n"
    "{\"model\":\"m\",\"message\":{\"role\":\"assistant\",\"content\":\"\"},\"done\":true,"
    "\"done_reason\":\"stop\",\"prompt_eval_count\":26,\"eval_count\":290}\n"
    "{\"model\":\"m\",\"message\":{\"role\":\"assistant\",\"content\":\"after\"},\"done\":false}\n";

TEST(WireStream, OllamaReadsTheSameInAnySplit) {
  Read want;
  want.text = "Hello \xC3\xA9";
  want.ended = true;
  want.prompt = 26;
  want.completion = 290;
  expect_any_split(Format::Ollama, kOllama, want);
}

TEST(WireStream, OllamaDoneLineWithoutItsNewlineHasNotEnded) {
  // A server may close after the done line without its newline: the line
  // is not complete, so the reply has not ended (and is retried).
  std::string bytes = kOllama.substr(0, kOllama.find("{\"model\":\"m\",\"message\":{\"role\":\"assistant\",\"content\":\"after"));
  bytes.pop_back();  // the done line's "\n"
  Read want;
  want.text = "Hello \xC3\xA9";
  expect_any_split(Format::Ollama, bytes, want);
  EXPECT_STREQ(parser(Format::Ollama, nullptr)->end_marker(), "line with \"done\": true");
}

TEST(WireStream, OllamaErrorLineIsAnError) {
  const std::string bytes =
      "{\"message\":{\"role\":\"assistant\",\"content\":\"te\"},\"done\":false}\n"
      "{\"error\":\"an error was encountered while running the model\"}\n";
  Read want;
  want.ok = false;
  want.text = "te";
  want.error = "the stream reported an error: \"an error was encountered while running the model\"";
  expect_any_split(Format::Ollama, bytes, want);
}

// The OpenAI chunks read through the shared framing, at every boundary.
TEST(WireStream, OpenAIReadsTheSameInAnySplit) {
  const std::string bytes =
      "data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"},\"finish_reason\":null}]}\r\n\r\n"
      "data: {\"choices\":[{\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"stop\"}]}\n\n"
      "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":3}}\n\n"
      "data: [DONE]\n\n";
  Read want;
  want.text = "Hello";
  want.ended = true;
  want.prompt = 5;
  want.completion = 3;
  expect_any_split(Format::OpenAI, bytes, want);
}

TEST(WireStream, BadInputIsAnError) {
  struct Case {
    Format f;
    std::string bytes;
    std::string fragment;
  };
  const std::string big(300, 'x');
  for (const Case& c : std::vector<Case>{
           {Format::Anthropic, "data: {not json\n\n", "an event is not valid JSON"},
           {Format::Anthropic, "data: [1]\n\n", "an event is not a JSON object"},
           {Format::Anthropic, "data: {\"index\":0}\n\n", "an event has no \"type\""},
           {Format::Anthropic, "data: {\"type\":\"content_block_delta\"}\n\n", "has no \"delta\" object"},
           {Format::Anthropic, "data: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\"}}\n\n",
            "a text_delta has no \"text\" string"},
           {Format::Anthropic, "data: " + big, "an event line is longer than 200 bytes"},
           {Format::Anthropic,
            "data: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"" +
                std::string(120, 'y') + "\"}}\n\n" +
                "data: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"" +
                std::string(120, 'y') + "\"}}\n\n",
            "the streamed reply is larger than 200 bytes"},
           {Format::Ollama, "{not json\n", "a line is not valid JSON"},
           {Format::Ollama, "\"text\"\n", "a line is not a JSON object"},
           {Format::Ollama, big, "a line is longer than 200 bytes"},
           {Format::Ollama,
            "{\"message\":{\"content\":\"" + std::string(120, 'y') + "\"}}\n{\"message\":{\"content\":\"" +
                std::string(120, 'y') + "\"}}\n",
            "the streamed reply is larger than 200 bytes"},
       }) {
    auto p = parser(c.f, nullptr, 200);
    EXPECT_FALSE(p->feed(c.bytes)) << c.bytes;
    EXPECT_NE(p->error().find(c.fragment), std::string::npos) << p->error();
    EXPECT_FALSE(p->feed("\n\n"));  // unusable from then on
  }
}

TEST(WireStream, AbsurdUsageIsClamped) {
  auto a = parser(Format::Anthropic, nullptr);
  ASSERT_TRUE(a->feed("data: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":"
                      "9223372036854775807,\"output_tokens\":-5}}}\n\n"));
  EXPECT_EQ(a->prompt_tokens(), Call::kMaxReplyTokens);
  EXPECT_EQ(a->completion_tokens(), 0u);
  auto o = parser(Format::Ollama, nullptr);
  ASSERT_TRUE(o->feed("{\"done\":true,\"prompt_eval_count\":9223372036854775807,\"eval_count\":\"7\"}\n"));
  EXPECT_TRUE(o->ended());
  EXPECT_EQ(o->prompt_tokens(), Call::kMaxReplyTokens);
  EXPECT_EQ(o->completion_tokens(), 0u);
}

TEST(WireEngine, RetryAfterAndLoopback) {
  EXPECT_EQ(retry_after_ms("2", 20000), 2000);
  EXPECT_EQ(retry_after_ms("1e9", 20000), 20000);
  EXPECT_EQ(retry_after_ms("nan", 20000), -1);
  EXPECT_EQ(retry_after_ms("", 20000), -1);
  EXPECT_TRUE(loopback_url("http://127.0.0.1:11434"));
  EXPECT_TRUE(loopback_url("http://localhost/v1"));
  EXPECT_FALSE(loopback_url("http://127.0.0.1.example.com/v1"));
  EXPECT_EQ(url_for_messages("https://user:pw@host/v1"), "https://host/v1");
}

// The new provider types: made by type name, their options checked like
// openai's (unknown keys, kinds, ranges, the key's variable, plain http).
std::string error_of(const std::string& spec) {
  try {
    make_provider(from_json(spec));
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::InvalidArgument) << e.what();
    return e.what();
  }
  return "";
}

TEST(WireProviders, OptionsAreChecked) {
  ::setenv("AF_WIRE_TEST_KEY", "sk-wire-secret", 1);
  ::unsetenv("AF_WIRE_TEST_UNSET");
  EXPECT_NE(make_provider(from_json(R"({"type":"ollama"})")), nullptr);
  EXPECT_NE(make_provider(from_json(R"({"type":"anthropic","api_key_env":"AF_WIRE_TEST_KEY","max_tokens":64,
        "timeout_ms":100,"max_retries":1,"backoff_ms":1,"backoff_max_ms":2,"max_in_flight":2,
        "requests_per_minute":60,"schema_retries":1,"extra":{"top_k":5},"name":"claude"})")),
            nullptr);
  struct Case {
    const char* spec;
    const char* fragment;
  };
  for (const Case& c : std::vector<Case>{
           {R"({"type":"anthropic","api_key_env":"AF_WIRE_TEST_KEY","structured_output":"json_object"})",
            "anthropic provider: unknown option \"structured_output\""},
           {R"({"type":"ollama","api_key_env":"AF_WIRE_TEST_KEY"})", "ollama provider: unknown option \"api_key_env\""},
           {R"({"type":"ollama","max_tokens":5})", "ollama provider: unknown option \"max_tokens\""},
           {R"({"type":"ollama","timeout_ms":0})", "option \"timeout_ms\" must be between 1 and"},
           {R"({"type":"ollama","base_url":"ftp://x"})", "\"base_url\" must start with http:// or https://"},
           {R"({"type":"ollama","extra":[1]})", "ollama provider: option \"extra\" must be an object"},
           {R"({"type":"ollama","max_in_flight":-1})", "max_in_flight"},
           {R"({"type":"anthropic","api_key_env":"AF_WIRE_TEST_UNSET"})",
            "anthropic provider: the environment variable AF_WIRE_TEST_UNSET (option \"api_key_env\") is not set"},
           {R"({"type":"anthropic","api_key_env":"AF_WIRE_TEST_KEY","base_url":"http://10.0.0.1:8080"})",
            "refusing to send the API key (AF_WIRE_TEST_KEY) over plain http"},
           {R"({"type":"anthropic","api_key_env":"AF_WIRE_TEST_KEY","max_tokens":0})",
            "option \"max_tokens\" must be between 1 and"},
           {R"({"type":"anthropic","api_key_env":"AF_WIRE_TEST_KEY","extra":{"system":"x"}})",
            "option \"extra\" may not set \"system\""},
           {R"({"type":"anthropic","api_key_env":"AF_WIRE_TEST_KEY","anthropic_version":"a\nb"})",
            "option \"anthropic_version\" must be a version"},
           {R"({"type":"claude"})", "unknown type \"claude\" (known: echo, openai, anthropic, ollama, replay)"},
       })
    EXPECT_NE(error_of(c.spec).find(c.fragment), std::string::npos) << c.spec << ": " << error_of(c.spec);
  // The default variable, when unset, says how to run without a key.
  const char* saved = std::getenv("ANTHROPIC_API_KEY");
  std::string keep = saved ? saved : "";
  ::unsetenv("ANTHROPIC_API_KEY");
  EXPECT_NE(error_of(R"({"type":"anthropic"})").find("ANTHROPIC_API_KEY (option \"api_key_env\") is not set (set "
                                                      "\"api_key_env\": \"\" for a server without keys)"),
            std::string::npos);
  EXPECT_NE(make_provider(from_json(R"({"type":"anthropic","api_key_env":"","allow_insecure_http":true,
        "base_url":"http://10.0.0.1:8080"})")),
            nullptr);
  // allow_insecure_http lifts the plain-http refusal.
  EXPECT_NE(make_provider(from_json(R"({"type":"anthropic","api_key_env":"AF_WIRE_TEST_KEY",
        "allow_insecure_http":true,"base_url":"http://10.0.0.1:8080"})")),
            nullptr);
  if (saved) ::setenv("ANTHROPIC_API_KEY", keep.c_str(), 1);
}

}  // namespace
}  // namespace af::lm
