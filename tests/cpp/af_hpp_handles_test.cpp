// Handle safety of the C++ wrapper (af/af.hpp), the rule its header states:
// copies of a Value, Ir, Program or Provider are independent references, so
// many threads may copy, use and destroy copies of the same handle at once
// (the last one to go frees it, whichever thread that is); and every handle
// class, once moved from, raises af::Error (INVALID_ARGUMENT, "... moved
// from") when used instead of touching a null or freed handle. af.hpp has no
// close(): what could race a close is a copy's destruction, exercised here.
// Built as C++17 with -Wall -Wextra -pedantic -Werror like af_hpp_test, and
// run under ThreadSanitizer by tools/test.sh.
#include <af/af.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

constexpr int kThreads = 8;
// Enough rounds for copies to be made on one thread and dropped on another
// many times over; kept small because the suite also runs under TSan.
constexpr int kRounds = 200;

// Runs body(thread index) on kThreads threads started together.
void on_threads(const std::function<void(int)>& body) {
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      ++ready;
      while (ready.load() < kThreads) std::this_thread::yield();
      body(t);
    });
  for (std::thread& th : threads) th.join();
}

// A place where threads swap copies, so a copy made on one thread is used
// and destroyed on another.
template <class H>
class Exchange {
 public:
  explicit Exchange(const H& seed) : slots_(kThreads, seed) {}
  H swap(size_t i, H mine) {
    std::lock_guard<std::mutex> lock(mu_);
    std::swap(slots_[i % slots_.size()], mine);
    return mine;
  }
  void clear() {
    std::lock_guard<std::mutex> lock(mu_);
    slots_.clear();
  }

 private:
  std::mutex mu_;
  std::vector<H> slots_;
};

// "Hello, <x>!" as an IR.
af::Ir hello_ir(af::Context& ctx) {
  return ctx.trace([](af::Context& c, const std::vector<af::Value>& in) { return c.format("Hello, {}!", {in[0]}); },
                   {ctx.str("x")});
}

// The LM reply to "Q:<x>" from model m.
af::Ir ask_ir(af::Context& ctx) {
  return ctx.trace(
      [](af::Context& c, const std::vector<af::Value>& in) {
        af::Value msg = c.dict({{"role", c.str("user")}, {"content", c.format("Q:{}", {in[0]})}});
        return c.lm_call(c.list({msg}), c.str("m"));
      },
      {ctx.str("q")});
}

// Expects f to throw af::Error with INVALID_ARGUMENT naming a moved-from handle.
template <class F>
void expect_moved_from(F&& f, const std::string& what) {
  try {
    f();
    ADD_FAILURE() << what << ": no error";
  } catch (const af::Error& e) {
    EXPECT_EQ(e.code(), af::Code::InvalidArgument) << what << ": " << e.what();
    EXPECT_NE(std::string(e.what()).find("moved from"), std::string::npos) << what << ": " << e.what();
  }
}

TEST(AfHppHandles, ValueCopiesAcrossThreads) {
  std::optional<af::Value> original = af::json(R"({"a":[1,2,3],"b":"text","c":{"d":1.5}})");
  const std::string expected = original->json();
  Exchange<af::Value> exchange(*original);
  std::vector<af::Value> seeds(kThreads, *original);
  original.reset();  // from here the copies of the workers and of the exchange keep it alive
  std::atomic<int> wrong{0}, rounds{0};
  on_threads([&](int t) {
    af::Value mine = std::move(seeds[t]);
    for (int i = 0; i < kRounds; ++i) {
      af::Value copy = mine;  // a new reference
      if (copy.json() != expected || copy.size() != 3 || copy["b"].str() != "text") ++wrong;
      int64_t sum = 0;
      for (af::Value item : copy["a"].items()) sum += item.as_int();
      if (sum != 6 || copy["c"]["d"].as_float() != 1.5) ++wrong;
      for (const auto& [key, value] : copy.entries())
        if (key.empty() || !value) ++wrong;
      af::Value theirs = exchange.swap(static_cast<size_t>(t + i), std::move(copy));  // made elsewhere
      if (theirs.kind() != af::Kind::Dict) ++wrong;
      af::Value again = theirs;
      theirs = af::Value();  // dropped here, maybe the last reference
      if (again["a"][2].as_int() != 3) ++wrong;
      ++rounds;
    }
  });
  exchange.clear();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(rounds.load(), kThreads * kRounds);
}

