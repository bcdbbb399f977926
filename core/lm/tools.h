// Tool calling (docs/SEMANTICS.md §3 lm_tool_call, tool_results).
//
// A tools param is a list of tools:
//   [{"name": "search", "description": "...", "parameters": {...schema tree...}}, ...]
// where "parameters" is a schema (lm/schema.h) whose root is a container —
// the tool's arguments object — and may be left out for a tool that takes
// none. A request that offers tools (Request::tools) is answered, by every
// provider, with the reply JSON
//   {"content": "text" | null, "tool_calls": [{"id": "c1", "name": "search", "arguments": "{...}"}]}
// (arguments: the JSON text of an object, or the object itself), which
// Tools::parse_reply checks against the tools and turns into the
// equation's outputs. A conversation's history — what an agent has said and
// been told so far — is a str holding a JSON array of messages:
//   {"role": "user" | "assistant" | "system", "content": "..."}
//   {"role": "assistant", "content": "..." | null, "tool_calls": [{"id","name","arguments"}...]}
//   {"role": "tool", "tool_call_id": "c1", "name": "search", "content": "..."}
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "value/value.h"

namespace af::lm {

class Schema;
struct Message;

// A tool call as the model made it: arguments is the compact JSON text of
// an object.
struct ToolCall {
  std::string id, name, arguments;
};

// What a message carries besides its role and text: an assistant turn's
// tool calls, or which call a "tool" message answers.
struct ToolTurn {
  std::vector<ToolCall> calls;  // role "assistant"
  std::string call_id, name;    // role "tool"
};

// The outputs of lm_tool_call, a dict flattened in key order.
enum ToolOut : size_t { kArguments = 0, kCalled, kNames, kText, kTurn, kToolOutputs };

class Tools {
 public:
  struct Tool {
    std::string name, description;
    std::shared_ptr<const Schema> parameters;  // null: takes no arguments
    std::string parameters_json;  // its JSON Schema (an object; one without properties for no arguments)
  };
  // Checks the list; INVALID_ARGUMENT naming the tool and what is wrong.
  static Tools parse(const Value& list);

  const Value& tree() const noexcept { return tree_; }
  const std::vector<Tool>& list() const noexcept { return tools_; }
  const Tool* find(std::string_view name) const;

  // A call's tool_choice param (null for "auto"): "auto", "required"
  // (some tool must be called), "none" (none may be), or a tool's name
  // (that tool must be called, and only it). INVALID_ARGUMENT otherwise.
  void check_choice(const Value& choice) const;
  // A reply (the JSON above) into the kToolOutputs outputs. SCHEMA error
  // (re-asked like an invalid structured reply) for a malformed reply, an
  // unknown tool, arguments that do not match the tool's parameters, or
  // calls the choice (as check_choice's) does not allow, naming the call.
  void parse_reply(std::string_view reply, std::span<Value> out, const Value& choice = Value()) const;
  // The reply's text output (what a streamed tool call settles on).
  static const std::string& text_of(std::span<const Value> out) { return out[kText].as_str(); }

 private:
  Value tree_;
  std::vector<Tool> tools_;
};

// Parsed tool lists are cached by tree (equations reuse the same param).
std::shared_ptr<const Tools> tools_of(const Value& list);

// A dict with lm_tool_call's output structure (its leaves are placeholders
// of no meaning: TreeDef::of it).
const Value& tool_output_prototype();

// A reply to a request that offers tools, in the form above: what a
// provider completes the call with.
std::string tool_reply(std::string_view content, const std::vector<ToolCall>& calls);

// A history (the JSON text above; "" for none) as messages.
// INVALID_ARGUMENT naming `op` and the message at fault.
std::vector<Message> history_messages(const char* op, std::string_view history);
// The history with an assistant turn (lm_tool_call's "turn" output) and a
// "tool" message per result, answering the turn's calls in order.
// INVALID_ARGUMENT if results does not hold one str per call.
std::string history_with(std::string_view history, std::string_view turn, const Value& results);

// JSON of a message's tool parts: appends ,"tool_calls":[...] or
// ,"tool_call_id":...,"name":... (nothing for a plain message): how the
// request JSON (host providers, replay keys) carries them.
void append_tool_parts(std::string& json, const Message& m);

}  // namespace af::lm
