#include "lm/stream_parser.h"

#include "value/error.h"

namespace af::lm {

std::string size_text(size_t n) {
  return n % (size_t(1) << 20) == 0 ? std::to_string(n >> 20) + " MiB" : std::to_string(n) + " bytes";
}

bool StreamParser::feed(std::string_view bytes) {
  if (!error_.empty()) return false;
  while (!bytes.empty() && !closed()) {
    size_t nl = bytes.find('\n');
    if (nl == std::string_view::npos) {
      if (pending_.size() + bytes.size() > max_bytes_)
        return bad(std::string(line_name()) + " is longer than " + size_text(max_bytes_));
      pending_.append(bytes);
      return true;
    }
    std::string_view l = bytes.substr(0, nl);
    bytes.remove_prefix(nl + 1);
    bool ok;
    if (pending_.empty()) {
      ok = line(l);
    } else {
      pending_.append(l);
      std::string whole = std::move(pending_);
      pending_.clear();
      ok = line(whole);
    }
    if (!ok) return false;
  }
  return true;
}

bool StreamParser::add_text(std::string_view piece) {
  if (piece.empty()) return true;
  if (text_.size() + tool_bytes_ + piece.size() > max_bytes_)
    return bad("the streamed reply is larger than " + size_text(max_bytes_));
  text_.append(piece);
  on_text_(piece);
  return true;
}

ToolCall* StreamParser::tool_call(int64_t key) {
  for (size_t i = 0; i < keys_.size(); ++i)
    if (keys_[i] == key) return &calls_[i];
  if (calls_.size() == kMaxToolCalls) {
    bad("the streamed reply makes more than " + std::to_string(kMaxToolCalls) + " tool calls");
    return nullptr;
  }
  keys_.push_back(key);
  return &calls_.emplace_back();
}

bool StreamParser::add_tool_piece(std::string& field, std::string_view piece) {
  if (text_.size() + tool_bytes_ + piece.size() > max_bytes_)
    return bad("the streamed reply is larger than " + size_text(max_bytes_));
  tool_bytes_ += piece.size();
  field.append(piece);
  return true;
}

bool StreamParser::reply(std::string& out, std::string& why) const {
  if (!tools_) {
    out = text_;
    return true;
  }
  std::vector<ToolCall> calls = calls_;
  for (size_t i = 0; i < calls.size(); ++i) {
    if (calls[i].name.empty()) {
      why = "tool call " + std::to_string(i) + " of the streamed reply has no name";
      return false;
    }
    if (calls[i].id.empty()) calls[i].id = "call_" + std::to_string(i);
    if (calls[i].arguments.empty()) calls[i].arguments = "{}";
  }
  out = tool_reply(text_, calls);
  return true;
}

bool StreamParser::parse_object(const char* what, const std::string& data, Value& out) {
  try {
    out = from_json(data);
  } catch (const Error& e) {
    return bad(std::string(what) + " is not valid JSON (" + e.what() + "): " + data);
  }
  if (out.kind() != Kind::Dict) return bad(std::string(what) + " is not a JSON object: " + data);
  return true;
}

bool SseParser::line(std::string_view l) {
  if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
  if (l.empty()) {
    if (!has_data_) return true;
    std::string data = std::move(data_);
    data_.clear();
    has_data_ = false;
    return event(std::move(data));
  }
  if (l.substr(0, 5) != "data:") return true;
  l.remove_prefix(5);
  if (!l.empty() && l.front() == ' ') l.remove_prefix(1);
  if (has_data_) data_ += '\n';
  if (data_.size() + l.size() > max_bytes())
    return bad("an event is longer than " + size_text(max_bytes()));
  data_.append(l);
  has_data_ = true;
  return true;
}

}  // namespace af::lm
