// The stream parsers of the HTTP providers' wire formats (Anthropic's
// events, Ollama's NDJSON, OpenAI's chunks through the shared framing):
// every stream is read the same whatever its split — at every byte
// boundary, and a byte at a time — with the end, the usage counts, error
// events and lines, malformed and oversized input. Also the engine's
// helpers (Retry-After, loopback hosts) and the new providers' options, and
// tool calling in each format: the request body (tools, tool turns), whole
// replies and streamed ones with tool calls (every split), and a hostile
// server's malformed calls. Content parts: each format's body for a
// message with text and images, and the images a format refuses.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "lm/anthropic_stream.h"
#include "lm/chat_stream.h"
#include "lm/call.h"
#include "lm/http_engine.h"
#include "lm/ollama_stream.h"
#include "lm/providers.h"
#include "lm/tools.h"
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

// ---- tool calling ----------------------------------------------------------

const char* kTools =
    R"([{"name":"search","description":"find things","parameters":{"query":{"type":"str"},)"
    R"("limit":{"type":"int","min":1,"max":10}}},{"name":"now"}])";

// A request offering kTools, its messages those of the history (JSON).
Request tool_request(const std::string& history, bool stream = false) {
  Request r;
  r.model = Value::str("m");
  r.tools = std::make_shared<const Tools>(Tools::parse(from_json(kTools)));
  for (Message& m : history_messages("test", history)) r.messages.push_back(std::move(m));
  r.stream = stream;
  return r;
}

// A conversation with every kind of turn: a system prompt, a turn that
// called both tools (with text), their two results, and a user message.
const std::string kHistory =
    R"([{"role":"system","content":"be brief"},{"role":"user","content":"find cats"},)"
    R"({"role":"assistant","content":"Looking.","tool_calls":[)"
    R"({"id":"c1","name":"search","arguments":"{\"query\":\"cats\",\"limit\":2}"},)"
    R"({"id":"c2","name":"now","arguments":"{}"}]},)"
    R"({"role":"tool","tool_call_id":"c1","name":"search","content":"3 cats"},)"
    R"({"role":"tool","tool_call_id":"c2","name":"now","content":"noon"},)"
    R"({"role":"user","content":"and dogs?"},)"
    R"({"role":"assistant","content":null,"tool_calls":[{"id":"c3","name":"now","arguments":"{}"}]},)"
    R"({"role":"tool","tool_call_id":"c3","name":"now","content":"one"}])";

// A member of a JSON body, as compact JSON.
std::string member(const std::string& body, const char* key) {
  const Value v = from_json(body);
  const Value* m = v.find(key);
  return m ? to_json(*m) : "(none)";
}

const char* kFunctionTools =
    R"([{"type":"function","function":{"name":"search","description":"find things","parameters":)"
    R"({"type":"object","properties":{"query":{"type":"string"},"limit":{"type":"integer","minimum":1,)"
    R"("maximum":10}},"required":["query","limit"],"additionalProperties":false}}},)"
    R"({"type":"function","function":{"name":"now","parameters":{"type":"object","properties":{},)"
    R"("additionalProperties":false}}}])";

TEST(WireTools, OpenAIBody) {
  const std::string body = openai_wire()->body(tool_request(kHistory));
  EXPECT_EQ(member(body, "tools"), to_json(from_json(kFunctionTools)));
  EXPECT_EQ(member(body, "messages"),
            to_json(from_json(
                R"([{"role":"system","content":"be brief"},{"role":"user","content":"find cats"},)"
                R"({"role":"assistant","content":"Looking.","tool_calls":[)"
                R"({"id":"c1","type":"function","function":{"name":"search","arguments":"{\"query\":\"cats\",\"limit\":2}"}},)"
                R"({"id":"c2","type":"function","function":{"name":"now","arguments":"{}"}}]},)"
                R"({"role":"tool","content":"3 cats","tool_call_id":"c1"},)"
                R"({"role":"tool","content":"noon","tool_call_id":"c2"},)"
                R"({"role":"user","content":"and dogs?"},)"
                R"({"role":"assistant","content":"","tool_calls":[)"
                R"({"id":"c3","type":"function","function":{"name":"now","arguments":"{}"}}]},)"
                R"({"role":"tool","content":"one","tool_call_id":"c3"}])")));
  // No tools: the body is as before tools existed.
  Request plain;
  plain.model = Value::str("m");
  plain.messages.push_back(Message{"user", Value::str("hi")});
  EXPECT_EQ(openai_wire()->body(plain), R"({"model":"m","messages":[{"role":"user","content":"hi"}]})");
}

