// openai: any OpenAI-compatible chat-completions endpoint over HTTP(S)
// (POST base_url + "/chat/completions"). The engine — retries, timeouts,
// streams, the key — is lm/http_engine.cpp's; this file is the wire format:
// the request body (response_format json_schema, or json_object with the
// schema and a system instruction; tools and tool turns in the function
// form; a user message given as parts as a content list of text and
// image_url parts), a whole reply (choices[0].message with its tool_calls, usage) and
// a stream of chat.completion.chunk events (lm/chat_stream.h).
#include <simdjson.h>

#include "lm/chat_stream.h"
#include "lm/excerpt.h"
#include "lm/http_engine.h"
#include "lm/options.h"
#include "lm/providers.h"
#include "lm/schema.h"
#include "lm/tools.h"

namespace af::lm {

namespace {

// ,"tool_choice":... for a call's choice (null: the API's default, "auto").
std::string openai_tool_choice(const Value& choice) {
  if (choice.is_null()) return "";
  const std::string& c = choice.as_str();
  std::string s = ",\"tool_choice\":";
  if (c == "auto" || c == "required" || c == "none") {
    append_json_string(s, c);
  } else {
    s += "{\"type\":\"function\",\"function\":{\"name\":";
    append_json_string(s, c);
    s += "}}";
  }
  return s;
}

class OpenAIWire final : public Wire {
 public:
  // How structured output is asked for: response_format json_schema (OpenAI,
  // vLLM, llama.cpp's server) or json_object with a "schema" member
  // (llama-cpp-python's server and servers like it).
  bool json_object = false;
  Value extra;  // dict or null

  std::string body(const Request& r) const override {
    std::string s = "{\"model\":";
    append_json_string(s, r.model.as_str());
    s += ",\"messages\":[";
    check_image_roles(r, "openai");
    auto message = [&s](const std::string& role, const std::string& content, const ToolTurn* tool = nullptr,
                        const std::vector<ContentPart>* parts = nullptr) {
      s += "{\"role\":";
      append_json_string(s, role);
      s += ",\"content\":";
      if (parts && role == "user") {
        // A user message given as parts: a list of text and image_url
        // parts, in order (an image as data goes as a data: URL).
        s += '[';
        for (const ContentPart& p : *parts) {
          if (s.back() != '[') s += ',';
          if (p.type == ContentPart::Type::Text) {
            s += "{\"type\":\"text\",\"text\":";
            append_json_string(s, p.value.as_str());
          } else {
            s += "{\"type\":\"image_url\",\"image_url\":{\"url\":";
            append_json_string(s, p.type == ContentPart::Type::ImageUrl
                                      ? p.value.as_str()
                                      : "data:" + p.media_type + ";base64," + p.value.as_str());
            s += '}';
          }
          s += '}';
        }
        s += ']';
      } else {
        // Always a string, "" for a turn that only called tools: the API
        // takes null there too, but servers that check messages strictly
        // (llama-cpp-python's) take only a string. (Parts of another role
        // are text alone: check_image_roles; sent joined.)
        append_json_string(s, content);
      }
      if (tool && !tool->calls.empty()) {
        s += ",\"tool_calls\":[";
        for (const ToolCall& c : tool->calls) {
          if (s.back() != '[') s += ',';
          s += "{\"id\":";
          append_json_string(s, c.id);
          s += ",\"type\":\"function\",\"function\":{\"name\":";
          append_json_string(s, c.name);
          s += ",\"arguments\":";
          append_json_string(s, c.arguments.empty() ? "{}" : c.arguments);  // JSON text, as a string
          s += "}}";
        }
        s += ']';
      } else if (tool && role == "tool") {
        s += ",\"tool_call_id\":";
        append_json_string(s, tool->call_id);
      }
      s += '}';
    };
    // json_object mode: the server builds a grammar from the schema, which
    // ignores numeric bounds (small int ranges also go as enums, which it
    // enforces), and tells the model nothing of it (field meanings, bounds):
    // a system instruction carries it, joined to the conversation's own
    // system message when it starts with one.
    size_t first = 0;
    if (r.schema && json_object) {
      std::string instruction = schema_instruction(*r.schema);
      if (!r.messages.empty() && r.messages[0].role == "system") {
        message("system", r.messages[0].content.as_str() + "\n\n" + instruction);
        first = 1;
      } else {
        message("system", instruction);
      }
    }
    for (size_t i = first; i < r.messages.size(); ++i) {
      if (s.back() != '[') s += ',';
      message(r.messages[i].role, r.messages[i].content.as_str(), r.messages[i].tool.get(), r.messages[i].parts.get());
    }
    s += ']';
    if (r.tools) s += ",\"tools\":" + function_tools(*r.tools) + openai_tool_choice(r.tool_choice);
    if (r.schema && json_object)
      s += ",\"response_format\":{\"type\":\"json_object\",\"schema\":" + r.schema->grammar_json_schema() + "}";
    else if (r.schema)
      s += ",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"output\",\"strict\":true,"
           "\"schema\":" + r.schema->json_schema() + "}}";
    if (r.stream) s += ",\"stream\":true,\"stream_options\":{\"include_usage\":true}";
    // The provider's "extra" defaults, then the call's own sampling params
    // (which win over a default of the same name), stepped for a re-ask.
    const Value sampling = sampling_for(extra, r);
    if (sampling.kind() == Kind::Dict)
      for (const auto& [k, v] : sampling.entries()) {
        s += ',';
        append_json_string(s, k);
        s += ':';
        append_json(s, v);
      }
    s += '}';
    return s;
  }

