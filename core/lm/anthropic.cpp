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
//
// Tools go as "tools" with an input_schema each; a turn that called tools
// is an assistant message of tool_use blocks, and the tool messages that
// answer it one user message of tool_result blocks (the API wants user and
// assistant turns to alternate).
//
// A user message given as parts goes as content blocks: text blocks and
// image blocks (a url source, or a base64 one for an image as data or a
// data: URL). Images elsewhere are refused (check_image_roles).
#include <simdjson.h>

#include "lm/anthropic_stream.h"
#include "lm/excerpt.h"
#include "lm/http_engine.h"
#include "lm/options.h"
#include "lm/providers.h"
#include "lm/schema.h"
#include "lm/tools.h"

namespace af::lm {

namespace {

class AnthropicWire final : public Wire {
 public:
  int64_t max_tokens = 1024;
  Value extra;  // dict or null: request fields, under the call's params

  std::string body(const Request& r) const override {
    check_image_roles(r, "anthropic");
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
    for (size_t i = 0; i < r.messages.size(); ++i) {
      const Message& m = r.messages[i];
      if (m.role == "system") continue;
      if (s.back() != '[') s += ',';
      if (m.role == "tool") {
        i = tool_results(s, r, i) - 1;
      } else if (m.tool && !m.tool->calls.empty()) {
        tool_uses(s, m);
      } else {
        s += "{\"role\":";
        append_json_string(s, m.role);
        s += ",\"content\":";
        if (m.role == "user" && has_blocks(m)) {
          s += '[';
          content_blocks(s, m, i);
          s += ']';
        } else {
          append_json_string(s, m.content.as_str());  // parts of another role are text alone
        }
        s += '}';
      }
    }
    s += ']';
    if (r.tools) {
      s += ",\"tools\":[";
      for (const Tools::Tool& t : r.tools->list()) {
        if (s.back() != '[') s += ',';
        s += "{\"name\":";
        append_json_string(s, t.name);
        if (!t.description.empty()) {
          s += ",\"description\":";
          append_json_string(s, t.description);
        }
        s += ",\"input_schema\":";
        s += t.parameters_json;
        s += '}';
      }
      s += ']';
      // The call's tool_choice in Anthropic's words ("required" is "any").
      if (!r.tool_choice.is_null()) {
        const std::string& c = r.tool_choice.as_str();
        s += ",\"tool_choice\":{\"type\":";
        if (c == "auto" || c == "none") {
          append_json_string(s, c);
        } else if (c == "required") {
          s += "\"any\"";
        } else {
          s += "\"tool\",\"name\":";
          append_json_string(s, c);
        }
        s += '}';
      }
    }
    if (r.stream) s += ",\"stream\":true";
    s += '}';
    return s;
  }

  // Whether a user message given as parts has a block to send: the API
  // refuses empty text blocks, which content_blocks leaves out.
  static bool has_blocks(const Message& m) {
    if (!m.parts) return false;
    for (const ContentPart& p : *m.parts)
      if (p.type != ContentPart::Type::Text || !p.value.as_str().empty()) return true;
    return false;
  }

  // A user message's parts (r.messages[index]) as content blocks, in order,
  // appended after any blocks already in s: text blocks (empty ones left
  // out), and image blocks with a url source, or a base64 source for an
  // image as data or a data: URL.
  static void content_blocks(std::string& s, const Message& m, size_t index) {
    for (size_t j = 0; j < m.parts->size(); ++j) {
      const ContentPart& p = (*m.parts)[j];
      if (p.type == ContentPart::Type::Text && p.value.as_str().empty()) continue;
      if (s.back() != '[') s += ',';
      if (p.type == ContentPart::Type::Text) {
        s += "{\"type\":\"text\",\"text\":";
        append_json_string(s, p.value.as_str());
        s += '}';
        continue;
      }
      ImageBytes image;
      if (image_bytes(p, "anthropic", "messages[" + std::to_string(index) + "].content[" + std::to_string(j) + "]",
                      image)) {
        s += "{\"type\":\"image\",\"source\":{\"type\":\"base64\",\"media_type\":";
        append_json_string(s, image.media_type);
        s += ",\"data\":";
        append_json_string(s, image.data);
      } else {
        s += "{\"type\":\"image\",\"source\":{\"type\":\"url\",\"url\":";
        append_json_string(s, p.value.as_str());
      }
      s += "}}";
    }
  }

