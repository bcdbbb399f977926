#include "lm/chat_stream.h"

#include "lm/call.h"
#include "value/error.h"
#include "value/value.h"

namespace af::lm {

namespace {
std::string size_text(size_t n) {
  return n % (size_t(1) << 20) == 0 ? std::to_string(n >> 20) + " MiB"
                                    : std::to_string(n) + " bytes";
}
}  // namespace

bool ChatStream::feed(std::string_view bytes) {
  if (!error_.empty()) return false;
  while (!bytes.empty() && !done_) {
    size_t nl = bytes.find('\n');
    if (nl == std::string_view::npos) {
      if (pending_.size() + bytes.size() > max_bytes_) {
        error_ = "an event line is longer than " + size_text(max_bytes_);
        return false;
      }
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

// One line of the event stream (text/event-stream): "data: ..." lines make
// up an event, a blank line dispatches it, ":" comments and other fields
// (event, id, retry) are ignored.
bool ChatStream::line(std::string_view l) {
  if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
  if (l.empty()) return has_data_ ? event() : true;
  if (l.substr(0, 5) != "data:") return true;
  l.remove_prefix(5);
  if (!l.empty() && l.front() == ' ') l.remove_prefix(1);
  if (has_data_) data_ += '\n';
  if (data_.size() + l.size() > max_bytes_) {
    error_ = "an event is longer than " + size_text(max_bytes_);
    return false;
  }
  data_.append(l);
  has_data_ = true;
  return true;
}

bool ChatStream::event() {
  std::string data = std::move(data_);
  data_.clear();
  has_data_ = false;
  if (data == "[DONE]") {
    done_ = true;
    return true;
  }
  Value v;
  try {
    v = from_json(data);
  } catch (const Error& e) {
    error_ = std::string("an event is not valid JSON (") + e.what() + "): " + data;
    return false;
  }
  if (v.kind() != Kind::Dict) {
    error_ = "an event is not a JSON object: " + data;
    return false;
  }
  if (const Value* err = v.find("error")) {
    error_ = "the stream reported an error: " + to_json(*err);
    return false;
  }
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
  if (first.kind() != Kind::Dict) {
    error_ = "choices[0] of an event is not an object: " + data;
    return false;
  }
  if (const Value* delta = first.find("delta"); delta && delta->kind() == Kind::Dict)
    if (const Value* content = delta->find("content");
        content && content->kind() == Kind::Str && !content->as_str().empty()) {
      if (text_.size() + content->as_str().size() > max_bytes_) {
        error_ = "the streamed reply is larger than " + size_text(max_bytes_);
        return false;
      }
      text_ += content->as_str();
      on_text_(content->as_str());
    }
  if (const Value* reason = first.find("finish_reason"); reason && !reason->is_null())
    finished_ = true;
  return true;
}

}  // namespace af::lm