TEST(WireTools, AnthropicBody) {
  const std::string body = anthropic_wire()->body(tool_request(kHistory));
  EXPECT_EQ(member(body, "tools"),
            to_json(from_json(
                R"([{"name":"search","description":"find things","input_schema":)"
                R"({"type":"object","properties":{"query":{"type":"string"},"limit":{"type":"integer","minimum":1,)"
                R"("maximum":10}},"required":["query","limit"],"additionalProperties":false}},)"
                R"({"name":"now","input_schema":{"type":"object","properties":{},"additionalProperties":false}}])")));
  EXPECT_EQ(member(body, "system"), R"("be brief")");
  // Turns alternate: the two results and the user's next words are one
  // user turn; a turn's text comes before its tool_use blocks.
  EXPECT_EQ(member(body, "messages"),
            to_json(from_json(
                R"([{"role":"user","content":"find cats"},)"
                R"({"role":"assistant","content":[{"type":"text","text":"Looking."},)"
                R"({"type":"tool_use","id":"c1","name":"search","input":{"query":"cats","limit":2}},)"
                R"({"type":"tool_use","id":"c2","name":"now","input":{}}]},)"
                R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"3 cats"},)"
                R"({"type":"tool_result","tool_use_id":"c2","content":"noon"},{"type":"text","text":"and dogs?"}]},)"
                R"({"role":"assistant","content":[{"type":"tool_use","id":"c3","name":"now","input":{}}]},)"
                R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"c3","content":"one"}]}])")));
}

TEST(WireTools, OllamaBody) {
  const std::string body = ollama_wire()->body(tool_request(kHistory, true));
  EXPECT_EQ(member(body, "tools"), to_json(from_json(kFunctionTools)));
  EXPECT_EQ(member(body, "stream"), "true");
  EXPECT_EQ(member(body, "messages"),
            to_json(from_json(
                R"([{"role":"system","content":"be brief"},{"role":"user","content":"find cats"},)"
                R"({"role":"assistant","content":"Looking.","tool_calls":[)"
                R"({"function":{"name":"search","arguments":{"query":"cats","limit":2}}},)"
                R"({"function":{"name":"now","arguments":{}}}]},)"
                R"({"role":"tool","content":"3 cats","tool_name":"search"},)"
                R"({"role":"tool","content":"noon","tool_name":"now"},)"
                R"({"role":"user","content":"and dogs?"},)"
                R"({"role":"assistant","content":"","tool_calls":[{"function":{"name":"now","arguments":{}}}]},)"
                R"({"role":"tool","content":"one","tool_name":"now"}])")));
}

// Arguments that are not a JSON object are refused, not pasted into the
// body (Anthropic and Ollama carry them as objects).
// A call's tool_choice in each API's words; Ollama, which has none, offers
// no tools for "none" and refuses the choices it cannot ask for.
TEST(WireTools, ToolChoice) {
  Request r = tool_request(kHistory);
  EXPECT_EQ(member(openai_wire()->body(r), "tool_choice"), "(none)");
  EXPECT_EQ(member(anthropic_wire()->body(r), "tool_choice"), "(none)");
  const struct {
    const char* choice;
    const char* openai;
    const char* anthropic;
  } kCases[] = {
      {"auto", R"("auto")", R"({"type":"auto"})"},
      {"required", R"("required")", R"({"type":"any"})"},
      {"none", R"("none")", R"({"type":"none"})"},
      {"search", R"({"type":"function","function":{"name":"search"}})", R"({"type":"tool","name":"search"})"},
  };
  for (const auto& c : kCases) {
    r.tool_choice = Value::str(c.choice);
    EXPECT_EQ(member(openai_wire()->body(r), "tool_choice"), c.openai) << c.choice;
    EXPECT_EQ(member(anthropic_wire()->body(r), "tool_choice"), c.anthropic) << c.choice;
  }
  r.tool_choice = Value::str("none");
  EXPECT_EQ(member(ollama_wire()->body(r), "tools"), "(none)");
  r.tool_choice = Value::str("auto");
  EXPECT_NE(member(ollama_wire()->body(r), "tools"), "(none)");
  for (const char* choice : {"required", "search"}) {
    r.tool_choice = Value::str(choice);
    try {
      ollama_wire()->body(r);
      ADD_FAILURE() << "ollama accepted tool_choice " << choice;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Code::InvalidArgument);
      EXPECT_NE(std::string(e.what()).find("has no tool_choice"), std::string::npos) << e.what();
    }
  }
}

