// af_http_bench: one HTTP client, one closed loop against an
// OpenAI-compatible server, for bench/http/run.py (which starts the server
// and compares the clients side by side).
//
//   af_http_bench <client> <base_url> <in_flight> <requests> <latency_file>
//
// client:
//   libaf    libaf's openai provider (core/lm/openai.cpp), driven call by
//            call: `in_flight` calls outstanding, each finished call submits
//            the next from its done hook (the provider's curl thread), the
//            way the executor feeds it.
//   program  the same provider behind a compiled program through the C API:
//            `in_flight` independent chains of lm_calls, each call's message
//            holding the previous reply (executor, lm_call rule and routing
//            included). No per-request latency (the file stays empty).
//   curl     a raw libcurl multi loop, the physical limit: `in_flight` easy
//            handles made once, each re-added with a fixed body as soon as
//            its transfer ends; the reply is kept, not parsed.
//
// Before timing, each client runs `in_flight` requests untimed (connections
// open, handles warm). Prints one JSON line: {"client", "in_flight",
// "requests", "errors", "seconds", "cpu_seconds"}; writes each timed
// request's latency in nanoseconds, one per line, to latency_file.
#include <af/af.h>
#include <curl/curl.h>
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include "lm/providers.h"
#include "value/value.h"

namespace {

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

int64_t now_ns() { return af::lm::now_ns(); }

struct Result {
  uint64_t errors = 0;
  std::vector<int64_t> latency_ns;  // timed requests only
  std::string first_error;
};

std::string user_text(uint64_t i) { return "Say hello to request " + std::to_string(i) + "."; }

// ---- libaf's openai provider, call by call

class ProviderLoop {
 public:
  ProviderLoop(af::lm::ProviderPtr p, uint64_t total)
      : p_(std::move(p)), total_(total), lat_(total) {}

  // Keeps `in_flight` calls outstanding until `total` have finished.
  void run(uint32_t in_flight) {
    for (uint32_t k = 0; k < in_flight; ++k) issue();
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return done_ == total_; });
  }
  Result result() {
    Result r;
    r.errors = errors_;
    r.first_error = first_error_;
    r.latency_ns = std::move(lat_);
    return r;
  }

 private:
  void issue() {
    uint64_t i = next_.fetch_add(1);
    if (i >= total_) return;
    af::lm::Request req;
    req.model = af::Value::str("bench");
    req.messages.push_back({"user", af::Value::str(user_text(i))});
    int64_t t0 = now_ns();
    auto done = [this, i, t0](af::lm::Call&, const std::string* content, const af::Error* err) {
      lat_[i] = now_ns() - t0;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (err || !content || content->empty()) {
          if (!errors_++) first_error_ = err ? err->what() : "empty reply";
        }
        // Notified under the lock: run() may return (and the loop go) as
        // soon as it sees the count.
        if (++done_ == total_) return cv_.notify_all();
      }
      issue();
    };
    p_->submit(std::make_shared<af::lm::Call>(std::move(req), std::move(done), 0.0));
  }

  af::lm::ProviderPtr p_;
  uint64_t total_;
  std::vector<int64_t> lat_;
  std::atomic<uint64_t> next_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t done_ = 0, errors_ = 0;
  std::string first_error_;
};

std::string provider_options(const std::string& url) {
  // Unlimited in flight: the loop itself bounds it. No retries: an error is
  // counted, not hidden.
  return "{\"base_url\":\"" + url + "\",\"max_in_flight\":0,\"max_retries\":0}";
}

Result run_libaf(const std::string& url, uint32_t in_flight, uint64_t n, double& seconds,
                 double& cpu) {
  af::lm::ProviderPtr p = af::lm::make_openai(af::from_json(provider_options(url)));
  ProviderLoop(p, in_flight).run(in_flight);  // warm-up
  ProviderLoop loop(p, n);
  double c0 = cpu_seconds();
  int64_t t0 = now_ns();
  loop.run(in_flight);
  seconds = double(now_ns() - t0) / 1e9;
  cpu = cpu_seconds() - c0;
  return loop.result();
}

// ---- the same provider behind a program (C API)

