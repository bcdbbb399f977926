// The C++ wrapper (af/af.hpp) end to end, written as the cookbook a C++ user
// would follow: trace with a switch on a match result, a host tool, batch,
// compile, an async run with cancellation, save, load, pullback; plus what
// the wrapper itself promises (RAII moves, iteration, errors with code,
// message, cause and the callback's own exception), walks, tag, fold and
// cancel scopes, graph JSON, and that every af.h function has its wrapper.
// Compiled as C++17 with -Wall -Wextra -pedantic -Werror. Prints one line
// per check; exits 1 on the first failure.
#include <af/af.hpp>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

int checks = 0;

void expect(bool ok, const std::string& what) {
  ++checks;
  if (!ok) {
    std::fprintf(stderr, "FAIL: %s\n", what.c_str());
    std::exit(1);
  }
  std::printf("ok   %s\n", what.c_str());
}

template <class F>
af::Error expect_error(af::Code code, F&& f, const std::string& what) {
  try {
    f();
  } catch (const af::Error& e) {
    expect(e.code() == code, what + " (" + af::code_name(e.code()) + ": " + e.what() + ")");
    return e;
  }
  expect(false, what + ": no error");
  return af::Error(af::Code::Internal, "unreachable");
}

// reply(question) = switch(match(question, "ping"), {"true": "pong", "false": upper(question)})
af::Ir trace_reply(af::Context& ctx) {
  af::Ir pong = ctx.trace([](af::Context& c, const std::vector<af::Value>&) { return c.str("pong"); },
                          {ctx.str("q")});
  af::Ir other = ctx.trace(
      [](af::Context& c, const std::vector<af::Value>& in) { return c.host_call("upper", {in[0]}); },
      {ctx.str("q")});
  return ctx.trace(
      [&](af::Context& c, const std::vector<af::Value>& in) {
        af::Value is_ping = c.match(in[0], c.str("ping"));
        af::Value key = c.format("{}", {is_ping});  // "true" / "false"
        return c.switch_(key, {{"true", pong}, {"false", other}}, {in[0]});
      },
      {ctx.str("q")});
}

// ask(q) = lm_call([{"role": "user", "content": format("Q:{}", q)}], "m")
af::Ir trace_ask(af::Context& ctx) {
  return ctx.trace(
      [](af::Context& c, const std::vector<af::Value>& in) {
        af::Value msg = c.dict({{"role", c.str("user")}, {"content", c.format("Q:{}", {in[0]})}});
        return c.lm_call(c.list({msg}), c.str("m"));
      },
      {ctx.str("q")});
}

struct ToolFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// True if `name` occurs in `text` as a whole identifier.
bool names_identifier(const std::string& text, const std::string& name) {
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t at = text.find(name); at != std::string::npos; at = text.find(name, at + 1)) {
    bool starts = at == 0 || !ident(text[at - 1]);
    bool ends = at + name.size() == text.size() || !ident(text[at + name.size()]);
    if (starts && ends) return true;
  }
  return false;
}

}  // namespace

