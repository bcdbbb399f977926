// The engine of the HTTP providers (lm/http_engine.h): libcurl's multi
// interface on one thread per provider. Requests in flight hold no engine
// thread; cancelling a call aborts its transfer.
//
// Retries: 429, 5xx, connection failures, per-attempt timeouts and streams
// cut off before their end are retried up to max_retries times with
// exponential backoff and jitter; a Retry-After header (seconds or HTTP
// date) sets the delay instead, clamped to backoff_max_ms (a server cannot
// stall a call for a day; the run's own deadline cancels a waiting retry
// like any transfer). A 429 also pauses the whole provider for that delay:
// its other waiting requests do not start into the same limit. Other
// statuses and malformed bodies or events fail at once.
//
// Streaming: a request that wants its text as it arrives (Request::stream)
// is read, when the 200 reply has the wire format's stream Content-Type, by
// the format's StreamParser; a retry after some text arrived restarts the
// call's stream. Any other reply is read whole.
//
// Secrets: the API key is read from a named environment variable when the
// provider is made and only ever goes into its header. It is refused over
// plain http:// except to a loopback host (the option "allow_insecure_http"
// lifts that), and every message built here passes through safe_text, so a
// server that echoes the request cannot put the key — or terminal escapes —
// into a host's logs.
#include "lm/http_engine.h"

#include <curl/curl.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include <unistd.h>

#include "lm/excerpt.h"
#include "lm/options.h"
#include "lm/schema.h"