  bool reply(simdjson::dom::element root, std::string_view body, Call& call, std::string& text,
             std::string& why, std::string_view secret) const override {
    simdjson::dom::object msg;
    const bool has_msg = root["choices"].at(0)["message"].get(msg) == simdjson::SUCCESS;
    // With tools, message.tool_calls lists the calls made.
    std::vector<ToolCall> calls;
    if (simdjson::dom::element list; call.request().tools && has_msg &&
                                     msg["tool_calls"].get(list) == simdjson::SUCCESS && !list.is_null())
      if (!read_function_calls(list, "choices[0].message.tool_calls", calls, why)) {
        why = "bad tool calls: " + why + ": " + safe_excerpt(body, secret);
        return false;
      }
    // The content is null (or absent) when the model only called tools.
    std::string_view content;
    if (!has_msg || (msg["content"].get(content) != simdjson::SUCCESS && calls.empty())) {
      std::string_view refusal;
      if (has_msg && msg["refusal"].get(refusal) == simdjson::SUCCESS)
        why = "the model refused: " + safe_excerpt(refusal, secret);
      else
        why = "the response has no choices[0].message.content: " + safe_excerpt(body, secret);
      return false;
    }
    text = call.request().tools ? tool_reply(content, calls) : std::string(content);
    // Usage is optional in the wire format (some servers omit it): counted
    // when present with integer fields.
    if (simdjson::dom::element usage; root["usage"].get(usage) == simdjson::SUCCESS)
      read_usage(usage, "prompt_tokens", "completion_tokens", call);
    return true;
  }

  std::string_view stream_type() const noexcept override { return "text/event-stream"; }
  std::unique_ptr<StreamParser> stream(std::function<void(std::string_view)> on_text,
                                       size_t max_bytes) const override {
    return std::make_unique<ChatStream>(std::move(on_text), max_bytes);
  }
};

constexpr HttpDefaults kOpenAI{"openai", nullptr, "https://api.openai.com/v1", "/chat/completions",
                               "Authorization: Bearer ", "", 16};

}  // namespace

std::shared_ptr<const Wire> openai_wire() { return std::make_shared<OpenAIWire>(); }

ProviderPtr make_openai(const Value& options) {
  Options o(options, "openai provider");
  HttpOptions http(o, kOpenAI);
  auto wire = std::make_shared<OpenAIWire>();
  std::string structured = o.str("structured_output", "json_schema", "How structured calls ask: \"json_schema\" (response_format json_schema) or \"json_object\".");
  if (structured != "json_schema" && structured != "json_object")
    invalid("openai provider: option \"structured_output\" must be \"json_schema\" (the default) or "
            "\"json_object\" (response_format {\"type\": \"json_object\", \"schema\": ...}), found \"" +
            structured + "\"");
  wire->json_object = structured == "json_object";
  wire->extra = read_extra(o, "openai", {"model", "messages", "response_format", "stream", "stream_options", "tools"});
  o.finish();
  http.finish();
  return make_http_provider(http, std::move(wire));
}

}  // namespace af::lm
