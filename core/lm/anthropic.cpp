// anthropic: the Messages API (POST base_url + "/v1/messages", headers
// x-api-key and anthropic-version). The engine — retries (429, 529
// overloaded and the other 5xx), timeouts, streams, the key — is
// lm/http_engine.cpp's; this file is the wire format.
//
// Anthropic takes the system prompt as a top-level "system" string, not a
// message: every system message goes there, joined by blank lines, and the
// conversation keeps its user and assistant turns. "max_tokens" is
// required by the API: the option's default unless a call or "extra" sets
// it. There is no response_format: a schema call carries the JSON Schema as
// a system instruction, and libaf validates the reply (and re-asks) as for
// any provider. There is no seed either: a call's "seed" is not sent.
#include <simdjson.h>

#include "lm/anthropic_stream.h"
#include "lm/excerpt.h"
#include "lm/http_engine.h"
#include "lm/options.h"
#include "lm/providers.h"
#include "lm/schema.h"

namespace af::lm {

namespace {

class AnthropicWire final : public Wire {
 public:
  int64_t max_tokens = 1024;
  Value extra;  // dict or null: request fields, under the call's params

  std::string body(const Request& r) const override {
    std::string system;
    for (const Message& m : r.messages)
      if (m.role == "system") system += (system.empty() ? "" : "\n\n") + m.content.as_str();
    if (r.schema) system += (system.empty() ? "" : "\n\n") + schema_instruction(*r.schema);
    std::string s = "{\"model\":";
    append_json_string(s, r.model.as_str());
    Fields fields;
    const Value sampling = sampling_for(extra, r);
    if (sampling.kind() == Kind::Dict)
      for (const auto& [k, v] : sampling.entries()) {
        if (k == "seed") continue;  // not in the API (it refuses unknown fields)
        if (k == "stop") fields.set("stop_sequences", stop_list(v));
        else fields.set(k, v);
      }
    if (!fields.has("max_tokens")) {
      s += ",\"max_tokens\":";
      s += std::to_string(max_tokens);
    }
    fields.append_to(s);
    if (!system.empty()) {
      s += ",\"system\":";
      append_json_string(s, system);
    }
    s += ",\"messages\":[";
    for (const Message& m : r.messages) {
      if (m.role == "system") continue;
      if (s.back() != '[') s += ',';
      s += "{\"role\":";
      append_json_string(s, m.role);
      s += ",\"content\":";
      append_json_string(s, m.content.as_str());
      s += '}';
    }
    s += ']';
    if (r.stream) s += ",\"stream\":true";
    s += '}';
    return s;
  }

  bool reply(simdjson::dom::element root, std::string_view body, Call& call, std::string& text,
             std::string& why, std::string_view secret) const override {
    std::string_view type;
    if (root["type"].get(type) == simdjson::SUCCESS && type == "error") {
      why = "the server reported an error: " + safe_excerpt(body, secret);
      return false;
    }
    // The text is the text blocks' (thinking and tool_use blocks are not
    // the reply's text).
    simdjson::dom::array content;
    if (root["content"].get(content) != simdjson::SUCCESS) {
      why = "the response has no \"content\" array: " + safe_excerpt(body, secret);
      return false;
    }
    text.clear();
    for (simdjson::dom::element block : content) {
      std::string_view block_type, piece;
      if (block["type"].get(block_type) != simdjson::SUCCESS || block_type != "text") continue;
      if (block["text"].get(piece) != simdjson::SUCCESS) {
        why = "a text block of the response has no \"text\" string: " + safe_excerpt(body, secret);
        return false;
      }
      text.append(piece);
    }
    std::string_view stop;
    if (text.empty() && root["stop_reason"].get(stop) == simdjson::SUCCESS && stop == "refusal") {
      why = "the model refused: " + safe_excerpt(body, secret);
      return false;
    }
    if (simdjson::dom::element usage; root["usage"].get(usage) == simdjson::SUCCESS)
      read_usage(usage, "input_tokens", "output_tokens", call);
    return true;
  }

  std::string_view stream_type() const noexcept override { return "text/event-stream"; }
  std::unique_ptr<StreamParser> stream(std::function<void(std::string_view)> on_text,
                                       size_t max_bytes) const override {
    return std::make_unique<AnthropicStream>(std::move(on_text), max_bytes);
  }
};

constexpr HttpDefaults kAnthropic{"anthropic", "https://api.anthropic.com", "https://api.anthropic.com",
                                  "/v1/messages", "x-api-key: ", "ANTHROPIC_API_KEY", 16};

}  // namespace

ProviderPtr make_anthropic(const Value& options) {
  Options o(options, "anthropic provider");
  HttpOptions http(o, kAnthropic);
  auto wire = std::make_shared<AnthropicWire>();
  wire->max_tokens = o.integer("max_tokens", 1024, 1, int64_t(1) << 30);
  std::string version = o.str("anthropic_version", "2023-06-01");
  if (version.empty() || version.find_first_of("\r\n") != std::string::npos)
    invalid("anthropic provider: option \"anthropic_version\" must be a version such as \"2023-06-01\", found \"" +
            version + "\"");
  wire->extra = read_extra(o, "anthropic", {"model", "messages", "system", "stream"});
  o.finish();
  http.finish();
  http.cfg.headers.push_back("anthropic-version: " + version);
  return make_http_provider(http, std::move(wire));
}

}  // namespace af::lm
