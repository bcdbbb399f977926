// replay: answers from a recorded JSON Lines file; in record mode forwards
// each request to an upstream provider and appends its answer. A line is
// {"request": {"model", "messages", "schema", "params"?}, "content": str};
// identical requests are answered in recorded order (the last answer
// repeats). Recording forwards the upstream's stream and usage counts.
#include <cctype>
#include <deque>
#include <fstream>
#include <mutex>
#include <unordered_map>

#include "lm/options.h"
#include "lm/providers.h"
#include "value/file.h"

namespace af::lm {

namespace {

std::string normalized(std::string_view key_json) { return to_json(from_json(key_json)); }

class Replay final : public Provider {
 public:
  Replay(std::string name, uint32_t max, std::string path, ProviderPtr upstream)
      : Provider(std::move(name), max), path_(std::move(path)), upstream_(std::move(upstream)) {
    if (upstream_) {
      sink_ = std::make_shared<Sink>();
      sink_->path = path_;
      make_parent_dirs(path_, "replay provider");
      sink_->out.open(path_, std::ios::app | std::ios::binary);
      if (!sink_->out) fail(Code::IO, "replay provider: cannot open " + path_ + " for appending");
      return;
    }
    std::ifstream in(path_, std::ios::binary);
    if (!in) fail(Code::IO, "replay provider: cannot open " + path_);
    std::string line;
    size_t n = 0;
    while (std::getline(in, line)) {
      ++n;
      bool blank = true;
      for (char c : line) blank = blank && std::isspace(static_cast<unsigned char>(c));
      if (blank) continue;
      Value v;
      try {
        v = from_json(line);
      } catch (const Error& e) {
        fail(Code::Format, "replay provider: " + path_ + " line " + std::to_string(n) + ": " + e.what());
      }
      const Value* req = v.kind() == Kind::Dict ? v.find("request") : nullptr;
      const Value* content = v.kind() == Kind::Dict ? v.find("content") : nullptr;
      if (!req || !content || content->kind() != Kind::Str)
        fail(Code::Format, "replay provider: " + path_ + " line " + std::to_string(n) +
                               ": expected {\"request\": {...}, \"content\": str}");
      answers_[to_json(*req)].push_back(content->as_str());
    }
  }
  ~Replay() override { shutdown(); }

 protected:
  void start(std::shared_ptr<Call> call) noexcept override {
    try {
      if (upstream_) return record(std::move(call));
      std::string key = normalized(call->request().key());
      std::string answer;
      {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = answers_.find(key);
        if (it == answers_.end() || it->second.empty()) {
          std::string last = call->request().messages.empty() ? "" : call->request().messages.back().content.as_str();
          if (last.size() > 80) last = last.substr(0, 80) + "...";
          std::string m, l;
          append_json_string(m, call->request().model.as_str());
          append_json_string(l, last);
          call->fail(Error(Code::NotFound, "replay provider: no recorded answer in " + path_ + " for model " + m +
                                               " with last message " + l + " (record it with mode \"record\")"));
          return;
        }
        answer = it->second.front();
        if (it->second.size() > 1) it->second.pop_front();
      }
      call->complete(std::move(answer));
    } catch (const Error& e) {
      call->fail(e);
    } catch (...) {
      call->fail(Error(Code::Internal, "replay provider: unexpected failure"));
    }
  }

