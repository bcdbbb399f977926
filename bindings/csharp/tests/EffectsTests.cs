using System;
using System.Linq;
using System.Threading;
using System.Threading.Tasks;

namespace Af.Tests
{
    /// <summary>Host functions registered pure or effectful (FunctionFlags,
    /// af_register_function_with): what compile (dce, cse), memoize and a lazy
    /// context may do with their calls, how the equation JSON shows it, and the
    /// registration's errors. "send" stands for a tool with an effect
    /// (registered without flags, the default), "lookup" for a pure one; each
    /// counts its calls. Every test fails if the flag were ignored.</summary>
    public sealed class EffectsTests : IDisposable
    {
        private readonly Context ctx = new Context();
        private int sent, looked;

        public void Dispose() => ctx.Dispose();

        private Value J(string json) => ctx.FromJson(json);

        private static void JsonIs(string expected, Value v, string what = "value")
        {
            using (v) Assert.Equal(expected, v.ToJson(), what);
        }

        private void RegisterBoth(Context c)
        {
            using (var kinds = c.Str("str"))
            {
                c.RegisterFunction("send", kinds, a => { Interlocked.Increment(ref sent); return "sent:" + a[0].AsString(); });
                c.RegisterFunction("lookup", kinds, FunctionFlags.Pure,
                                   a => { Interlocked.Increment(ref looked); return "found:" + a[0].AsString(); });
            }
            sent = looked = 0;
        }

        // f(x) = x, calling send(x) and lookup(x) and reading neither.
        private Ir UnusedCalls()
        {
            using (var x = ctx.Str("x"))
                return ctx.Trace((c, a) =>
                {
                    c.HostCall("send", a[0]).Dispose();
                    c.HostCall("lookup", a[0]).Dispose();
                    return a[0].Clone();
                }, x);
        }

        // f(x) = concat(name(x), name(x)): two equal calls.
        private Ir Twice(string name)
        {
            using (var x = ctx.Str("x"))
                return ctx.Trace((c, a) =>
                {
                    using (var p = c.HostCall(name, a[0]))
                    using (var q = c.HostCall(name, a[0]))
                        return c.Concat(p, q);
                }, x);
        }

        private static int HostCalls(Ir ir) =>
            Enumerable.Range(0, ir.EqnCount).Count(i => ir.EqnPrim(i) == "host_call");

        // The JSON of the which-th host_call equation of ir.
        private static string HostEqnJson(Ir ir, int which)
        {
            for (int i = 0, seen = 0; i < ir.EqnCount; i++)
                if (ir.EqnPrim(i) == "host_call" && seen++ == which) return ir.EqnJson(i);
            throw new AssertionException("no host_call equation #" + which + " in " + ir.ToText());
        }

        [Test]
        public void UnusedEffectfulCallRunsUnusedPureCallDoesNot()
        {
            RegisterBoth(ctx);
            using (var ir = UnusedCalls())
            {
                JsonIs("\"a\"", ir.Call(ctx, J("\"a\"")));
                Assert.Equal(1, sent, "effectful calls (unused result)");
                Assert.Equal(0, looked, "pure calls (unused result)");
                using (var dce = ir.Dce(ctx))
                {
                    Assert.Equal(1, HostCalls(dce), "host calls left by dce");
                    Assert.Contains("\"name\":\"send\"", HostEqnJson(dce, 0), "the call dce keeps");
                }
                using (var p = Program.Compile(ctx, ir))
                    JsonIs("\"b\"", p.Call(ctx, J("\"b\"")));
                Assert.Equal(2, sent, "effectful calls after a compiled run");
                Assert.Equal(0, looked, "pure calls after a compiled run");
            }
        }

        [Test]
        public void EqualPureCallsMergeEqualEffectfulCallsDoNot()
        {
            RegisterBoth(ctx);
            using (var send2 = Twice("send"))
            using (var lookup2 = Twice("lookup"))
            {
                using (var merged = send2.Cse(ctx, true)) Assert.Equal(2, HostCalls(merged), "send calls after cse (merge_nondeterministic)");
                using (var merged = lookup2.Cse(ctx)) Assert.Equal(1, HostCalls(merged), "lookup calls after cse");
                // Running compiles, and compile merges what cse may.
                JsonIs("\"sent:asent:a\"", send2.Call(ctx, J("\"a\"")));
                Assert.Equal(2, sent, "effectful calls");
                JsonIs("\"found:afound:a\"", lookup2.Call(ctx, J("\"a\"")));
                Assert.Equal(1, looked, "pure calls");
            }
        }