TEST(AfHppHandles, IrCopiesAcrossThreads) {
  af::Context ctx;
  std::optional<af::Ir> original = hello_ir(ctx);
  const std::string text = original->text(), json = original->json();
  const uint64_t hash = original->hash();
  Exchange<af::Ir> exchange(*original);
  std::vector<af::Ir> seeds(kThreads, *original);
  original.reset();
  std::atomic<int> wrong{0}, rounds{0};
  on_threads([&](int t) {
    af::Ir mine = std::move(seeds[t]);
    for (int i = 0; i < kRounds; ++i) {
      af::Ir copy = mine;
      if (copy.text() != text || copy.json() != json || copy.hash() != hash) ++wrong;
      if (copy.eqn_count() != 1 || copy.eqn_prim(0).empty() || copy.input_count() != 1) ++wrong;
      af::Ir theirs = exchange.swap(static_cast<size_t>(t * 3 + i), std::move(copy));
      if (!(theirs == mine)) ++wrong;
      theirs = af::Ir();
      ++rounds;
    }
  });
  exchange.clear();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(rounds.load(), kThreads * kRounds);
}

TEST(AfHppHandles, ProgramCopiesCalledAcrossThreads) {
  af::Context ctx;
  std::optional<af::Program> original = af::Program::compile(ctx, hello_ir(ctx));
  Exchange<af::Program> exchange(*original);
  std::vector<af::Program> seeds(kThreads, *original);
  original.reset();
  std::atomic<int> wrong{0}, rounds{0};
  on_threads([&](int t) {
    af::Program mine = std::move(seeds[t]);
    for (int i = 0; i < kRounds; ++i) {
      af::Program copy = mine;
      std::string who = std::to_string(t) + "." + std::to_string(i);
      if (copy.call(ctx, {ctx.str(who)}).str() != "Hello, " + who + "!") ++wrong;
      // A run in flight keeps what it runs: the copy that started it goes
      // first, and every other Future is destroyed unwaited (cancelling it).
      af::Future run = copy.call_async(ctx, {ctx.str(who)});
      { af::Program theirs = exchange.swap(static_cast<size_t>(t + i), std::move(copy)); }  // dropped here
      if (i % 2 == 0 && run.wait().str() != "Hello, " + who + "!") ++wrong;
      ++rounds;
    }
  });
  exchange.clear();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(rounds.load(), kThreads * kRounds);
}

TEST(AfHppHandles, ProviderCopiesRoutedAndDroppedAcrossThreads) {
  std::optional<af::Provider> original = af::Provider::echo();
  Exchange<af::Provider> exchange(*original);
  std::vector<af::Provider> seeds(kThreads, *original);
  original.reset();
  std::atomic<int> wrong{0}, rounds{0};
  on_threads([&](int t) {
    af::Provider mine = std::move(seeds[t]);
    for (int i = 0; i < kRounds / 4; ++i) {
      // A context of this thread's own, routed through a copy; the copy and
      // then the context go while other threads run through the provider.
      af::Context ctx;
      {
        af::Provider copy = mine;
        ctx.route("m", copy);
        if (copy.stats().empty()) ++wrong;
        af::Provider theirs = exchange.swap(static_cast<size_t>(t + i), std::move(copy));
        if (theirs.stats().empty()) ++wrong;
      }
      std::string who = std::to_string(t) + "." + std::to_string(i);
      af::Program ask = af::Program::compile(ctx, ask_ir(ctx));
      std::string reply = ask.call(ctx, {ctx.str(who)}).str();
      if (reply.find("Q:" + who) == std::string::npos) ++wrong;
      ++rounds;
    }
  });
  exchange.clear();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(rounds.load(), kThreads * (kRounds / 4));
}

