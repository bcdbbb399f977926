using System;
using System.Collections.Concurrent;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using System.Threading;
using System.Threading.Tasks;

namespace Af.Tests
{
    /// <summary>Transforms, control flow, host functions, scopes, programs,
    /// providers and saved graphs.</summary>
    public sealed class ApiTests : IDisposable
    {
        private readonly Context ctx = new Context();

        public void Dispose() => ctx.Dispose();

        private Value J(string json) => ctx.FromJson(json);

        private static void JsonIs(string expected, Value v, string what = "value")
        {
            using (v) Assert.Equal(expected, v.ToJson(), what);
        }

        // f(x, y) = format("<{}|{a}>", x, a=y)
        private Ir FormatIr()
        {
            return ctx.Trace((c, a) =>
            {
                using (var named = Value.Dict(c, ("a", a[1])))
                    return c.FormatNamed("<{}|{a}>", new[] { a[0] }, named);
            }, J("\"x\""), J("\"y\""));
        }

        // ask(q, model) = lm_call([{"role":"user","content":format("Q:{}", q)}], model)
        private Ir AskIr()
        {
            return ctx.Trace((c, a) =>
            {
                using (var content = c.Format("Q:{}", a[0]))
                using (var role = c.Str("user"))
                using (var msg = Value.Dict(c, ("role", role), ("content", content)))
                using (var msgs = c.List(msg))
                    return c.LmCall(msgs, a[1]);
            }, J("\"q\""), J("\"m\""));
        }

        [Test]
        public void PullbackOfFormat()
        {
            using (var ir = FormatIr())
            using (var pb = ir.Pullback(ctx))
                JsonIs("[\"<p|q>\",[\"g\",\"g\"]]", pb.Call(ctx, J("[\"p\",\"q\"]"), J("\"g\"")));
        }

        [Test]
        public void PushforwardBatchDceCseSched()
        {
            using (var ir = FormatIr())
            {
                using (var pf = ir.Pushforward(ctx))
                    JsonIs("[\"<p|q>\",\"<dp|dq>\"]", pf.Call(ctx, J("[\"p\",\"q\"]"), J("[\"dp\",\"dq\"]")));
                using (var b = ir.Batch(ctx, J("[true, false]")))
                {
                    JsonIs("[\"<a|s>\",\"<b|s>\"]", b.Call(ctx, J("[\"a\",\"b\"]"), J("\"s\"")));
                    var ex = Assert.ThrowsAf(ErrorCode.InvalidArgument, () => b.Call(ctx, J("[]"), J("\"s\"")));
                    Assert.Contains("empty", ex.Message);
                }
            }
            using (var three = ctx.Trace((c, a) =>
                   {
                       var x = c.Concat(a[0], a[0]);
                       var y = c.Concat(a[0], a[0]);
                       var z = c.Format("{}", a[0]);
                       return c.List(x, y, z);
                   }, J("\"x\"")))
            {
                three.Validate();
                using (var cse = three.Cse(ctx))
                {
                    Assert.Equal(2, cse.EqnCount, "cse equations");
                    JsonIs("[\"zz\",\"zz\",\"z\"]", cse.Call(ctx, J("\"z\"")));
                }
                using (var cse = three.Cse(ctx, true)) Assert.Equal(2, cse.EqnCount, "cse_ex equations");
                using (var dce = three.Dce(ctx, J("[false, false, true]")))
                {
                    Assert.Equal("format", dce.EqnPrim(0));
                    Assert.Equal(1, dce.EqnCount);
                    JsonIs("[null,null,\"z\"]", dce.Call(ctx, J("\"z\"")));
                }
                Assert.ThrowsAf(ErrorCode.NotFound, () => three.EqnSched(0, out uint l0, out double p0));
                using (var s = three.Sched(ctx))
                {
                    s.EqnSched(0, out uint level, out double prio);
                    Assert.Equal(0u, level, "level");
                    Assert.True(prio > 0, "priority > 0");
                    Assert.Contains("@level=0", s.ToText());
                }
                Assert.ThrowsAf(ErrorCode.InvalidArgument, () => three.Dce(ctx, J("[1]")));
            }
        }

        private Dictionary<string, Ir> Branches()
        {
            return new Dictionary<string, Ir>
            {
                ["a"] = ctx.Trace((c, x) => c.Format("A{}", x[0]), J("\"x\"")),
                ["b"] = ctx.Trace((c, x) => c.Concat(x[0], x[0]), J("\"x\"")),
            };
        }