TEST(WireTools, ArgumentsThatAreNotAnObjectAreRefused) {
  Request r = tool_request(R"([{"role":"user","content":"x"},{"role":"assistant","content":"","tool_calls":[)"
                           R"({"id":"c1","name":"now","arguments":"{},\"model\":\"evil\""}]},)"
                           R"({"role":"tool","tool_call_id":"c1","name":"now","content":"one"}])");
  for (auto wire : {anthropic_wire(), ollama_wire()}) {
    try {
      wire->body(r);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Code::InvalidArgument);
      EXPECT_NE(std::string(e.what()).find("tool call \"c1\" (now): its arguments are not a JSON object"),
                std::string::npos)
          << e.what();
    }
  }
  // OpenAI carries them as a string: sent as they are.
  EXPECT_NE(openai_wire()->body(r).find(R"("arguments":"{},\"model\":\"evil\"")"), std::string::npos);
}

struct Replied {
  bool ok;
  std::string text, why;
};

// A whole reply body read by wire for a request with tools (or without).
Replied reply_of(const Wire& wire, const std::string& body, bool tools = true) {
  Request r = tools ? tool_request("[]") : Request{};
  r.model = Value::str("m");
  Call call(std::move(r), [](Call&, std::string*, const Error*) {}, 0);
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  EXPECT_EQ(parser.parse(body).get(root), simdjson::SUCCESS) << body;
  Replied out;
  out.ok = wire.reply(root, body, call, out.text, out.why, "");
  call.complete("");
  return out;
}

const std::string kToolReply =
    R"({"content":null,"tool_calls":[{"id":"c1","name":"search","arguments":"{\"query\":\"cats\",\"limit\":2}"},)"
    R"({"id":"c2","name":"now","arguments":"{}"}]})";

TEST(WireTools, WholeRepliesWithToolCalls) {
  Replied r = reply_of(*openai_wire(),
                       R"({"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[)"
                       R"({"id":"c1","type":"function","function":{"name":"search","arguments":"{\"query\":\"cats\",\"limit\":2}"}},)"
                       R"({"id":"c2","type":"function","function":{"name":"now","arguments":"{}"}}]}}]})");
  EXPECT_TRUE(r.ok) << r.why;
  EXPECT_EQ(r.text, kToolReply);
  // Anthropic: text blocks joined, tool_use inputs as compact text.
  r = reply_of(*anthropic_wire(),
               R"({"type":"message","content":[{"type":"text","text":"Look"},{"type":"tool_use","id":"c1",)"
               R"("name":"search","input":{"query": "cats", "limit": 2}},{"type":"text","text":"ing."},)"
               R"({"type":"tool_use","id":"c2","name":"now","input":{}}],"stop_reason":"tool_use"})");
  EXPECT_TRUE(r.ok) << r.why;
  EXPECT_EQ(r.text, R"({"content":"Looking.","tool_calls":[{"id":"c1","name":"search","arguments":"{\"query\":\"cats\",\"limit\":2}"},)"
                    R"({"id":"c2","name":"now","arguments":"{}"}]})");
  // Ollama: arguments objects, no ids.
  r = reply_of(*ollama_wire(),
               R"({"message":{"role":"assistant","content":"","tool_calls":[)"
               R"({"function":{"name":"search","arguments":{"query":"cats","limit":2}}},)"
               R"({"function":{"name":"now","arguments":{}}}]},"done":true})");
  EXPECT_TRUE(r.ok) << r.why;
  EXPECT_EQ(r.text, R"({"content":null,"tool_calls":[{"id":"call_0","name":"search","arguments":"{\"query\":\"cats\",\"limit\":2}"},)"
                    R"({"id":"call_1","name":"now","arguments":"{}"}]})");
  // Text only: still the tool reply form, with no calls.
  const std::string text_only = R"({"content":"fine","tool_calls":[]})";
  r = reply_of(*openai_wire(), R"({"choices":[{"message":{"content":"fine"}}]})");
  EXPECT_EQ(r.text, text_only);
  r = reply_of(*anthropic_wire(), R"({"content":[{"type":"text","text":"fine"}]})");
  EXPECT_EQ(r.text, text_only);
  r = reply_of(*ollama_wire(), R"({"message":{"content":"fine"},"done":true})");
  EXPECT_EQ(r.text, text_only);
  // Without tools a reply is read as before: its calls are not looked at.
  r = reply_of(*ollama_wire(), R"({"message":{"content":"fine","tool_calls":[42]},"done":true})", false);
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.text, "fine");
  r = reply_of(*openai_wire(), R"({"choices":[{"message":{"content":null,"tool_calls":[]}}]})", false);
  EXPECT_FALSE(r.ok);
}

