// The LM layer's own pieces: schemas (JSON Schema, reply validation,
// smallest instances), model routing globs, Calls and the Limiter (limits,
// priorities, cancellation), the timer queue.
#include <gtest/gtest.h>

#include <set>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <queue>
#include <random>
#include <thread>

#include "lm/call.h"
#include "lm/call_arena.h"
#include "lm/ordered_queue.h"
#include "lm/provider.h"
#include "lm/providers.h"
#include "lm/router.h"
#include "lm/schema.h"
#include "lm/timer.h"
#include "value/error.h"

namespace af::lm {
namespace {

Value J(const char* s) { return from_json(s); }

TEST(LmSchema, JsonSchemaHasEveryPropertyRequiredAndNoOthers) {
  Schema s = Schema::parse(J(R"({"answer":{"type":"str","max":80,"doc":"short"},
                                 "score":{"type":"int","min":1,"max":10},
                                 "tags":[{"type":"enum","values":["a","b"]}, {"type":"bool"}]})"));
  EXPECT_EQ(s.json_schema(),
            R"({"type":"object","properties":{"answer":{"type":"string","maxLength":80,"description":"short"},)"
            R"("score":{"type":"integer","minimum":1,"maximum":10},"tags":{"type":"object","properties":)"
            R"({"0":{"type":"string","enum":["a","b"]},"1":{"type":"boolean"}},"required":["0","1"],)"
            R"("additionalProperties":false}},"required":["answer","score","tags"],"additionalProperties":false})");
  // Output leaves in flattening order (dict keys sorted): answer, score, tags[0], tags[1].
  EXPECT_EQ(s.leaf_kinds(), (std::vector<Kind>{Kind::Str, Kind::Int, Kind::Str, Kind::Bool}));
  EXPECT_EQ(s.out_tree().to_string(), R"({"answer": *, "score": *, "tags": [*, *]})");
}

TEST(LmSchema, DocOnASubtreeAndALeafRoot) {
  Schema sub = Schema::parse(J(R"({"type":"dict","doc":"the verdict","fields":{"type":{"type":"bool"}}})"));
  EXPECT_NE(sub.json_schema().find(R"("description":"the verdict")"), std::string::npos);
  EXPECT_NE(sub.json_schema().find(R"("type":{"type":"boolean"})"), std::string::npos);
  Schema leaf = Schema::parse(J(R"({"type":"float","min":0,"max":1})"));
  EXPECT_EQ(leaf.json_schema(),
            R"({"type":"object","properties":{"value":{"type":"number","minimum":0.0,"maximum":1.0}},)"
            R"("required":["value"],"additionalProperties":false})");
  EXPECT_EQ(leaf.parse_reply(R"({"value": 0.25})"), std::vector<Value>{Value::floating(0.25)});
  EXPECT_EQ(leaf.smallest_reply(), R"({"value":0.0})");
}

struct ReplyCase {
  const char* reply;
  const char* error;  // nullptr = valid; else a fragment of the SCHEMA message
};

TEST(LmSchema, RepliesAreValidatedWithTheirPath) {
  Schema s = Schema::parse(J(R"({"name":{"type":"str","min":2,"max":4,"pattern":"^[a-z]+$"},
                                 "n":{"type":"int","min":0},"x":{"type":"float","max":2.5},
                                 "pick":{"type":"enum","values":[1,2]},"inner":{"ok":{"type":"bool"}}})"));
  const ReplyCase cases[] = {
      {R"({"name":"abc","n":0,"x":1,"pick":2,"inner":{"ok":true}})", nullptr},
      {R"({"name":"abc","n":3.0,"x":2.5,"pick":1,"inner":{"ok":false}})", nullptr},
      {R"({"name":"a","n":0,"x":1,"pick":2,"inner":{"ok":true}})", "$.name: expected a string of length >= 2"},
      {R"({"name":"abcde","n":0,"x":1,"pick":2,"inner":{"ok":true}})", "<= 4"},
      {R"({"name":"AB","n":0,"x":1,"pick":2,"inner":{"ok":true}})", "matching /^[a-z]+$/"},
      {R"({"name":"ab","n":-1,"x":1,"pick":2,"inner":{"ok":true}})", "$.n: expected an integer >= 0"},
      {R"({"name":"ab","n":1.5,"x":1,"pick":2,"inner":{"ok":true}})", "$.n"},
      {R"({"name":"ab","n":1,"x":3,"pick":2,"inner":{"ok":true}})", "$.x: expected a number <= 2.5"},
      {R"({"name":"ab","n":1,"x":1,"pick":3,"inner":{"ok":true}})", "$.pick: expected one of [1,2]"},
      {R"({"name":"ab","n":1,"x":1,"pick":1,"inner":{"ok":"yes"}})", "$.inner.ok: expected true or false"},
      {R"({"name":"ab","n":1,"x":1,"pick":1,"inner":{}})", "$.inner.ok: the required property is missing"},
      {R"({"name":"ab","n":1,"x":1,"pick":1,"inner":{"ok":true},"more":1})", "$.more: unexpected property"},
      {R"({"name":{"x":1},"n":1,"x":1,"pick":1,"inner":{"ok":true}})", "$.name: expected a string, found a dict"},
      {R"({"name":"ab","n":1,"x":1,"pick":1,"inner":[true]})", "$.inner: expected an object, found a list"},
      {R"({"name":"ab","n":1,"x":1,"pick":1,"inner":{"ok":true,"ok":false}})", "not valid JSON (duplicate dict key"},
      {R"({"name":"ab","n":18446744073709551615,"x":1,"pick":1,"inner":{"ok":true}})", "not valid JSON (JSON integer"},
      {R"({"name":"ab")", "not valid JSON"},
      {"", "not valid JSON"},
  };
  for (const ReplyCase& c : cases) {
    SCOPED_TRACE(c.reply);
    if (!c.error) {
      EXPECT_NO_THROW(s.parse_reply(c.reply));
      continue;
    }
    try {
      s.parse_reply(c.reply);
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Code::Schema);
      EXPECT_NE(std::string(e.what()).find(c.error), std::string::npos) << e.what();
    }
  }
  // Values come back typed: an integral float for an int becomes an int.
  auto leaves = s.parse_reply(R"({"name":"abc","n":3.0,"x":1,"pick":2,"inner":{"ok":true}})");
  ASSERT_EQ(leaves.size(), 5u);  // inner.ok, n, name, pick, x (sorted keys)
  EXPECT_EQ(leaves[1], Value::integer(3));
  EXPECT_EQ(leaves[4], Value::floating(1.0));
}

// A raw control character inside a string is read as its escape (as
// Python's json.loads(strict=False) does); nothing else strict JSON refuses
// is accepted.
TEST(LmSchema, RawControlCharactersInStringsAreReadAsEscaped) {
  Schema review = Schema::parse(J(R"({"ok":{"type":"bool"},"note":{"type":"str","max":80}})"));
  // A local model's reviewer reply: a raw newline inside the note.
  auto leaves = review.parse_reply("{\"ok\": true, \"note\": \"Polite and clear.\nAdd the refund date.\"}");
  EXPECT_EQ(leaves[0], Value::str("Polite and clear.\nAdd the refund date."));
  EXPECT_EQ(leaves[1], Value::boolean(true));
  // Every control character, after an escaped quote and an escaped backslash.
  leaves = review.parse_reply("{\"ok\":false,\"note\":\"q\\\" \\\\\t\r\b\f\x01\x1f\"}");
  EXPECT_EQ(leaves[0], Value::str("q\" \\\t\r\b\f\x01\x1f"));
  for (const char* bad : {
           "{\"ok\":true,\x01\"note\":\"a\"}",        // a control character outside a string
           "{\"ok\":true,\"note\":\"a\nb\",}",        // a trailing comma, with a raw newline too
           "{'ok':true,\"note\":\"a\nb\"}",             // a single-quoted key
           "{\"ok\":true,\"note\":\"a\nb}",            // an unterminated string
       }) {
    SCOPED_TRACE(bad);
    try {
      review.parse_reply(bad);
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Code::Schema);
      EXPECT_NE(std::string(e.what()).find("not valid JSON"), std::string::npos) << e.what();
    }
  }
  // Read as escaped, the reply is still validated: a raw newline counts as one character.
  try {
    review.parse_reply("{\"ok\":true,\"note\":\"" + std::string(80, 'x') + "\n\"}");
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("$.note: expected a string of length <= 80"), std::string::npos) << e.what();
  }
}