 private:
  void record(std::shared_ptr<Call> call) {
    std::weak_ptr<Call> weak = call;
    auto up = std::make_shared<Call>(
        Request(call->request()),
        [sink = sink_, call](Call& u, const std::string* content, const Error* err) {
          call->attempts = u.attempts.load();
          if (err) {
            call->fail(*err);
            return;
          }
          try {
            std::string line = "{\"request\":" + normalized(call->request().key()) + ",\"content\":";
            append_json_string(line, *content);
            line += "}\n";
            std::lock_guard<std::mutex> lock(sink->mu);
            sink->out << line;
            sink->out.flush();
            if (!sink->out) {
              call->fail(Error(Code::IO, "replay provider: cannot append to " + sink->path));
              return;
            }
          } catch (...) {
            call->fail(Error(Code::IO, "replay provider: cannot record the answer"));
            return;
          }
          // The upstream's usage is the recorded call's: its provider stats
          // and the run summary count what the upstream server reported.
          call->prompt_tokens = u.prompt_tokens;
          call->completion_tokens = u.completion_tokens;
          call->complete(*content);
        },
        call->priority());
    if (call->request().stream) up->set_on_delta([call](const char* data, size_t len) {
      if (data) call->delta(std::string_view(data, len));
      else call->restart();
    });
    std::weak_ptr<Call> weak_up = up;
    call->on_cancel([weak_up] {
      if (auto u = weak_up.lock()) u->cancel(Error(Code::Cancelled, "the request was cancelled"));
    });
    upstream_->submit(std::move(up));
  }

  std::string path_;
  ProviderPtr upstream_;
  std::mutex mu_;
  std::unordered_map<std::string, std::deque<std::string>> answers_;
  // Where record mode appends; shared with requests still in flight.
  struct Sink {
    std::mutex mu;
    std::string path;
    std::ofstream out;
  };
  std::shared_ptr<Sink> sink_;
};

}  // namespace

ProviderPtr make_replay(const Value& options) {
  Options o(options, "replay provider");
  std::string name = o.str("name", "replay", "The provider's name in profiles and error messages.");
  CommonOptions common = read_common_options(o, CommonOptions{0});
  std::string path = o.str("path", "", "The recording file (JSON lines); required.");
  std::string mode = o.str("mode", "replay", "\"replay\" answers from path; \"record\" asks upstream and appends to path.");
  const Value* up = o.object("upstream", "Mode \"record\": the provider spec asked, e.g. {\"type\": \"openai\", ...}.");
  o.finish();
  if (path.empty()) invalid("replay provider: option \"path\" is required");
  if (mode != "replay" && mode != "record")
    invalid("replay provider: option \"mode\" must be \"replay\" or \"record\", found \"" + mode + "\"");
  ProviderPtr upstream;
  if (mode == "record") {
    if (!up) invalid("replay provider: mode \"record\" needs \"upstream\", a provider spec such as {\"type\":\"echo\"}");
    upstream = make_provider(*up);
  } else if (up) {
    invalid("replay provider: \"upstream\" is only used in mode \"record\"");
  }
  auto p = std::make_shared<Replay>(std::move(name), common.max_in_flight, std::move(path), std::move(upstream));
  common.apply(*p);
  return p;
}

constexpr const char* kProviderTypes = "echo, openai, anthropic, ollama, replay";

ProviderPtr make_provider(const Value& spec) {
  if (spec.kind() != Kind::Dict) invalid(std::string("provider spec: expected an object with \"type\", found ") + kind_name(spec.kind()));
  const Value* t = spec.find("type");
  if (!t || t->kind() != Kind::Str) invalid(std::string("provider spec: \"type\" (one of ") + kProviderTypes + ") is required");
  std::vector<Entry> rest;
  for (const auto& [k, v] : spec.entries())
    if (k != "type") rest.emplace_back(k, v);
  Value opts = Value::dict(std::move(rest));
  if (t->as_str() == "echo") return make_echo(opts);
  if (t->as_str() == "openai" || t->as_str() == "anthropic" || t->as_str() == "ollama")
    return make_http_provider(t->as_str(), opts);
  if (t->as_str() == "replay") return make_replay(opts);
  invalid("provider spec: unknown type \"" + t->as_str() + "\" (known: " + kProviderTypes + ")");
}

Value describe_provider_options() {
  std::vector<Entry> out;
  for (const char* type : {"echo", "openai", "anthropic", "ollama", "replay"}) {
    try {
      out.emplace_back(type, describe_options([&] { make_provider(Value::dict({{"type", Value::str(type)}})); }));
    } catch (const Error& e) {
      if (e.code() != Code::NotFound) throw;  // a type this build lacks is left out
    }
  }
  return Value::dict(std::move(out));
}

}  // namespace af::lm
