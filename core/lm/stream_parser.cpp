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
  if (text_.size() + piece.size() > max_bytes_)
    return bad("the streamed reply is larger than " + size_text(max_bytes_));
  text_.append(piece);
  on_text_(piece);
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
