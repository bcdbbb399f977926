/* af/hpp/program.hpp — part of af.hpp (include <af/af.hpp>): compiled
 * programs and their runs. af::Program, af::RunOptions, af::Future (a run in
 * flight), and Context::eval with options, which needs both. */
#ifndef AF_HPP_PROGRAM_HPP
#define AF_HPP_PROGRAM_HPP

#include "cancel.hpp"
#include "context.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace af {

/* ---- Programs and runs ------------------------------------------------------ */

struct RunOptions {
  bool keep_going = false;      /* failures become {"error": ...} values */
  bool profile = false;         /* record a profile (Future::profile) */
  bool item_errors = false;     /* batched programs: a failing item becomes its error value */
  uint64_t timeout_ms = 0;      /* 0 = none: TIMEOUT after this long */
  std::string profile_path;     /* write the profile here as Chrome trace JSON */
  const CancelToken* cancel = nullptr;
  /* done and total equations, from libaf threads; must be quick and not throw
   * (what it throws is dropped). */
  std::function<void(uint64_t, uint64_t)> progress;
  /* The run summary JSON (calls, tokens, retries, time per model; af.h "Run
   * summaries"): call() writes it here, also when the run fails. */
  std::string* summary_out = nullptr;
  /* call_async(): record the run summary for Future::summary(). */
  bool summary = false;
  /* LM replies as they arrive: (equation index, batch item, the next piece,
   * or nullopt: what that equation and item streamed so far does not count).
   * From libaf threads, one at a time per run; must be quick; what it throws
   * is dropped. */
  std::function<void(uint32_t, uint64_t, std::optional<std::string_view>)> stream;
  std::string stream_tag; /* only LM equations with this tag stream ("" = all) */
  /* The largest value one equation may build, in bytes (a format or concat
   * result; 0 = the default, 1 GiB): past it the run fails with
   * OUT_OF_MEMORY naming the primitive and the size. */
  uint64_t max_value_bytes = 0;
  /* A run journal (af.h "Run journals"): each completed LM call is recorded
   * there, and a rerun of the same program on the same inputs answers the
   * recorded ones without reaching a provider ("" = none). */
  std::string journal_path;
};

/* A run in flight. Destroying it cancels the run (nobody can read the
 * result any more, and the run must not outlive the Context the caller
 * owns); call wait() first to let it finish. Move-only. */
class Future {
 public:
  Future(Future&&) noexcept = default;
  Future& operator=(Future&& o) noexcept {
    if (this != &o) {
      cancel();
      h_ = std::move(o.h_);
    }
    return *this;
  }
  ~Future() { cancel(); }

  /* Blocks until the run finishes: its output, or throws its error
   * (CANCELLED, TIMEOUT, ...). May be called again (same result). */
  Value wait() {
    af_value_t* out = nullptr;
    detail::check(af_future_wait(ptr(), &out));
    return Value::own(out);
  }
  bool ready() const { return af_future_ready(ptr()) != 0; }
  void cancel() noexcept {
    if (h_.get()) af_future_cancel(h_.get());
  }
  std::string profile() const {
    af_bytes_t b{nullptr, 0};
    detail::check(af_future_profile(ptr(), &b));
    return detail::take(b);
  }
  /* The run summary of a run started with RunOptions::summary (so far,
   * until it finished). */
  std::string summary() const {
    af_bytes_t b{nullptr, 0};
    detail::check(af_future_summary_json(ptr(), &b));
    return detail::take(b);
  }
  /* fn runs once when the run finishes: on a libaf thread, or here at once
   * if it already has. It must be quick and must not destroy the Context;
   * what it throws is dropped (nothing may unwind into libaf). */
  void on_done(std::function<void()> fn) {
    af_future_t* f = ptr();  // first: a moved-from Future throws before fn is handed over
    // Deleted by libaf's destroy callback, also when the call fails.
    auto* state = new std::function<void()>(std::move(fn));
    detail::check(af_future_on_done(f, &done, state, &destroy_done));
  }

 private:
  friend class Program;
  explicit Future(af_future_t* f) : h_(f) {}
  static void done(void* ud) noexcept {
    try {
      (*static_cast<std::function<void()>*>(ud))();
    } catch (...) {
    }
  }
  static void destroy_done(void* ud) noexcept { delete static_cast<std::function<void()>*>(ud); }
  af_future_t* ptr() const {
    if (!h_.get()) throw detail::empty_handle("Future");
    return h_.get();
  }
  detail::Unique<af_future_t, af_future_free> h_;
};

/* A compiled IR for the dataflow executor. */
class Program {
 public:
  static Program compile(Context& ctx, const Ir& ir) {
    af_program_t* p = nullptr;
    detail::check(af_compile(ctx.ptr(), ir.ptr(), &p));
    return Program(p);
  }
  /* Loads a program saved with save() (or an IR's graph, compiled here). */
  static Program load(Context& ctx, std::string_view path) {
    af_program_t* p = nullptr;
    detail::check(af_program_load(ctx.ptr(), path.data(), path.size(), &p));
    return Program(p);
  }
  af_program_t* get() const noexcept { return h_.get(); }