        [Test]
        public void MemoizeAnswersOnlyPureCalls()
        {
            RegisterBoth(ctx);
            using (var s = Twice("send"))
            using (var l = Twice("lookup"))
            {
                ctx.PushMemoize();
                try
                {
                    JsonIs("\"sent:asent:a\"", s.Call(ctx, J("\"a\"")));
                    JsonIs("\"sent:asent:a\"", s.Call(ctx, J("\"a\"")));
                    Assert.Equal(4, sent, "effectful calls under memoize");
                    JsonIs("\"found:afound:a\"", l.Call(ctx, J("\"a\"")));
                    JsonIs("\"found:afound:a\"", l.Call(ctx, J("\"a\"")));
                    Assert.Equal(1, looked, "pure calls under memoize");
                }
                finally
                {
                    ctx.PopMemoize();
                }
            }
        }

        [Test]
        public void LazyContextRunsADroppedEffectfulPromiseAtEval()
        {
            using (var lc = Context.Lazy())
            using (var x = lc.Str("a"))
            {
                RegisterBoth(lc);
                lc.HostCall("send", x).Dispose();
                lc.HostCall("lookup", x).Dispose();
                Assert.Equal(0, sent, "recorded, not run");
                lc.Eval();
                Assert.Equal(1, sent, "the dropped effectful promise ran at Eval");
                Assert.Equal(0, looked, "the dropped pure promise never ran");
                lc.Eval();
                Assert.Equal(1, sent, "it ran once");

                // Dropped, then the next evaluation (a read) runs it too.
                lc.HostCall("send", x).Dispose();
                using (var y = lc.Str("b"))
                using (var kept = lc.HostCall("lookup", y))
                    Assert.Equal("found:b", kept.AsString());
                Assert.Equal(2, sent, "the dropped effectful promise ran at the next evaluation");
                Assert.Equal(1, looked, "the read pure promise ran");

                // Evaluated by Eval, then read: it ran once.
                using (var kept = lc.HostCall("send", x))
                {
                    lc.Eval();
                    Assert.Equal("sent:a", kept.AsString());
                }
                Assert.Equal(3, sent, "effectful calls");
            }
        }

        [Test]
        public void PureAsyncAndBlockingFunctionsWork()
        {
            int asyncCalls = 0, blockingCalls = 0, poolThread = 0;
            using (var c = Context.WithOptions("{\"host_threads\": 1}"))
            using (var kinds = c.Str("str"))
            {
                c.RegisterFunctionAsync("lookup_async", kinds, FunctionFlags.Pure, async (args, ct) =>
                {
                    Interlocked.Increment(ref asyncCalls);
                    await Task.Delay(1, ct);
                    return "async:" + args[0].AsString();
                });
                c.RegisterFunctionAsync("lookup_async2", kinds, FunctionFlags.Pure,
                                        args => Task.FromResult((Value)("async2:" + args[0].AsString())));
                c.RegisterFunctionBlocking("lookup_pool", kinds, FunctionFlags.Pure, args =>
                {
                    Interlocked.Increment(ref blockingCalls);
                    poolThread = Thread.CurrentThread.ManagedThreadId;
                    return "pool:" + args[0].AsString();
                });

                using (var q = c.Str("q"))
                {
                    JsonIs("\"async:q\"", c.HostCall("lookup_async", q));
                    JsonIs("\"async2:q\"", c.HostCall("lookup_async2", q));
                    JsonIs("\"pool:q\"", c.HostCall("lookup_pool", q));
                }
                Assert.Equal(1, asyncCalls, "async calls");
                Assert.Equal(1, blockingCalls, "blocking calls");
                // A sync function called eagerly runs on the calling thread, a
                // blocking one on the host pool.
                Assert.NotEqual(Thread.CurrentThread.ManagedThreadId, poolThread, "the blocking function's thread");
                asyncCalls = blockingCalls = 0;

                // Pure: two equal calls run once, unused calls not at all.
                using (var x = c.Str("x"))
                using (var ir = c.Trace((t, a) =>
                       {
                           t.HostCall("lookup_async", a[0]).Dispose();
                           t.HostCall("lookup_pool", a[0]).Dispose();
                           using (var p1 = t.HostCall("lookup_async", a[0]))
                           using (var p2 = t.HostCall("lookup_async", a[0]))
                           using (var b1 = t.HostCall("lookup_pool", a[0]))
                           using (var b2 = t.HostCall("lookup_pool", a[0]))
                           using (var n1 = t.Concat(a[0], "1"))
                           using (var n2 = t.Concat(a[0], "2"))
                           using (var n3 = t.Concat(a[0], "3"))
                           using (var b3 = t.HostCall("lookup_pool", n1))
                           using (var b4 = t.HostCall("lookup_pool", n2))
                           using (var b5 = t.HostCall("lookup_pool", n3))
                               return t.List(p1, p2, b1, b2, b3, b4, b5);
                       }, x))
                {
                    Assert.Contains("\"effects\":false", HostEqnJson(ir, 0), "async function's equation");
                    Assert.Contains("\"effects\":false", HostEqnJson(ir, 1), "blocking function's equation");
                    JsonIs("[\"async:a\",\"async:a\",\"pool:a\",\"pool:a\",\"pool:a1\",\"pool:a2\",\"pool:a3\"]",
                           ir.Call(c, J("\"a\"")));
                }
                Assert.Equal(1, asyncCalls, "pure async calls (two equal, one unused)");
                Assert.Equal(4, blockingCalls, "pure blocking calls (two equal, one unused, three others)");
            }
        }

