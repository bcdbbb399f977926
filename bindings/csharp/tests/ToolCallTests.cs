using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using System.Threading;

namespace Af.Tests
{
    /// <summary>Context.LmToolCall (af_lm_tool_call) and Context.ToolResults
    /// (af_tool_results): eager on the echo provider (which calls each tool
    /// once, in order, with its smallest arguments, then answers
    /// "&lt;model&gt;|&lt;last message&gt;"), traced, the agent loop (WhileLoop
    /// over a Scan of Switches on host functions) traced, saved, loaded and
    /// rerun, a host provider answering tool calls, and the errors.</summary>
    public sealed class ToolCallTests : IDisposable
    {
        private readonly Context ctx = new Context();
        private readonly Provider echo = Provider.Echo();

        public ToolCallTests()
        {
            ctx.Route("m", echo);
        }

        public void Dispose()
        {
            echo.Dispose();
            ctx.Dispose();
        }

        private Value J(string json) => ctx.FromJson(json);

        private const string Msgs =
            "[{\"role\": \"system\", \"content\": \"be brief\"}, {\"role\": \"user\", \"content\": \"1 + 2? France?\"}]";
        private const string Tools =
            "[{\"name\": \"add\", \"description\": \"The sum of two integers.\", \"parameters\": " +
            "{\"a\": {\"type\": \"int\", \"min\": 1}, \"b\": {\"type\": \"int\", \"min\": 2}}}, " +
            "{\"name\": \"lookup\", \"parameters\": {\"key\": {\"type\": \"enum\", \"values\": [\"capital_of_france\", \"x\"]}}}]";

        private static void JsonIs(string expected, Value v, string what = "value")
        {
            using (v) Assert.Equal(expected, v.ToJson(), what);
        }

        // The JSON of v[key] (v is kept).
        private static string At(Value v, string key)
        {
            using (var x = v[key]) return x.ToJson();
        }

        private static string Str(Value v, string key)
        {
            using (var x = v[key]) return x.AsString();
        }

        [Test]
        public void EagerConversationOnEcho()
        {
            using (var msgs = J(Msgs))
            using (var tools = J(Tools))
            using (var empty = ctx.Str(""))
            using (var model = ctx.Str("m"))
            {
                Value r1 = ctx.LmToolCall(msgs, empty, model, tools);
                Assert.Equal("arguments,called,names,text,turn", string.Join(",", r1.Keys.OrderBy(k => k, StringComparer.Ordinal)),
                             "output keys");
                Assert.Equal("true", At(r1, "called"));
                Assert.Equal("\"\"", At(r1, "text"));
                Assert.Equal("[\"add\"]", At(r1, "names"));
                using (var args = r1["arguments"])
                {
                    Assert.Equal(1, args.Count);
                    using (var a0 = args[0])
                        JsonIs("{\"a\":1,\"b\":2}", J(a0.AsString()), "add's smallest arguments");
                }
                using (var turn = J(Str(r1, "turn")))
                {
                    Assert.Equal("\"assistant\"", At(turn, "role"));
                    Assert.Contains("\"id\":\"call_0\"", At(turn, "tool_calls"));
                }

                Value h1;
                using (var turn = r1["turn"])
                using (var results = ctx.List("3"))
                    h1 = ctx.ToolResults(empty, turn, results);
                Assert.Equal(ValueKind.Str, h1.Kind);
                using (var h = J(h1.AsString()))
                {
                    Assert.Equal(2, h.Count);
                    using (var tool = h[1])
                    {
                        Assert.Equal("\"tool\"", At(tool, "role"));
                        Assert.Equal("\"call_0\"", At(tool, "tool_call_id"));
                        Assert.Equal("\"3\"", At(tool, "content"));
                    }
                }

                Value r2 = ctx.LmToolCall(msgs, h1, model, tools);
                Assert.Equal("[\"lookup\"]", At(r2, "names"));
                Assert.Equal("[\"{\\\"key\\\":\\\"capital_of_france\\\"}\"]", At(r2, "arguments"));
                Value h2;
                using (var turn = r2["turn"])
                using (var results = ctx.List("Paris"))
                    h2 = ctx.ToolResults(h1, turn, results);

                // Every tool called: the answer echoes the last message, the last tool's result.
                using (var r3 = ctx.LmToolCall(msgs, h2, model, tools))
                {
                    Assert.Equal("false", At(r3, "called"));
                    Assert.Equal("\"m|Paris\"", At(r3, "text"));
                    Assert.Equal("[]", At(r3, "names"));
                    Assert.Equal("[]", At(r3, "arguments"));
                    using (var turn = r3["turn"])
                    using (var none = ctx.List())
                    using (var h3 = ctx.ToolResults(h2, turn, none))
                    using (var h = J(h3.AsString()))
                    {
                        Assert.Equal(5, h.Count);
                        using (var last = h[4]) Assert.Equal("\"m|Paris\"", At(last, "content"));
                    }
                }
                // Sampling params travel with the call.
                using (var p = J("{\"temperature\": 0, \"max_tokens\": 32}"))
                using (var r = ctx.LmToolCall(msgs, empty, model, tools, p))
                    Assert.Equal("[\"add\"]", At(r, "names"));
                r1.Dispose(); r2.Dispose(); h1.Dispose(); h2.Dispose();
            }
        }

