#include "lm/call.h"

#include <chrono>

#include "lm/provider.h"
#include "lm/schema.h"
#include "lm/tools.h"

namespace af::lm {

bool image_media_type(std::string_view t) noexcept {
  return t == "image/png" || t == "image/jpeg" || t == "image/gif" || t == "image/webp";
}

bool valid_base64(std::string_view s) noexcept {
  size_t end = s.size();
  while (end > 0 && s.size() - end < 2 && s[end - 1] == '=') --end;
  if (end == 0 || s.size() % 4 != 0) return false;
  for (size_t i = 0; i < end; ++i) {
    const char c = s[i];
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/'))
      return false;
  }
  return true;
}

int64_t now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

namespace {
// A message's parts as its JSON has them: [{"type":"text","text"},
// {"type":"image","url"}, {"type":"image","media_type","data"}].
void append_parts(std::string& s, const std::vector<ContentPart>& parts) {
  s += '[';
  for (const ContentPart& p : parts) {
    if (s.back() != '[') s += ',';
    switch (p.type) {
      case ContentPart::Type::Text: s += "{\"type\":\"text\",\"text\":"; break;
      case ContentPart::Type::ImageUrl: s += "{\"type\":\"image\",\"url\":"; break;
      case ContentPart::Type::ImageData:
        s += "{\"type\":\"image\",\"media_type\":";
        append_json_string(s, p.media_type);
        s += ",\"data\":";
        break;
    }
    append_json_string(s, p.value.as_str());
    s += '}';
  }
  s += ']';
}

void append_messages(std::string& s, const SmallVec<Message, 2>& messages) {
  s += '[';
  for (size_t i = 0; i < messages.size(); ++i) {
    if (i) s += ',';
    s += "{\"role\":";
    append_json_string(s, messages[i].role);
    s += ",\"content\":";
    if (messages[i].parts) append_parts(s, *messages[i].parts);
    else append_json_string(s, messages[i].content.as_str());
    append_tool_parts(s, messages[i]);
    s += '}';
  }
  s += ']';
}
// ,"tools":[{"name","description","parameters": JSON Schema}...] of a
// request that offers tools.
void append_tools(std::string& s, const Tools* tools) {
  if (!tools) return;
  s += ",\"tools\":[";
  for (size_t i = 0; i < tools->list().size(); ++i) {
    const Tools::Tool& t = tools->list()[i];
    if (i) s += ',';
    s += "{\"name\":";
    append_json_string(s, t.name);
    s += ",\"description\":";
    append_json_string(s, t.description);
    s += ",\"parameters\":";
    s += t.parameters_json;
    s += '}';
  }
  s += ']';
}
}  // namespace

std::string Request::to_json() const {
  std::string s = "{\"model\":";
  append_json_string(s, model.as_str());
  s += ",\"messages\":";
  append_messages(s, messages);
  if (schema) {
    s += ",\"schema\":";
    append_json(s, schema->tree());
    s += ",\"json_schema\":";
    s += schema->json_schema();
  }
  append_tools(s, tools.get());
  if (!tool_choice.is_null()) {
    s += ",\"tool_choice\":";
    append_json(s, tool_choice);
  }
  if (!sampling.is_null()) {
    s += ",\"params\":";
    append_json(s, sampling);
  }
  if (stream) s += ",\"stream\":true";
  if (reask) s += ",\"reask\":" + std::to_string(reask);
  if (tags && !tags->empty()) {
    s += ",\"tags\":[";
    for (size_t i = 0; i < tags->size(); ++i) {
      if (i) s += ',';
      append_json_string(s, (*tags)[i]);
    }
    s += ']';
  }
  s += '}';
  return s;
}

std::string Request::key() const {
  std::string s = "{\"model\":";
  append_json_string(s, model.as_str());
  s += ",\"messages\":";
  append_messages(s, messages);
  s += ",\"schema\":";
  if (schema) append_json(s, schema->tree());
  else s += "null";
  append_tools(s, tools.get());
  if (!tool_choice.is_null()) {
    s += ",\"tool_choice\":";
    append_json(s, tool_choice);
  }
  if (!sampling.is_null()) {
    s += ",\"params\":";
    append_json(s, sampling);
  }
  s += '}';
  return s;
}

Value sampling_for(const Value& defaults, const Request& r) {
  const bool has_defaults = defaults.kind() == Kind::Dict, has_own = r.sampling.kind() == Kind::Dict;
  if (!r.reask && !has_defaults) return r.sampling;
  if (!r.reask && !has_own) return defaults;
  std::vector<Entry> merged;
  if (has_defaults)
    for (const auto& [k, v] : defaults.entries())
      if (!has_own || !r.sampling.find(k)) merged.emplace_back(k, v);
  if (has_own)
    for (const auto& e : r.sampling.entries()) merged.push_back(e);
  for (auto& [k, v] : merged) {
    if (!r.reask) break;  // merged only
    if (k == "seed" && v.kind() == Kind::Int) {
      v = Value::integer(int64_t(uint64_t(v.as_int()) + r.reask));  // wraps rather than overflows
    } else if (k == "temperature" && (v.kind() == Kind::Int || v.kind() == Kind::Float)) {
      const double t = v.kind() == Kind::Int ? double(v.as_int()) : v.as_float();
      const double floor = r.reask >= 4 ? 1.0 : double(3 * r.reask) / 10;  // 0.3 k, exactly as written
      if (!(t >= floor)) v = Value::floating(floor);
    }
  }
  return merged.empty() ? Value() : Value::dict(std::move(merged));
}

uint64_t Request::estimated_tokens() const {
  uint64_t n = 0;
  for (const Message& m : messages) n += 4 + (m.content.as_str().size() + 3) / 4;
  if (sampling.kind() == Kind::Dict)
    if (const Value* max = sampling.find("max_tokens"); max && max->kind() == Kind::Int && max->as_int() > 0)
      n += uint64_t(max->as_int());
  return n;
}

Call::Call(Request&& req, Done done, double priority, int64_t queued_at)
    : queued_ns(queued_at), req_(std::move(req)), done_hook_(std::move(done)), priority_(priority) {}

Call::~Call() {
  // The last reference is going: nobody else can finish the call now, so a
  // load does (an exchange, a locked instruction, was 40 % of this
  // destructor's time on echo's reply thread).
  if (!done_.load(std::memory_order_acquire)) {
    done_.store(true, std::memory_order_relaxed);
    Error err(Code::Provider, "provider " + (provider_name.empty() ? std::string("?") : provider_name) +
                                  " dropped the request for model \"" + req_.model.as_str() + "\" unanswered");
    finish(nullptr, &err);
  }
}

bool Call::complete(std::string content) noexcept {
  if (done_.exchange(true, std::memory_order_acq_rel)) return false;
  finish(&content, nullptr);
  return true;
}

bool Call::fail(const Error& err) noexcept {
  if (done_.exchange(true, std::memory_order_acq_rel)) return false;
  finish(nullptr, &err);
  return true;
}

void Call::finish(std::string* content, const Error* err) noexcept {
  if (timed) finished_ns = now_ns();
  std::shared_ptr<Limiter> lim;
  {
    std::lock_guard<std::mutex> lock(mu_);
    lim.swap(limiter_);
  }
  if (lim && slot >= 0) lim->release(*this, content != nullptr);
  Done hook;
  hook.swap(done_hook_);
  try {
    if (hook) hook(*this, content, err);
  } catch (...) {
    // The hook belongs to the submitter, which turns failures into errors
    // itself; nothing may escape into a provider thread.
  }
}

void Call::delta(std::string_view text) noexcept {
  if (text.empty() || finished() || !delta_hook_) return;
  try {
    delta_hook_(text.data(), text.size());
  } catch (...) {
  }
}

void Call::restart() noexcept {
  if (finished() || !delta_hook_) return;
  try {
    delta_hook_(nullptr, 0);
  } catch (...) {
  }
}

void Call::on_cancel(std::function<void()> hook) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!cancelled_.load(std::memory_order_acquire)) {
      cancel_hook_ = std::move(hook);
      return;
    }
  }
  if (hook) hook();
}

void Call::cancel(const Error& why) noexcept {
  if (finished()) return;  // nothing left to stop
  std::function<void()> hook;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (cancelled_.exchange(true, std::memory_order_acq_rel)) return;
    hook.swap(cancel_hook_);
  }
  fail(why);
  try {
    if (hook) hook();
  } catch (...) {
  }
}

}  // namespace af::lm