namespace af::lm {

// Retry-After: delta-seconds or an HTTP date, in ms within [0, cap_ms];
// -1 if absent or unreadable (then the usual backoff applies). The value is
// the server's: huge, negative, fractional, "inf" and "nan" all stay in range.
int64_t retry_after_ms(const std::string& v, int64_t cap_ms) {
  if (v.empty()) return -1;
  char* end = nullptr;
  double secs = std::strtod(v.c_str(), &end);
  if (end != v.c_str() && (*end == 0 || *end == ' ' || *end == '\r')) {
    if (std::isnan(secs)) return -1;
    if (secs <= 0) return 0;
    if (secs >= double(cap_ms) / 1000.0) return cap_ms;  // inf included
    return std::min<int64_t>(cap_ms, int64_t(secs * 1000.0));
  }
  time_t when = curl_getdate(v.c_str(), nullptr);
  if (when < 0) return -1;
  int64_t delta_s = int64_t(when) - int64_t(std::time(nullptr));
  if (delta_s <= 0) return 0;
  if (delta_s >= cap_ms / 1000 + 1) return cap_ms;
  return std::min<int64_t>(cap_ms, delta_s * 1000);
}

// Loopback hosts may receive a key over plain http: the bytes never leave
// the machine. The host is parsed exactly (no prefix tricks such as
// 127.0.0.1.example.com).
bool loopback_url(std::string_view url) {
  url.remove_prefix(url.find("://") + 3);
  url = url.substr(0, url.find_first_of("/?#"));
  if (size_t at = url.rfind('@'); at != std::string_view::npos) url.remove_prefix(at + 1);
  std::string_view host = url;
  if (!host.empty() && host.front() == '[') {
    host = host.substr(0, host.find(']') + 1);
    return host == "[::1]";
  }
  host = host.substr(0, host.find(':'));
  std::string lower;
  for (char c : host) lower += char(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "localhost") return true;
  // 127.a.b.c, four decimal parts each 0..255.
  int parts = 0, value = -1;
  for (char c : lower + ".") {
    if (c == '.') {
      if (value < 0 || value > 255) return false;
      if (parts == 0 && value != 127) return false;
      ++parts;
      value = -1;
    } else if (c >= '0' && c <= '9') {
      value = (value < 0 ? 0 : value * 10) + (c - '0');
      if (value > 255) return false;
    } else {
      return false;
    }
  }
  return parts == 4;
}

// base_url without "user:password@" (it may hold credentials too).
std::string url_for_messages(const std::string& url) {
  size_t start = url.find("://") + 3;
  size_t end = url.find_first_of("/?#", start);
  size_t at = url.rfind('@', end == std::string::npos ? url.size() : end);
  if (at == std::string::npos || at < start) return url;
  return url.substr(0, start) + url.substr(at + 1);
}

CaPaths choose_ca_paths(const char* env_file, const char* env_dir, const char* curl_file, const char* curl_dir,
                        const std::function<bool(const char*)>& readable) {
  const auto usable = [&](const char* path) { return path && *path && readable(path); };
  CaPaths p;
  if (usable(env_file)) p.file = env_file;
  if (usable(env_dir)) p.dir = env_dir;
  if (!p.file.empty() || !p.dir.empty() || usable(curl_file) || usable(curl_dir)) return p;
  for (const char* f : {"/etc/ssl/certs/ca-certificates.crt",                  // Debian, Ubuntu, Arch
                        "/etc/pki/tls/certs/ca-bundle.crt",                    // Fedora, RHEL
                        "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",   // RHEL 7+
                        "/etc/ssl/ca-bundle.pem",                              // openSUSE
                        "/etc/ssl/cert.pem"})                                  // Alpine
    if (usable(f)) {
      p.file = f;
      break;
    }
  return p;
}

namespace {

// This process's choice, made once.
const CaPaths& ca_paths() {
  static const CaPaths paths = [] {
    const curl_version_info_data* v = curl_version_info(CURLVERSION_NOW);
    return choose_ca_paths(std::getenv("SSL_CERT_FILE"), std::getenv("SSL_CERT_DIR"), v ? v->cainfo : nullptr,
                           v ? v->capath : nullptr, [](const char* f) { return access(f, R_OK) == 0; });
  }();
  return paths;
}

// A reply body larger than this aborts the transfer (PROVIDER, not retried:
// the same server would send the same body again).
constexpr size_t kMaxReplyBytes = size_t(64) << 20;

struct Transfer {
  std::shared_ptr<Call> call;
  const Wire* wire = nullptr;  // the provider's, which outlives its transfers
  std::string body;
  std::string response;
  std::string retry_after;
  CURL* easy = nullptr;  // from the engine's idle handles while attempting
  uint32_t attempt = 0;
  int64_t due_ns = 0;     // when waiting to retry
  bool active = false;    // in the multi handle
  bool done = false;
  bool too_large = false;  // the body passed kMaxReplyBytes
  // Streaming: the events of this attempt (null until a 200 event stream
  // starts); whether any text reached the call (a retry then restarts it).
  std::unique_ptr<StreamParser> stream;
  bool streamed = false;
};

// A 200 reply to a streamed request is read as a stream when its
// Content-Type is the wire format's stream type; any other body (a server
// that does not stream, an HTML error page) is read whole, as a JSON reply.
bool starts_event_stream(Transfer& t) {
  long status = 0;
  const char* type = nullptr;
  curl_easy_getinfo(t.easy, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_getinfo(t.easy, CURLINFO_CONTENT_TYPE, &type);
  if (status != 200 || !type) return false;
  const std::string_view want = t.wire->stream_type();
  std::string_view ct(type);
  if (ct.size() < want.size()) return false;
  for (size_t i = 0; i < want.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(ct[i])) != want[i]) return false;
  std::shared_ptr<Call> call = t.call;
  bool* streamed = &t.streamed;
  t.stream = t.wire->stream(
      [call, streamed](std::string_view text) {
        *streamed = true;
        call->delta(text);
      },
      kMaxReplyBytes);
  t.stream->set_tools(t.call->request().tools != nullptr);
  return true;
}

size_t on_body(char* p, size_t size, size_t n, void* ud) {
  auto* t = static_cast<Transfer*>(ud);
  if (t->call->request().stream && (t->stream || (t->response.empty() && starts_event_stream(*t))))
    return t->stream->feed({p, size * n}) ? size * n : 0;  // a bad event aborts the transfer
  if (t->response.size() + size * n > kMaxReplyBytes) {
    t->too_large = true;
    return 0;  // a runaway body: abort the transfer
  }
  t->response.append(p, size * n);
  return size * n;
}

size_t on_header(char* p, size_t size, size_t n, void* ud) {
  auto* t = static_cast<Transfer*>(ud);
  std::string_view h(p, size * n);
  constexpr std::string_view kName = "retry-after:";
  if (h.size() > kName.size()) {
    bool match = true;
    for (size_t i = 0; i < kName.size() && match; ++i) match = std::tolower(static_cast<unsigned char>(h[i])) == kName[i];
    if (match) {
      std::string v(h.substr(kName.size()));
      while (!v.empty() && std::isspace(static_cast<unsigned char>(v.front()))) v.erase(v.begin());
      while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.pop_back();
      t->retry_after = v;
    }
  }
  return size * n;
}

// "the response is not valid JSON (<why>): <excerpt>", the why worded as
// everywhere else (from_json), for a reply body simdjson refused.
std::string not_json_message(std::string_view body, std::string_view secret) {
  std::string why = "invalid JSON";
  try {
    from_json(body);  // the same failure, worded as everywhere else
  } catch (const Error& e) {
    why = e.what();
  }
  return "the response is not valid JSON (" + why + "): " + safe_excerpt(body, secret);
}

// The curl thread and its multi handle; shared with cancel hooks, which
// only hold it weakly.
class Engine : public std::enable_shared_from_this<Engine> {
 public:
  Engine(HttpConfig cfg, std::shared_ptr<const Wire> wire)
      : cfg_(std::move(cfg)), wire_(std::move(wire)), rng_(std::random_device{}()) {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    multi_ = curl_multi_init();
    if (!multi_) fail(Code::OutOfMemory, cfg_.type + " provider: curl_multi_init failed");
    headers_ = curl_slist_append(nullptr, "Content-Type: application/json");
    for (const std::string& h : cfg_.headers)
      if (headers_) headers_ = curl_slist_append(headers_, h.c_str());
    if (!headers_) {
      curl_multi_cleanup(multi_);
      fail(Code::OutOfMemory, cfg_.type + " provider: out of memory");
    }
  }
  ~Engine() {
    for (CURL* e : idle_) curl_easy_cleanup(e);
    curl_multi_cleanup(multi_);
    curl_slist_free_all(headers_);
  }