TEST(WireTools, HostileWholeRepliesAreRefused) {
  struct Case {
    std::shared_ptr<const Wire> wire;
    std::string body, fragment;
  };
  auto openai = [](const std::string& calls) {
    return R"({"choices":[{"message":{"content":null,"tool_calls":)" + calls + "}}]}";
  };
  auto ollama = [](const std::string& calls) {
    return R"({"message":{"content":"","tool_calls":)" + calls + R"(},"done":true})";
  };
  auto anthropic = [](const std::string& block) { return R"({"type":"message","content":[)" + block + "]}"; };
  for (const Case& c : std::vector<Case>{
           {openai_wire(), openai("{}"), "choices[0].message.tool_calls is not a list"},
           {openai_wire(), openai("[42]"), "choices[0].message.tool_calls[0] is not an object"},
           {openai_wire(), openai(R"([{"id":"c","function":{"arguments":"{}"}}])"), "tool_calls[0] has no function.name string"},
           {openai_wire(), openai(R"([{"id":"c","function":"f"}])"), "tool_calls[0] has no \"function\" object"},
           {openai_wire(), openai(R"([{"id":7,"function":{"name":"now"}}])"), "has an \"id\" that is not a string"},
           {openai_wire(), openai(R"([{"id":"c","function":{"name":"now","arguments":42}}])"),
            "function.arguments that are neither a JSON string nor an object"},
           {ollama_wire(), ollama("[42]"), "message.tool_calls[0] is not an object"},
           {ollama_wire(), ollama(R"([{"function":{"name":"now","arguments":[1]}}])"), "neither a JSON string nor an object"},
           {anthropic_wire(), anthropic(R"({"type":"tool_use","id":"c","input":{}})"), "bad tool_use block: no \"name\" string"},
           {anthropic_wire(), anthropic(R"({"type":"tool_use","id":42,"name":"now","input":{}})"), "no \"id\" string"},
           {anthropic_wire(), anthropic(R"({"type":"tool_use","id":"c","name":"now","input":"{}"})"), "no \"input\" object"},
       }) {
    Replied r = reply_of(*c.wire, c.body);
    EXPECT_FALSE(r.ok) << c.body;
    EXPECT_NE(r.why.find(c.fragment), std::string::npos) << r.why;
  }
  // A server's list of calls is capped.
  std::string many = "[";
  for (size_t i = 0; i <= kMaxToolCalls; ++i) many += std::string(i ? "," : "") + R"({"function":{"name":"now"}})";
  Replied r = reply_of(*ollama_wire(), ollama(many + "]"));
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.why.find("holds more than 1024 tool calls"), std::string::npos) << r.why.substr(0, 200);
}

struct ToolRead {
  bool ok = true;
  std::string joined, reply, error;
};

// A stream with tools fed in the given pieces: the text reported, and what
// the call completes with (or the error).
ToolRead read_tools(Format f, const std::vector<std::string_view>& parts, size_t max = 1 << 20) {
  std::vector<std::string> pieces;
  auto p = parser(f, &pieces, max);
  p->set_tools(true);
  ToolRead r;
  for (std::string_view part : parts)
    if (r.ok) r.ok = p->feed(part);
  if (r.ok && !p->ended()) {
    r.ok = false;
    r.error = "not ended";
  }
  std::string why;
  if (r.ok) r.ok = p->reply(r.reply, why);
  r.error = r.ok ? "" : r.error.empty() ? p->error() + why : r.error;
  for (const auto& s : pieces) r.joined += s;
  return r;
}