// A re-ask steps the draw over the provider's defaults and the call's own
// params: a greedy model asked again would repeat itself.
TEST(LmSchema, ReasksStepTheSampling) {
  const Value defaults = J(R"({"temperature":0,"seed":7,"max_tokens":128})");
  Request r;
  r.model = Value::str("m");
  EXPECT_EQ(to_json(sampling_for(defaults, r)), R"({"temperature":0,"seed":7,"max_tokens":128})");
  EXPECT_TRUE(sampling_for(Value(), r).is_null());
  const char* want[] = {R"({"temperature":0.3,"seed":8,"max_tokens":128})",
                        R"({"temperature":0.6,"seed":9,"max_tokens":128})",
                        R"({"temperature":0.9,"seed":10,"max_tokens":128})",
                        R"({"temperature":1.0,"seed":11,"max_tokens":128})"};
  for (uint32_t k = 1; k <= 4; ++k) {
    r.reask = k;
    EXPECT_EQ(to_json(sampling_for(defaults, r)), want[k - 1]) << "re-ask " << k;
  }
  // The call's own params win over the defaults; a temperature already above
  // the step stays; what is not set is not invented.
  r.reask = 1;
  r.sampling = J(R"({"temperature":0.8})");
  EXPECT_EQ(to_json(sampling_for(defaults, r)), R"({"seed":8,"max_tokens":128,"temperature":0.8})");
  EXPECT_TRUE(sampling_for(Value(), Request{}).is_null());
  Request bare;
  bare.reask = 2;
  EXPECT_TRUE(sampling_for(Value(), bare).is_null());
  // Host providers see the re-ask's number in the request.
  bare.model = Value::str("m");
  EXPECT_NE(bare.to_json().find(R"("reask":2)"), std::string::npos) << bare.to_json();
  bare.reask = 0;
  EXPECT_EQ(bare.to_json().find("reask"), std::string::npos);
}