  void begin() {
    thread_ = std::thread([self = shared_from_this()] { self->loop(); });
    // Read by add() from any thread; thread_ itself changes in stop().
    curl_thread_ = thread_.get_id();
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    curl_multi_wakeup(multi_);
    if (thread_.joinable()) {
      if (thread_.get_id() == std::this_thread::get_id()) thread_.detach();
      else thread_.join();
    }
  }

  void add(std::shared_ptr<Transfer> t) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      incoming_.push_back(std::move(t));
    }
    // A call finished on the curl thread often submits the next one from
    // there: that thread looks at incoming_ before it polls again, so only
    // other threads need to wake it.
    if (std::this_thread::get_id() != curl_thread_) curl_multi_wakeup(multi_);
  }

  void cancel(std::shared_ptr<Transfer> t) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      cancels_.push_back(std::move(t));
    }
    curl_multi_wakeup(multi_);
  }

  const HttpConfig& config() const { return cfg_; }
  const Wire& wire() const { return *wire_; }
  // The provider's limiter, paused by a 429 (set once, before any request).
  void set_limiter(std::weak_ptr<Limiter> l) { limiter_ = std::move(l); }

 private:
  void attempt(const std::shared_ptr<Transfer>& t) {
    ++t->attempt;
    t->call->attempts = t->attempt;
    t->response.clear();
    t->retry_after.clear();
    t->too_large = false;
    t->stream.reset();
    if (t->streamed) t->call->restart();  // the retry's text starts over
    t->streamed = false;
    if (t->easy) {
      curl_easy_reset(t->easy);  // a retry
    } else if (!idle_.empty()) {
      // A handle kept from an earlier request: reset, not remade (making and
      // freeing one per request was most of the provider's own cost).
      t->easy = idle_.back();
      idle_.pop_back();
      curl_easy_reset(t->easy);
    } else {
      t->easy = curl_easy_init();
      if (!t->easy)
        return finish(t, Error(Code::OutOfMemory, cfg_.type + " provider: curl_easy_init failed"));
    }
    CURL* e = t->easy;
    curl_easy_setopt(e, CURLOPT_URL, cfg_.url.c_str());
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers_);
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, t->body.data());
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(t->body.size()));
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, t.get());
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, t.get());
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, long(cfg_.timeout_ms));
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, long(std::min<int64_t>(cfg_.timeout_ms, 30000)));
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_PRIVATE, t.get());
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
    const CaPaths& ca = ca_paths();
    if (!ca.file.empty()) curl_easy_setopt(e, CURLOPT_CAINFO, ca.file.c_str());
    if (!ca.dir.empty()) curl_easy_setopt(e, CURLOPT_CAPATH, ca.dir.c_str());
    if (curl_multi_add_handle(multi_, e) != CURLM_OK)
      return finish(t, Error(Code::Internal, cfg_.type + " provider: curl_multi_add_handle failed"));
    t->active = true;
    active_[t.get()] = t;
    peak_active_ = std::max(peak_active_, active_.size());
  }

  void detach(const std::shared_ptr<Transfer>& t) {
    if (t->active) {
      curl_multi_remove_handle(multi_, t->easy);
      t->active = false;
      active_.erase(t.get());
    }
  }

  // The transfer is over: its handle goes back to the idle ones
  // (connections live in the multi handle's cache either way). As many are
  // kept as transfers were in flight lately: at 1 000 in flight one
  // multi_perform finishes hundreds of transfers, whose calls' next
  // requests take their handles back in the next round; a fixed cap of 64
  // freed and made a handle for nearly every request there. trim_idle()
  // gives back what a busy spell left once it is over.
  size_t idle_cap() const { return std::max({kMinIdle, peak_active_, last_peak_active_}); }
  void release(const std::shared_ptr<Transfer>& t) {
    detach(t);
    if (t->easy && idle_.size() < idle_cap())
      idle_.push_back(t->easy);
    else if (t->easy)
      curl_easy_cleanup(t->easy);
    t->easy = nullptr;
    t->done = true;
  }

  // Every failure leaves through here: the message may hold server text.
  void finish(const std::shared_ptr<Transfer>& t, const Error& err) {
    release(t);
    t->call->fail(Error(err.code(), safe_text(err.what(), cfg_.key)));
  }

  std::string excerpt(std::string_view body) const { return safe_excerpt(body, cfg_.key); }

  std::string what(const std::shared_ptr<Transfer>& t) const {
    return "provider " + cfg_.name + " (" + cfg_.url_shown + ", attempt " + std::to_string(t->attempt) + " of " +
           std::to_string(cfg_.max_retries + 1) + ")";
  }

  // A failed attempt: retry later, or fail for good. A rate-limited one
  // (429) pauses the provider's other requests as long.
  void retry_or_fail(const std::shared_ptr<Transfer>& t, const Error& err, int64_t after_ms,
                     bool rate_limited = false) {
    detach(t);
    int64_t delay;
    if (after_ms >= 0) {
      delay = after_ms;
    } else {
      double base = double(cfg_.backoff_ms) * double(1ull << std::min<uint32_t>(t->attempt - 1, 30));
      base = std::min(base, double(cfg_.backoff_max_ms));
      std::uniform_real_distribution<double> jitter(0.5, 1.0);
      delay = int64_t(base * jitter(rng_));
    }
    if (rate_limited)
      if (auto lim = limiter_.lock()) lim->pause(delay);
    if (t->attempt > cfg_.max_retries || t->call->finished()) return finish(t, err);
    t->due_ns = now_ns() + delay * 1000000;
    delayed_.emplace(t->due_ns, t);
  }

  void completed(const std::shared_ptr<Transfer>& t, CURLcode res) {
    if (res != CURLE_OK && t->too_large)
      return finish(t, Error(Code::Provider, what(t) + ": the reply is larger than " +
                                                 std::to_string(kMaxReplyBytes >> 20) + " MiB"));
    if (t->stream && !t->stream->error().empty())
      return finish(t, Error(Code::Provider, what(t) + ": bad stream: " + excerpt(t->stream->error())));
    if (res != CURLE_OK) {
      Code code = res == CURLE_OPERATION_TIMEDOUT ? Code::Timeout : Code::Provider;
      std::string why = res == CURLE_OPERATION_TIMEDOUT
                            ? "no reply within " + std::to_string(cfg_.timeout_ms) + " ms"
                            : std::string(curl_easy_strerror(res));
      return retry_or_fail(t, Error(code, what(t) + ": " + why), -1);
    }
    long status = 0;
    curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
    if (status == 429 || status >= 500) {
      return retry_or_fail(t, Error(Code::Provider, what(t) + ": HTTP " + std::to_string(status) + ": " +
                                                        excerpt(t->response)),
                           retry_after_ms(t->retry_after, cfg_.backoff_max_ms), status == 429);
    }
    if (status < 200 || status >= 300)
      return finish(t, Error(Code::Provider, what(t) + ": HTTP " + std::to_string(status) + ": " + excerpt(t->response)));
    if (t->stream) return stream_completed(t);
    // The reply is read in place (simdjson DOM): only the few fields the
    // wire format names matter, and making a Value of the whole reply was
    // about an eighth of the provider's instructions per request.
    std::string text, why;
    simdjson::dom::element root;
    bool ok = false;
    if (parser_.parse(t->response.data(), t->response.size()).get(root) != simdjson::SUCCESS)
      why = not_json_message(t->response, cfg_.key);
    else
      ok = wire_->reply(root, t->response, *t->call, text, why, cfg_.key);
    if (!ok) return finish(t, Error(Code::Provider, what(t) + ": " + why));
    release(t);
    t->call->complete(std::move(text));
  }

  // The transfer of a stream ended: complete with its text (with tools, the
  // tool reply), or retry a stream cut off before its end.
  void stream_completed(const std::shared_ptr<Transfer>& t) {
    const StreamParser& s = *t->stream;
    if (!s.ended())
      return retry_or_fail(t, Error(Code::Provider, what(t) + ": the stream ended before the reply did (no " +
                                                        s.end_marker() + " after " + std::to_string(s.text().size()) +
                                                        " bytes of text)"),
                           -1);
    std::string text, why;
    if (!s.reply(text, why)) return finish(t, Error(Code::Provider, what(t) + ": bad stream: " + excerpt(why)));
    t->call->prompt_tokens = s.prompt_tokens();
    t->call->completion_tokens = s.completion_tokens();
    release(t);
    t->call->complete(std::move(text));
  }

  // Once a second (the loop turns at least that often): the peak of
  // transfers in flight starts over, and idle handles beyond the last two
  // seconds' peak are freed.
  void trim_idle(int64_t now) {
    if (now < trim_ns_) return;
    trim_ns_ = now + 1000000000;
    last_peak_active_ = peak_active_;
    peak_active_ = active_.size();
    for (const size_t cap = idle_cap(); idle_.size() > cap; idle_.pop_back()) curl_easy_cleanup(idle_.back());
  }

  void loop() {
    std::vector<std::shared_ptr<Transfer>> in, cancels;
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stop_) break;
        in.swap(incoming_);
        cancels.swap(cancels_);
      }
      for (auto& t : in)
        if (!t->done && !t->call->finished()) attempt(t);
        else if (!t->done) release(t);
      in.clear();
      for (auto& t : cancels)
        if (!t->done) release(t);  // the call already finished as cancelled
      cancels.clear();
      int64_t now = now_ns();
      trim_idle(now);
      while (!delayed_.empty() && delayed_.begin()->first <= now) {
        auto t = delayed_.begin()->second;
        delayed_.erase(delayed_.begin());
        if (t->done) continue;
        if (t->call->finished()) release(t);
        else attempt(t);
      }
      int running = 0;
      curl_multi_perform(multi_, &running);
      int left = 0;
      while (CURLMsg* m = curl_multi_info_read(multi_, &left)) {
        if (m->msg != CURLMSG_DONE) continue;
        Transfer* raw = nullptr;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, reinterpret_cast<char**>(&raw));
        auto it = active_.find(raw);
        if (it == active_.end()) continue;
        std::shared_ptr<Transfer> t = it->second;
        completed(t, m->data.result);
      }
      int timeout = 1000;
      if (!delayed_.empty())
        timeout = int(std::clamp<int64_t>((delayed_.begin()->first - now_ns()) / 1000000 + 1, 0, 1000));
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (!incoming_.empty() || !cancels_.empty() || stop_) timeout = 0;  // work queued meanwhile
      }
      curl_multi_poll(multi_, nullptr, 0, timeout, nullptr);
    }
    // Stopping: whatever is left fails.
    std::vector<std::shared_ptr<Transfer>> left;
    for (auto& [_, t] : active_) left.push_back(t);
    for (auto& [_, t] : delayed_) left.push_back(t);
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& t : incoming_) left.push_back(t);
      incoming_.clear();
      cancels_.clear();
    }
    delayed_.clear();
    for (auto& t : left)
      if (!t->done) finish(t, Error(Code::Cancelled, "provider " + cfg_.name + " was freed"));
  }

  static constexpr size_t kMinIdle = 64;
  HttpConfig cfg_;
  std::shared_ptr<const Wire> wire_;
  CURLM* multi_ = nullptr;
  curl_slist* headers_ = nullptr;  // the same for every request
  std::vector<CURL*> idle_;        // easy handles to reuse (curl thread only)
  simdjson::dom::parser parser_;   // whole replies (curl thread only)
  // The most transfers in flight this second and the last (curl thread only).
  size_t peak_active_ = 0, last_peak_active_ = 0;
  int64_t trim_ns_ = 0;  // when trim_idle() next looks
  std::thread thread_;
  std::thread::id curl_thread_;
  std::mutex mu_;
  bool stop_ = false;
  std::vector<std::shared_ptr<Transfer>> incoming_, cancels_;
  std::map<Transfer*, std::shared_ptr<Transfer>> active_;
  std::multimap<int64_t, std::shared_ptr<Transfer>> delayed_;
  std::mt19937_64 rng_;
  std::weak_ptr<Limiter> limiter_;
};