        [Test]
        public void TracedRecordsBothAndAgreesWithEager()
        {
            using (var tools = J(Tools))
            using (var q = ctx.Str("q"))
            using (var h = ctx.Str(""))
            using (var x = ctx.Str("x"))
            {
                Ir ir = ctx.Trace((c, a) =>
                {
                    Value msgs = c.List(Value.Dict(c, ("role", (Value)"user"), ("content", a[0])));
                    Value r = c.LmToolCall(msgs, a[1], "m", tools);
                    return Value.Dict(c, ("r", r), ("history", c.ToolResults(a[1], r["turn"], c.List(a[2]))));
                }, q, h, x);
                var prims = new List<string>();
                for (int i = 0; i < ir.EqnCount; i++) prims.Add(ir.EqnPrim(i));
                Assert.True(prims.Contains("lm_tool_call") && prims.Contains("tool_results"), string.Join(",", prims));
                using (var three = ctx.Str("3"))
                using (var out1 = ir.Call(ctx, q, h, three))
                using (var msgs = J("[{\"role\": \"user\", \"content\": \"q\"}]"))
                using (var eager = ctx.LmToolCall(msgs, h, "m", tools))
                {
                    Assert.Equal(eager.ToJson(), At(out1, "r"));
                    using (var turn = eager["turn"])
                    using (var results = ctx.List("3"))
                    using (var hist = ctx.ToolResults(h, turn, results))
                        Assert.Equal(hist.ToJson(), At(out1, "history"));
                    using (var loaded = Ir.FromBytes(ctx, ir.ToBytes()))
                    {
                        Assert.True(loaded.Equals(ir), "loaded IR equals the traced one");
                        JsonIs(out1.ToJson(), loaded.Call(ctx, q, h, three));
                    }
                }
                ir.Dispose();
            }
        }

        // The agent: while the model calls tools (at most maxIters steps), ask
        // it, run each call through a switch in a scan, extend the history.
        private Ir Agent(Context c0, ulong maxIters)
        {
            Value tools = c0.FromJson(Tools);
            Value msgs = c0.FromJson(Msgs);
            var branches = new Dictionary<string, Ir>
            {
                { "add", c0.Trace((c, a) => c.HostCall("add", a[0]), "{}") },
                { "lookup", c0.Trace((c, a) => c.HostCall("lookup", a[0]), "{}") },
            };
            Value call = Value.Dict(c0, ("name", (Value)"add"), ("arguments", (Value)"{}"));
            Ir runTool = c0.Trace((c, a) => c.List(a[0], c.Switch(a[1]["name"], branches, a[1]["arguments"])), "", call);
            Value state = c0.FromJson("{\"history\": \"\", \"called\": true, \"text\": \"\"}");
            Ir step = c0.Trace((c, a) =>
            {
                Value r = c.LmToolCall(msgs, a[0]["history"], "m", tools);
                Value calls = Value.Dict(c, ("name", r["names"]), ("arguments", r["arguments"]));
                Value results = c.Scan(runTool, "", calls)[1];
                Value history = c.ToolResults(a[0]["history"], r["turn"], results);
                return Value.Dict(c, ("history", history), ("called", r["called"]), ("text", r["text"]));
            }, state);
            Ir cond = c0.Trace((c, a) => a[0]["called"], state);
            return c0.Trace((c, a) =>
                c.WhileLoop(cond, step, Value.Dict(c, ("history", a[0]), ("called", (Value)true), ("text", (Value)"")),
                            maxIters), "");
        }