  // An assistant turn that called tools: its text (when any) and a
  // tool_use block per call, whose input is the arguments object.
  static void tool_uses(std::string& s, const Message& m) {
    s += "{\"role\":\"assistant\",\"content\":[";
    if (!m.content.as_str().empty()) {
      s += "{\"type\":\"text\",\"text\":";
      append_json_string(s, m.content.as_str());
      s += '}';
    }
    for (const ToolCall& c : m.tool->calls) {
      if (s.back() != '[') s += ',';
      s += "{\"type\":\"tool_use\",\"id\":";
      append_json_string(s, c.id);
      s += ",\"name\":";
      append_json_string(s, c.name);
      s += ",\"input\":";
      append_arguments_object(s, c);
      s += '}';
    }
    s += "]}";
  }

  // The tool messages from r.messages[i] on: one user turn of tool_result
  // blocks (the API wants turns to alternate, and the results of a turn's
  // calls together in the next one), with the text of a user message that
  // follows them. Returns the index after the messages used.
  static size_t tool_results(std::string& s, const Request& r, size_t i) {
    s += "{\"role\":\"user\",\"content\":[";
    for (; i < r.messages.size() && r.messages[i].role == "tool"; ++i) {
      const Message& m = r.messages[i];
      if (s.back() != '[') s += ',';
      s += "{\"type\":\"tool_result\",\"tool_use_id\":";
      append_json_string(s, m.tool ? m.tool->call_id : std::string());
      s += ",\"content\":";
      append_json_string(s, m.content.as_str());
      s += '}';
    }
    if (i < r.messages.size() && r.messages[i].role == "user") {
      if (r.messages[i].parts) {
        content_blocks(s, r.messages[i], i);
      } else {
        s += ",{\"type\":\"text\",\"text\":";
        append_json_string(s, r.messages[i].content.as_str());
        s += '}';
      }
      ++i;
    }
    s += "]}";
    return i;
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
    std::vector<ToolCall> calls;  // with tools: the tool_use blocks
    for (simdjson::dom::element block : content) {
      std::string_view block_type, piece;
      if (block["type"].get(block_type) != simdjson::SUCCESS) continue;
      if (block_type == "tool_use" && call.request().tools) {
        if (!tool_use(block, calls, why)) {
          why = "bad tool_use block: " + why + ": " + safe_excerpt(body, secret);
          return false;
        }
        continue;
      }
      if (block_type != "text") continue;
      if (block["text"].get(piece) != simdjson::SUCCESS) {
        why = "a text block of the response has no \"text\" string: " + safe_excerpt(body, secret);
        return false;
      }
      text.append(piece);
    }
    std::string_view stop;
    if (text.empty() && calls.empty() && root["stop_reason"].get(stop) == simdjson::SUCCESS &&
        stop == "refusal") {
      why = "the model refused: " + safe_excerpt(body, secret);
      return false;
    }
    if (simdjson::dom::element usage; root["usage"].get(usage) == simdjson::SUCCESS)
      read_usage(usage, "input_tokens", "output_tokens", call);
    if (call.request().tools) text = tool_reply(text, calls);
    return true;
  }

  // A tool_use block {"id", "name", "input": {...}} into calls.
  static bool tool_use(simdjson::dom::element block, std::vector<ToolCall>& calls, std::string& why) {
    if (calls.size() == kMaxToolCalls) {
      why = "more than " + std::to_string(kMaxToolCalls) + " tool calls";
      return false;
    }
    std::string_view id, name;
    simdjson::dom::object input;
    if (block["id"].get(id) != simdjson::SUCCESS || id.empty()) {
      why = "no \"id\" string";
      return false;
    }
    if (block["name"].get(name) != simdjson::SUCCESS || name.empty()) {
      why = "no \"name\" string";
      return false;
    }
    if (block["input"].get(input) != simdjson::SUCCESS) {
      why = "no \"input\" object";
      return false;
    }
    calls.push_back({std::string(id), std::string(name), simdjson::minify(input)});
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

std::shared_ptr<const Wire> anthropic_wire() { return std::make_shared<AnthropicWire>(); }

ProviderPtr make_anthropic(const Value& options) {
  Options o(options, "anthropic provider");
  HttpOptions http(o, kAnthropic);
  auto wire = std::make_shared<AnthropicWire>();
  wire->max_tokens = o.integer("max_tokens", 1024, 1, int64_t(1) << 30, "The reply's token limit when a call sets none (the API requires one).");
  std::string version = o.str("anthropic_version", "2023-06-01", "The anthropic-version header.");
  if (version.empty() || version.find_first_of("\r\n") != std::string::npos)
    invalid("anthropic provider: option \"anthropic_version\" must be a version such as \"2023-06-01\", found \"" +
            version + "\"");
  wire->extra = read_extra(o, "anthropic", {"model", "messages", "system", "stream", "tools"});
  o.finish();
  http.finish();
  http.cfg.headers.push_back("anthropic-version: " + version);
  return make_http_provider(http, std::move(wire));
}

}  // namespace af::lm