// The leaves come in the output tree's flattening order (dict keys sorted,
// list items in order) whatever order the schema and the reply use, and a
// list's element is named by its index.
// A string enum is matched in place; its leaf is the schema's value.
TEST(LmSchema, StringEnumsMatchWithoutACopy) {
  Schema s = Schema::parse(J(R"({"team":{"type":"enum","values":["billing","technical"]}})"));
  EXPECT_EQ(s.parse_reply(R"({"team":"technical"})")[0], Value::str("technical"));
  for (const char* bad : {R"({"team":"sales"})", R"({"team":1})", R"({"team":"billing "})"}) {
    SCOPED_TRACE(bad);
    try {
      s.parse_reply(bad);
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Code::Schema);
      EXPECT_NE(std::string(e.what()).find("$.team: expected one of [\"billing\",\"technical\"]"), std::string::npos)
          << e.what();
    }
  }
}

TEST(LmSchema, LeavesFollowTheOutputTree) {
  Schema s = Schema::parse(J(R"({"z":[{"type":"int"},{"type":"str"}],"a":{"b":{"type":"bool"},"a":{"type":"float"}}})"));
  auto leaves = s.parse_reply(R"({"a":{"b":true,"a":0.5},"z":{"1":"s","0":1}})");
  std::vector<Value> want = {Value::floating(0.5), Value::boolean(true), Value::integer(1), Value::str("s")};
  EXPECT_EQ(leaves, want);
  EXPECT_EQ(to_json(s.out_tree().unflatten(leaves)), R"({"z":[1,"s"],"a":{"b":true,"a":0.5}})");
  try {
    s.parse_reply(R"({"a":{"b":true,"a":0.5},"z":{"0":1,"1":2}})");
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("$.z.1: expected a string"), std::string::npos) << e.what();
  }
}

// echo's "schema_replies": "varied": every reply is valid, and enum values,
// bools and bounded ints take every value they may as the seed changes.
TEST(LmSchema, VariedRepliesAreValidAndCoverTheChoices) {
  Schema s = Schema::parse(J(R"({"team":{"type":"enum","values":["billing","technical"]},)"
                             R"("urgent":{"type":"bool"},"n":{"type":"int","min":1,"max":5},)"
                             R"("free":{"type":"int"},"code":{"type":"str","min":2,"pattern":"^[0-9]+$"}})"));
  std::set<std::string> seen;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    const std::string reply = s.varied_reply(seed);
    std::vector<Value> leaves;
    ASSERT_NO_THROW(leaves = s.parse_reply(reply)) << reply;
    for (const Value& v : leaves) seen.insert(to_json(v));
    EXPECT_EQ(s.varied_reply(seed), reply);  // reproducible
  }
  for (const char* v : {"\"billing\"", "\"technical\"", "true", "false", "1", "2", "3", "4", "5", "0", "\"00\""})
    EXPECT_TRUE(seen.count(v)) << v;
  EXPECT_EQ(seen.size(), 11u);  // the unbounded int and the string stay the smallest
  EXPECT_THROW(make_echo(J(R"({"schema_replies":"random"})")), Error);
}