class HttpProvider final : public Provider {
 public:
  HttpProvider(HttpConfig cfg, std::shared_ptr<const Wire> wire, uint32_t max)
      : Provider(cfg.name, max), engine_(std::make_shared<Engine>(std::move(cfg), std::move(wire))) {
    engine_->set_limiter(limiter().weak_from_this());
    engine_->begin();
  }
  ~HttpProvider() override {
    shutdown();
    engine_->stop();
  }

 protected:
  void start(std::shared_ptr<Call> call) noexcept override {
    try {
      auto t = std::make_shared<Transfer>();
      t->wire = &engine_->wire();
      t->body = engine_->wire().body(call->request());
      t->call = call;
      std::weak_ptr<Engine> engine = engine_;
      std::weak_ptr<Transfer> weak = t;
      call->on_cancel([engine, weak] {
        auto e = engine.lock();
        auto tr = weak.lock();
        if (e && tr) e->cancel(std::move(tr));
      });
      engine_->add(std::move(t));
    } catch (const Error& e) {
      call->fail(e);
    } catch (...) {
      call->fail(Error(Code::OutOfMemory, engine_->config().type + " provider: out of memory"));
    }
  }

 private:
  std::shared_ptr<Engine> engine_;
};

}  // namespace

HttpOptions::HttpOptions(Options& o, const HttpDefaults& d) : d_(d) {
  cfg.type = d.type;
  cfg.name = o.str("name", d.type, "The provider's name in profiles and error messages.");
  common = read_common_options(o, CommonOptions{d.max_in_flight});
  base_ = o.str("base_url", d.base_url ? d.base_url : "", "The server's URL (http:// or https://); required when the default is empty.");
  if (d.key_header) {
    key_env_ = o.str("api_key_env", d.key_env ? d.key_env : "", "The environment variable holding the API key (\"\" = a server without keys).");
    allow_http_ = o.boolean("allow_insecure_http", false, "Send the API key over plain http to a host that is not loopback.");
  }
  cfg.timeout_ms = o.integer("timeout_ms", 60000, 1, 24 * 3600 * 1000LL, "Each HTTP request's deadline, in milliseconds.");
  cfg.max_retries = uint32_t(o.integer("max_retries", 3, 0, 100, "Retries of a request that failed in a way worth retrying (429, 5xx, transport)."));
  cfg.backoff_ms = o.integer("backoff_ms", 500, 0, 3600 * 1000LL, "The first retry's delay, doubled per retry (with jitter; Retry-After wins).");
  cfg.backoff_max_ms = o.integer("backoff_max_ms", 20000, 0, 3600 * 1000LL, "The longest delay between retries.");
}