        [Test]
        public void SwitchRunsTheNamedBranch()
        {
            var br = Branches();
            using (var ir = ctx.Trace((c, a) => c.Switch(a[0], br, a[1]), J("\"k\""), J("\"x\"")))
            {
                Assert.Equal("switch", ir.EqnPrim(0));
                JsonIs("\"Ahi\"", ir.Call(ctx, J("\"a\""), J("\"hi\"")));
                JsonIs("\"hihi\"", ir.Call(ctx, J("\"b\""), J("\"hi\"")));
                var ex = Assert.ThrowsAf(ErrorCode.NotFound, () => ir.Call(ctx, J("\"c\""), J("\"hi\"")));
                Assert.Contains("\"a\"", ex.Message, "the branch names are listed");
                using (var pb = ir.Pullback(ctx))
                    JsonIs("[\"pp\",[null,\"gg\"]]", pb.Call(ctx, J("[\"b\",\"p\"]"), J("\"g\"")));
            }
            JsonIs("\"oo\"", ctx.Switch(J("\"b\""), br, J("\"o\"")));
            Assert.ThrowsAf(ErrorCode.InvalidArgument, () => ctx.Switch(J("\"a\""), new Dictionary<string, Ir>(), J("\"o\"")));
        }

        [Test]
        public void WhileLoopRunsUntilCondIsFalse()
        {
            var yes = ctx.Trace((c, a) => c.Match(a[0], a[0]), J("\"x\""));
            var no = ctx.Trace((c, a) =>
            {
                using (var bang = c.Str("!"))
                using (var x = c.Concat(a[0], bang))
                    return c.Match(a[0], x);
            }, J("\"x\""));
            // cond(s) = s != "aaa" for s in {a, aa, aaa}, as a switch on s.
            var cond = ctx.Trace((c, a) => c.Switch(a[0], new Dictionary<string, Ir> { ["a"] = yes, ["aa"] = yes, ["aaa"] = no }, a[0]), J("\"s\""));
            var body = ctx.Trace((c, a) =>
            {
                using (var s = c.Str("a")) return c.Concat(a[0], s);
            }, J("\"s\""));
            JsonIs("\"aaa\"", ctx.WhileLoop(cond, body, J("\"a\""), 10));
            JsonIs("\"aa\"", ctx.WhileLoop(cond, body, J("\"a\""), 1));
            JsonIs("\"a\"", ctx.WhileLoop(cond, body, J("\"a\""), 0));
            Assert.ThrowsAf(ErrorCode.InvalidArgument, () => ctx.WhileLoop(body, body, J("\"a\""), 3));
        }

        [Test]
        public void HostFunctionInATracedProgram()
        {
            int calls = 0;
            ctx.RegisterFunction("upper", J("\"str\""), args =>
            {
                Interlocked.Increment(ref calls);
                return ctx.Str(args[0].AsString().ToUpperInvariant());
            });
            using (var ir = ctx.Trace((c, a) =>
                   {
                       using (var u = c.HostCall("upper", a[0])) return c.Format("<{}>", u);
                   }, J("\"x\"")))
            {
                Assert.Equal(0, calls, "calls while tracing");
                Assert.Equal("host_call", ir.EqnPrim(0));
                JsonIs("\"<ABC>\"", ir.Call(ctx, J("\"abc\"")));
                Assert.ThrowsAf(ErrorCode.InvalidArgument, () => ir.Pullback(ctx));
            }
            JsonIs("\"Q\"", ctx.HostCall("upper", J("\"q\"")));
            Assert.Equal(2, calls, "calls");
        }