struct Chains {
  uint32_t chains;
  uint64_t length;
};

af_value_t* str(af_context_t* c, const std::string& s) {
  af_value_t* v = nullptr;
  af_error_free(af_value_str(c, s.data(), s.size(), &v));
  return v;
}

// chains × length lm_calls; call j of a chain sends the previous reply.
af_error_t* trace_chains(void* ud, af_context_t* c, const af_value_t* const*, size_t,
                         af_value_t** out) {
  const Chains& ch = *static_cast<const Chains*>(ud);
  af_value_t* model = str(c, "bench");
  af_value_t* role = str(c, "user");
  std::vector<af_value_t*> ends;
  af_error_t* e = nullptr;
  for (uint32_t k = 0; k < ch.chains && !e; ++k) {
    af_value_t* cur = str(c, user_text(k));
    for (uint64_t j = 0; j < ch.length && !e; ++j) {
      const char* keys[] = {"role", "content"};
      size_t lens[] = {4, 7};
      const af_value_t* vals[] = {role, cur};
      af_value_t *m = nullptr, *msgs = nullptr, *next = nullptr;
      e = af_value_dict(c, keys, lens, vals, 2, &m);
      if (!e) e = af_value_list(c, &m, 1, &msgs);
      if (!e) e = af_lm_call(c, msgs, model, &next);
      af_value_free(m);
      af_value_free(msgs);
      af_value_free(cur);
      cur = next;
    }
    ends.push_back(cur);
  }
  if (!e) e = af_value_list(c, ends.data(), ends.size(), out);
  for (af_value_t* v : ends) af_value_free(v);
  af_value_free(model);
  af_value_free(role);
  return e;
}

Result run_program(const std::string& url, uint32_t in_flight, uint64_t n, double& seconds,
                   double& cpu) {
  Result r;
  af_context_t* ctx = nullptr;
  af_provider_t* p = nullptr;
  af_error_t* e = af_context_new(&ctx);
  std::string opts = provider_options(url);
  if (!e) e = af_provider_openai_new(opts.data(), opts.size(), &p);
  if (!e) e = af_context_route(ctx, "*", 1, p);
  auto call = [&](uint64_t length) -> af_error_t* {
    Chains ch{in_flight, length};
    af_ir_t* ir = nullptr;
    af_program_t* prog = nullptr;
    af_value_t* out = nullptr;
    af_error_t* err = af_trace(ctx, trace_chains, &ch, nullptr, 0, nullptr, &ir);
    if (!err) err = af_compile(ctx, ir, &prog);
    double c0 = cpu_seconds();
    int64_t t0 = now_ns();
    if (!err) err = af_program_call(ctx, prog, nullptr, 0, &out);
    seconds = double(now_ns() - t0) / 1e9;
    cpu = cpu_seconds() - c0;
    af_value_free(out);
    af_program_free(prog);
    af_ir_free(ir);
    return err;
  };
  if (!e) e = call(1);  // warm-up
  if (!e) e = call(n / in_flight);
  if (e) {
    r.errors = 1;
    r.first_error = af_error_message(e);
    af_error_free(e);
  }
  af_provider_free(p);
  af_context_free(ctx);
  return r;
}

// ---- raw libcurl multi loop

size_t keep_body(char* p, size_t size, size_t n, void* ud) {
  static_cast<std::string*>(ud)->append(p, size * n);
  return size * n;
}

struct Handle {
  CURL* easy = nullptr;
  std::string reply;
  int64_t started = 0;
  bool timed = false;
};

