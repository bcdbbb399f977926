// ollama: Ollama's native chat API (POST base_url + "/api/chat", default
// http://127.0.0.1:11434, no key). The engine — retries, timeouts, streams
// — is lm/http_engine.cpp's; this file is the wire format.
//
// Ollama streams unless told not to, so every request says "stream": true
// or false; a streamed reply is newline-delimited JSON
// (lm/ollama_stream.h). Sampling params go in "options" under Ollama's
// names (max_tokens is num_predict), over the provider's "extra" model
// options. A schema call sends the JSON Schema as "format" (Ollama turns it
// into a grammar, which ignores numeric bounds: small int ranges also go as
// enums) and, since the grammar tells the model nothing of field meanings,
// as a system instruction too, joined to the conversation's own system
// message when it starts with one. Tools go as "tools" in the function
// form; a turn's tool calls carry their arguments as objects, and a tool
// message names its tool ("tool_name"), Ollama's calls having no ids.
// A user message given as parts goes as its text ("content", the text
// parts joined) and its images as base64 data ("images"): an image by
// http(s) URL is refused (Ollama fetches none), a data: URL's data sent.
#include <simdjson.h>

#include "lm/excerpt.h"
#include "lm/http_engine.h"
#include "lm/ollama_stream.h"
#include "lm/options.h"
#include "lm/providers.h"
#include "lm/schema.h"
#include "lm/tools.h"

namespace af::lm {

namespace {

class OllamaWire final : public Wire {
 public:
  Value extra;  // dict or null: model options, under the call's params

  std::string body(const Request& r) const override {
    std::string s = "{\"model\":";
    append_json_string(s, r.model.as_str());
    s += ",\"messages\":[";
    check_image_roles(r, "ollama");
    size_t index = 0;  // of the message being written, in r.messages
    auto message = [&s, &index](const std::string& role, const std::string& content, const ToolTurn* tool = nullptr,
                                const std::vector<ContentPart>* parts = nullptr) {
      if (s.back() != '[') s += ',';
      s += "{\"role\":";
      append_json_string(s, role);
      s += ",\"content\":";
      append_json_string(s, content);  // a message given as parts: its text parts, joined
      if (parts) {
        // Its images as a list of base64 data: Ollama fetches no URLs.
        bool any = false;
        for (size_t j = 0; j < parts->size(); ++j) {
          const ContentPart& p = (*parts)[j];
          if (p.type == ContentPart::Type::Text) continue;
          const std::string at = "messages[" + std::to_string(index) + "].content[" + std::to_string(j) + "]";
          ImageBytes image;
          if (!image_bytes(p, "ollama", at, image))
            invalid("ollama: Ollama's chat API takes images as base64 data only; give {\"type\":\"image\","
                    "\"media_type\":...,\"data\":...} (" + at + " is an image by URL)");
          s += any ? "," : ",\"images\":[";
          any = true;
          append_json_string(s, image.data);
        }
        if (any) s += ']';
      }
      if (tool && !tool->calls.empty()) {
        s += ",\"tool_calls\":[";
        for (const ToolCall& c : tool->calls) {
          if (s.back() != '[') s += ',';
          s += "{\"function\":{\"name\":";
          append_json_string(s, c.name);
          s += ",\"arguments\":";
          append_arguments_object(s, c);
          s += "}}";
        }
        s += ']';
      } else if (tool && role == "tool") {
        s += ",\"tool_name\":";  // Ollama matches a result to its call by the tool's name
        append_json_string(s, tool->name);
      }
      s += '}';
    };
    size_t first = 0;
    if (r.schema) {
      std::string instruction = schema_instruction(*r.schema);
      if (!r.messages.empty() && r.messages[0].role == "system") {
        message("system", r.messages[0].content.as_str() + "\n\n" + instruction);
        first = 1;
      } else {
        message("system", instruction);
      }
    }
    for (size_t i = first; i < r.messages.size(); ++i) {
      index = i;
      message(r.messages[i].role, r.messages[i].content.as_str(), r.messages[i].tool.get(), r.messages[i].parts.get());
    }
    s += ']';
    // Ollama has no tool_choice: "none" offers no tools; a choice it cannot
    // ask for ("required", a tool's name) is refused before the request
    // (Ollama's body), and libaf checks the reply against it anyway.
    const std::string choice = r.tool_choice.is_null() ? "auto" : r.tool_choice.as_str();
    if (r.tools && choice != "auto" && choice != "none")
      invalid("ollama: tool_choice " + json_quoted(choice) + " cannot be asked of Ollama's chat API, which has no "
              "tool_choice; use \"auto\" or \"none\", or a provider that has one (openai, anthropic)");
    if (r.tools && choice != "none")
      s += ",\"tools\":" + function_tools(*r.tools);
    s += r.stream ? ",\"stream\":true" : ",\"stream\":false";
    if (r.schema) s += ",\"format\":" + r.schema->grammar_json_schema();
    Fields options;
    const Value sampling = sampling_for(extra, r);
    if (sampling.kind() == Kind::Dict)
      for (const auto& [k, v] : sampling.entries()) {
        if (k == "max_tokens") options.set("num_predict", v);
        else if (k == "stop") options.set("stop", stop_list(v));
        else options.set(k, v);
      }
    std::string opts;
    options.append_to(opts);
    if (!opts.empty()) {
      opts[0] = '{';  // append_to wrote ",name:value,...": an object's members
      s += ",\"options\":" + opts + "}";
    }
    s += '}';
    return s;
  }