  /* Runs and waits (inlined inside a trace; recorded as a promise on a lazy
   * Context). */
  Value call(Context& ctx, const std::vector<Value>& inputs) const {
    auto p = detail::ptrs(inputs);
    af_value_t* out = nullptr;
    detail::check(af_program_call(ctx.ptr(), ptr(), p.data(), p.size(), &out));
    return ctx.adopt(out);
  }
  /* With options: a run that happens now, on a lazy Context too. */
  Value call(Context& ctx, const std::vector<Value>& inputs, const RunOptions& options) const {
    auto p = detail::ptrs(inputs);
    af_context_t* c = ctx.ptr();  // before Native: it hands libaf the callbacks
    af_program_t* self = ptr();
    Native o(options);
    af_bytes_t summary{nullptr, 0};
    if (options.summary_out) o.raw.summary = &summary;
    af_value_t* out = nullptr;
    af_error_t* err = af_program_call_with(c, self, p.data(), p.size(), &o.raw, &out);
    if (options.summary_out)
      *options.summary_out = summary.data ? detail::take(summary) : std::string();
    detail::check(err);
    return Value::own(out);
  }
  /* Starts the run and returns at once (input errors are thrown here). */
  Future call_async(Context& ctx, const std::vector<Value>& inputs) const {
    auto p = detail::ptrs(inputs);
    af_future_t* f = nullptr;
    detail::check(af_program_call_async(ctx.ptr(), ptr(), p.data(), p.size(), &f));
    return Future(f);
  }
  Future call_async(Context& ctx, const std::vector<Value>& inputs,
                    const RunOptions& options) const {
    auto p = detail::ptrs(inputs);
    af_context_t* c = ctx.ptr();  // before Native: it hands libaf the callbacks
    af_program_t* self = ptr();
    Native o(options);
    if (options.summary) o.raw.flags |= AF_RUN_SUMMARY;
    af_future_t* f = nullptr;
    detail::check(af_program_call_async_with(c, self, p.data(), p.size(), &o.raw, &f));
    return Future(f);
  }
  void save(std::string_view path) const { detail::check(af_program_save(ptr(), path.data(), path.size())); }

 private:
  friend class Context;  /* eval with options shares Native */
  explicit Program(af_program_t* p) : h_(p) {}
  af_program_t* ptr() const {
    if (!get()) throw detail::empty_handle("Program");
    return get();
  }
  /* af_run_options_t for one call; libaf owns (and destroys) the progress
   * function from the call on, also when the call fails. So the callers
   * check their handles before making one: nothing may throw between the
   * two. */
  struct Native {
    af_run_options_t raw{};
    explicit Native(const RunOptions& o) {
      // A moved-from token would run the call uncancellable without a word.
      if (o.cancel && !o.cancel->get()) throw detail::empty_handle("CancelToken");
      raw.struct_size = sizeof raw;
      raw.flags = (o.keep_going ? AF_RUN_KEEP_GOING : 0u) | (o.profile ? AF_RUN_PROFILE : 0u) |
                  (o.item_errors ? AF_RUN_ITEM_ERRORS : 0u);
      raw.timeout_ms = o.timeout_ms;
      raw.max_value_bytes = o.max_value_bytes;
      if (!o.profile_path.empty()) {
        raw.profile_path = o.profile_path.data();
        raw.profile_path_len = o.profile_path.size();
      }
      if (!o.journal_path.empty()) {
        raw.journal_path = o.journal_path.data();
        raw.journal_path_len = o.journal_path.size();
      }
      raw.cancel = o.cancel ? o.cancel->get() : nullptr;
      if (o.progress) {
        raw.progress = &progress;
        raw.progress_user_data = new std::function<void(uint64_t, uint64_t)>(o.progress);
        raw.progress_destroy = &destroy_progress;
      }
      if (o.stream) {
        raw.stream = &stream;
        raw.stream_user_data = new StreamFn(o.stream);
        raw.stream_destroy = &destroy_stream;
      }
      if (!o.stream_tag.empty()) {
        raw.stream_tag = o.stream_tag.data();
        raw.stream_tag_len = o.stream_tag.size();
      }
    }
    using StreamFn = std::function<void(uint32_t, uint64_t, std::optional<std::string_view>)>;
    static void stream(void* ud, uint32_t eqn, uint64_t item, const char* text, size_t len) noexcept {
      try {
        (*static_cast<StreamFn*>(ud))(eqn, item, text ? std::optional<std::string_view>(std::string_view(text, len))
                                                       : std::nullopt);
      } catch (...) {
        // Like progress: nothing may unwind into libaf.
      }
    }
    static void destroy_stream(void* ud) noexcept { delete static_cast<StreamFn*>(ud); }
    static void progress(void* ud, uint64_t done, uint64_t total) noexcept {
      try {
        (*static_cast<std::function<void(uint64_t, uint64_t)>*>(ud))(done, total);
      } catch (...) {
        // Progress is advisory: nothing may unwind into libaf.
      }
    }
    static void destroy_progress(void* ud) noexcept { delete static_cast<std::function<void(uint64_t, uint64_t)>*>(ud); }
  };
  detail::Shared<af_program_t, af_program_clone, af_program_free> h_;
};

/* Declared in context.hpp; defined here, where Program::Native is complete. */
inline void Context::eval(const std::vector<Value>& values, const RunOptions& options) {
  std::vector<af_value_t*> p = handles(values);
  af_context_t* c = ptr();  // before Native: it hands libaf the callbacks
  Program::Native o(options);
  af_bytes_t summary{nullptr, 0};
  if (options.summary_out) o.raw.summary = &summary;
  af_error_t* err = af_eval_with(c, p.data(), p.size(), &o.raw);
  if (options.summary_out) *options.summary_out = summary.data ? detail::take(summary) : std::string();
  detail::check(err);
}

}  // namespace af

#endif /* AF_HPP_PROGRAM_HPP */
