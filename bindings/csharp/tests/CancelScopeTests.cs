using System;
using System.Diagnostics;
using System.Threading;
using System.Threading.Tasks;

namespace Af.Tests
{
    /// <summary>Cancel scopes (af_cancel_scope_push / _pop): what this thread
    /// runs on a context inside <c>using (ctx.CancelScope(..))</c> ends with
    /// CANCELLED once the token fires.</summary>
    public sealed class CancelScopeTests : IDisposable
    {
        private readonly Context ctx = new Context();

        public CancelScopeTests()
        {
            using (var slow = Provider.Echo("{\"latency_ms\": 5000}")) ctx.Route("slow", slow);
            using (var slow1 = Provider.Echo("{\"latency_ms\": 150}")) ctx.Route("slow1", slow1);
            using (var quick = Provider.Echo("")) ctx.Route("*", quick);
        }

        public void Dispose() => ctx.Dispose();

        private Value Ask(string model)
        {
            using (var msgs = Value.FromJson(ctx, "[{\"role\": \"user\", \"content\": \"hi\"}]"))
            using (var m = ctx.Str(model))
                return ctx.LmCall(msgs, m);
        }

        private void AskOk(string model)
        {
            using (var r = Ask(model)) Assert.Equal(model + "|hi", r.AsString());
        }

        [Test]
        public void AnEagerLmCallInTheScopeIsCancelled()
        {
            using (var token = new CancelToken())
            using (var timer = new Timer(_ => token.Trigger(), null, 100, Timeout.Infinite))
            {
                var sw = Stopwatch.StartNew();
                using (ctx.CancelScope(token))
                {
                    Assert.ThrowsAf(ErrorCode.Cancelled, () => Ask("slow").Dispose(), "LmCall in the scope");
                    long ms = sw.ElapsedMilliseconds;
                    Assert.True(ms >= 50 && ms < 2000, "cancelled after " + ms + " ms (fired at 100 ms, the reply takes 5 s)");
                    // A fired token stays fired: the next call that waits ends at once.
                    sw.Restart();
                    Assert.ThrowsAf(ErrorCode.Cancelled, () => Ask("slow").Dispose(), "again");
                    Assert.True(sw.ElapsedMilliseconds < 1000, "second call after " + sw.ElapsedMilliseconds + " ms");
                }
                Assert.True(token.IsTriggered, "triggered");
                // After the scope, calls run.
                AskOk("m");
                AskOk("slow1");
            }
        }

        [Test]
        public void ACancellationTokenFiresTheScope()
        {
            using (var cts = new CancellationTokenSource())
            {
                var sw = Stopwatch.StartNew();
                cts.CancelAfter(100);
                using (ctx.CancelScope(cts.Token))
                    Assert.ThrowsAf(ErrorCode.Cancelled, () => Ask("slow").Dispose(), "LmCall in the scope");
                Assert.True(sw.ElapsedMilliseconds < 2000, "cancelled after " + sw.ElapsedMilliseconds + " ms");
                AskOk("slow1");
                // Already cancelled: calls that wait end at once.
                using (ctx.CancelScope(cts.Token))
                    Assert.ThrowsAf(ErrorCode.Cancelled, () => Ask("slow1").Dispose(), "already cancelled");
                // Never cancelled: calls run.
                using (ctx.CancelScope(CancellationToken.None))
                    AskOk("slow1");
            }
        }

        [Test]
        public void BlockingHostCallsAndIrRunsInTheScopeAreCancelled()
        {
            using (var release = new ManualResetEventSlim())
            using (var token = new CancelToken())
            using (var own = new CancelToken())
            using (var timer = new Timer(_ => token.Trigger(), null, 100, Timeout.Infinite))
            {
                ctx.RegisterFunctionBlocking("sleepy", ctx.Str("str"), args =>
                {
                    release.Wait(3000); // 3 s, or until the test ends
                    return ctx.Str("late");
                });
                Ir ask;
                using (var q = ctx.Str("q"))
                using (var m = ctx.Str("m"))
                    ask = ctx.Trace((t, a) =>
                    {
                        using (var msg = Value.Dict(t, ("role", t.Str("user")), ("content", a[0])))
                        using (var msgs = t.List(msg))
                            return t.LmCall(msgs, a[1]);
                    }, q, m);
                using (ask)
                {
                    var sw = Stopwatch.StartNew();
                    using (ctx.CancelScope(token))
                    {
                        using (var x = ctx.Str("x"))
                            Assert.ThrowsAf(ErrorCode.Cancelled, () => ctx.HostCall("sleepy", x).Dispose(), "blocking host call");
                        Assert.True(sw.ElapsedMilliseconds < 2000, "host call ended after " + sw.ElapsedMilliseconds + " ms");
                        using (var q = ctx.Str("q"))
                        using (var m = ctx.Str("slow"))
                            Assert.ThrowsAf(ErrorCode.Cancelled, () => ask.Call(ctx, q, m).Dispose(), "Ir.Call");
                        // A run with a token of its own is not the scope's.
                        using (var q = ctx.Str("q"))
                        using (var m = ctx.Str("m"))
                        using (var r = ask.Call(ctx, new RunOptions { Cancel = own }, CancellationToken.None, q, m))
                            Assert.Equal("m|q", r.AsString());
                    }
                    release.Set();
                }
            }
        }

