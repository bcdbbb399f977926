#include "lm/chat_stream.h"

#include "lm/call.h"
#include "value/value.h"

namespace af::lm {

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
  if (const Value* delta = first.find("delta"); delta && delta->kind() == Kind::Dict)
    if (const Value* content = delta->find("content"); content && content->kind() == Kind::Str)
      if (!add_text(content->as_str())) return false;
  if (const Value* reason = first.find("finish_reason"); reason && !reason->is_null()) finished_ = true;
  return true;
}

}  // namespace af::lm