void expect_tools_any_split(Format f, const std::string& bytes, const std::string& text, const std::string& reply) {
  for (size_t i = 0; i <= bytes.size(); ++i) {
    ToolRead r = read_tools(f, {std::string_view(bytes).substr(0, i), std::string_view(bytes).substr(i)});
    SCOPED_TRACE("split at " + std::to_string(i));
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.joined, text);  // the text still streams as it comes
    EXPECT_EQ(r.reply, reply);
  }
}

TEST(WireTools, OpenAIStreamAssemblesCalls) {
  const std::string bytes =
      "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"Look\"}}]}\n\n"
      "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"type\":\"function\","
      "\"function\":{\"name\":\"search\",\"arguments\":\"\"}}]}}]}\n\n"
      "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"query\\\":\"}}]}}]}\n\n"
      "data: {\"choices\":[{\"delta\":{\"content\":\"ing.\",\"tool_calls\":[{\"index\":1,\"id\":\"c2\","
      "\"function\":{\"name\":\"now\"}}]}}]}\n\n"
      "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"cats\\\",\"}}]}}]}\n\n"
      "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"function\":{\"arguments\":"
      "\"\\\"limit\\\":2}\"}}]}}]}\n\n"
      "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n"
      "data: [DONE]\n\n";
  expect_tools_any_split(Format::OpenAI, bytes, "Looking.",
                         R"({"content":"Looking.","tool_calls":[{"id":"c1","name":"search","arguments":"{\"query\":\"cats\",\"limit\":2}"},)"
                         R"({"id":"c2","name":"now","arguments":"{}"}]})");
  // Without tools, the same stream is its text alone.
  Read want;
  want.text = "Looking.";
  want.ended = true;
  expect_any_split(Format::OpenAI, bytes, want);
}

TEST(WireTools, AnthropicStreamAssemblesCalls) {
  const std::string bytes =
      kAnthropic.substr(0, kAnthropic.find("event: message_delta")) +
      "event: content_block_start\n"
      "data: {\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"tool_use\",\"id\":\"c1\","
      "\"name\":\"search\",\"input\":{}}}\n\n"
      "event: content_block_delta\n"
      "data: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":"
      "\"{\\\"query\\\": \\\"ca\"}}\n\n"
      "event: content_block_delta\n"
      "data: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":"
      "\"ts\\\", \\\"limit\\\": 2}\"}}\n\n"
      "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":2}\n\n"
      "event: content_block_start\n"
      "data: {\"type\":\"content_block_start\",\"index\":3,\"content_block\":{\"type\":\"tool_use\",\"id\":\"c2\","
      "\"name\":\"now\",\"input\":{}}}\n\n"
      "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":3}\n\n"
      "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
  // The input's JSON text as the model streamed it (parse_reply compacts it).
  expect_tools_any_split(Format::Anthropic, bytes, "Hello \xC3\xA9",
                         "{\"content\":\"Hello \xC3\xA9\",\"tool_calls\":[{\"id\":\"c1\",\"name\":\"search\",\"arguments\":"
                         R"("{\"query\": \"cats\", \"limit\": 2}"},{"id":"c2","name":"now","arguments":"{}"}]})");
}

TEST(WireTools, OllamaStreamAssemblesCalls) {
  const std::string bytes =
      "{\"message\":{\"role\":\"assistant\",\"content\":\"Look\"},\"done\":false}\n"
      "{\"message\":{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{\"function\":{\"name\":\"search\","
      "\"arguments\":{\"query\":\"cats\",\"limit\":2}}}]},\"done\":false}\n"
      "{\"message\":{\"role\":\"assistant\",\"content\":\"ing.\",\"tool_calls\":[{\"function\":{\"name\":\"now\","
      "\"arguments\":{}}}]},\"done\":false}\n"
      "{\"message\":{\"role\":\"assistant\",\"content\":\"\"},\"done\":true}\n";
  expect_tools_any_split(Format::Ollama, bytes, "Looking.",
                         R"({"content":"Looking.","tool_calls":[{"id":"call_0","name":"search","arguments":"{\"query\":\"cats\",\"limit\":2}"},)"
                         R"({"id":"call_1","name":"now","arguments":"{}"}]})");
}