Result run_curl(const std::string& url, uint32_t in_flight, uint64_t n, double& seconds,
                double& cpu) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  const std::string endpoint = url + "/chat/completions";
  const std::string body = "{\"model\":\"bench\",\"messages\":[{\"role\":\"user\",\"content\":\"" +
                           user_text(0) + "\"}]}";
  curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
  CURLM* multi = curl_multi_init();
  std::vector<Handle> hs(in_flight);
  for (Handle& h : hs) {
    h.easy = curl_easy_init();
    curl_easy_setopt(h.easy, CURLOPT_URL, endpoint.c_str());
    curl_easy_setopt(h.easy, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(h.easy, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(h.easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.size()));
    curl_easy_setopt(h.easy, CURLOPT_WRITEFUNCTION, keep_body);
    curl_easy_setopt(h.easy, CURLOPT_WRITEDATA, &h.reply);
    curl_easy_setopt(h.easy, CURLOPT_PRIVATE, &h);
    curl_easy_setopt(h.easy, CURLOPT_NOSIGNAL, 1L);
  }
  Result r;
  r.latency_ns.reserve(n);
  const uint64_t warm = in_flight, total = warm + n;
  uint64_t issued = 0, finished = 0;
  double c0 = 0;
  int64_t t0 = 0;
  auto start = [&](Handle& h) {
    h.reply.clear();
    h.timed = issued >= warm;
    h.started = now_ns();
    ++issued;
    curl_multi_add_handle(multi, h.easy);
  };
  for (Handle& h : hs) start(h);
  while (finished < total) {
    int running = 0;
    curl_multi_perform(multi, &running);
    int left = 0;
    while (CURLMsg* m = curl_multi_info_read(multi, &left)) {
      if (m->msg != CURLMSG_DONE) continue;
      Handle* h = nullptr;
      curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, reinterpret_cast<char**>(&h));
      long status = 0;
      curl_easy_getinfo(h->easy, CURLINFO_RESPONSE_CODE, &status);
      if (m->data.result != CURLE_OK || status != 200 || h->reply.empty()) {
        if (!r.errors++)
          r.first_error = curl_easy_strerror(m->data.result) + (" HTTP " + std::to_string(status));
      }
      if (h->timed) r.latency_ns.push_back(now_ns() - h->started);
      curl_multi_remove_handle(multi, h->easy);
      if (++finished == warm) {  // the warm-up is over: the clock starts
        c0 = cpu_seconds();
        t0 = now_ns();
      }
      if (issued < total) start(*h);
    }
    if (finished < total) curl_multi_poll(multi, nullptr, 0, 1000, nullptr);
  }
  seconds = double(now_ns() - t0) / 1e9;
  cpu = cpu_seconds() - c0;
  for (Handle& h : hs) curl_easy_cleanup(h.easy);
  curl_multi_cleanup(multi);
  curl_slist_free_all(headers);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr,
                 "usage: %s libaf|program|curl <base_url> <in_flight> <requests> <latency_file>\n",
                 argv[0]);
    return 2;
  }
  const std::string client = argv[1], url = argv[2];
  const auto in_flight = uint32_t(std::strtoul(argv[3], nullptr, 10));
  const uint64_t n = std::strtoull(argv[4], nullptr, 10);
  if (in_flight == 0 || n < in_flight) {
    std::fprintf(stderr, "in_flight must be >= 1 and requests >= in_flight\n");
    return 2;
  }
  double seconds = 0, cpu = 0;
  Result r;
  try {
    if (client == "libaf")
      r = run_libaf(url, in_flight, n, seconds, cpu);
    else if (client == "program")
      r = run_program(url, in_flight, n, seconds, cpu);
    else if (client == "curl")
      r = run_curl(url, in_flight, n, seconds, cpu);
    else {
      std::fprintf(stderr, "unknown client %s\n", client.c_str());
      return 2;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", client.c_str(), e.what());
    return 1;
  }
  std::ofstream lat(argv[5]);
  for (int64_t ns : r.latency_ns) lat << ns << '\n';
  const uint64_t timed = client == "program" ? (n / in_flight) * in_flight : n;
  std::printf(
      "{\"client\":\"%s\",\"in_flight\":%u,\"requests\":%llu,\"errors\":%llu,\"seconds\":%.6f,"
      "\"cpu_seconds\":%.6f}\n",
      client.c_str(), in_flight, static_cast<unsigned long long>(timed),
      static_cast<unsigned long long>(r.errors), seconds, cpu);
  if (r.errors)
    std::fprintf(stderr, "%s: %llu errors, first: %s\n", client.c_str(),
                 static_cast<unsigned long long>(r.errors), r.first_error.c_str());
  return r.errors ? 1 : 0;
}