        [Test]
        public void HostFunctionErrorsAreCallbackErrorsWithTheCause()
        {
            ctx.RegisterFunction("search", J("\"str\""), args => throw new InvalidOperationException("no results for " + args[0].AsString()));
            var ex = Assert.ThrowsAf(ErrorCode.Callback, () => ctx.HostCall("search", J("\"cats\"")));
            Assert.Contains("search", ex.Message);
            Assert.Contains("InvalidOperationException: no results for cats", ex.Message);
            // What the host function threw is the InnerException itself.
            var thrown = ex.InnerException as InvalidOperationException;
            Assert.True(thrown != null, "the InvalidOperationException as cause: " + ex);
            Assert.Equal("no results for cats", thrown.Message, "cause message");

            ctx.RegisterFunction("coded", J("\"str\""), args => throw new AfException(ErrorCode.Provider, "quota"));
            ex = Assert.ThrowsAf(ErrorCode.Callback, () => ctx.HostCall("coded"));
            var cause = (AfException)ex.InnerException;
            Assert.Equal(ErrorCode.Provider, cause.Code, "cause code");
            Assert.Equal("quota", cause.Message, "cause message");

            ctx.RegisterFunction("liar", J("\"int\""), args => ctx.Str("nope"));
            Assert.ThrowsAf(ErrorCode.InvalidArgument, () => ctx.HostCall("liar"));
            ex = Assert.ThrowsAf(ErrorCode.NotFound, () => ctx.HostCall("missing"));
            Assert.Contains("missing", ex.Message);
            Assert.ThrowsAf(ErrorCode.InvalidArgument, () => ctx.RegisterFunction("", J("\"str\""), a => null));
        }

        // Registers "f" with a closure over a fresh object, on a thread that
        // then exits (so no stale stack slot keeps the closure alive for
        // mono's conservative stack scan); returns a weak reference to it.
        private static WeakReference RegisterCapturing(Context c, Value kinds, string reply)
        {
            WeakReference weak = null;
            var t = new Thread(() =>
            {
                var captured = new string(reply.ToCharArray());
                c.RegisterFunction("f", kinds, a => c.Str(captured));
                weak = new WeakReference(captured);
            });
            t.Start();
            t.Join();
            return weak;
        }

        private static bool Collected(WeakReference w)
        {
            for (int i = 0; i < 50 && w.IsAlive; i++)
            {
                GC.Collect();
                GC.WaitForPendingFinalizers();
                Thread.Sleep(10);
            }
            return !w.IsAlive;
        }

        [Test]
        public void HostFunctionIsReleasedWhenReplaced()
        {
            using (var c = new Context())
            using (var kinds = c.Str("str"))
            {
                WeakReference first = RegisterCapturing(c, kinds, "first");
                WeakReference second = RegisterCapturing(c, kinds, "second");
                JsonIs("\"second\"", c.HostCall("f"));
                Assert.True(Collected(first), "the replaced closure was released");
                Assert.True(second.IsAlive, "the registered closure is kept");
            }
        }

        [Test]
        public void CollectInjectAndMemoizeScopes()
        {
            int calls = 0;
            // Pure: a memoize scope answers only calls of pure functions
            // (EffectsTests.MemoizeAnswersOnlyPureCalls).
            ctx.RegisterFunction("count", J("\"str\""), FunctionFlags.Pure,
                                 a => { Interlocked.Increment(ref calls); return a[0].Clone(); });
            using (var ir = ctx.Trace((c, a) =>
                   {
                       using (var bang = c.Str("!"))
                       using (var e = c.Concat(a[0], bang))
                       using (var k = c.Checkpoint(e, "k", "c"))
                       using (var x = c.HostCall("count", a[0]))
                       using (var y = c.HostCall("count", a[0]))
                           return c.List(k, x, y);
                   }, J("\"x\"")))
            {
                ctx.PushCollect("c");
                ir.Call(ctx, J("\"a\"")).Dispose();
                ir.Call(ctx, J("\"b\"")).Dispose();
                JsonIs("{\"k\":[\"a!\",\"b!\"]}", ctx.PopCollect());

                ctx.PushInject("c", J("{\"k\":[\"injected\"]}"));
                JsonIs("[\"injected\",\"a\",\"a\"]", ir.Call(ctx, J("\"a\"")));
                JsonIs("[\"a!\",\"a\",\"a\"]", ir.Call(ctx, J("\"a\"")));
                ctx.PopInject();

                calls = 0;
                ctx.PushMemoize();
                ir.Call(ctx, J("\"m\"")).Dispose();
                ir.Call(ctx, J("\"m\"")).Dispose();
                ctx.PopMemoize();
                Assert.Equal(1, calls, "memoized calls");
            }
            Assert.ThrowsAf(ErrorCode.InvalidArgument, () => ctx.PopCollect());
            Assert.ThrowsAf(ErrorCode.InvalidArgument, () => ctx.PopInject());
            Assert.ThrowsAf(ErrorCode.InvalidArgument, () => ctx.PopMemoize());
        }

