#include "lm/chat_stream.h"

#include "lm/call.h"
#include "value/value.h"

namespace af::lm {

// delta.tool_calls: pieces of calls, each naming its call by "index" (an
// entry without one is the call at its place in the list). The first piece
// of a call carries its id and function.name; function.arguments comes in
// fragments that make up the JSON text.
bool ChatStream::tool_deltas(const Value& calls, const std::string& data) {
  if (calls.kind() != Kind::List) return bad("delta.tool_calls of an event is not a list: " + data);
  for (size_t i = 0; i < calls.items().size(); ++i) {
    const Value& c = calls.items()[i];
    const std::string at = "delta.tool_calls[" + std::to_string(i) + "] of an event";
    if (c.kind() != Kind::Dict) return bad(at + " is not an object: " + data);
    int64_t index = int64_t(i);
    if (const Value* n = c.find("index"); n && !n->is_null()) {
      if (n->kind() != Kind::Int || n->as_int() < 0)
        return bad(at + " has an \"index\" that is not a non-negative integer: " + data);
      index = n->as_int();
    }
    ToolCall* call = tool_call(index);
    if (!call) return false;
    // A string field into out (null when absent or null); `what` names it in messages.
    auto str = [&](const Value* v, const char* what, const std::string*& out) {
      out = nullptr;
      if (!v || v->is_null()) return true;
      if (v->kind() != Kind::Str) return bad(at + " has a \"" + what + "\" that is not a string: " + data);
      out = &v->as_str();
      return true;
    };
    const std::string* s = nullptr;
    if (!str(c.find("id"), "id", s)) return false;
    // Some servers repeat the id and name in every piece: the first counts.
    if (s && call->id.empty() && !add_tool_piece(call->id, *s)) return false;
    const Value* fn = c.find("function");
    if (!fn || fn->is_null()) continue;
    if (fn->kind() != Kind::Dict) return bad(at + " has a \"function\" that is not an object: " + data);
    if (!str(fn->find("name"), "function.name", s)) return false;
    if (s && call->name.empty() && !add_tool_piece(call->name, *s)) return false;
    if (!str(fn->find("arguments"), "function.arguments", s)) return false;
    if (s && !add_tool_piece(call->arguments, *s)) return false;
  }
  return true;
}

bool ChatStream::event(std::string data) {
  if (data == "[DONE]") {
    done_ = true;
    return true;
  }
  Value v;
  if (!parse_object("an event", data, v)) return false;
  if (const Value* err = v.find("error")) return bad("the stream reported an error: " + to_json(*err));
  if (const Value* usage = v.find("usage"); usage && usage->kind() == Kind::Dict) {
    auto count = [&](const char* k) -> uint64_t {
      const Value* n = usage->find(k);
      return n && n->kind() == Kind::Int ? Call::reply_tokens(n->as_int()) : 0;
    };
    prompt_tokens_ = count("prompt_tokens");
    completion_tokens_ = count("completion_tokens");
  }
  const Value* choices = v.find("choices");
  if (!choices || choices->kind() != Kind::List || choices->items().empty())
    return true;  // e.g. the usage chunk
  const Value& first = choices->items()[0];
  if (first.kind() != Kind::Dict) return bad("choices[0] of an event is not an object: " + data);
  if (const Value* delta = first.find("delta"); delta && delta->kind() == Kind::Dict) {
    if (const Value* content = delta->find("content"); content && content->kind() == Kind::Str)
      if (!add_text(content->as_str())) return false;
    if (const Value* calls = delta->find("tool_calls"); calls && !calls->is_null() && tools())
      if (!tool_deltas(*calls, data)) return false;
  }
  if (const Value* reason = first.find("finish_reason"); reason && !reason->is_null()) finished_ = true;
  return true;
}

}  // namespace af::lm
