#include "lm/ollama_stream.h"

#include "lm/call.h"
#include "lm/http_engine.h"

namespace af::lm {

// Tool calls come whole, in the function form of a whole reply: read as
// one (read_function_calls), each call then made the stream's next.
bool OllamaStream::whole_calls(const Value& list) {
  std::vector<ToolCall> calls;
  std::string why;
  simdjson::dom::element root;
  const std::string json = to_json(list);
  if (parser_.parse(json).get(root) != simdjson::SUCCESS ||
      !read_function_calls(root, "message.tool_calls", calls, why))
    return bad("bad tool calls in a line: " + why + ": " + json);
  for (ToolCall& c : calls) {
    ToolCall* call = tool_call(int64_t(tool_calls().size()));
    if (!call || !add_tool_piece(call->name, c.name) || !add_tool_piece(call->arguments, c.arguments)) return false;
  }
  return true;
}

bool OllamaStream::line(std::string_view l) {
  if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
  bool blank = true;
  for (char c : l) blank = blank && (c == ' ' || c == '\t');
  if (blank) return true;
  Value v;
  if (!parse_object("a line", std::string(l), v)) return false;
  if (const Value* err = v.find("error")) return bad("the stream reported an error: " + to_json(*err));
  if (const Value* m = v.find("message"); m && m->kind() == Kind::Dict) {
    if (const Value* c = m->find("content"); c && c->kind() == Kind::Str)
      if (!add_text(c->as_str())) return false;
    if (const Value* calls = m->find("tool_calls"); calls && !calls->is_null() && tools())
      if (!whole_calls(*calls)) return false;
  }
  if (const Value* done = v.find("done"); done && done->kind() == Kind::Bool && done->as_bool()) {
    auto count = [&](const char* k) -> uint64_t {
      const Value* n = v.find(k);
      return n && n->kind() == Kind::Int ? Call::reply_tokens(n->as_int()) : 0;
    };
    prompt_tokens_ = count("prompt_eval_count");
    completion_tokens_ = count("eval_count");
    done_ = true;
  }
  return true;
}

}  // namespace af::lm
