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