TEST(AfHppHandles, CopiesOfOneHandleOutliveTheirSource) {
  // The same, with one thread per copy and the original destroyed while they run.
  af::Context ctx;
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0}, rounds{0};
  {
    af::Value v = af::list({af::str("a"), af::integer(2)});
    af::Ir ir = hello_ir(ctx);
    af::Program prog = af::Program::compile(ctx, ir);
    af::Provider provider = af::Provider::echo();
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&ctx, &wrong, &rounds, v, ir, prog, provider]() mutable {
        for (int i = 0; i < kRounds; ++i) {
          if (v.json() != R"(["a",2])" || ir.text().empty() || provider.stats().empty()) ++wrong;
          if (prog.call(ctx, {v[0]}).str() != "Hello, a!") ++wrong;
          ++rounds;
        }
        // Dropped here, maybe the last references (Program and Provider
        // have no empty constructor: moving out empties them).
        v = af::Value();
        ir = af::Ir();
        { af::Program gone = std::move(prog); }
        { af::Provider gone = std::move(provider); }
      });
  }  // the originals go here, while the threads still run
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(rounds.load(), kThreads * kRounds);
}

// Every handle class, once moved from: using it throws the clear error, and
// it can be assigned a new handle and used again.
TEST(AfHppHandles, MovedFromValue) {
  af::Value v = af::str("x");
  af::Value taken = std::move(v);
  expect_moved_from([&] { (void)v.json(); }, "Value::json");
  expect_moved_from([&] { (void)v.str(); }, "Value::str");
  expect_moved_from([&] { (void)v.size(); }, "Value::size");
  expect_moved_from([&] { (void)v[0]; }, "Value::operator[]");
  expect_moved_from([&] { (void)af::list({v}); }, "af::list of a moved-from Value");
  EXPECT_FALSE(v);
  EXPECT_EQ(v.kind(), af::Kind::Invalid);  // noexcept: a kind, not an error
  EXPECT_FALSE(v.ready());
  v = taken;
  EXPECT_EQ(v.str(), "x");
}

TEST(AfHppHandles, MovedFromIr) {
  af::Context ctx;
  af::Ir ir = hello_ir(ctx);
  af::Ir taken = std::move(ir);
  expect_moved_from([&] { (void)ir.text(); }, "Ir::text");
  expect_moved_from([&] { (void)ir.eqn_count(); }, "Ir::eqn_count");
  expect_moved_from([&] { (void)(ir == taken); }, "Ir::operator==");
  expect_moved_from([&] { (void)ctx.call(ir, {ctx.str("x")}); }, "Context::call of a moved-from Ir");
  expect_moved_from([&] { (void)af::Program::compile(ctx, ir); }, "Program::compile of a moved-from Ir");
  ir = taken;
  EXPECT_EQ(ir.text(), taken.text());
}

TEST(AfHppHandles, MovedFromProgram) {
  af::Context ctx;
  af::Program prog = af::Program::compile(ctx, hello_ir(ctx));
  af::Program taken = std::move(prog);
  expect_moved_from([&] { (void)prog.call(ctx, {ctx.str("x")}); }, "Program::call");
  expect_moved_from([&] { (void)prog.call(ctx, {ctx.str("x")}, af::RunOptions{}); }, "Program::call with options");
  expect_moved_from([&] { (void)prog.call_async(ctx, {ctx.str("x")}); }, "Program::call_async");
  expect_moved_from([&] { prog.save("never_written.afg"); }, "Program::save");
  prog = taken;
  EXPECT_EQ(prog.call(ctx, {ctx.str("x")}).str(), "Hello, x!");
}

TEST(AfHppHandles, MovedFromProvider) {
  af::Provider p = af::Provider::echo();
  af::Provider taken = std::move(p);
  expect_moved_from([&] { (void)p.stats(); }, "Provider::stats");
  expect_moved_from([&] { p.set_max_in_flight(2); }, "Provider::set_max_in_flight");
  expect_moved_from([&] { p.set_options(R"({"schema_retries":1})"); }, "Provider::set_options");
  p = taken;
  EXPECT_FALSE(p.stats().empty());
}

TEST(AfHppHandles, MovedFromContext) {
  af::Context ctx;
  af::Context taken = std::move(ctx);
  expect_moved_from([&] { (void)ctx.format("{}", {af::str("x")}); }, "Context::format");
  expect_moved_from([&] { (void)ctx.stats(); }, "Context::stats");
  expect_moved_from([&] { (void)hello_ir(ctx); }, "Context::trace");
  expect_moved_from([&] { ctx.route("*", af::Provider::echo()); }, "Context::route");
  expect_moved_from([&] { (void)af::Program::compile(ctx, hello_ir(taken)); }, "Program::compile on it");
  ctx = std::move(taken);
  EXPECT_EQ(ctx.concat({ctx.str("a"), ctx.str("b")}).str(), "ab");
}