TEST(LmSchema, SmallestReplyIsValid) {
  for (const char* tree : {R"({"a":{"type":"str","min":3,"pattern":"^[0-9]+$"},"b":{"type":"int","min":5}})",
                           R"([{"type":"float","min":-3.5,"max":-1},{"type":"enum","values":[true]}])",
                           R"({"type":"str"})"}) {
    Schema s = Schema::parse(J(tree));
    EXPECT_NO_THROW(s.parse_reply(s.smallest_reply())) << tree << " -> " << s.smallest_reply();
  }
  Schema leaf = Schema::parse(J(R"({"type":"int","max":3})"));
  EXPECT_EQ(leaf.parse_reply(R"({"value":2})"), std::vector<Value>{Value::integer(2)});
  for (auto [reply, error] : {std::pair{"2", "$: expected an object {\"value\": ...}, found 2"},
                              std::pair{R"({"value":4})", "$.value: expected an integer <= 3, found 4"},
                              std::pair{R"({"value":1,"more":1})", "$.more: unexpected property (allowed: value)"},
                              std::pair{"{}", "$.value: the required property is missing"}}) {
    try {
      leaf.parse_reply(reply);
      ADD_FAILURE() << reply << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(error), std::string::npos) << e.what();
    }
  }
  Schema impossible = Schema::parse(J(R"({"a":{"type":"str","pattern":"^x{3}$"}})"));
  try {
    impossible.smallest_reply();
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::Provider);
  }
}

// Every bound is checked when the schema is given, naming the path, so a
// schema that no reply could satisfy never reaches a provider.
TEST(LmSchema, BoundsAreCheckedWhenTheSchemaIsGiven) {
  const struct {
    const char* tree;
    const char* error;
  } cases[] = {
      {R"({"a":{"type":"str","max":-1}})", "$.a: \"max\" must be >= 0"},
      {R"({"a":{"type":"str","min":-1}})", "$.a: \"min\" must be >= 0"},
      {R"({"a":{"type":"str","min":5,"max":4}})", "$.a: \"min\" is greater than \"max\""},
      {R"({"a":{"type":"str","min":1000000000000}})", "$.a: \"min\" is 1000000000000; no reply can be longer"},
      {R"({"a":{"type":"str","max":1e12}})", "$.a: \"max\" must be an int"},
      {R"({"a":{"type":"int","min":2,"max":1}})", "$.a: \"min\" is greater than \"max\""},
      {R"({"a":{"type":"float","min":0.5,"max":0.25}})", "$.a: \"min\" is greater than \"max\""},
      {R"({"a":[{"type":"enum","values":[]}]})", "$.a[0]: an enum needs \"values\""},
      {R"({"a":{"type":"enum","values":["x",1]}})", "$.a: enum values must all have one kind"},
      {R"({"a":{"type":"enum","values":[1.5]}})", "$.a: enum values must be str, int or bool"},
      {R"({"a":{"type":"str","pattern":"("}})", "$.a: \"pattern\" is not a valid regular expression"},
      {R"j({"a":{"type":"str","pattern":"a(?=b)"}})j", "no lookaround"},
      {R"({"a":{"type":"str","pattern":"(a)\\1"}})", "$.a: \"pattern\" is not a valid"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.tree);
    try {
      Schema::parse(J(c.tree));
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Code::InvalidArgument);
      EXPECT_NE(std::string(e.what()).find(c.error), std::string::npos) << e.what();
    }
  }
  std::string long_pattern(kMaxPatternBytes + 1, 'a');
  try {
    Schema::parse(Value::dict({{"a", Value::dict({{"type", Value::str("str")}, {"pattern", Value::str(long_pattern)}})}}));
    ADD_FAILURE() << "a long pattern was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the limit is 1024"), std::string::npos) << e.what();
  }
  // The largest bound is accepted, and echo's instance is made at once.
  Schema big = Schema::parse(J(R"({"type":"str","min":67108864,"max":67108864})"));
  EXPECT_EQ(big.smallest_reply().size(), size_t(67108864) + 12);
}