        [Test]
        public void ProfileEventMarksTheRunsProfile()
        {
            ctx.RegisterFunction("marked", J("\"str\""), args =>
            {
                Library.ProfileEvent("my-marker", "{\"k\": 1}");
                return args[0].AsString() + "!";
            });
            ctx.RegisterFunction("bad-marker", J("\"str\""), args =>
            {
                Library.ProfileEvent("m", "[1]");
                return "unreachable";
            });
            using (var ir = ctx.Trace((c, a) => c.HostCall("marked", a[0]), J("\"x\"")))
            using (var p = Program.Compile(ctx, ir))
            {
                using (var run = p.Start(ctx, new RunOptions { Profile = true }, J("\"hi\"")))
                {
                    JsonIs("\"hi!\"", run.Wait());
                    string profile = run.Profile();
                    Assert.Contains("my-marker", profile);
                    Assert.Contains("\"ph\":\"i\"", profile);
                }

                string path = Path.Combine(Path.GetTempPath(), "af-profile-event-" + Guid.NewGuid() + ".json");
                try
                {
                    JsonIs("\"yo!\"", p.Call(ctx, new RunOptions { ProfilePath = path }, J("\"yo\"")));
                    string text = File.ReadAllText(path);
                    Assert.Contains("my-marker", text, "profile file");
                    Assert.Contains("\"ph\":\"i\"", text, "profile file");
                }
                finally
                {
                    File.Delete(path);
                }

                // A run without a profile: the host function runs, the event is dropped.
                JsonIs("\"no!\"", p.Call(ctx, J("\"no\"")));
            }

            // Outside any run (and in an eager call) it does nothing.
            Library.ProfileEvent("outside");
            Library.ProfileEvent("outside", "{\"k\": [1, 2]}");
            JsonIs("\"e!\"", ctx.HostCall("marked", J("\"e\"")));

            Assert.ThrowsAf(ErrorCode.InvalidArgument, () => Library.ProfileEvent(""));
            Assert.ThrowsAf(ErrorCode.InvalidArgument, () => Library.ProfileEvent("m", "[1]"));
            Assert.ThrowsAf(ErrorCode.InvalidArgument, () => Library.ProfileEvent("m", "\"text\""));
            Assert.ThrowsAf(ErrorCode.InvalidArgument, () => Library.ProfileEvent("m", "{bad"));
            Assert.Throws<ArgumentNullException>(() => Library.ProfileEvent(null));

            // Inside a host function the error fails the call: a CALLBACK error
            // whose cause is the AfInvalidArgumentException thrown there.
            using (var ir = ctx.Trace((c, a) => c.HostCall("bad-marker", a[0]), J("\"x\"")))
            using (var p = Program.Compile(ctx, ir))
            {
                var ex = Assert.ThrowsAf(ErrorCode.Callback, () => p.Call(ctx, new RunOptions { Profile = true }, J("\"x\"")));
                Assert.True(ex.InnerException is AfInvalidArgumentException, "cause: " + ex.InnerException);
            }
        }

        /// <summary>A provider from a spec naming its type
        /// (af_provider_new); an unknown type is refused.</summary>
        [Test]
        public void ProviderFromSpec()
        {
            using (var echo = Provider.FromSpec("{\"type\":\"echo\"}"))
                ctx.Route("m", echo);
            JsonIs("\"m|hi\"", ctx.LmCall(J("[{\"role\":\"user\",\"content\":\"hi\"}]"), J("\"m\"")));
            var ex = Assert.ThrowsAf(ErrorCode.InvalidArgument, () => Provider.FromSpec("{\"type\":\"carrier-pigeon\"}"));
            Assert.Contains("unknown type", ex.Message, "message");
        }

