using System;
using System.Diagnostics;
using System.Linq;
using System.Threading;
using System.Threading.Tasks;

namespace Af.Tests
{
    /// <summary>Async host functions (a Func returning a Task) and blocking
    /// ones (on the context's host pool).</summary>
    public sealed class HostAsyncTests : IDisposable
    {
        private readonly Context ctx = new Context();

        public void Dispose() => ctx.Dispose();

        // Eight independent calls of tool name.
        private static Program FanOut(Context ctx, string name)
        {
            using (var x = ctx.Str("x"))
            using (var ir = ctx.Trace((c, a) =>
                   {
                       var outs = Enumerable.Range(0, 8).Select(i => { using (var arg = c.Int(i)) return c.HostCall(name, arg); }).ToArray();
                       return c.List(outs);
                   }, x))
                return Program.Compile(ctx, ir);
        }

        private static long Time(Context ctx, Program p, out Value result, RunOptions options = null)
        {
            var sw = Stopwatch.StartNew();
            using (var x = ctx.Str("x"))
                result = p.Call(ctx, options, x);
            return sw.ElapsedMilliseconds;
        }

        [Test]
        public void AsyncHostFunctionsOverlap()
        {
            ctx.RegisterFunctionAsync("slow", ctx.Str("str"), async args =>
            {
                long i = args[0].AsInt();
                await Task.Delay(200);
                return ctx.Str("done:" + i);
            });
            using (var p = FanOut(ctx, "slow"))
            {
                long ms = Time(ctx, p, out Value r);
                Console.WriteLine("    8 async 200 ms tools: " + ms + " ms");
                using (r) Assert.Contains("\"done:7\"", r.ToJson());
                Assert.True(ms < 800, "8 async tools overlap: " + ms + " ms");
            }
        }

        [Test]
        public void BlockingHostFunctionsRunOnTheHostPool()
        {
            using (var c = Context.WithOptions("{\"host_threads\": 8}"))
            {
                c.RegisterFunctionBlocking("slow", c.Str("str"), args =>
                {
                    Thread.Sleep(200);
                    return c.Str("done");
                });
                using (var p = FanOut(c, "slow"))
                {
                    long ms = Time(c, p, out Value r);
                    r.Dispose();
                    Console.WriteLine("    8 blocking 200 ms tools, pool of 8: " + ms + " ms");
                    Assert.True(ms < 800, "8 blocking tools overlap: " + ms + " ms");
                }
            }
        }

        [Test]
        public void CancellationReachesAnAsyncHostFunction()
        {
            int sawCancel = 0;
            ctx.RegisterFunctionAsync("waits", ctx.Str("str"), async (args, token) =>
            {
                try
                {
                    await Task.Delay(5000, token);
                }
                catch (OperationCanceledException)
                {
                    Interlocked.Increment(ref sawCancel);
                    throw;
                }
                return ctx.Str("late");
            });
            using (var p = FanOut(ctx, "waits"))
            {
                var sw = Stopwatch.StartNew();
                Value r = null;
                Assert.ThrowsAf(ErrorCode.Timeout, () => Time(ctx, p, out r, new RunOptions { Timeout = TimeSpan.FromMilliseconds(100) }));
                Assert.True(sw.ElapsedMilliseconds < 2000, "the run did not wait for its tools");
            }
            var deadline = DateTime.UtcNow.AddSeconds(2);
            while (Volatile.Read(ref sawCancel) < 8 && DateTime.UtcNow < deadline) Thread.Sleep(10);
            Assert.Equal(8, Volatile.Read(ref sawCancel), "tools that saw the cancellation");
        }

        [Test]
        public void AsyncHostFunctionErrorsNameTheFunction()
        {
            ctx.RegisterFunctionAsync("wrong", ctx.Str("str"), args => Task.FromResult(ctx.Int(1)));
            var ex = Assert.ThrowsAf(ErrorCode.InvalidArgument, () => ctx.HostCall("wrong"));
            Assert.Contains("\"wrong\"", ex.Message);
            ctx.RegisterFunctionAsync("faults", ctx.Str("str"), async args =>
            {
                await Task.Yield();
                throw new InvalidOperationException("tool down");
            });
            ex = Assert.ThrowsAf(ErrorCode.Callback, () => ctx.HostCall("faults"));
            Assert.True(ex.InnerException is InvalidOperationException, "the exception is the cause: " + ex);
            Assert.Throws<ArgumentNullException>(() => ctx.RegisterFunctionAsync("f", ctx.Str("str"), (Func<Value[], Task<Value>>)null));
        }
    }
}