void HttpOptions::finish() {
  const std::string what = cfg.type + " provider: ";
  if (base_.empty())
    invalid(what + "option \"base_url\" is required (e.g. \"" + d_.base_example + "\")");
  if (base_.rfind("http://", 0) != 0 && base_.rfind("https://", 0) != 0)
    invalid(what + "\"base_url\" must start with http:// or https://, found \"" + base_ + "\"");
  while (!base_.empty() && base_.back() == '/') base_.pop_back();
  cfg.url = base_ + d_.path;
  cfg.url_shown = url_for_messages(cfg.url);
  if (!key_env_.empty()) {
    const char* key = std::getenv(key_env_.c_str());
    if (!key || !*key)
      invalid(what + "the environment variable " + key_env_ + " (option \"api_key_env\") is not set" +
              (d_.key_env && key_env_ == d_.key_env ? " (set \"api_key_env\": \"\" for a server without keys)"
                                                     : ""));
    if (base_.rfind("http://", 0) == 0 && !loopback_url(base_) && !allow_http_)
      invalid(what + "refusing to send the API key (" + key_env_ + ") over plain http to " +
              url_for_messages(base_) + "; use https://, a loopback host, or set \"allow_insecure_http\": true");
    cfg.key = key;
    cfg.headers.push_back(std::string(d_.key_header) + key);
  }
}