double seconds_to_validate(const Schema& s, const std::string& reply, bool expect_ok) {
  auto t0 = std::chrono::steady_clock::now();
  try {
    s.parse_reply(reply);
    EXPECT_TRUE(expect_ok) << "accepted";
  } catch (const Error& e) {
    EXPECT_FALSE(expect_ok) << e.what();
    EXPECT_EQ(e.code(), Code::Schema);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Patterns run in linear time on untrusted replies: no recursion per
// character (a 100 KB reply once crashed the process) and no backtracking
// (^(a+)+b$ was exponential).
TEST(LmSchema, PatternsRunInLinearTimeOnLongReplies) {
  Schema lower = Schema::parse(J(R"({"type":"str","pattern":"^[a-z]+$"})"));
  std::string a100k(100 * 1024, 'a');
  EXPECT_LT(seconds_to_validate(lower, "{\"value\":\"" + a100k + "\"}", true), 1.0);
  EXPECT_LT(seconds_to_validate(lower, "{\"value\":\"" + a100k + "A\"}", false), 1.0);
  Schema nested = Schema::parse(J(R"({"type":"str","pattern":"^(a+)+b$"})"));
  EXPECT_LT(seconds_to_validate(nested, "{\"value\":\"" + std::string(40, 'a') + "c\"}", false), 1.0);
  EXPECT_LT(seconds_to_validate(nested, "{\"value\":\"" + a100k + "\"}", false), 1.0);
  EXPECT_LT(seconds_to_validate(nested, "{\"value\":\"" + a100k + "b\"}", true), 1.0);
  // Past the bound a string cannot match, and the message says why.
  std::string huge(kMaxPatternSubjectBytes + 1, 'a');
  try {
    lower.parse_reply("{\"value\":\"" + huge + "\"}");
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::Schema);
    EXPECT_NE(std::string(e.what()).find("at most 1048576 bytes"), std::string::npos) << e.what();
  }
}

TEST(LmRouter, GlobsAndPrecedence) {
  EXPECT_TRUE(glob_match("*", ""));
  EXPECT_TRUE(glob_match("gpt-*", "gpt-4o"));
  EXPECT_FALSE(glob_match("gpt-*", "xgpt-4"));
  EXPECT_TRUE(glob_match("*-mini", "gpt-4o-mini"));
  EXPECT_TRUE(glob_match("g?t-*o", "gpt-4o"));
  EXPECT_FALSE(glob_match("g?t", "gt"));
  EXPECT_TRUE(glob_match("a*b*c", "aXXbYYc"));
  EXPECT_FALSE(glob_match("a*b*c", "aXXbYY"));
}

// A provider that records start order and completes on demand.
class Manual final : public Provider {
 public:
  Manual(uint32_t max) : Provider("manual", max) {}
  ~Manual() override { shutdown(); }
  std::mutex mu;
  std::vector<std::shared_ptr<Call>> started;
  std::vector<std::string> order;

 protected:
  void start(std::shared_ptr<Call> call) noexcept override {
    std::lock_guard<std::mutex> lock(mu);
    order.push_back(call->request().model.as_str());
    started.push_back(std::move(call));
  }
};

std::shared_ptr<Call> call_for(const std::string& model, double prio, std::vector<std::string>* done) {
  Request r;
  r.model = Value::str(model);
  return std::make_shared<Call>(std::move(r),
                                [done](Call& c, const std::string* content, const Error* err) {
                                  done->push_back(c.request().model.as_str() + (err ? ":err" : ":" + *content));
                                },
                                prio);
}

TEST(LmLimiter, StartsWaitingCallsByPriorityWithinTheLimit) {
  auto p = std::make_shared<Manual>(1);
  std::vector<std::string> done;
  p->submit(call_for("first", 0, &done));
  p->submit(call_for("low", 1, &done));
  p->submit(call_for("high", 9, &done));
  p->submit(call_for("mid", 5, &done));
  EXPECT_EQ(p->order, std::vector<std::string>{"first"});
  EXPECT_EQ(p->limiter().stats().queued, 3u);
  for (int i = 0; i < 4; ++i) {
    std::shared_ptr<Call> c;
    {
      std::lock_guard<std::mutex> lock(p->mu);
      c = p->started.back();
    }
    c->complete("ok");
  }
  EXPECT_EQ(p->order, (std::vector<std::string>{"first", "high", "mid", "low"}));
  EXPECT_EQ(p->limiter().stats().peak_in_flight, 1u);
  EXPECT_EQ(done.size(), 4u);
}

// A batch's calls submitted together start as single submissions would:
// by priority, then in submission order, within the limit.
TEST(LmLimiter, CallsSubmittedTogetherStartByPriority) {
  auto p = std::make_shared<Manual>(2);
  std::vector<std::string> done;
  std::vector<std::shared_ptr<Call>> calls = {call_for("a", 0, &done), call_for("b", 5, &done),
                                              call_for("c", 5, &done), call_for("d", 9, &done)};
  p->submit(calls);
  EXPECT_EQ(p->order, (std::vector<std::string>{"d", "b"}));
  EXPECT_EQ(p->limiter().stats().submitted, 4u);
  for (int i = 0; i < 4; ++i) {
    std::shared_ptr<Call> c;
    {
      std::lock_guard<std::mutex> lock(p->mu);
      c = p->started[size_t(i)];
    }
    c->complete("ok");
  }
  EXPECT_EQ(p->order, (std::vector<std::string>{"d", "b", "c", "a"}));
  EXPECT_EQ(done.size(), 4u);
}

// A call takes the lowest free slot (profile tracks stay compact), with
// many calls in flight and slots freed in any order.
TEST(LmLimiter, StartsTakeTheLowestFreeSlot) {
  std::vector<std::string> done;  // outlives p, whose end fails the calls still in flight
  auto p = std::make_shared<Manual>(0);
  for (int i = 0; i < 300; ++i) p->submit(call_for("m", 0, &done));
  ASSERT_EQ(p->started.size(), 300u);
  for (int i = 0; i < 300; ++i) EXPECT_EQ(p->started[size_t(i)]->slot, i);
  for (int s : {270, 64, 5, 130, 63}) p->started[size_t(s)]->complete("ok");
  for (int expect : {5, 63, 64, 130, 270, 300}) {
    p->submit(call_for("n", 0, &done));
    EXPECT_EQ(p->started.back()->slot, expect);
  }
  EXPECT_EQ(p->limiter().stats().in_flight, 301u);
}

// A provider whose start of a call for model "hold" waits until released.
class Gate final : public Provider {
 public:
  Gate() : Provider("gate", 0) {}
  ~Gate() override { shutdown(); }
  std::mutex mu;
  std::condition_variable cv;
  bool holding = false, released = false;
  std::vector<std::string> started;

 protected:
  void start(std::shared_ptr<Call> call) noexcept override {
    std::unique_lock<std::mutex> lock(mu);
    started.push_back(call->request().model.as_str());
    if (call->request().model.as_str() == "hold") {
      holding = true;
      cv.notify_all();
      cv.wait_for(lock, std::chrono::seconds(10), [&] { return released; });
    }
    lock.unlock();
    call->complete("ok");
  }
};

// Once a pause (a 429's) has ended, an unlimited provider again starts
// calls on the thread that submits them: a call submitted while another
// thread is inside a start does not wait for that start to return.
TEST(LmLimiter, AfterAPauseEndsCallsStartOnTheSubmittingThread) {
  std::vector<std::string> done, other;  // outlive p
  auto p = std::make_shared<Gate>();
  p->limiter().pause(1);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::thread holder([&] { p->submit(call_for("hold", 0, &done)); });
  bool holding;
  {
    std::unique_lock<std::mutex> lock(p->mu);
    holding = p->cv.wait_for(lock, std::chrono::seconds(10), [&] { return p->holding; });
  }
  EXPECT_TRUE(holding);
  p->submit(call_for("other", 0, &other));
  {
    std::lock_guard<std::mutex> lock(p->mu);
    EXPECT_EQ(p->started, (std::vector<std::string>{"hold", "other"}));
    p->released = true;
  }
  p->cv.notify_all();
  holder.join();
  EXPECT_EQ(other, std::vector<std::string>{"other:ok"});
}

// Calls an unlimited provider answers at once, each asked from the done
// hook of the one before: the chain runs in a loop, not in a recursion as
// deep as it is long (a call starts on the thread that asks for it, so
// without care every next call would start inside the last one's reply).
TEST(LmLimiter, AChainOfInstantRepliesDoesNotNest) {
  ProviderPtr echo = make_echo(Value::dict({}));
  constexpr int kChain = 100000;
  int answered = 0, depth = 0, deepest = 0;
  std::function<void()> ask = [&] {
    Request r;
    r.model = Value::str("m");
    r.messages.push_back(Message{"user", Value::str("hi")});
    echo->submit(std::make_shared<Call>(
        std::move(r),
        [&](Call&, const std::string* content, const Error*) {
          deepest = std::max(deepest, ++depth);
          if (content && *content == "m|hi" && ++answered < kChain) ask();
          --depth;
        },
        0));
  };
  ask();
  EXPECT_EQ(answered, kChain);
  EXPECT_LE(deepest, 2);
}

TEST(LmCall, FirstFinishWinsAndDroppedCallsFail) {
  std::vector<std::string> done;
  auto c = call_for("m", 0, &done);
  int hooks = 0;
  c->on_cancel([&] { ++hooks; });
  c->cancel(Error(Code::Cancelled, "stop"));
  EXPECT_FALSE(c->complete("late"));
  c->cancel(Error(Code::Cancelled, "again"));
  EXPECT_EQ(hooks, 1);
  EXPECT_EQ(done, std::vector<std::string>{"m:err"});
  {
    auto dropped = call_for("d", 0, &done);
  }
  EXPECT_EQ(done.back(), "d:err");
  // A cancelled call waiting for a slot never starts.
  auto p = std::make_shared<Manual>(1);
  p->submit(call_for("busy", 0, &done));
  auto waiting = call_for("w", 0, &done);
  p->submit(waiting);
  waiting->cancel(Error(Code::Cancelled, "no"));
  p->started.back()->complete("x");
  EXPECT_EQ(p->order, std::vector<std::string>{"busy"});
  EXPECT_EQ(p->limiter().stats().in_flight, 0u);
}

// Calls made from an arena behave as calls made alone: each is destroyed
// with its last reference (one dropped unfinished still fails), the arena
// outlives its maker's hold while any call holds it, and a call made past
// its room (c) works the same and holds it too. (Under ASan a block freed
// too early or never is an error.)
TEST(LmCallArena, CallsOutliveTheArenasMaker) {
  std::vector<std::string> done;
  auto make = [&](CallArena* a, const std::string& model) {
    Request r;
    r.model = Value::str(model);
    return std::allocate_shared<Call>(
        CallArena::Allocator<Call>(a), std::move(r),
        [&done](Call& c, const std::string* content, const Error* err) {
          done.push_back(c.request().model.as_str() + (err ? ":err" : ":" + *content));
        },
        0);
  };
  CallArenaHold hold(CallArena::make(2));
  auto a = make(hold.get(), "a"), b = make(hold.get(), "b"), c = make(hold.get(), "c");
  const auto* pa = reinterpret_cast<const char*>(a.get());
  const auto* pb = reinterpret_cast<const char*>(b.get());
  EXPECT_LT(pb - pa, 2 * ptrdiff_t(sizeof(Call)));  // b follows a in the block
  std::weak_ptr<Call> wb = b;
  hold.reset();
  EXPECT_TRUE(b->complete("ok"));
  b.reset();
  EXPECT_TRUE(wb.expired());
  a.reset();  // dropped unfinished: fails into its hook
  EXPECT_TRUE(c->complete("late"));
  c.reset();
  EXPECT_EQ(done, (std::vector<std::string>{"b:ok", "a:err", "c:late"}));
}

TEST(LmTimer, RunsInTimeOrderAndCancels) {
  TimerQueue t;
  std::mutex mu;
  std::vector<int> seen;
  std::atomic<int> n{0};
  int64_t now = now_ns();
  for (int i : {3, 1, 2}) t.schedule(now + i * 5000000, [&, i] {
      std::lock_guard<std::mutex> lock(mu);
      seen.push_back(i);
      ++n;
    });
  // Due long after the test: cancelled before it can run, however slow the machine.
  uint64_t id = t.schedule(now + int64_t(3600) * 1000000000, [&] { seen.push_back(99); });
  EXPECT_TRUE(t.cancel(id));
  for (int i = 0; i < 400 && n < 3; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(seen, (std::vector<int>{1, 2, 3}));
}

// Callbacks due at one time run in the order they were scheduled, whatever
// slots they took.
TEST(LmTimer, CallbacksDueTogetherRunInScheduleOrder) {
  TimerQueue t;
  std::mutex mu;
  std::vector<int> seen;
  const int64_t far = now_ns() + int64_t(3600) * 1000000000;
  std::vector<uint64_t> parked;  // take slots, then free them in another order
  for (int i = 0; i < 8; ++i) parked.push_back(t.schedule(far, [] {}));
  for (int i : {5, 1, 7, 3}) EXPECT_TRUE(t.cancel(parked[size_t(i)]));
  const int64_t at = now_ns() + 5000000;
  for (int i = 0; i < 6; ++i) t.schedule(at, [&, i] {
      std::lock_guard<std::mutex> lock(mu);
      seen.push_back(i);
    });
  for (int k = 0; k < 400; ++k) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (seen.size() == 6) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(seen, (std::vector<int>{0, 1, 2, 3, 4, 5}));
}

// Slots are reused, ids are not: an old id (ran or cancelled) never
// cancels the callback that took its slot, and no id is 0.
TEST(LmTimer, IdsOfFinishedCallbacksNeverMatchLaterOnes) {
  TimerQueue t;
  const int64_t later = now_ns() + int64_t(60) * 1000000000;  // an hour: never runs in the test
  uint64_t first = t.schedule(later, [] {});
  EXPECT_NE(first, 0u);
  EXPECT_TRUE(t.cancel(first));
  EXPECT_FALSE(t.cancel(first));
  uint64_t second = t.schedule(later, [] {});  // takes the freed slot
  EXPECT_NE(second, first);
  EXPECT_NE(second, 0u);
  EXPECT_FALSE(t.cancel(first));
  EXPECT_EQ(t.pending(), 1u);
  std::atomic<bool> ran{false};
  uint64_t soon = t.schedule(now_ns(), [&] { ran = true; });
  for (int i = 0; i < 400 && !ran; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(ran);
  EXPECT_FALSE(t.cancel(soon));  // it ran
  EXPECT_EQ(t.pending(), 1u);
  EXPECT_TRUE(t.cancel(second));
  EXPECT_EQ(t.pending(), 0u);
}

// A provider's calls wait in the queue without a std::function, many
// scheduled under one lock: each runs with its call, which the queue holds
// until then (or until the queue goes, dropping it unrun).
std::atomic<int> g_timer_replies{0};
TEST(LmTimer, HoldsItsCallsUntilTheirCallbacksRun) {
  std::vector<std::string> done;
  auto ran = call_for("ran", 0, &done);
  auto dropped = call_for("dropped", 0, &done);
  std::weak_ptr<Call> ran_weak = ran;
  {
    TimerQueue t;
    const int64_t now = now_ns();
    const int64_t at[2] = {now + int64_t(3600) * 1000000000, now};
    std::shared_ptr<Call> calls[2] = {dropped, ran};
    t.schedule(at, calls, [](Call& c) {
      c.complete("on time");
      g_timer_replies.fetch_add(1, std::memory_order_release);  // after `done` was written
    });
    EXPECT_EQ(calls[0], nullptr);  // moved into the queue
    EXPECT_EQ(calls[1], nullptr);
    EXPECT_EQ(dropped.use_count(), 2);
    ran = nullptr;  // the queue holds it
    for (int i = 0; i < 400 && g_timer_replies.load(std::memory_order_acquire) == 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ASSERT_EQ(g_timer_replies.load(std::memory_order_acquire), 1);
    EXPECT_EQ(done, std::vector<std::string>{"ran:on time"});
    EXPECT_EQ(t.pending(), 1u);
  }
  EXPECT_TRUE(ran_weak.expired());    // let go once its callback ran
  EXPECT_EQ(dropped.use_count(), 1);  // the queue went: dropped unrun
  EXPECT_EQ(g_timer_replies.load(), 1);
}

// OrderedQueue leaves in the order a heap would, whether items arrive in
// order (the FIFO), out of it (the heap) or mixed, with pops in between.
TEST(LmOrderedQueue, LeavesInPriorityOrder) {
  struct Item {
    int key;
    int seq;
  };
  struct Before {
    bool operator()(const Item& a, const Item& b) const { return a.key != b.key ? a.key < b.key : a.seq < b.seq; }
  };
  struct After {
    bool operator()(const Item& a, const Item& b) const { return Before{}(b, a); }
  };
  std::mt19937 rng(7);
  OrderedQueue<Item, Before> q;
  std::priority_queue<Item, std::vector<Item>, After> ref;
  int seq = 0, key = 0;
  for (int step = 0; step < 20000; ++step) {
    const unsigned r = rng() % 10;
    if (r < 6) {  // mostly in order, sometimes earlier than the last
      key += r < 5 ? int(rng() % 3) : -int(rng() % 50);
      q.push(Item{key, seq});
      ref.push(Item{key, seq});
      ++seq;
    } else if (!ref.empty()) {
      ASSERT_EQ(q.size(), ref.size());
      EXPECT_EQ(q.top().seq, ref.top().seq);
      EXPECT_EQ(q.pop().seq, ref.top().seq);
      ref.pop();
    }
  }
  while (!ref.empty()) {
    EXPECT_EQ(q.pop().seq, ref.top().seq);
    ref.pop();
  }
  EXPECT_TRUE(q.empty());
}

}  // namespace
}  // namespace af::lm