        [Test]
        public void ScopesNestAndBelongToTheirThread()
        {
            // "slow1" answers after 150 ms: a call that is not stopped really waits.
            using (var outer = new CancelToken())
            using (var inner = new CancelToken())
            using (var fired = new CancelToken())
            {
                fired.Trigger();
                using (ctx.CancelScope(outer))
                {
                    using (ctx.CancelScope(inner))
                    {
                        AskOk("slow1"); // neither token fired
                        // The outer token stops a call inside the inner scope:
                        // an inner scope never shields from an outer one.
                        outer.Trigger();
                        Assert.ThrowsAf(ErrorCode.Cancelled, () => Ask("slow1").Dispose(), "outer token, inner scope");
                        // Nor does a scope that can never fire.
                        using (ctx.CancelScope(CancellationToken.None))
                            Assert.ThrowsAf(ErrorCode.Cancelled, () => Ask("slow1").Dispose(), "inside a never-firing scope");
                        // Another thread is not in this thread's scopes.
                        Exception other = null;
                        var t = new Thread(() =>
                        {
                            try { AskOk("slow1"); }
                            catch (Exception ex) { other = ex; }
                        });
                        t.Start();
                        t.Join();
                        Assert.True(other == null, "a call on another thread: " + other);
                    }
                    Assert.ThrowsAf(ErrorCode.Cancelled, () => Ask("slow1").Dispose(), "back in the outer scope");
                }
                AskOk("slow1"); // outside both scopes, calls run

                // A fired token ends nothing outside its own scope: a fired
                // inner token leaves the (unfired) outer scope's calls running.
                using (var outer2 = new CancelToken())
                using (ctx.CancelScope(outer2))
                {
                    using (ctx.CancelScope(fired))
                        Assert.ThrowsAf(ErrorCode.Cancelled, () => Ask("slow1").Dispose(), "fired inner scope");
                    AskOk("slow1");
                }
                AskOk("slow1");

                // Disposed on another thread: refused, the scope stays open
                // until disposed on its own thread.
                IDisposable scope = ctx.CancelScope(fired);
                Exception wrong = null;
                var d = new Thread(() =>
                {
                    try { scope.Dispose(); }
                    catch (Exception ex) { wrong = ex; }
                });
                d.Start();
                d.Join();
                Assert.True(wrong is InvalidOperationException, "Dispose on another thread: " + wrong);
                Assert.ThrowsAf(ErrorCode.Cancelled, () => Ask("slow1").Dispose(), "still open");
                scope.Dispose();
                scope.Dispose(); // idempotent
                AskOk("slow1");
            }
        }

        [Test]
        public void PushAndPopPairUpPerThread()
        {
            Assert.Throws<ArgumentNullException>(() => ctx.CancelScope((CancelToken)null));
            Assert.Throws<ArgumentNullException>(() => ctx.PushCancelScope(null));
            Assert.ThrowsAf(ErrorCode.InvalidArgument, () => ctx.PopCancelScope(), "pop without a push");
            using (var token = new CancelToken())
            {
                ctx.PushCancelScope(token);
                token.Dispose(); // the scope keeps its own reference
                AskOk("slow1");
                ctx.PopCancelScope();
                Assert.Throws<ObjectDisposedException>(() => ctx.CancelScope(token));
            }
            // The scope keeps the context alive until it is disposed.
            var c = new Context();
            using (var token = new CancelToken())
            {
                IDisposable scope = c.CancelScope(token);
                c.Dispose();
                scope.Dispose();
            }
        }
    }
}