        [Test]
        public void ProgramRunsSyncAndAsyncWithEcho()
        {
            using (var echo = Provider.Echo())
                ctx.Route("*", echo);
            using (var ir = AskIr())
            using (var p = Program.Compile(ctx, ir))
            {
                JsonIs("\"gpt-test|Q:hi\"", p.Call(ctx, J("\"hi\""), J("\"gpt-test\"")));
                Task<Value> t = p.CallAsync(ctx, J("\"there\""), J("\"m2\""));
                Assert.True(t.Wait(10000), "the task completes");
                JsonIs("\"m2|Q:there\"", t.Result);

                ulong lastDone = 0, lastTotal = 0;
                var opts = new RunOptions { Profile = true, Progress = (d, n) => { lastDone = d; lastTotal = n; } };
                using (var run = p.Start(ctx, opts, J("\"r\""), J("\"m\"")))
                {
                    JsonIs("\"m|Q:r\"", run.Task.Result);
                    Assert.True(run.IsReady, "ready");
                    JsonIs("\"m|Q:r\"", run.Wait(), "wait again");
                    Assert.Contains("traceEvents", run.Profile());
                }
                Assert.Equal(2UL, lastDone, "progress done");
                Assert.Equal(2UL, lastTotal, "progress total");

                Assert.ThrowsAf(ErrorCode.InvalidArgument, () => p.CallAsync(ctx, J("1")));

                using (var slow = Provider.Echo("{\"latency_ms\": 2000}")) ctx.Route("slow", slow);
                var timeout = new RunOptions { Timeout = TimeSpan.FromMilliseconds(50) };
                Assert.ThrowsAf(ErrorCode.Timeout, () => p.Call(ctx, timeout, J("\"a\""), J("\"slow\"")));

                using (var cts = new CancellationTokenSource())
                {
                    var pending = p.CallAsync(ctx, null, cts.Token, J("\"a\""), J("\"slow\""));
                    cts.Cancel();
                    var agg = Assert.Throws<AggregateException>(() => pending.Wait(10000));
                    var inner = agg.InnerException as AfException;
                    Assert.True(inner != null && inner.Code == ErrorCode.Cancelled, "CANCELLED: " + agg.InnerException);
                }
                using (var bare = new Context())
                {
                    var ex = Assert.ThrowsAf(ErrorCode.NotFound, () => p.Call(bare, J("\"a\""), J("\"nowhere\"")));
                    Assert.Contains("nowhere", ex.Message);
                }
            }
        }

        [Test]
        public void MaxValueBytesBoundsTheValuesARunBuilds()
        {
            // f(s) = format("{0}" x 1000, s): 1000 bytes from a 1-byte input.
            string template = string.Concat(Enumerable.Repeat("{0}", 1000));
            using (var ir = ctx.Trace((c, a) => c.Format(template, a[0]), J("\"s\"")))
            using (var p = Program.Compile(ctx, ir))
            {
                string want = "\"" + new string('x', 1000) + "\"";
                JsonIs(want, p.Call(ctx, J("\"x\"")), "no options");
                JsonIs(want, p.Call(ctx, new RunOptions(), J("\"x\"")), "the default budget, 1 GiB");
                JsonIs(want, p.Call(ctx, new RunOptions { MaxValueBytes = 1000 }, J("\"x\"")), "a budget of exactly its size");

                var small = new RunOptions { MaxValueBytes = 100 };
                var ex = Assert.ThrowsAf(ErrorCode.OutOfMemory, () => p.Call(ctx, small, J("\"x\"")));
                Assert.True(ex is AfOutOfMemoryException, "thrown as AfOutOfMemoryException");
                Assert.Contains("max_value_bytes", ex.Message);
                Assert.Contains("format", ex.Message, "the primitive is named");
                Assert.Contains("1000 bytes", ex.Message, "the size is named");
                using (var run = p.Start(ctx, small, J("\"x\"")))
                    Assert.ThrowsAf(ErrorCode.OutOfMemory, () => run.Wait(), "an asynchronous run");
                // A cancellation token replaces Cancel but keeps the budget.
                using (var cts = new CancellationTokenSource())
                {
                    var e2 = Assert.ThrowsAf(ErrorCode.OutOfMemory, () => ir.Call(ctx, small, cts.Token, J("\"x\"")));
                    Assert.Contains("max_value_bytes", e2.Message);
                }
            }
        }

        [Test]
        public void CancelTokenStopsABlockingCall()
        {
            using (var slow = Provider.Echo("{\"latency_ms\": 5000}")) ctx.Route("*", slow);
            using (var ir = AskIr())
            using (var p = Program.Compile(ctx, ir))
            using (var token = new CancelToken())
            {
                var opts = new RunOptions { Cancel = token };
                var t = new Thread(() => { Thread.Sleep(50); token.Trigger(); });
                t.Start();
                Assert.ThrowsAf(ErrorCode.Cancelled, () => p.Call(ctx, opts, J("\"a\""), J("\"m\"")));
                t.Join();
                Assert.True(token.IsTriggered, "triggered");
                using (var run = p.Start(ctx, opts, J("\"a\""), J("\"m\"")))
                    Assert.ThrowsAf(ErrorCode.Cancelled, () => run.Wait());
                using (var cts = new CancellationTokenSource())
                {
                    cts.CancelAfter(50);
                    Assert.ThrowsAf(ErrorCode.Cancelled, () => p.Call(ctx, null, cts.Token, J("\"a\""), J("\"m\"")));
                }
            }
        }