  bool reply(simdjson::dom::element root, std::string_view body, Call& call, std::string& text,
             std::string& why, std::string_view secret) const override {
    if (simdjson::dom::element err; root["error"].get(err) == simdjson::SUCCESS) {
      why = "the server reported an error: " + safe_excerpt(body, secret);
      return false;
    }
    std::string_view content;
    if (root["message"]["content"].get(content) != simdjson::SUCCESS) {
      why = "the response has no message.content: " + safe_excerpt(body, secret);
      return false;
    }
    text = std::string(content);
    if (call.request().tools) {
      // message.tool_calls: arguments are objects, and calls have no ids.
      std::vector<ToolCall> calls;
      if (simdjson::dom::element list; root["message"]["tool_calls"].get(list) == simdjson::SUCCESS &&
                                       !list.is_null() &&
                                       !read_function_calls(list, "message.tool_calls", calls, why)) {
        why = "bad tool calls: " + why + ": " + safe_excerpt(body, secret);
        return false;
      }
      text = tool_reply(content, calls);
    }
    read_usage(root, "prompt_eval_count", "eval_count", call);  // Ollama's counts are top-level
    return true;
  }

  std::string_view stream_type() const noexcept override { return "application/x-ndjson"; }
  std::unique_ptr<StreamParser> stream(std::function<void(std::string_view)> on_text,
                                       size_t max_bytes) const override {
    return std::make_unique<OllamaStream>(std::move(on_text), max_bytes);
  }
};

// A local server runs a few requests at once (OLLAMA_NUM_PARALLEL) and
// queues the rest: more in flight only waits there, on the timeout's clock.
constexpr HttpDefaults kOllama{"ollama", "http://127.0.0.1:11434", "http://127.0.0.1:11434", "/api/chat",
                               nullptr, nullptr, 4};

}  // namespace

std::shared_ptr<const Wire> ollama_wire() { return std::make_shared<OllamaWire>(); }

ProviderPtr make_ollama(const Value& options) {
  Options o(options, "ollama provider");
  HttpOptions http(o, kOllama);
  auto wire = std::make_shared<OllamaWire>();
  wire->extra = read_extra(o, "ollama", {});
  o.finish();
  http.finish();
  return make_http_provider(http, std::move(wire));
}

}  // namespace af::lm