TEST(AfHppHandles, MovedFromFuture) {
  af::Context ctx;
  af::Program prog = af::Program::compile(ctx, hello_ir(ctx));
  af::Future run = prog.call_async(ctx, {ctx.str("f")});
  af::Future taken = std::move(run);
  expect_moved_from([&] { (void)run.wait(); }, "Future::wait");
  expect_moved_from([&] { (void)run.ready(); }, "Future::ready");
  expect_moved_from([&] { (void)run.summary(); }, "Future::summary");
  expect_moved_from([&] { run.on_done([] {}); }, "Future::on_done");
  run.cancel();  // noexcept: nothing to cancel
  EXPECT_EQ(taken.wait().str(), "Hello, f!");
  run = std::move(taken);
  EXPECT_EQ(run.wait().str(), "Hello, f!");
}

TEST(AfHppHandles, MovedFromWalk) {
  af::Context ctx;
  af::Ir ir = hello_ir(ctx);
  af::Walk walk(ctx, ir, {ctx.str("w")});
  af::Walk taken = std::move(walk);
  expect_moved_from([&] { (void)walk.next(); }, "Walk::next");
  expect_moved_from([&] { walk.eval(); }, "Walk::eval");
  expect_moved_from([&] { (void)walk.outputs(); }, "Walk::outputs");
  walk = std::move(taken);
  while (walk.next()) walk.eval();
  EXPECT_EQ(walk.outputs().str(), "Hello, w!");
}

TEST(AfHppHandles, MovedFromCancelToken) {
  af::Context ctx;
  af::Program prog = af::Program::compile(ctx, hello_ir(ctx));
  af::CancelToken token;
  af::CancelToken taken = std::move(token);
  token.trigger();  // noexcept: a no-op
  EXPECT_FALSE(token.triggered());
  expect_moved_from([&] { (void)ctx.cancel_scope(token); }, "Context::cancel_scope");
  af::RunOptions o;
  o.cancel = &token;
  expect_moved_from([&] { (void)prog.call(ctx, {ctx.str("c")}, o); }, "RunOptions::cancel");
  expect_moved_from([&] { (void)prog.call_async(ctx, {ctx.str("c")}, o); }, "RunOptions::cancel, async");
  token = std::move(taken);
  EXPECT_EQ(prog.call(ctx, {ctx.str("c")}, o).str(), "Hello, c!");
}

TEST(AfHppHandles, MovedFromLmRequest) {
  std::atomic<int> checked{0};
  af::Provider host = af::Provider::host([&](af::LmRequest& req) {
    af::LmRequest mine = std::move(req);
    expect_moved_from([&] { (void)req.json(); }, "LmRequest::json");
    expect_moved_from([&] { req.complete("never"); }, "LmRequest::complete");
    expect_moved_from([&] { req.fail(af::Code::Provider, "never"); }, "LmRequest::fail");
    req.fail_with_current_exception();  // noexcept: a no-op
    ++checked;
    mine.complete("from the host");
  });
  af::Context ctx;
  ctx.route("m", host);
  EXPECT_EQ(af::Program::compile(ctx, ask_ir(ctx)).call(ctx, {ctx.str("q")}).str(), "from the host");
  EXPECT_EQ(checked.load(), 1);
}

TEST(AfHppHandles, MovedFromHostRequest) {
  af::Context ctx;
  std::atomic<int> checked{0};
  ctx.register_function_async("later", ctx.str("str"), [&](const std::vector<af::Value>& args, af::HostRequest& req) {
    af::HostRequest mine = std::move(req);
    expect_moved_from([&] { req.complete(af::str("never")); }, "HostRequest::complete");
    expect_moved_from([&] { req.fail(af::Code::Callback, "never"); }, "HostRequest::fail");
    EXPECT_FALSE(req.cancelled());  // noexcept: false
    req.fail_with_current_exception();  // noexcept: a no-op
    ++checked;
    mine.complete(af::str("got " + args.at(0).str()));
  });
  EXPECT_EQ(ctx.host_call("later", {ctx.str("h")}).str(), "got h");
  EXPECT_EQ(checked.load(), 1);
}

}  // namespace