        private static void RegisterTools(Context c, List<string> calls)
        {
            c.RegisterFunction("add", "str", args =>
            {
                string json = args[0].AsString();
                lock (calls) calls.Add("add " + json);
                using (var v = c.FromJson(json))
                using (var a = v["a"])
                using (var b = v["b"])
                    return (a.AsInt() + b.AsInt()).ToString();
            });
            c.RegisterFunction("lookup", "str", args =>
            {
                string json = args[0].AsString();
                lock (calls) calls.Add("lookup " + json);
                return json.Contains("capital_of_france") ? "Paris" : "?";
            });
        }

        [Test]
        public void AgentLoopTracedSavedLoadedAndRerun()
        {
            var calls = new List<string>();
            RegisterTools(ctx, calls);
            using (var agent = Agent(ctx, 4))
            using (var empty = ctx.Str(""))
            {
                Assert.Equal(1, agent.EqnCount);
                Assert.Equal("while_loop", agent.EqnPrim(0));
                Value out1 = agent.Call(ctx, empty);
                Assert.Equal("false", At(out1, "called"));
                Assert.Equal("\"m|Paris\"", At(out1, "text"));
                Assert.Contains("\"finished\":3", echo.Stats(), "three LM calls: add, lookup, the answer");
                Assert.Equal("add {\"a\":1,\"b\":2}|lookup {\"key\":\"capital_of_france\"}", string.Join("|", calls));
                using (var h = J(Str(out1, "history")))
                {
                    Assert.Equal(5, h.Count);
                    var roles = new List<string>();
                    for (int i = 0; i < h.Count; i++)
                        using (var m = h[i]) roles.Add(Str(m, "role"));
                    Assert.Equal("assistant,tool,assistant,tool,assistant", string.Join(",", roles));
                }

                // Saved to a file and loaded (as an IR and as a compiled program): the same result.
                string path = Path.Combine(Path.GetTempPath(), "af-agent-" + Guid.NewGuid() + ".afg");
                try
                {
                    agent.Save(path);
                    using (var loaded = Ir.Load(ctx, path))
                    {
                        Assert.True(loaded.Equals(agent), "loaded agent equals the traced one");
                        JsonIs(out1.ToJson(), loaded.Call(ctx, empty), "rerun of the loaded IR");
                    }
                    using (var prog = Program.Compile(ctx, agent))
                    {
                        prog.Save(path);
                        using (var other = new Context())
                        using (var e2 = Provider.Echo())
                        {
                            other.Route("m", e2);
                            RegisterTools(other, new List<string>());
                            using (var p2 = Program.Load(other, path))
                            using (var e = other.Str(""))
                                JsonIs(out1.ToJson(), p2.Call(other, e), "rerun in another context");
                        }
                    }
                }
                finally
                {
                    File.Delete(path);
                }
                out1.Dispose();
            }
            // max_iters bounds the steps: one step, the call of add.
            using (var one = Agent(ctx, 1))
            using (var empty = ctx.Str(""))
            using (var o = one.Call(ctx, empty))
            {
                Assert.Equal("true", At(o, "called"));
                using (var h = J(Str(o, "history"))) Assert.Equal(2, h.Count);
            }
        }