Value read_extra(Options& o, const char* type, std::initializer_list<const char*> reserved) {
  const Value* extra = o.object("extra", "Fields added to every request body (not those libaf sets per request).");
  if (!extra) return Value();
  for (const auto& [k, _] : extra->entries())
    for (const char* r : reserved)
      if (k == r)
        invalid(std::string(type) + " provider: option \"extra\" may not set \"" + k +
                "\" (libaf sets it per request)");
  return *extra;
}

void Fields::set(std::string name, Value v) {
  for (auto& [n, old] : fields_)
    if (n == name) {
      old = std::move(v);
      return;
    }
  fields_.emplace_back(std::move(name), std::move(v));
}

bool Fields::has(std::string_view name) const {
  for (const auto& [n, _] : fields_)
    if (n == name) return true;
  return false;
}

void Fields::append_to(std::string& json) const {
  for (const auto& [n, v] : fields_) {
    json += ',';
    append_json_string(json, n);
    json += ':';
    append_json(json, v);
  }
}

Value stop_list(const Value& stop) {
  if (stop.kind() == Kind::Str) return Value::list({stop});
  return stop;
}

std::string schema_instruction(const Schema& schema) {
  return "Reply with only a JSON value that matches this JSON Schema:\n" + schema.grammar_json_schema();
}

