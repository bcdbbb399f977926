// agent: a tool-using agent as a traced program. The model is offered two
// tools (a calculator and a lookup table); each step it either calls tools
// — the program runs them and appends their results to the conversation —
// or answers, ending the loop (at most kMaxSteps steps).
//
//   agent(question) = while_loop(state.called, step, {question, history: "", called: true, text: ""})
//   step(state)     = r = lm_tool_call([system, user: question], state.history, "agent", tools)
//                     results = scan over (r.names, r.arguments): switch(name, {add, lookup})(arguments)
//                     {question, history: tool_results(state.history, r.turn, results), r.called, r.text}
//
// The program is batched over several questions, compiled, saved to
// agent.afg and loaded back; both runs must agree. The model "agent"
// answers through the offline echo provider, which calls each tool once
// and then answers with the last tool's result; set AF_AGENT_URL (an
// OpenAI-compatible endpoint with tool calling, e.g. http://127.0.0.1:8080/v1)
// to ask a real model there.
//
// Usage: agent_example [QUESTION...]
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "af/af.hpp"

namespace {

constexpr uint64_t kMaxSteps = 6;

const char* kSystem =
    "You answer questions with the tools given. Call a tool when it helps; when you know the answer, reply "
    "with it in one sentence.";

const char* kTools = R"([
  {"name": "add", "description": "Adds two integers.",
   "parameters": {"a": {"type": "int"}, "b": {"type": "int"}}},
  {"name": "lookup", "description": "The population of a city, from a small table.",
   "parameters": {"city": {"type": "str", "doc": "a city name, e.g. Paris"}}}
])";

// The tools themselves: host functions the program calls by name. Each
// takes its call's arguments (JSON text, checked against the tool's
// parameters) and returns its result as text.
void register_tools(af::Context& ctx) {
  ctx.register_function("add", ctx.str("str"), [&ctx](const std::vector<af::Value>& in) {
    af::Value args = ctx.json(in[0].str());
    return ctx.str(std::to_string(args["a"].as_int() + args["b"].as_int()));
  }, {.pure = true});
  ctx.register_function("lookup", ctx.str("str"), [&ctx](const std::vector<af::Value>& in) {
    const std::string city = ctx.json(in[0].str())["city"].str();
    static const std::pair<const char*, const char*> kTable[] = {
        {"Paris", "2.1 million"}, {"Lyon", "0.5 million"}, {"Tokyo", "14 million"}};
    for (const auto& [name, population] : kTable)
      if (city == name) return ctx.str(population);
    return ctx.str("no entry for \"" + city + "\"");
  }, {.pure = true});
}

void route_agent(af::Context& ctx) {
  const char* url = std::getenv("AF_AGENT_URL");
  if (url && *url) {
    // Greedy: the agent's steps are decisions, and the saved program's run
    // below must be able to agree with the first.
    std::string spec = std::string(R"({"type":"openai","base_url":")") + url +
                       R"(","extra":{"temperature":0,"seed":7},"schema_retries":2})";
    ctx.route("agent", af::Provider::from_spec(spec));
  } else {
    ctx.route("agent", af::Provider::from_spec(R"({"type":"echo"})"));
  }
}

af::Ir trace_agent(af::Context& ctx) {
  const af::Value state_example = ctx.json(R"({"question":"q","history":"","called":true,"text":""})");
  // One tool call: switch on the tool's name to the host function.
  auto tool = [&ctx](const char* name) {
    return ctx.trace([name](af::Context& c, const std::vector<af::Value>& in) { return c.host_call(name, {in[0]}); },
                     {ctx.str("{}")});
  };
  const af::Ir add = tool("add"), lookup = tool("lookup");
  const af::Ir run_call = ctx.trace(
      [&](af::Context& c, const std::vector<af::Value>& in) {  // (carry, [name, arguments]) -> [carry, result]
        af::Value result = c.switch_(in[1][size_t(0)], {{"add", add}, {"lookup", lookup}}, {in[1][1]});
        return c.list({in[0], result});
      },
      {ctx.str(""), ctx.json(R"(["add", "{}"])")});
  const af::Ir cond = ctx.trace([](af::Context&, const std::vector<af::Value>& in) { return in[0]["called"]; },
                                {state_example});
  const af::Value tools = ctx.json(kTools);
  const af::Ir step = ctx.trace(
      [&](af::Context& c, const std::vector<af::Value>& in) {
        const af::Value& s = in[0];
        af::Value messages = c.list({c.dict({{"role", c.str("system")}, {"content", c.str(kSystem)}}),
                                     c.dict({{"role", c.str("user")}, {"content", s["question"]}})});
        af::Value r = c.lm_tool_call(messages, s["history"], c.str("agent"), tools);
        af::Value results = c.scan(run_call, c.str(""), c.list({r["names"], r["arguments"]}))[1];
        return c.dict({{"question", s["question"]},
                       {"history", c.tool_results(s["history"], r["turn"], results)},
                       {"called", r["called"]},
                       {"text", r["text"]}});
      },
      {state_example});
  return ctx.trace(
      [&](af::Context& c, const std::vector<af::Value>& in) {
        af::Value init = c.dict({{"question", in[0]}, {"history", c.str("")}, {"called", c.boolean(true)},
                                 {"text", c.str("")}});
        af::Value end = c.while_loop(cond, step, init, kMaxSteps);
        return c.dict({{"answer", end["text"]}, {"history", end["history"]}});
      },
      {ctx.str("q")});
}

}  // namespace

int main(int argc, char** argv) {
  try {
    af::Context ctx;
    route_agent(ctx);
    register_tools(ctx);
    std::vector<af::Value> questions;
    for (int i = 1; i < argc; ++i) questions.push_back(ctx.str(argv[i]));
    if (questions.empty())
      questions = {ctx.str("What is 17 + 25?"), ctx.str("How many people live in Paris?")};

    const af::Ir agent = ctx.batch(trace_agent(ctx));
    af::Program program = af::Program::compile(ctx, agent);
    const af::Value answers = program.call(ctx, {ctx.list(questions)});
    program.save("agent.afg");
    const af::Value again = af::Program::load(ctx, "agent.afg").call(ctx, {ctx.list(questions)});
    if (again.json() != answers.json()) {
      std::fprintf(stderr, "the reloaded program answered differently:\n%s\n", again.json().c_str());
      return 1;
    }
    std::printf("(the program saved to agent.afg and loaded back answered the same)\n");
    for (size_t i = 0; i < questions.size(); ++i) {
      std::printf("Q: %s\n", questions[i].str().c_str());
      // The conversation: each tool call and what the tool answered.
      for (af::Value m : ctx.json(answers["history"][i].str()).items()) {
        if (m["role"].str() == "tool") std::printf("   %s -> %s\n", m["name"].str().c_str(), m["content"].str().c_str());
      }
      std::printf("A: %s\n", answers["answer"][i].str().c_str());
    }
    return 0;
  } catch (const af::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