TEST(WireTools, HostileStreamsAreRefused) {
  const std::string end_openai = "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n";
  auto openai = [&](const std::string& calls) {
    return "data: {\"choices\":[{\"delta\":{\"tool_calls\":" + calls + "}}]}\n\n" + end_openai;
  };
  auto anthropic = [](const std::string& event) {
    return "data: " + event + "\n\ndata: {\"type\":\"message_stop\"}\n\n";
  };
  auto ollama = [](const std::string& calls) {
    return "{\"message\":{\"content\":\"\",\"tool_calls\":" + calls + "},\"done\":true}\n";
  };
  const std::string big(80, 'y');
  struct Case {
    Format f;
    std::string bytes, fragment;
  };
  for (const Case& c : std::vector<Case>{
           {Format::OpenAI, openai("{}"), "delta.tool_calls of an event is not a list"},
           {Format::OpenAI, openai("[42]"), "delta.tool_calls[0] of an event is not an object"},
           {Format::OpenAI, openai(R"([{"index":-1}])"), "has an \"index\" that is not a non-negative integer"},
           {Format::OpenAI, openai(R"([{"index":0,"function":{"arguments":{}}}])"),
            "has a \"function.arguments\" that is not a string"},
           {Format::OpenAI, openai(R"([{"index":0,"function":{"arguments":"{}"}}])"),
            "tool call 0 of the streamed reply has no name"},
           {Format::OpenAI, openai(R"([{"index":0,"function":{"name":"now","arguments":")" + big + R"("}}])") +
                                openai(R"([{"index":0,"function":{"arguments":")" + big + R"("}}])") +
                                openai(R"([{"index":0,"function":{"arguments":")" + big + R"("}}])"),
            "the streamed reply is larger than 200 bytes"},
           {Format::Anthropic, anthropic(R"({"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"c"}})"),
            "a tool_use block has no \"id\" and \"name\" strings"},
           {Format::Anthropic, anthropic(R"({"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":{}}})"),
            "an input_json_delta has no \"partial_json\" string"},
           {Format::Anthropic, anthropic(R"({"type":"content_block_delta","delta":{"type":"input_json_delta","partial_json":"{"}})"),
            "has no \"index\""},
           {Format::Anthropic, anthropic(R"({"type":"content_block_delta","index":4,"delta":{"type":"input_json_delta","partial_json":"{}"}})"),
            "tool call 0 of the streamed reply has no name"},
           {Format::Ollama, ollama("[42]"), "bad tool calls in a line: message.tool_calls[0] is not an object"},
           {Format::Ollama, ollama(R"([{"function":{"arguments":{}}}])"), "has no function.name string"},
       }) {
    ToolRead r = read_tools(c.f, {c.bytes}, 200);
    EXPECT_FALSE(r.ok) << c.bytes;
    EXPECT_NE(r.error.find(c.fragment), std::string::npos) << r.error;
  }
  // Ever new call indices stop at the cap.
  std::string many;
  for (size_t i = 0; i <= kMaxToolCalls; ++i)
    many += "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":" + std::to_string(i) + "}]}}]}\n\n";
  ToolRead r = read_tools(Format::OpenAI, {many});
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("makes more than 1024 tool calls"), std::string::npos) << r.error;
}

// ---- content parts (images) ------------------------------------------------

ContentPart text_part(const std::string& text) {
  ContentPart p;
  p.value = Value::str(text);
  return p;
}

ContentPart url_part(const std::string& url) {
  ContentPart p;
  p.type = ContentPart::Type::ImageUrl;
  p.value = Value::str(url);
  return p;
}

ContentPart data_part(const std::string& media_type, const std::string& data) {
  ContentPart p;
  p.type = ContentPart::Type::ImageData;
  p.media_type = media_type;
  p.value = Value::str(data);
  return p;
}

// A message given as parts, its content the text parts joined (as
// prims/lm.cpp makes it).
Message parts_message(const std::string& role, std::vector<ContentPart> parts) {
  std::string text;
  for (const ContentPart& p : parts)
    if (p.type == ContentPart::Type::Text) text += (text.empty() ? "" : "\n\n") + p.value.as_str();
  Message m{role, Value::str(text)};
  m.parts = std::make_shared<const std::vector<ContentPart>>(std::move(parts));
  return m;
}

const std::string kPng = "iVBORw0KGgo=";  // a PNG's signature, base64
const std::string kJpeg = "/9j/4A==";     // a JPEG's