        [Test]
        public void BadFlagsAreInvalidArgument()
        {
            int ran = 0;
            using (var kinds = ctx.Str("str"))
            {
                var ex = Assert.ThrowsAf(ErrorCode.InvalidArgument,
                                         () => ctx.RegisterFunctionAsync("f", kinds, FunctionFlags.Blocking,
                                                                         args => Task.FromResult((Value)"x")),
                                         "blocking + async");
                Assert.True(ex is AfInvalidArgumentException, "the binding's INVALID_ARGUMENT type: " + ex.GetType().Name);
                Assert.Contains("FunctionFlags.Blocking", ex.Message);
                Assert.False(ex.Message.Contains("af_register_function"), "no C name in " + ex.Message);
                ex = Assert.ThrowsAf(ErrorCode.InvalidArgument,
                                     () => ctx.RegisterFunctionAsync("f", kinds, FunctionFlags.Pure | FunctionFlags.Blocking,
                                                                     (args, ct) => Task.FromResult((Value)"x")),
                                     "pure + blocking + async");
                Assert.ThrowsAf(ErrorCode.InvalidArgument,
                                () => ctx.RegisterFunction("f", kinds, (FunctionFlags)4, a => { ran++; return "x"; }),
                                "unknown flag bits");
                // Nothing was registered.
                Assert.ThrowsAf(ErrorCode.NotFound, () => ctx.HostCall("f"));
                Assert.Equal(0, ran, "calls");
                // Blocking alone is fine for a sync function (RegisterFunction
                // with FunctionFlags.Blocking is RegisterFunctionBlocking).
                ctx.RegisterFunction("f", kinds, FunctionFlags.Blocking, a => { ran++; return "x"; });
                JsonIs("\"x\"", ctx.HostCall("f"));
                Assert.Equal(1, ran, "calls");
            }
        }

        [Test]
        public void EqnJsonShowsPureAndEffects()
        {
            RegisterBoth(ctx);
            using (var ir = UnusedCalls())
            {
                string s = HostEqnJson(ir, 0), l = HostEqnJson(ir, 1);
                Assert.Contains("\"name\":\"send\"", s);
                Assert.Contains("\"effects\":true", s);
                Assert.False(s.Contains("\"pure\""), "no \"pure\" param for send: " + s);
                Assert.Contains("\"name\":\"lookup\"", l);
                Assert.Contains("\"effects\":false", l);
                Assert.Contains("\"pure\":true", l);

                // A saved graph keeps the flags it was traced with, whatever
                // is registered when it runs.
                using (var loaded = Ir.FromBytes(ctx, ir.ToBytes()))
                {
                    Assert.True(ir.Equals(loaded), "the loaded graph equals the traced one");
                    Assert.Contains("\"pure\":true", HostEqnJson(loaded, 1));
                    using (var kinds = ctx.Str("str"))
                    {
                        ctx.RegisterFunction("send", kinds, FunctionFlags.Pure, a => { Interlocked.Increment(ref sent); return "s"; });
                        ctx.RegisterFunction("lookup", kinds, FunctionFlags.None, a => { Interlocked.Increment(ref looked); return "l"; });
                    }
                    JsonIs("\"a\"", loaded.Call(ctx, J("\"a\"")));
                    Assert.Equal(1, sent, "send (effectful when traced) ran");
                    Assert.Equal(0, looked, "lookup (pure when traced) did not");
                }
            }
        }
    }
}