void read_usage(simdjson::dom::element usage, const char* prompt, const char* completion, Call& call) {
  if (!usage.is_object()) return;
  auto count = [&](const char* k) -> uint64_t {
    int64_t n = 0;
    return usage[k].get(n) == simdjson::SUCCESS ? Call::reply_tokens(n) : 0;
  };
  call.prompt_tokens = count(prompt);
  call.completion_tokens = count(completion);
}

std::string function_tools(const Tools& tools) {
  std::string s = "[";
  for (const Tools::Tool& t : tools.list()) {
    if (s.size() > 1) s += ',';
    s += "{\"type\":\"function\",\"function\":{\"name\":";
    append_json_string(s, t.name);
    if (!t.description.empty()) {
      s += ",\"description\":";
      append_json_string(s, t.description);
    }
    s += ",\"parameters\":";
    s += t.parameters_json;
    s += "}}";
  }
  s += ']';
  return s;
}

void append_arguments_object(std::string& json, const ToolCall& call) {
  // Checked, not pasted: the text comes from a history, and whatever it
  // holds must not change the request's other fields.
  thread_local simdjson::dom::parser parser;
  simdjson::dom::object args;
  if (call.arguments.empty()) {
    json += "{}";
  } else if (parser.parse(call.arguments).get(args) == simdjson::SUCCESS) {
    json += simdjson::minify(args);
  } else {
    invalid("tool call \"" + call.id + "\" (" + call.name + "): its arguments are not a JSON object: " +
            safe_excerpt(call.arguments, ""));
  }
}