// Text, an image by URL, an image as data, more text, an image as a data:
// URL, in that order.
std::vector<ContentPart> kParts() {
  return {text_part("what is this?"), url_part("https://example.com/cat.png"), data_part("image/png", kPng),
          text_part("and this?"), url_part("data:image/jpeg;base64," + kJpeg)};
}

// A system prompt given as parts (text alone) and a user message with images.
Request parts_request() {
  Request r;
  r.model = Value::str("m");
  r.messages.push_back(parts_message("system", {text_part("be"), text_part("brief")}));
  r.messages.push_back(parts_message("user", kParts()));
  return r;
}

std::string error_of_body(const Wire& wire, const Request& r) {
  try {
    wire.body(r);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::InvalidArgument) << e.what();
    return e.what();
  }
  return "(no error)";
}

TEST(WireParts, OpenAIBody) {
  // The user message as a content list of text and image_url parts (data
  // as a data: URL); the system message of text parts as its joined text.
  EXPECT_EQ(openai_wire()->body(parts_request()),
            R"({"model":"m","messages":[{"role":"system","content":"be\n\nbrief"},{"role":"user","content":[)"
            R"({"type":"text","text":"what is this?"},)"
            R"({"type":"image_url","image_url":{"url":"https://example.com/cat.png"}},)"
            R"({"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}},)"
            R"({"type":"text","text":"and this?"},)"
            R"({"type":"image_url","image_url":{"url":"data:image/jpeg;base64,/9j/4A=="}}]}]})");
  // A user message of text parts alone is a list too.
  Request r;
  r.model = Value::str("m");
  r.messages.push_back(parts_message("user", {text_part("hi")}));
  EXPECT_EQ(openai_wire()->body(r),
            R"({"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]})");
}

TEST(WireParts, AnthropicBody) {
  // Content blocks in order: an image by URL a url source, an image as data
  // or a data: URL a base64 source; the system prompt's text in "system".
  EXPECT_EQ(anthropic_wire()->body(parts_request()),
            R"({"model":"m","max_tokens":1024,"system":"be\n\nbrief","messages":[{"role":"user","content":[)"
            R"({"type":"text","text":"what is this?"},)"
            R"({"type":"image","source":{"type":"url","url":"https://example.com/cat.png"}},)"
            R"({"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}},)"
            R"({"type":"text","text":"and this?"},)"
            R"({"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"/9j/4A=="}}]}]})");
  // The user's next words after tool results join their turn as blocks,
  // images included; empty text parts are left out (the API refuses empty
  // text blocks), and a message of nothing else goes as its text.
  Request t = tool_request(R"([{"role":"user","content":"find cats"},{"role":"assistant","content":null,)"
                           R"("tool_calls":[{"id":"c1","name":"now","arguments":"{}"}]},)"
                           R"({"role":"tool","tool_call_id":"c1","name":"now","content":"noon"}])");
  t.messages.push_back(parts_message("user", {text_part(""), url_part("https://example.com/dog.png"), text_part("a dog?")}));
  t.messages.push_back(Message{"assistant", Value::str("yes")});
  t.messages.push_back(parts_message("user", {text_part("")}));
  EXPECT_EQ(member(anthropic_wire()->body(t), "messages"),
            to_json(from_json(
                R"([{"role":"user","content":"find cats"},)"
                R"({"role":"assistant","content":[{"type":"tool_use","id":"c1","name":"now","input":{}}]},)"
                R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"noon"},)"
                R"({"type":"image","source":{"type":"url","url":"https://example.com/dog.png"}},)"
                R"({"type":"text","text":"a dog?"}]},)"
                R"({"role":"assistant","content":"yes"},{"role":"user","content":""}])")));
}

TEST(WireParts, OllamaBody) {
  // The text parts joined as "content", the images' base64 data as
  // "images" (a data: URL's data).
  Request r = parts_request();
  r.messages[1] = parts_message("user", {text_part("what is this?"), data_part("image/png", kPng),
                                         text_part("and this?"), url_part("data:image/jpeg;base64," + kJpeg)});
  EXPECT_EQ(ollama_wire()->body(r),
            R"({"model":"m","messages":[{"role":"system","content":"be\n\nbrief"},)"
            R"({"role":"user","content":"what is this?\n\nand this?","images":["iVBORw0KGgo=","/9j/4A=="]}],)"
            R"("stream":false})");
  // Text parts alone: no "images".
  r.messages[1] = parts_message("user", {text_part("hi")});
  EXPECT_EQ(member(ollama_wire()->body(r), "messages"),
            R"([{"role":"system","content":"be\n\nbrief"},{"role":"user","content":"hi"}])");
}

