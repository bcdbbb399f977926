using System;
using System.Diagnostics;
using System.Linq;
using System.Threading;
using System.Threading.Tasks;

namespace Af.Tests
{
    /// <summary>Lazy contexts: promises evaluate on read, Eval runs
    /// independent LM calls together, dropped promises never run, the plan
    /// cache compiles a repeated structure once, an evaluation can be stopped
    /// (Eval with RunOptions, "eval_timeout_ms"), and a promise keeps its
    /// context alive.</summary>
    public sealed class LazyTests : IDisposable
    {
        private readonly Context ctx = Context.Lazy();

        public void Dispose() => ctx.Dispose();

        private Value Ask(string q) => AskOn(ctx, q);

        private static Value AskOn(Context c, string q)
        {
            using (var msgs = c.FromJson("[{\"role\":\"user\",\"content\":\"" + q + "\"}]"))
            using (var model = c.Str("m"))
                return c.LmCall(msgs, model);
        }

        // A lazy context (with options) whose LM calls take 3 s.
        private static Context SlowLazy(string options)
        {
            var c = Context.WithOptions(options);
            using (var echo = Provider.Echo("{\"latency_ms\": 3000}")) c.Route("*", echo);
            return c;
        }

        private static long Counter(Context c, string section, string field)
        {
            string s = c.Stats();
            int at = s.IndexOf("\"" + section + "\"", StringComparison.Ordinal);
            at = s.IndexOf("\"" + field + "\":", at, StringComparison.Ordinal) + field.Length + 3;
            int end = at;
            while (end < s.Length && char.IsDigit(s[end])) end++;
            return long.Parse(s.Substring(at, end - at));
        }

        [Test]
        public void APromiseEvaluatesWhenRead()
        {
            using (var x = ctx.Str("cs"))
            using (var h = ctx.Format("Hello {}", x))
            {
                Assert.Equal(ValueKind.Str, h.Kind, "kind known at once");
                Assert.False(h.IsReady, "ready before the read");
                Assert.Equal("Hello cs", h.AsString());
                Assert.True(h.IsReady, "ready after the read");
                Assert.Equal(1L, Counter(ctx, "lazy", "evaluated"));
            }
        }

        [Test]
        public void EvalRunsTenCallsTogether()
        {
            using (var echo = Provider.Echo("{\"latency_ms\": 200}"))
            {
                ctx.Route("*", echo);
                Value[] outs = Enumerable.Range(0, 10).Select(i => Ask("q" + i)).ToArray();
                var sw = Stopwatch.StartNew();
                ctx.Eval(outs);
                Assert.True(sw.ElapsedMilliseconds < 1500, "10 calls of 200 ms took " + sw.ElapsedMilliseconds + " ms");
                Assert.Equal("m|q5", outs[5].AsString());
                foreach (var v in outs) v.Dispose();
            }
        }

        [Test]
        public void ADroppedPromiseMakesNoCall()
        {
            using (var echo = Provider.Echo())
            {
                ctx.Route("*", echo);
                Ask("never").Dispose();
                using (var kept = Ask("kept")) Assert.Equal("m|kept", kept.AsString());
                Assert.Contains("\"submitted\":1", echo.Stats());
                Assert.Equal(1L, Counter(ctx, "lazy", "dropped"));
            }
        }

        [Test]
        public void ALoopCompilesOnceAndBadInputIsRefused()
        {
            for (int i = 0; i < 20; i++)
            {
                using (var a = ctx.Str("n"))
                using (var b = ctx.Str(i.ToString()))
                using (var v = ctx.Concat(a, b))
                    Assert.Equal("n" + i, v.AsString());
            }
            Assert.Equal(1L, Counter(ctx, "plan_cache", "misses"));
            Assert.Equal(19L, Counter(ctx, "plan_cache", "hits"));
            using (var other = Context.Lazy())
            using (var x = other.Str("x"))
            using (var foreign = other.Format("{}", x))
            {
                Assert.ThrowsAf(ErrorCode.InvalidArgument, () => ctx.Format("{}", foreign).Dispose());
                Assert.ThrowsAf(ErrorCode.InvalidArgument, () => ctx.Eval(foreign));
            }
            Assert.ThrowsAf(ErrorCode.InvalidArgument, () => Context.WithOptions("{\"lazy\": 1}").Dispose());
        }
    
        [Test]
        public void EvalWithATimeoutStopsTheEvaluation()
        {
            using (var c = SlowLazy("{\"lazy\": true}"))
            using (var p = AskOn(c, "slow"))
            {
                var sw = Stopwatch.StartNew();
                Assert.ThrowsAf(ErrorCode.Timeout, () => c.Eval(new RunOptions { Timeout = TimeSpan.FromMilliseconds(100) }, p));
                Assert.True(sw.ElapsedMilliseconds < 2000, "a 100 ms timeout took " + sw.ElapsedMilliseconds + " ms");
                // The promise holds the evaluation's error: reading it runs nothing.
                Assert.True(p.IsReady, "the promise is settled");
                Assert.ThrowsAf(ErrorCode.Timeout, () => p.AsString(), "reading the promise");
                Assert.True(sw.ElapsedMilliseconds < 2000, "the read waited: " + sw.ElapsedMilliseconds + " ms");
                Assert.Equal(1L, Counter(c, "lazy", "timed_out"));
                // Summary is for asynchronous runs; EvalWithSummary returns it.
                var e = Assert.ThrowsAf(ErrorCode.InvalidArgument, () => c.Eval(new RunOptions { Summary = true }));
                Assert.Contains("EvalWithSummary", e.Message);
            }
        }

