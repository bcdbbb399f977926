#include "lm/anthropic_stream.h"

#include "lm/call.h"

namespace af::lm {

// A usage object: input_tokens (message_start; message_delta may repeat it)
// and output_tokens (cumulative), each kept when present as an integer.
void AnthropicStream::usage(const Value& v) {
  if (v.kind() != Kind::Dict) return;
  if (const Value* n = v.find("input_tokens"); n && n->kind() == Kind::Int)
    prompt_tokens_ = Call::reply_tokens(n->as_int());
  if (const Value* n = v.find("output_tokens"); n && n->kind() == Kind::Int)
    completion_tokens_ = Call::reply_tokens(n->as_int());
}

// The tool call of the content block an event names by "index".
ToolCall* AnthropicStream::block_call(const Value& v, const std::string& data) {
  const Value* index = v.find("index");
  if (!index || index->kind() != Kind::Int || index->as_int() < 0) {
    bad("a tool_use block's event has no \"index\" (a non-negative integer): " + data);
    return nullptr;
  }
  return tool_call(index->as_int());
}

bool AnthropicStream::event(std::string data) {
  Value v;
  if (!parse_object("an event", data, v)) return false;
  const Value* type = v.find("type");
  if (!type || type->kind() != Kind::Str) return bad("an event has no \"type\": " + data);
  const std::string& t = type->as_str();
  if (t == "content_block_delta") {
    const Value* delta = v.find("delta");
    if (!delta || delta->kind() != Kind::Dict) return bad("a content_block_delta event has no \"delta\" object: " + data);
    const Value* dt = delta->find("type");
    if (dt && dt->kind() == Kind::Str && dt->as_str() == "text_delta") {
      const Value* text = delta->find("text");
      if (!text || text->kind() != Kind::Str) return bad("a text_delta has no \"text\" string: " + data);
      return add_text(text->as_str());
    }
    if (dt && dt->kind() == Kind::Str && dt->as_str() == "input_json_delta" && tools()) {
      // A piece of a tool_use block's input (JSON text), in the block's order.
      const Value* json = delta->find("partial_json");
      if (!json || json->kind() != Kind::Str) return bad("an input_json_delta has no \"partial_json\" string: " + data);
      ToolCall* call = block_call(v, data);
      return call && add_tool_piece(call->arguments, json->as_str());
    }
  } else if (t == "content_block_start" && tools()) {
    const Value* block = v.find("content_block");
    if (!block || block->kind() != Kind::Dict) return bad("a content_block_start event has no \"content_block\" object: " + data);
    const Value* bt = block->find("type");
    if (bt && bt->kind() == Kind::Str && bt->as_str() == "tool_use") {
      const Value* id = block->find("id");
      const Value* name = block->find("name");
      if (!id || id->kind() != Kind::Str || id->as_str().empty() || !name || name->kind() != Kind::Str ||
          name->as_str().empty())
        return bad("a tool_use block has no \"id\" and \"name\" strings: " + data);
      ToolCall* call = block_call(v, data);
      if (!call) return false;
      if (!call->name.empty()) return bad("a content block starts twice: " + data);
      // The input arrives in input_json_delta events (the block's own "input" is {}).
      return add_tool_piece(call->id, id->as_str()) && add_tool_piece(call->name, name->as_str());
    }
  } else if (t == "message_start") {
    if (const Value* m = v.find("message"); m && m->kind() == Kind::Dict)
      if (const Value* u = m->find("usage")) usage(*u);
  } else if (t == "message_delta") {
    if (const Value* u = v.find("usage")) usage(*u);
  } else if (t == "message_stop") {
    stopped_ = true;
  } else if (t == "error") {
    const Value* err = v.find("error");
    return bad("the stream reported an error: " + (err ? to_json(*err) : data));
  }
  return true;
}

}  // namespace af::lm