bool read_function_calls(simdjson::dom::element list, const char* where, std::vector<ToolCall>& calls,
                         std::string& why) {
  simdjson::dom::array items;
  if (list.get(items) != simdjson::SUCCESS) {
    why = std::string(where) + " is not a list";
    return false;
  }
  for (simdjson::dom::element item : items) {
    const std::string at = std::string(where) + "[" + std::to_string(calls.size()) + "]";
    if (calls.size() == kMaxToolCalls) {
      why = std::string(where) + " holds more than " + std::to_string(kMaxToolCalls) + " tool calls";
      return false;
    }
    if (!item.is_object()) {
      why = at + " is not an object";
      return false;
    }
    ToolCall& c = calls.emplace_back();
    std::string_view id, name, text;
    simdjson::dom::element fn, args;
    if (simdjson::dom::element e; item["id"].get(e) == simdjson::SUCCESS && !e.is_null()) {
      if (e.get(id) != simdjson::SUCCESS) {
        why = at + " has an \"id\" that is not a string";
        return false;
      }
    }
    c.id = id.empty() ? "call_" + std::to_string(calls.size() - 1) : std::string(id);
    if (item["function"].get(fn) != simdjson::SUCCESS || !fn.is_object()) {
      why = at + " has no \"function\" object";
      return false;
    }
    if (fn["name"].get(name) != simdjson::SUCCESS || name.empty()) {
      why = at + " has no function.name string";
      return false;
    }
    c.name = std::string(name);
    if (fn["arguments"].get(args) != simdjson::SUCCESS || args.is_null()) {
      c.arguments = "{}";  // a tool without arguments
    } else if (args.get(text) == simdjson::SUCCESS) {
      c.arguments = text.empty() ? "{}" : std::string(text);
    } else if (args.is_object()) {
      c.arguments = simdjson::minify(args);
    } else {
      why = at + " has function.arguments that are neither a JSON string nor an object";
      return false;
    }
  }
  return true;
}

void check_image_roles(const Request& r, const char* type) {
  for (size_t i = 0; i < r.messages.size(); ++i) {
    const Message& m = r.messages[i];
    if (!m.parts || m.role == "user") continue;
    for (const ContentPart& p : *m.parts)
      if (p.type != ContentPart::Type::Text)
        invalid(std::string(type) + ": images can be given in user messages only; messages[" + std::to_string(i) +
                "] (role " + json_quoted(m.role) + ") has one");
  }
}

bool image_bytes(const ContentPart& part, const char* type, const std::string& at, ImageBytes& out) {
  if (part.type == ContentPart::Type::ImageData) {
    out = {part.media_type, part.value.as_str()};
    return true;
  }
  if (part.type != ContentPart::Type::ImageUrl) return false;
  const std::string_view url = part.value.as_str();
  if (!url.starts_with("data:")) return false;
  const size_t semi = url.find(';');
  constexpr std::string_view kBase64 = ";base64,";
  const std::string_view media = semi == std::string_view::npos ? std::string_view() : url.substr(5, semi - 5);
  if (semi == std::string_view::npos || url.substr(semi, kBase64.size()) != kBase64 || !image_media_type(media) ||
      !valid_base64(url.substr(semi + kBase64.size())))
    invalid(std::string(type) + ": " + at + ": an image's data: URL must be data:<media type>;base64,<data> with "
            "media type image/png, image/jpeg, image/gif or image/webp and the data base64, found " +
            json_quoted(std::string(url.substr(0, 40))) + (url.size() > 40 ? "..." : ""));
  out = {media, url.substr(semi + kBase64.size())};
  return true;
}

ProviderPtr make_http_provider(HttpOptions& opts, std::shared_ptr<const Wire> wire) {
  auto p = std::make_shared<HttpProvider>(std::move(opts.cfg), std::move(wire), opts.common.max_in_flight);
  opts.common.apply(*p);
  return p;
}

}  // namespace af::lm