int main() {
  af::Context ctx;
  ctx.register_function("upper", ctx.str("str"), [&](const std::vector<af::Value>& args) {
    std::string s = args.at(0).str();
    for (char& ch : s) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    return ctx.str(s);
  });

  // Trace with a switch on a match result, calling a host tool in one branch.
  af::Ir reply = trace_reply(ctx);
  af::Program reply_prog = af::Program::compile(ctx, reply);
  expect(reply_prog.call(ctx, {ctx.str("ping")}).str() == "pong", "switch takes the match branch");
  expect(reply_prog.call(ctx, {ctx.str("hi")}).str() == "HI", "switch takes the host tool branch");

  // Batch: the same program over a list of questions.
  af::Ir batched = ctx.batch(reply);
  af::Value outs = af::Program::compile(ctx, batched).call(ctx, {ctx.json(R"(["ping","ab"])")});
  expect(outs.json() == R"(["pong","AB"])", "batch runs every item: " + outs.json());
  std::vector<std::string> seen;
  for (af::Value item : outs.items()) seen.push_back(item.str());
  expect(seen == std::vector<std::string>{"pong", "AB"}, "iterating a list");

  // Save, then load (as another process would) and run again.
  std::string path = "af_hpp_test_reply.afg";
  reply_prog.save(path);
  af::Context other;
  expect_error(af::Code::NotFound, [&] { af::Program::load(other, path).call(other, {ctx.str("x")}); },
               "a loaded graph needs its host tool registered");
  other.register_function("upper", other.str("str"), [&](const std::vector<af::Value>& args) {
    return other.str("U:" + args.at(0).str());
  });
  af::Program loaded = af::Program::load(other, path);
  expect(loaded.call(other, {other.str("x")}).str() == "U:x", "the loaded program runs with re-registered tools");
  expect(other.load(path) == reply, "the saved file loads as the same IR");
  std::remove(path.c_str());

  // Providers from a spec by type name.
  {
    af::Context c2;
    c2.route("m", af::Provider::from_spec(R"({"type":"echo"})"));
    expect(c2.lm_call(c2.json(R"([{"role":"user","content":"hi"}])"), c2.str("m")).str() == "m|hi", "a spec's echo");
    expect_error(af::Code::InvalidArgument, [] { af::Provider::from_spec(R"({"type":"nope"})"); }, "an unknown type");
  }

  // Scan: a rolling summary threaded through chunks, eagerly and traced.
  {
    af::Ir step = ctx.trace(
        [](af::Context& c, const std::vector<af::Value>& in) {
          af::Value next = c.format("{}+{}", {in[0], in[1]});
          return c.list({next, c.format("<{}>", {in[1]})});
        },
        {ctx.str("c"), ctx.str("x")});
    af::Value r = ctx.scan(step, ctx.str("s"), ctx.json(R"(["a","b"])"));
    expect(r.json() == R"(["s+a+b",["<a>","<b>"]])", "scan threads the carry: " + r.json());
    r = ctx.scan(step, ctx.str("s"), ctx.json(R"(["a","b"])"), true);
    expect(r.json() == R"(["s+b+a",["<a>","<b>"]])", "a reverse scan: " + r.json());
    expect_error(af::Code::InvalidArgument, [&] { ctx.scan(step, ctx.str("s"), ctx.str("not a list")); },
                 "xs must hold lists");
  }

  // Effects: an unused call of an effectful function (the default) runs, an
  // unused call of a pure one is dropped; equal pure calls merge.
  {
    int sent = 0, looked = 0;
    ctx.register_function("send", ctx.str("str"), [&](const std::vector<af::Value>& args) {
      ++sent;
      return args.at(0);
    });
    ctx.register_function(
        "lookup", ctx.str("str"),
        [&](const std::vector<af::Value>& args) {
          ++looked;
          return args.at(0);
        },
        af::Context::FunctionOptions{true, false});
    af::Ir unused = ctx.trace(
        [](af::Context& c, const std::vector<af::Value>& in) {
          c.host_call("send", {in[0]});
          c.host_call("lookup", {in[0]});
          return c.concat({c.host_call("lookup", {in[0]}), c.host_call("lookup", {in[0]})});
        },
        {ctx.str("q")});
    expect(af::Program::compile(ctx, unused).call(ctx, {ctx.str("a")}).str() == "aa", "pure calls answer");
    expect(sent == 1 && looked == 1, "the effectful call ran, the pure ones merged and the unused one was dropped: " +
                                         std::to_string(sent) + " " + std::to_string(looked));
    ctx.register_function_async(
        "lookup_later", ctx.str("str"),
        [](const std::vector<af::Value>& args, af::HostRequest& req) { req.complete(args.at(0)); }, af::Context::FunctionOptions{true, false});
    expect(ctx.host_call("lookup_later", {ctx.str("z")}).str() == "z", "an async function registered with options");
    expect_error(af::Code::InvalidArgument,
                 [&] { ctx.register_function_async("no", ctx.str("str"), [](const std::vector<af::Value>&, af::HostRequest&) {},
                                                   af::Context::FunctionOptions{false, true}); },
                 "an async function cannot block");
  }

  // Pullback: feedback flows to the inputs of a format.
  af::Ir fmt = ctx.trace(
      [](af::Context& c, const std::vector<af::Value>& in) { return c.format("<{}>", {in[0]}); }, {ctx.str("x")});
  af::Value pb = ctx.call(ctx.pullback(fmt), {ctx.json(R"(["p"])"), ctx.str("make it shorter")});
  expect(pb[0].str() == "<p>", "pullback returns the forward output");
  expect(pb[1].size() == 1 && pb[1][0].kind() == af::Kind::Str,
         "pullback's text feedback reaches the input: " + pb.json());

  // A traced list of any length calls a batched IR once and runs on any length.
  af::Ir triage =
      ctx.trace([](af::Context& c,
                   const std::vector<af::Value>& in) { return c.format("Triage: {}", {in[0]}); },
                {ctx.str("t")});
  af::Ir each = ctx.batch(triage);
  af::Ir all = ctx.trace_with(
      [&](af::Context& c, const std::vector<af::Value>& in) { return c.call(each, in); },
      {ctx.json(R"(["an example"])")}, ctx.json("[true]"));
  expect(all == each, "the traced program is the batched IR");
  expect(ctx.call(all, {ctx.json(R"(["a","b","c"])")}).json() ==
             R"(["Triage: a","Triage: b","Triage: c"])",
         "the traced list runs on three items");
  expect(ctx.call(all, {ctx.json(R"(["a"])")}).json() == R"(["Triage: a"])", "and on one");
  af::Error bad = expect_error(
      af::Code::InvalidArgument, [&] { (void)ctx.call(all, {ctx.json(R"(["a",2])")}); },
      "an item of another kind");
  expect(std::string(bad.what()).find("input[0][1]") != std::string::npos,
         "the error names the item's path");

  // Inspection: an equation as JSON, the slice of one output, the dry-run cost.
  af::Ir pair = ctx.trace(
      [](af::Context& c, const std::vector<af::Value>& in) {
        af::Value a = c.concat({in[0], in[0]});
        return c.dict({{"a", a}, {"b", c.concat({a, in[1]})}});
      },
      {ctx.str("x"), ctx.str("y")});
  expect(pair.eqn_json(1).find("\"deps\":[0]") != std::string::npos, "eqn 1 reads eqn 0: " + pair.eqn_json(1));
  expect(pair.var_json(0).find("\"consumers\":[0]") != std::string::npos, "input 0 feeds eqn 0");
  expect(pair.related_json(0, AF_IR_DESCENDANTS) == R"({"eqns":[1]})", "descendants of eqn 0");
  expect(pair.json().find("\"topological_order\":[0,1]") != std::string::npos, "the topological order");
  af::Ir only_a = pair.slice({"a"}, {"0"});
  expect(only_a.eqn_count() == 1 && ctx.call(only_a, {ctx.str("p")}).json() == R"(["pp"])",
         "the slice of output a runs on input 0 alone");
  expect_error(af::Code::InvalidArgument, [&] { (void)pair.slice({"b"}, {"0"}); }, "b needs input 1");
  expect(pair.slice({"b"}).eqn_count() == 2, "a slice from all inputs");
  expect(pair.cost_json(2).find("\"calls\":0") != std::string::npos, "no LM calls: " + pair.cost_json(2));
  expect_error(af::Code::NotFound, [&] { (void)pair.sub(0, "body"); }, "concat has no sub-IR");
  // A deep query bounded in bytes: what reads reply's match (eqn 0), the
  // switch's branches included. The limit counts the answer itself, so
  // exactly its length passes.
  {
    const uint32_t down = AF_IR_DESCENDANTS | AF_IR_DEEP;
    std::string deep = reply.related_json(0, down);
    expect(deep.find("\"nested\":[\"") != std::string::npos, "a deep query lists the branches' equations: " + deep);
    expect(reply.related_json(0, down, deep.size()) == deep, "a limit of exactly the answer's length returns it");
    expect(reply.related_json(0, down, 0) == deep, "a limit of 0 is the default");
    af::Error over = expect_error(
        af::Code::InvalidArgument, [&] { (void)reply.related_json(0, down, 1); }, "a deep query over max_bytes");
    expect(over.message().find("over the limit of 1 ") != std::string::npos, "it names the limit: " + over.message());
    expect_error(
        af::Code::InvalidArgument, [&] { (void)reply.related_json(0, down, deep.size() - 1); },
        "one byte less is refused");
  }

  // Async run with cancellation, on a host provider that parks the request.
  std::atomic<bool> submitted{false};
  std::vector<af::LmRequest> parked;
  std::mutex parked_mu;
  af::Provider host = af::Provider::host([&](af::LmRequest& req) {
    std::lock_guard<std::mutex> lock(parked_mu);
    parked.push_back(std::move(req));
    submitted = true;
  });
  ctx.route("*", host);
  af::Program ask = af::Program::compile(ctx, trace_ask(ctx));
  af::Future run = ask.call_async(ctx, {ctx.str("q")});
  while (!submitted) std::this_thread::yield();
  expect(!run.ready(), "the run waits for the host provider");
  run.cancel();
  expect_error(af::Code::Cancelled, [&] { run.wait(); }, "a cancelled run fails with CANCELLED");
  {
    std::lock_guard<std::mutex> lock(parked_mu);
    expect(parked.at(0).cancelled(), "the parked request sees the cancellation");
    parked.at(0).complete("late");  // finishing it is still required
  }
  // A cancel token stops a blocking call.
  af::Provider slow = af::Provider::echo(R"({"latency_ms": 5000})");
  ctx.route("*", slow);
  af::CancelToken token;
  std::thread trigger([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    token.trigger();
  });
  af::RunOptions opts;
  opts.cancel = &token;
  expect_error(af::Code::Cancelled, [&] { ask.call(ctx, {ctx.str("q")}, opts); }, "a cancel token stops a call");
  trigger.join();
  // A cancel scope stops what this thread runs on the context: an eager LM
  // call waiting for a 5 s reply ends when another thread triggers the token.
  {
    af::Context scoped;
    scoped.route("*", slow);
    // 100 ms: long enough that a call still in a fired scope would be cancelled.
    af::Provider quick = af::Provider::echo(R"({"latency_ms": 100})");
    scoped.route("fast", quick);
    af::Value msgs = scoped.json(R"([{"role":"user","content":"hi"}])");
    af::CancelToken stop;
    {
      auto scope = scoped.cancel_scope(stop);
      std::thread stopper([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        stop.trigger();
      });
      auto t0 = std::chrono::steady_clock::now();
      expect_error(af::Code::Cancelled, [&] { scoped.lm_call(msgs, scoped.str("m")); },
                   "a cancel scope stops an eager lm_call");
      auto waited = std::chrono::steady_clock::now() - t0;
      stopper.join();
      expect(waited < std::chrono::seconds(2), "within 2 s of a 5 s reply");
    }
    expect(scoped.lm_call(msgs, scoped.str("fast")).str() == "fast|hi",
           "after the scope, calls run");
    // Scopes nest without shielding: the token of every open scope stops
    // what runs inside it. The outer token, triggered while a call in the
    // inner scope waits for a 5 s reply, ends that call.
    {
      af::CancelToken outer, inner;
      auto outer_scope = scoped.cancel_scope(outer);
      {
        auto inner_scope = scoped.cancel_scope(inner);
        expect(scoped.lm_call(msgs, scoped.str("fast")).str() == "fast|hi",
               "nested scopes, neither token fired: calls run");
        std::thread stopper([&] {
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
          outer.trigger();
        });
        auto t0 = std::chrono::steady_clock::now();
        expect_error(af::Code::Cancelled, [&] { scoped.lm_call(msgs, scoped.str("m")); },
                     "the outer token stops a call inside the inner scope");
        auto waited = std::chrono::steady_clock::now() - t0;
        stopper.join();
        expect(waited < std::chrono::seconds(2), "an inner scope does not shield (within 2 s of a 5 s reply)");
        // Another thread's calls on the context are not in this thread's scopes.
        std::string other;
        std::thread([&] { other = scoped.lm_call(msgs, scoped.str("fast")).str(); }).join();
        expect(other == "fast|hi", "a scope belongs to its thread");
      }
      expect_error(af::Code::Cancelled, [&] { scoped.lm_call(msgs, scoped.str("fast")); },
                   "back in the outer scope, its fired token ends the call");
    }
    expect(scoped.lm_call(msgs, scoped.str("fast")).str() == "fast|hi",
           "after both scopes, calls run");
    // A fired token ends nothing outside its own scope: a fired inner token
    // leaves the (unfired) outer scope's calls running.
    {
      af::CancelToken outer, inner;
      inner.trigger();
      auto outer_scope = scoped.cancel_scope(outer);
      {
        auto inner_scope = scoped.cancel_scope(inner);
        expect_error(af::Code::Cancelled, [&] { scoped.lm_call(msgs, scoped.str("fast")); },
                     "a fired inner token ends the inner scope's call");
      }
      expect(scoped.lm_call(msgs, scoped.str("fast")).str() == "fast|hi",
             "a fired token ends nothing outside its own scope");
    }
    // A moved scope pops once.
    {
      auto first = scoped.cancel_scope(stop);
      auto moved = std::move(first);
      expect_error(af::Code::Cancelled, [&] { scoped.lm_call(msgs, scoped.str("fast")); },
                   "a moved scope still applies");
    }
    expect(scoped.lm_call(msgs, scoped.str("fast")).str() == "fast|hi", "and pops once");
  }
  af::Provider echo = af::Provider::echo();
  ctx.route("*", echo);
  expect(ask.call_async(ctx, {ctx.str("hi")}).wait().str() == "m|Q:hi", "an async run completes");

  // A run's byte budget: 1000 copies of a 5-byte input (5000 bytes) is over
  // a max_value_bytes of 100, and fine with the default (1 GiB).
  {
    std::string tmpl;
    for (int k = 0; k < 1000; ++k) tmpl += "{0}";
    af::Program many = af::Program::compile(
        ctx, ctx.trace([&](af::Context& c, const std::vector<af::Value>& in) { return c.format(tmpl, {in[0]}); },
                       {ctx.str("x")}));
    af::RunOptions budget;
    budget.max_value_bytes = 100;
    af::Error oom = expect_error(af::Code::OutOfMemory, [&] { many.call(ctx, {ctx.str("hello")}, budget); },
                                 "a value over max_value_bytes");
    expect(oom.message().find("max_value_bytes") != std::string::npos &&
               oom.message().find("format") != std::string::npos,
           "it names the option and the primitive: " + oom.message());
    expect_error(af::Code::OutOfMemory, [&] { many.call_async(ctx, {ctx.str("hello")}, budget).wait(); },
                 "and in an async run");
    std::string want;
    for (int k = 0; k < 1000; ++k) want += "hello";
    expect(many.call(ctx, {ctx.str("hello")}, af::RunOptions()).str() == want, "the default budget lets it through");
    budget.max_value_bytes = want.size();
    expect(many.call(ctx, {ctx.str("hello")}, budget).str() == want, "a budget of exactly its size too");
  }

  // Name paths, and run summaries (echo counts words: "hi there" in, "m|hi
  // there" out, 2 tokens each).
  af::Ir named = ctx.trace(
      [](af::Context& c, const std::vector<af::Value>& in) {
        c.name_push("triage");
        c.name_push("ask");
        af::Value a =
            c.lm_call(c.list({c.dict({{"role", c.str("user")}, {"content", in[0]}})}), c.str("m"));
        c.name_pop();
        c.name_pop();
        return a;
      },
      {ctx.str("q")});
  expect(named.text().find("@name=\"triage/ask\"") != std::string::npos,
         "the text shows the name path");
  expect(named.eqn_json(0).find(R"("name_path":["triage","ask"])") != std::string::npos,
         named.eqn_json(0));
  expect_error(
      af::Code::InvalidArgument, [&] { ctx.name_push("x"); }, "a name scope outside a trace");
  af::Program named_prog = af::Program::compile(ctx, named);
  std::string summary;
  af::RunOptions with_summary;
  with_summary.summary_out = &summary;
  named_prog.call(ctx, {ctx.str("hi there")}, with_summary);
  expect(
      summary.find(
          R"("total":{"calls":1,"failed":0,"prompt_tokens":2,"completion_tokens":2,"retries":0)") !=
          std::string::npos,
      "the summary of a call: " + summary);
  af::RunOptions async_summary;
  async_summary.summary = true;
  af::Future summarized = named_prog.call_async(ctx, {ctx.str("hi there")}, async_summary);
  summarized.wait();
  expect(summarized.summary().find(R"("models":{"m":{"calls":1,)") != std::string::npos,
         "the summary of an async run: " + summarized.summary());
  expect_error(
      af::Code::InvalidArgument, [&] { (void)ask.call_async(ctx, {ctx.str("hi")}).summary(); },
      "no summary without RunOptions::summary");

  // Per-item errors: a host provider fails every third item ("q<i>", i % 3
  // == 0) at once and answers the others 30 ms later from threads of their
  // own; item_errors keeps the other items going (never cancelled).
  {
    std::atomic<int> cancelled{0};
    af::Provider every_third = af::Provider::host([&](af::LmRequest& req) {
      std::thread([&cancelled, r = std::move(req)]() mutable {
        std::string j = r.json();
        size_t at = j.rfind("\"content\":\"q") + 12;
        std::string q = "q" + j.substr(at, j.find('"', at) - at);
        if (std::atoi(q.c_str() + 1) % 3 == 0) return r.fail(af::Code::Provider, "item " + q + " refused");
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        if (r.cancelled()) ++cancelled;
        r.complete("ok " + q);
      }).detach();
    });
    ctx.route("every-third", every_third);
    af::Ir one = ctx.trace(
        [](af::Context& c, const std::vector<af::Value>& in) {
          af::Value a = c.lm_call(c.list({c.dict({{"role", c.str("user")}, {"content", in[0]}})}), c.str("every-third"));
          return c.list({a, c.concat({a, c.str("!")})});
        },
        {ctx.str("q")});
    af::Program per_item = af::Program::compile(ctx, ctx.batch(one));
    af::Value qs = ctx.json(R"(["q0","q1","q2","q3","q4","q5"])");
    af::RunOptions item_opts;
    item_opts.item_errors = true;
    af::Value got = per_item.call(ctx, {qs}, item_opts);
    expect(got[0].size() == 6, "every item has an answer: " + got.json());
    for (size_t i = 0; i < 6; ++i) {
      std::string q = "q" + std::to_string(i);
      if (i % 3 == 0) {
        expect(got[0][i]["error"]["name"].str() == "PROVIDER" &&
                   got[0][i]["error"]["message"].str().find("item " + q + " refused") != std::string::npos,
               "a failing item is its error value: " + got[0][i].json());
        expect(got[1][i].json() == got[0][i].json(), "its later step passes the error on");
      } else {
        expect(got[0][i].str() == "ok " + q && got[1][i].str() == "ok " + q + "!", "the other items complete");
      }
    }
    expect(cancelled == 0, "no other item was cancelled");
    expect_error(af::Code::Provider, [&] { per_item.call(ctx, {qs}); }, "without item_errors the run fails");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the cancelled run's answers finish
  }

  // A lazy context: calls record promises, eval runs them together.
  {
    af::Context lazy(R"({"lazy": true})");
    lazy.route("*", echo);
    af::Ir asking = trace_ask(lazy);
    std::vector<af::Value> answers;
    for (const char* q : {"a", "b", "c"}) answers.push_back(lazy.call(asking, {lazy.str(q)}));
    expect(!answers[1].ready(), "a promise is not ready before evaluation");
    lazy.eval(answers);
    expect(answers[1].ready() && answers[1].str() == "m|Q:b", "eval evaluates the promises");
    expect(lazy.stats().find(R"("misses":1)") != std::string::npos, "one structure compiles once: " + lazy.stats());
  }

  // Errors: code, message naming the C++ method, cause, the tool's own exception.
  af::Error nf = expect_error(af::Code::NotFound, [&] { ctx.host_call("nowhere", {}); }, "unknown host function");
  expect(std::string(nf.what()).find("af::Context::register_function") != std::string::npos,
         std::string("the hint names the C++ method: ") + nf.what());
  ctx.register_function("fails", ctx.str("str"), [](const std::vector<af::Value>&) -> af::Value {
    throw ToolFailure("disk on fire");
  });
  af::Error cb = expect_error(af::Code::Callback, [&] { ctx.host_call("fails", {}); }, "a throwing tool is CALLBACK");
  expect(cb.cause() != nullptr && cb.cause()->origin() != nullptr, "the cause carries what the tool threw");
  try {
    std::rethrow_exception(cb.cause()->origin());
  } catch (const ToolFailure& e) {
    expect(std::string(e.what()) == "disk on fire", "the tool's own exception type and message");
  }
  ctx.register_function("coded", ctx.str("str"), [](const std::vector<af::Value>&) -> af::Value {
    throw af::Error(af::Code::Provider, "quota");
  });
  af::Error coded = expect_error(af::Code::Callback, [&] { ctx.host_call("coded", {}); }, "an af::Error from a tool");
  expect(coded.cause() && coded.cause()->code() == af::Code::Provider && coded.cause()->message() == "quota",
         "it keeps its code and message as the cause");
  // Two tools failing at once with the same message each get their own
  // exception back: it rides on its error (af_error_new_with), not in a
  // table keyed by the text.
  {
    struct Tagged : std::runtime_error {
      int who;
      Tagged(int w) : std::runtime_error("same text"), who(w) {}
    };
    ctx.register_function("tagged", ctx.str("str"), [](const std::vector<af::Value>& args) -> af::Value {
      throw Tagged(static_cast<int>(args.at(0).as_int()));
    });
    std::atomic<int> wrong{0};
    auto caller = [&](int who) {
      for (int i = 0; i < 200; ++i) {
        try {
          ctx.host_call("tagged", {ctx.integer(who)});
        } catch (const af::Error& e) {
          try {
            std::rethrow_exception(e.cause() ? e.cause()->origin() : nullptr);
          } catch (const Tagged& t) {
            if (t.who != who) ++wrong;
          } catch (...) {
            ++wrong;
          }
        }
      }
    };
    std::thread a(caller, 1), b(caller, 2);
    a.join();
    b.join();
    expect(wrong == 0, "each caller gets its own tool's exception: " + std::to_string(wrong.load()) + " wrong");
  }
  // A trace function's exception comes back as itself.
  try {
    ctx.trace([](af::Context&, const std::vector<af::Value>&) -> af::Value { throw ToolFailure("in trace"); },
              {ctx.str("x")});
    expect(false, "trace rethrows");
  } catch (const ToolFailure& e) {
    expect(std::string(e.what()) == "in trace", "a trace function's exception is rethrown as itself");
  }

  // RAII: copies add references, moves leave an empty handle that throws.
  af::Value d = ctx.json(R"({"b": 1, "a": [true, null]})");
  af::Value copy = d;
  af::Value moved = std::move(d);
  expect(copy.json() == moved.json(), "a copied value is the same value");
  expect_error(af::Code::InvalidArgument, [&] { (void)d.json(); }, "a moved-from value is an error, not a crash");
  std::string keys;
  for (const auto& [key, value] : moved.entries()) keys += key + "=" + value.json() + ";";
  expect(keys == "b=1;a=[true,null];", "iterating a dict in insertion order: " + keys);
  expect_error(af::Code::InvalidArgument, [&] { (void)ctx.str("x").entries(); }, "entries() of a str");
  expect_error(af::Code::NotFound, [&] { (void)moved["zz"]; }, "a missing key is NOT_FOUND");

  // Values need no Context: made anywhere (a host function included), used by any.
  af::Value made = af::dict(
      {{"a", af::integer(1)}, {"b", af::list({af::null(), af::boolean(true), af::real(2.0), af::str("s")})}});
  expect(made.json() == R"({"a":1,"b":[null,true,2.0,"s"]})", "values made without a Context: " + made.json());
  expect(af::json("[1, 2.5e0]").json() == "[1,2.5]" && ctx.json("[1]").json() == af::json("[1]").json(),
         "af::json parses exact JSON, as ctx.json");
  expect_error(af::Code::InvalidArgument, [] { (void)af::json("[1,"); }, "af::json of malformed JSON");
  expect_error(af::Code::InvalidArgument, [] { (void)af::dict({{"k", af::null()}, {"k", af::null()}}); },
               "af::dict with a duplicate key");
  ctx.register_function("shout", af::str("str"),
                        [](const std::vector<af::Value>& args) { return af::str(args.at(0).str() + "!"); });
  expect(ctx.host_call("shout", {af::str("hi")}).str() == "hi!", "a host function makes its result without a Context");

  // Async and blocking host functions: 8 independent 200 ms tools overlap
  // through Program::call (no libaf thread waits for an async one).
  {
    std::mutex mu;
    std::vector<std::thread> workers;
    ctx.register_function_async("slow", ctx.str("str"), [&](const std::vector<af::Value>& args, af::HostRequest& req) {
      std::string arg = args[0].json();
      std::lock_guard<std::mutex> lock(mu);
      workers.emplace_back([&ctx, arg, r = std::move(req)]() mutable {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        r.complete(ctx.str("done:" + arg));
      });
    });
    ctx.register_function_blocking("slow_sync", ctx.str("str"), [&ctx](const std::vector<af::Value>& args) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      return ctx.str("done:" + args[0].json());
    });
    for (const char* tool : {"slow", "slow_sync"}) {
      af::Ir fan = ctx.trace(
          [tool](af::Context& c, const std::vector<af::Value>&) {
            std::vector<af::Value> outs;
            for (int i = 0; i < 8; ++i) outs.push_back(c.host_call(tool, {c.integer(i)}));
            return c.list(outs);
          },
          {ctx.str("x")});
      auto t0 = std::chrono::steady_clock::now();
      af::Value got = af::Program::compile(ctx, fan).call(ctx, {ctx.str("x")});
      long ms = long(std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count());
      std::printf("     8 x 200 ms %s tools: %ld ms\n", tool, ms);
      expect(got[7].str() == "done:7" && ms < 800, std::string("8 ") + tool + " tools run concurrently");
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      for (auto& w : workers) w.join();
    }
    ctx.register_function_async("twice", ctx.str("str"), [&](const std::vector<af::Value>&, af::HostRequest& req) {
      req.complete(ctx.str("first"));
      expect_error(af::Code::InvalidArgument, [&] { req.complete(ctx.str("second")); }, "completing twice is refused");
    });
    expect(ctx.host_call("twice", {}).str() == "first", "an async tool finished at once, outside a trace");
    ctx.register_function_async("wrong", ctx.str("str"), [&](const std::vector<af::Value>&, af::HostRequest& req) {
      req.complete(ctx.integer(1));
    });
    af::Error wrong = expect_error(af::Code::InvalidArgument, [&] { ctx.host_call("wrong", {}); },
                                   "a wrong-kind result from an async tool");
    expect(std::string(wrong.what()).find("\"wrong\"") != std::string::npos, "it names the function");
    ctx.register_function_async("throws", ctx.str("str"), [](const std::vector<af::Value>&, af::HostRequest&) {
      throw ToolFailure("async tool down");
    });
    af::Error thrown = expect_error(af::Code::Callback, [&] { ctx.host_call("throws", {}); }, "an async tool that throws");
    expect(thrown.cause() != nullptr, "fails the call with the exception as the cause");
  }

  {
    // Streaming, sampling params, fallback routes and provider options.
    af::Context sc;
    af::Ir sampled = sc.trace(
        [](af::Context& c, const std::vector<af::Value>& in) {
          af::Value msg = c.dict({{"role", c.str("user")}, {"content", in[0]}});
          return c.lm_call(c.list({msg}), c.str("m"), c.json(R"({"temperature": 0, "max_tokens": 16})"));
        },
        {sc.str("q")});
    expect(sampled.text().find("max_tokens=16") != std::string::npos, "sampling params are in the IR");
    af::Provider down = af::Provider::host([](af::LmRequest& req) { req.fail(af::Code::Provider, "down"); });
    af::Provider streaming = af::Provider::host([](af::LmRequest& req) {
      if (req.json().find("\"stream\":true") != std::string::npos) {
        req.stream("wro");
        req.restart_stream();
        req.stream("he");
        req.stream("llo");
      }
      req.complete("hello");
    });
    sc.route("*", std::vector<af::Provider>{down, streaming});
    std::string seen;
    int resets = 0;
    af::RunOptions so;
    so.stream = [&](uint32_t, uint64_t, std::optional<std::string_view> piece) {
      if (piece) seen += std::string(*piece);
      else ++resets, seen.clear();
    };
    af::Program sp = af::Program::compile(sc, sampled);
    expect(sp.call(sc, {sc.str("q")}, so).str() == "hello", "the fallback provider answers");
    expect(seen == "hello" && resets == 1, "its pieces stream, restarts included: " + seen);
    streaming.set_options(R"({"requests_per_minute": 600})");
    expect(streaming.stats().find(R"("requests_per_minute":600)") != std::string::npos, "provider options change");
    expect_error(af::Code::InvalidArgument, [&] { streaming.set_options(R"({"rpm": 1})"); }, "an unknown option");
    expect_error(af::Code::InvalidArgument, [&] { sc.route("*", std::vector<af::Provider>{}); }, "an empty fallback list");
  }

  // Walking an IR one equation at a time: libaf evaluates the first, the
  // host supplies the second's output.
  {
    af::Ir two = ctx.trace(
        [](af::Context& c, const std::vector<af::Value>& in) {
          return c.concat({c.format("<{}>", {in[0]}), c.str("!")});
        },
        {ctx.str("x")});
    af::Walk walk(ctx, two, {ctx.str("w")});
    std::optional<af::Walk::Step> step = walk.next();
    expect(step && step->eqn == 0 && two.eqn_prim(step->eqn) == "format", "the walk starts at the format");
    expect(walk.next()->eqn == 0, "next() again gives the same equation");
    expect_error(af::Code::InvalidArgument, [&] { walk.outputs(); }, "no outputs while equations remain");
    walk.eval();
    step = walk.next();
    expect(step && step->eqn == 1 && step->inputs.json() == R"(["<w>","!"])",
           "the concat sees the format's output: " + (step ? step->inputs.json() : std::string("done")));
    expect_error(af::Code::InvalidArgument, [&] { walk.send(ctx.integer(1)); }, "a wrong-kind output is refused");
    walk.send(ctx.str("sent"));
    expect(!walk.next(), "the walk is done");
    expect(walk.outputs().str() == "sent", "the outputs are what the host sent");
    af::Walk moved_walk = std::move(walk);
    expect_error(af::Code::InvalidArgument, [&] { walk.next(); }, "a moved-from walk is an error");
    expect_error(af::Code::InvalidArgument, [&] { af::Walk(ctx, two, {ctx.integer(1)}); },
                 "a walk checks its inputs");
  }

  // Tag and fold scopes, is_tracing, checkpoint and depends.
  {
    expect(!af::is_tracing(), "not tracing outside a trace");
    af::profile_event("outside any run", R"({"k":1})");  // does nothing, no error
    expect_error(af::Code::InvalidArgument, [&] { af::profile_event("m", "[1]"); },
                 "profile_event args must be a JSON object");
    expect(af::abi_version() == AF_ABI_VERSION, "the loaded ABI is the header's");
    expect_error(af::Code::InvalidArgument, [&] { ctx.tag_push("x"); }, "tag_push outside a trace");
    bool traced = false;
    af::Ir tagged = ctx.trace(
        [&](af::Context& c, const std::vector<af::Value>& in) {
          traced = af::is_tracing();
          af::Value lit;
          {
            auto folded = c.fold();
            lit = c.concat({c.str("a"), c.str("b")});  // runs now: a literal
            expect_error(af::Code::InvalidArgument, [&] { c.concat({in[0], in[0]}); },
                         "a placeholder cannot be folded");
          }
          af::Value urgent;
          {
            auto scope = c.tag("urgent");
            urgent = c.concat({in[0], lit});
          }
          expect_error(af::Code::InvalidArgument, [&] { c.tag_pop(); }, "the scope popped its tag");
          c.tag_push("late");
          af::Value late = c.concat({urgent, urgent});
          c.tag_pop();
          af::Value seen = c.checkpoint(late, "k", "col");
          return c.depends(c.concat({seen, c.str(".")}), {seen});
        },
        {ctx.str("x")});
    expect(traced, "is_tracing inside the trace function");
    std::vector<std::string> prims;
    for (size_t i = 0; i < tagged.eqn_count(); ++i) prims.push_back(tagged.eqn_prim(i));
    expect(prims == std::vector<std::string>{"concat", "concat", "checkpoint", "concat", "depends"},
           "the fold left no equation; checkpoint and depends are recorded");
    expect(tagged.eqn_json(0).find(R"("tags":["urgent"])") != std::string::npos,
           "the scope tagged its equation: " + tagged.eqn_json(0));
    expect(tagged.eqn_json(1).find(R"("tags":["late"])") != std::string::npos, "push/pop tag it too");
    ctx.collect_push("col");
    af::Value out = af::Program::compile(ctx, tagged).call(ctx, {ctx.str("x")});
    af::Value collected = ctx.collect_pop();
    expect(out.str() == "xabxab." && collected.json() == R"({"k":["xabxab"]})",
           "the checkpoint is collected: " + out.json() + " " + collected.json());
  }

  // CSE options, sched annotations, graph bytes as JSON and checked.
  {
    af::Ir twice = ctx.trace(
        [](af::Context& c, const std::vector<af::Value>& in) {
          af::Value msgs = c.list({c.dict({{"role", c.str("user")}, {"content", in[0]}})});
          return c.list({c.lm_call(msgs, c.str("m")), c.lm_call(msgs, c.str("m"))});
        },
        {ctx.str("q")});
    expect(ctx.cse(twice).eqn_count() == 2, "plain cse keeps both LM calls");
    expect(ctx.cse(twice, false).eqn_count() == 2, "cse without merging keeps both");
    expect(ctx.cse(twice, true).eqn_count() == 1, "merge_nondeterministic merges the LM calls");
    af::Ir scheduled = ctx.sched(reply);
    af::Ir::Sched s0 = scheduled.eqn_sched(0);
    expect(s0.priority > 0, "a scheduled equation has a priority: " + std::to_string(s0.priority));
    expect_error(af::Code::NotFound, [&] { (void)reply.eqn_sched(0); }, "an unscheduled IR has no annotation");
    expect_error(af::Code::InvalidArgument, [&] { (void)scheduled.eqn_sched(999); }, "an index out of range");

    std::string bytes = reply.to_bytes();
    std::string summary = ctx.graph_verify(bytes);
    expect(summary.find("\"equations\"") != std::string::npos, "graph_verify summarizes: " + summary);
    std::string as_json = ctx.graph_to_json(bytes);
    expect(ctx.graph_from_json(as_json) == bytes, "graph JSON round-trips to the same bytes");
    expect_error(af::Code::Format, [&] { ctx.graph_verify("not a graph"); }, "junk bytes fail verification");
    expect_error(af::Code::Format, [&] { ctx.graph_from_json("{"); }, "malformed graph JSON is FORMAT");
  }

  // on_done, and the plain calls (a lazy context records them).
  {
    std::atomic<int> done{0};
    af::Future f = ask.call_async(ctx, {ctx.str("d")});
    std::mutex mu;
    std::condition_variable cv;
    f.on_done([&] {
      std::lock_guard<std::mutex> lock(mu);
      ++done;
      cv.notify_all();
    });
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait_for(lock, std::chrono::seconds(10), [&] { return done.load() == 1; });
    }
    expect(done == 1 && f.ready() && f.wait().str() == "m|Q:d", "on_done runs when the run finishes");
    f.on_done([&] { ++done; });
    expect(done == 2, "on a finished run, on_done runs at once");
    f.on_done([] { throw ToolFailure("dropped"); });  // must not unwind into libaf
    expect(f.wait().str() == "m|Q:d", "a throwing on_done callback is dropped");

    af::Context lazy(R"({"lazy": true})");
    lazy.route("*", echo);
    af::Value recorded = ask.call(lazy, {lazy.str("r")});
    expect(!recorded.ready(), "a plain call on a lazy context is recorded");
    af::Value now = ask.call(lazy, {lazy.str("n")}, af::RunOptions());
    expect(now.ready() && now.str() == "m|Q:n", "a call with options runs at once");
    expect(recorded.str() == "m|Q:r", "the recorded call runs when read");

    // A promise keeps its lazy context: read after the Context is gone.
    af::Value kept;
    {
      af::Context gone(R"({"lazy": true})");
      kept = gone.concat({gone.str("a"), gone.str("b")});
    }
    expect(kept.str() == "ab", "a promise outlives its Context object");
    // A list or dict made of promises (no Context involved) keeps their contexts.
    af::Value both;
    {
      af::Context one(R"({"lazy": true})"), two(R"({"lazy": true})");
      af::Value a = one.concat({af::str("a"), af::str("b")}), b = two.concat({af::str("c"), af::str("d")});
      both = af::dict({{"l", af::list({a, af::integer(1)})}, {"b", b}});
      expect(!both.ready(), "a dict holding promises is pending");
    }
    expect(both.json() == R"({"l":["ab",1],"b":"cd"})", "a list or dict of promises outlives their Contexts: " + both.json());
    // Deadlines: eval with options stops at its timeout, and the promise keeps the error.
    af::Provider slow = af::Provider::echo(R"({"latency_ms": 3000})");
    lazy.route("slow", slow);
    af::Value late = lazy.lm_call(lazy.list({lazy.dict({{"role", lazy.str("user")}, {"content", lazy.str("x")}})}),
                                  lazy.str("slow"));
    af::RunOptions deadline;
    deadline.timeout_ms = 100;
    bool timed_out = false;
    try {
      lazy.eval({late}, deadline);
    } catch (const af::Error& e) {
      timed_out = e.code() == af::Code::Timeout;
    }
    expect(timed_out, "eval with a timeout throws TIMEOUT");
  }

  // The options libaf reads, described (af_options_json).
  expect(af::options_json().find("\"af_context_new_with\"") != std::string::npos, "options_json describes the options");

  // af.hpp wraps every function af.h declares: each name appears in it or
  // in one of its parts (af/hpp/*.hpp, every one of which af.hpp includes),
  // except the deprecated ones, which it must not call. af.h marks those by a
  // paragraph (lines between blank lines) opening with "/* Deprecated": every
  // declaration in it is deprecated.
  {
    std::string h = read_file(AF_HEADER_DIR "/af.h"), top = read_file(AF_HEADER_DIR "/af.hpp");
    std::string hpp = top;
    std::vector<std::string> parts, unincluded;
    for (const auto& entry : std::filesystem::directory_iterator(AF_HEADER_DIR "/hpp"))
      if (entry.path().extension() == ".hpp") parts.push_back(entry.path().filename().string());
    std::sort(parts.begin(), parts.end());
    for (const std::string& part : parts) {
      hpp += read_file(AF_HEADER_DIR "/hpp/" + part);
      if (top.find("#include \"hpp/" + part + "\"") == std::string::npos) unincluded.push_back(part);
    }
    std::vector<std::string> missing, deprecated, called;
    size_t declared = 0;
    for (size_t at = h.find("\nAF_API "); at != std::string::npos; at = h.find("\nAF_API ", at + 1)) {
      size_t paren = h.find('(', at);
      size_t begin = h.find_last_of(" *", paren) + 1;
      std::string name = h.substr(begin, paren - begin);
      size_t blank = h.rfind("\n\n", at);
      bool is_deprecated = blank != std::string::npos && h.compare(blank + 2, 13, "/* Deprecated") == 0;
      if (is_deprecated) {
        deprecated.push_back(name);
        if (names_identifier(hpp, name)) called.push_back(name);
        continue;
      }
      ++declared;
      if (!names_identifier(hpp, name)) missing.push_back(name);
    }
    auto joined = [](const std::vector<std::string>& names) {
      std::string out;
      for (const std::string& n : names) out += " " + n;
      return out;
    };
    expect(parts.size() >= 8 && unincluded.empty(), "af.hpp includes all " + std::to_string(parts.size()) +
                                                        " of its parts in af/hpp/" +
                                                        (unincluded.empty() ? "" : "; not included:" + joined(unincluded)));
    expect(declared > 100 && missing.empty(), "af.hpp wraps all " + std::to_string(declared) + " functions of af.h" +
                                                  (missing.empty() ? "" : "; missing:" + joined(missing)));
    expect(!deprecated.empty() && called.empty(),
           "af.hpp calls none of the " + std::to_string(deprecated.size()) + " deprecated functions of af.h:" +
               joined(deprecated) + (called.empty() ? "" : "; called:" + joined(called)));
  }

  std::printf("%d passed, 0 failed\n", checks);
  return 0;
}