        [Test]
        public void HostProviderSeesTheToolsAndAnswersCalls()
        {
            int asked = 0;
            using (var host = Provider.Host(req =>
            {
                string json = req.Json;
                if (!json.Contains("\"tools\"")) { req.Fail(ErrorCode.Provider, "no tools in " + json); return; }
                if (Interlocked.Increment(ref asked) == 1)
                    req.Complete("{\"content\": \"let me add\", \"tool_calls\": [{\"id\": \"x1\", \"name\": \"add\", " +
                                 "\"arguments\": {\"a\": 20, \"b\": 22}}]}");
                else
                    req.Complete("{\"content\": \"done\", \"tool_calls\": []}");
            }))
            using (var msgs = J(Msgs))
            using (var tools = J(Tools))
            using (var empty = ctx.Str(""))
            {
                ctx.Route("host", host);
                using (var r = ctx.LmToolCall(msgs, empty, "host", tools))
                {
                    Assert.Equal("\"let me add\"", At(r, "text"));
                    Assert.Equal("[\"add\"]", At(r, "names"));
                    Assert.Equal("[\"{\\\"a\\\":20,\\\"b\\\":22}\"]", At(r, "arguments"));
                    using (var turn = r["turn"])
                    using (var results = ctx.List("42"))
                    using (var h = ctx.ToolResults(empty, turn, results))
                    using (var r2 = ctx.LmToolCall(msgs, h, "host", tools))
                    {
                        Assert.Equal("false", At(r2, "called"));
                        Assert.Equal("\"done\"", At(r2, "text"));
                    }
                }
            }
        }

        [Test]
        public void Errors()
        {
            using (var msgs = J(Msgs))
            using (var tools = J(Tools))
            using (var empty = ctx.Str(""))
            using (var r = ctx.LmToolCall(msgs, empty, "m", tools))
            using (var turn = r["turn"])
            {
                // Not one result per call: INVALID_ARGUMENT, eagerly and when a traced program runs.
                using (var none = ctx.List())
                    Assert.Throws<AfInvalidArgumentException>(() => ctx.ToolResults(empty, turn, none), "no results");
                using (var two = ctx.List("3", "4"))
                {
                    var ex = Assert.ThrowsAf(ErrorCode.InvalidArgument, () => ctx.ToolResults(empty, turn, two), "two results");
                    Assert.True(ex is AfInvalidArgumentException, "AfInvalidArgumentException");
                    using (var lists = J("[false, false, true]"))
                    using (var one = ctx.List("x"))
                    using (var ir = ctx.TraceWith((c, a) => c.ToolResults(a[0], a[1], a[2]), new Value[] { empty, turn, one }, lists))
                    {
                        using (var ok = ctx.List("3"))
                        using (var h = ir.Call(ctx, empty, turn, ok))
                            Assert.Equal(ValueKind.Str, h.Kind);
                        Assert.ThrowsAf(ErrorCode.InvalidArgument, () => ir.Call(ctx, empty, turn, two).Dispose(), "traced");
                    }
                }
                // A malformed history or turn.
                using (var one = ctx.List("3"))
                {
                    Assert.ThrowsAf(ErrorCode.InvalidArgument, () => ctx.ToolResults("not json", turn, one), "history");
                    Assert.ThrowsAf(ErrorCode.InvalidArgument, () => ctx.ToolResults(empty, "not json", one), "turn");
                }
                Assert.ThrowsAf(ErrorCode.InvalidArgument, () => ctx.LmToolCall(msgs, "not json", "m", tools), "history");
                // Bad tools: duplicate names, a bad name, parameters that are not a container.
                foreach (var bad in new[] { "[{\"name\": \"t\"}, {\"name\": \"t\"}]", "[{\"name\": \"no spaces\"}]",
                                            "[{\"name\": \"t\", \"parameters\": {\"type\": \"int\"}}]" })
                    using (var t = J(bad))
                        Assert.ThrowsAf(ErrorCode.InvalidArgument, () => ctx.LmToolCall(msgs, empty, "m", t), bad);
                Assert.ThrowsAf(ErrorCode.NotFound, () => ctx.LmToolCall(msgs, empty, "nowhere", tools), "no route");
                Assert.Throws<ArgumentNullException>(() => ctx.LmToolCall(msgs, null, "m", tools), "null history");
                Assert.Throws<ArgumentNullException>(() => ctx.LmToolCall(msgs, empty, "m", tools, null), "null params");
                Assert.Throws<ArgumentNullException>(() => ctx.ToolResults(empty, turn, null), "null results");
            }
        }
    }
}