        [Test]
        public void HostProviderCompletesFromAnotherThread()
        {
            using (var host = Provider.Host(req => new Thread(() =>
                   {
                       string json = req.Json;
                       using (var v = ctx.FromJson(json))
                       using (var model = v["model"])
                       using (var msgs = v["messages"])
                       using (var last = msgs[msgs.Count - 1])
                       using (var content = last["content"])
                       {
                           if (model.AsString() == "fail") req.Fail(ErrorCode.Provider, "host says no");
                           else req.Complete("host:" + model.AsString() + ":" + content.AsString());
                       }
                   }).Start()))
            {
                ctx.Route("*", host);
                using (var ir = AskIr())
                using (var p = Program.Compile(ctx, ir))
                {
                    JsonIs("\"host:mine:Q:hi\"", p.Call(ctx, J("\"hi\""), J("\"mine\"")));
                    JsonIs("\"host:m:Q:yo\"", p.CallAsync(ctx, J("\"yo\""), J("\"m\"")).Result);
                    var ex = Assert.ThrowsAf(ErrorCode.Provider, () => p.Call(ctx, J("\"hi\""), J("\"fail\"")));
                    Assert.Contains("host says no", ex.ToString());
                }
                Assert.Contains("\"finished\":3", host.Stats());
            }
        }

        [Test]
        public void CancellingARunWithAParkedRequest()
        {
            var parked = new BlockingCollection<LmRequest>();
            using (var host = Provider.Host(parked.Add))
            {
                ctx.Route("*", host);
                using (var ir = AskIr())
                using (var p = Program.Compile(ctx, ir))
                using (var run = p.Start(ctx, null, J("\"q\""), J("\"m\"")))
                {
                    Assert.True(parked.TryTake(out LmRequest req, 10000), "the request arrives");
                    Assert.False(run.IsReady, "ready before the answer");
                    run.Cancel();
                    Assert.ThrowsAf(ErrorCode.Cancelled, () => run.Wait());
                    Assert.True(req.IsCancelled, "request cancelled");
                    req.Complete("late");
                    Assert.ThrowsAf(ErrorCode.InvalidArgument, () => req.Complete("twice"));
                }
            }
        }

        // Feedback is text on every field of a schema call: the int and bool
        // fields take text, null is Zero, and a number as feedback is refused.
        [Test]
        public void PullbackOfSchemaCallTakesTextFeedback()
        {
            using (var echo = Provider.Echo("{}"))
            {
                ctx.Route("*", echo);
                using (var schema = J("{\"n\": {\"type\": \"int\"}, \"ok\": {\"type\": \"bool\"}, \"why\": {\"type\": \"str\"}}"))
                using (var ir = ctx.Trace((c, a) =>
                       {
                           using (var role = c.Str("user"))
                           using (var model = c.Str("m"))
                           using (var msg = Value.Dict(c, ("role", role), ("content", a[0])))
                           using (var msgs = c.List(msg))
                               return c.LmSchemaCall(msgs, model, schema);
                       }, J("\"q\"")))
                using (var pb = ir.Pullback(ctx))
                {
                    using (var out_ = pb.Call(ctx, J("[\"ticket\"]"),
                               J("{\"n\": \"too low for this ticket\", \"ok\": \"should be true: the ticket mentions a refund\", \"why\": null}")))
                    using (var cts = out_[1])
                    using (var cq = cts[0])
                    {
                        string advice = cq.AsString();
                        Assert.Contains("- $.n = 0\n  feedback: too low for this ticket", advice);
                        Assert.Contains("- $.ok = false\n  feedback: should be true: the ticket mentions a refund", advice);
                    }
                    var ex = Assert.ThrowsAf(ErrorCode.InvalidArgument,
                                             () => pb.Call(ctx, J("[\"ticket\"]"), J("{\"n\": 3, \"ok\": \"\", \"why\": \"\"}")));
                    Assert.Contains("feedback must be text", ex.Message);
                    Assert.Contains("input[1][\"n\"]", ex.Message);
                }
            }
        }