        [Test]
        public void ACancelTokenStopsEval()
        {
            using (var c = SlowLazy("{\"lazy\": true}"))
            using (var p = AskOn(c, "slow"))
            using (var token = new CancelToken())
            {
                Task trigger = Task.Run(() =>
                {
                    Thread.Sleep(100);
                    token.Trigger();
                });
                var sw = Stopwatch.StartNew();
                Assert.ThrowsAf(ErrorCode.Cancelled, () => c.Eval(new RunOptions { Cancel = token }, p));
                Assert.True(sw.ElapsedMilliseconds < 2000, "cancelled after 100 ms, took " + sw.ElapsedMilliseconds + " ms");
                Assert.True(trigger.Wait(10000), "triggered");
                Assert.ThrowsAf(ErrorCode.Cancelled, () => p.AsString(), "reading the promise");
                Assert.Equal(1L, Counter(c, "lazy", "cancelled"));
            }
            // A CancellationToken does the same, here through EvalAsync.
            using (var c = SlowLazy("{\"lazy\": true}"))
            using (var p = AskOn(c, "slow"))
            using (var cts = new CancellationTokenSource())
            {
                var sw = Stopwatch.StartNew();
                Task evaluated = c.EvalAsync(null, cts.Token, p);
                cts.CancelAfter(100);
                var agg = Assert.Throws<AggregateException>(() => evaluated.Wait(10000), "the Task faults");
                Assert.True(agg.InnerException is AfCancelledException, "CANCELLED: " + agg.InnerException);
                Assert.True(sw.ElapsedMilliseconds < 2000, "cancelled after 100 ms, took " + sw.ElapsedMilliseconds + " ms");
            }
        }

        [Test]
        public void EvalWithSummaryReportsTheEvaluation()
        {
            using (var echo = Provider.Echo())
            {
                ctx.Route("*", echo);
                using (var a = Ask("a"))
                using (var b = Ask("b"))
                {
                    ctx.EvalWithSummary(null, out string summary, a, b);
                    Assert.Contains("\"calls\":2", summary);
                    Assert.Equal("m|b", b.AsString());
                }
            }
        }

        [Test]
        public void TheContextEvalTimeoutBoundsARead()
        {
            using (var c = SlowLazy("{\"lazy\": true, \"eval_timeout_ms\": 100}"))
            using (var p = AskOn(c, "slow"))
            {
                var sw = Stopwatch.StartNew();
                Assert.ThrowsAf(ErrorCode.Timeout, () => p.AsString());
                Assert.True(sw.ElapsedMilliseconds < 2000, "a 100 ms deadline took " + sw.ElapsedMilliseconds + " ms");
            }
        }

        // A promise of a lazy context made on a thread that then exits (no
        // stale stack slot keeps the Context for mono's conservative scan);
        // weak refers to that Context.
        private static Value PromiseOfADroppedContext(out WeakReference weak)
        {
            Value promise = null;
            WeakReference w = null;
            var t = new Thread(() =>
            {
                var c = Context.Lazy();
                using (var echo = Provider.Echo()) c.Route("*", echo);
                promise = AskOn(c, "kept");
                w = new WeakReference(c);
            });
            t.Start();
            t.Join();
            weak = w;
            return promise;
        }

        // Collects until w's target is gone. IsAlive runs on threads that then
        // exit: a stale copy of the target on this thread's stack would keep
        // it alive for mono's conservative scan.
        private static bool Collected(WeakReference w)
        {
            bool alive = true;
            for (int i = 0; i < 50 && alive; i++)
            {
                GC.Collect();
                GC.WaitForPendingFinalizers();
                var t = new Thread(() => alive = w.IsAlive);
                t.Start();
                t.Join();
            }
            return !alive;
        }

        [Test]
        public void APromiseKeepsItsContextAlive()
        {
            // Collected: the promise holds the native context.
            using (Value p = PromiseOfADroppedContext(out WeakReference weak))
            {
                Assert.True(Collected(weak), "the Context was collected");
                Assert.False(p.IsReady, "not evaluated yet");
                Assert.Equal("m|kept", p.AsString());
            }

            // Disposed: clones, items and lists made from a promise hold it too,
            // also when made after the Dispose.
            Value greeting, list;
            using (var c = Context.Lazy())
            using (var x = c.Str("cs"))
            {
                greeting = c.Format("Hello {}", x);
                list = c.List(greeting);
            }
            Value copy = greeting.Clone();
            greeting.Dispose();
            Value item = list[0];
            copy.Dispose();
            using (list) Assert.Equal("[\"Hello cs\"]", list.ToJson());
            using (item) Assert.Equal("Hello cs", item.AsString());
        }
    }
}