TEST(WireParts, Refusals) {
  // An image outside a user message, in every format.
  for (const char* role : {"system", "assistant"}) {
    Request r = parts_request();
    r.messages.push_back(parts_message(role, {text_part("see"), data_part("image/png", kPng)}));
    for (auto wire : {openai_wire(), anthropic_wire(), ollama_wire()}) {
      const std::string e = error_of_body(*wire, r);
      EXPECT_NE(e.find("images can be given in user messages only; messages[2] (role \"" + std::string(role) +
                       "\") has one"),
                std::string::npos)
          << e;
    }
  }
  // Ollama takes no image by URL.
  Request r = parts_request();
  std::string e = error_of_body(*ollama_wire(), r);
  EXPECT_NE(e.find("ollama: Ollama's chat API takes images as base64 data only; give "
                   "{\"type\":\"image\",\"media_type\":...,\"data\":...} (messages[1].content[1] is an image by URL)"),
            std::string::npos)
      << e;
  // A data: URL that is not a base64 image's: refused where it is read
  // (OpenAI sends the URL as it is).
  for (const char* url : {"data:image/png,iVBORw0KGgo=", "data:text/plain;base64,aGk=",
                          "data:image/png;base64,not base64!", "data:image/png;base64,", "data:"}) {
    Request bad;
    bad.model = Value::str("m");
    bad.messages.push_back(parts_message("user", {text_part("x"), url_part(url)}));
    for (auto wire : {anthropic_wire(), ollama_wire()}) {
      e = error_of_body(*wire, bad);
      EXPECT_NE(e.find(": messages[0].content[1]: an image's data: URL must be data:<media type>;base64,<data>"),
                std::string::npos)
          << url << ": " << e;
    }
    EXPECT_NE(openai_wire()->body(bad).find(url), std::string::npos);
  }
}

}  // namespace
}  // namespace af::lm

// Where TLS finds CA certificates: the environment first, then libcurl's
// own default when it is there, then the common distributions' bundles.
TEST(HttpCa, EnvironmentThenLibcurlDefaultThenKnownBundles) {
  std::set<std::string> present;
  const auto readable = [&](const char* f) { return present.count(f) != 0; };
  present = {"/my/ca.pem", "/etc/pki/tls/certs/ca-bundle.crt"};
  af::lm::CaPaths p = af::lm::choose_ca_paths("/my/ca.pem", nullptr, "/etc/ssl/certs/ca-certificates.crt",
                                              nullptr, readable);
  EXPECT_EQ(p.file, "/my/ca.pem");
  EXPECT_EQ(p.dir, "");
  // An unreadable SSL_CERT_FILE is passed over; libcurl's default is missing
  // here (a wheel's libcurl built on Debian, run on Fedora): Fedora's bundle.
  p = af::lm::choose_ca_paths("/nope.pem", "", "/etc/ssl/certs/ca-certificates.crt", "/etc/ssl/certs", readable);
  EXPECT_EQ(p.file, "/etc/pki/tls/certs/ca-bundle.crt");
  // libcurl's default is there: nothing is set (libcurl uses it).
  present = {"/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt"};
  p = af::lm::choose_ca_paths(nullptr, nullptr, "/etc/ssl/certs/ca-certificates.crt", nullptr, readable);
  EXPECT_TRUE(p.file.empty() && p.dir.empty());
  // SSL_CERT_DIR alone.
  present = {"/my/certs"};
  p = af::lm::choose_ca_paths(nullptr, "/my/certs", nullptr, nullptr, readable);
  EXPECT_EQ(p.dir, "/my/certs");
  EXPECT_EQ(p.file, "");
  // Nothing anywhere: libcurl's default stays (and TLS fails saying so).
  present = {};
  p = af::lm::choose_ca_paths(nullptr, nullptr, nullptr, nullptr, readable);
  EXPECT_TRUE(p.file.empty() && p.dir.empty());
}