        [Test]
        public void SchemaCallsAndProviderErrors()
        {
            using (var echo = Provider.Echo("{\"max_in_flight\": 2}"))
            {
                ctx.Route("*", echo);
                JsonIs("{\"score\":3}", ctx.LmSchemaCall(J("[{\"role\":\"user\",\"content\":\"rate\"}]"), J("\"m\""),
                                                          J("{\"score\": {\"type\": \"int\", \"min\": 3, \"max\": 9}}")));
                echo.SetMaxInFlight(4);
                Assert.Contains("\"max_in_flight\":4", echo.Stats());
            }
            Assert.ThrowsAf(ErrorCode.InvalidArgument, () => Provider.Echo("{\"nope\": 1}"));
            Assert.ThrowsAf(ErrorCode.InvalidArgument, () => Provider.OpenAI("{}"));
            Assert.ThrowsAf(ErrorCode.InvalidArgument, () => Provider.Replay("{}"));
            Assert.ThrowsAf(ErrorCode.InvalidArgument, () => ctx.LmCall(J("[{\"content\":\"no role\"}]"), J("\"m\"")));
        }

        private Ir Hello()
        {
            return ctx.Trace((c, a) =>
            {
                using (var g = c.Format("Hello, {}!", a[0]))
                using (var q = c.Str("?"))
                    return c.Concat(g, q);
            }, J("\"x\""));
        }

        [Test]
        public void ProgramSaveLoad()
        {
            using (var echo = Provider.Echo()) ctx.Route("*", echo);
            string dir = Path.GetTempPath();
            string tag = System.Diagnostics.Process.GetCurrentProcess().Id.ToString();
            string path = Path.Combine(dir, "af_cs_program_" + tag + ".afg");
            string path2 = Path.Combine(dir, "af_cs_program2_" + tag + ".afg");
            using (var ir = AskIr())
            using (var p = Program.Compile(ctx, ir))
            {
                p.Save(path);
                using (var back = Program.Load(ctx, path))
                {
                    JsonIs("\"m|Q:hi\"", back.Call(ctx, J("\"hi\""), J("\"m\"")));
                    back.Save(path2);
                }
                using (var asIr = Ir.Load(ctx, path)) Assert.True(asIr.Equals(ir), "the program file loads as its IR");
                Assert.True(File.ReadAllBytes(path).SequenceEqual(File.ReadAllBytes(path2)), "same program, same bytes");
            }
            File.Delete(path);
            File.Delete(path2);
            Assert.ThrowsAf(ErrorCode.IO, () => Program.Load(ctx, "/nonexistent/dir/p.afg"));
        }

        [Test]
        public void SaveLoadRoundTrip()
        {
            string path = Path.Combine(Path.GetTempPath(), "af_cs_graph_" + System.Diagnostics.Process.GetCurrentProcess().Id + ".afg");
            using (var ir = Hello())
            {
                ir.Save(path);
                using (var back = Ir.Load(ctx, path))
                {
                    Assert.True(back.Equals(ir), "loaded IR equals the saved one");
                    JsonIs("\"Hello, World!?\"", back.Call(ctx, J("\"World\"")));
                }
                File.Delete(path);
                byte[] bytes = ir.ToBytes();
                Assert.True(bytes.SequenceEqual(ir.ToBytes()), "saving is deterministic");
                using (var again = Ir.FromBytes(ctx, bytes)) Assert.Equal(ir.Hash, again.Hash, "hash");
                Assert.Contains("format", Graph.Verify(ctx, bytes));
                Assert.True(Graph.FromJson(ctx, Graph.ToJson(ctx, bytes)).SequenceEqual(bytes), "JSON round trip");

                var bad = (byte[])bytes.Clone();
                bad[bad.Length - 1] ^= 0xff;
                Assert.ThrowsAf(ErrorCode.Format, () => Ir.FromBytes(ctx, bad));
                Assert.ThrowsAf(ErrorCode.Format, () => Ir.FromBytes(ctx, new byte[0]));
                Assert.ThrowsAf(ErrorCode.IO, () => Ir.Load(ctx, "/nonexistent/dir/x.afg"));
            }
        }
    }
}
