using System;
using System.Diagnostics;
using System.IO;
using System.Linq;
using System.Threading;
using System.Threading.Tasks;

namespace Af.Tests
{
    /// <summary>Task-based forms of the calls that wait on LM work or files:
    /// IR calls (async and cancellable), lazy evaluation, saving and loading
    /// graphs and programs.</summary>
    public sealed class AsyncTests : IDisposable
    {
        private readonly Context ctx = new Context();

        public AsyncTests()
        {
            using (var slow = Provider.Echo("{\"latency_ms\": 2000}")) ctx.Route("slow", slow);
            using (var quick = Provider.Echo("")) ctx.Route("*", quick);
        }

        public void Dispose() => ctx.Dispose();

        // ask(q, model) = lm_call([{"role":"user","content":q}], model)
        private static Ir AskIr(Context c)
        {
            using (var q = c.Str("q"))
            using (var m = c.Str("m"))
                return c.Trace((t, a) =>
                {
                    using (var msg = Value.Dict(t, ("role", t.Str("user")), ("content", a[0])))
                    using (var msgs = t.List(msg))
                        return t.LmCall(msgs, a[1]);
                }, q, m);
        }

        private static AfException Faulted(Task t, string what)
        {
            var agg = Assert.Throws<AggregateException>(() => t.Wait(10000), what);
            var inner = agg.InnerException as AfException;
            Assert.True(inner != null, what + ": an AfException, not " + agg.InnerException);
            return inner;
        }

        [Test]
        public void IrCallAsyncRunsWithOptions()
        {
            using (var ir = AskIr(ctx))
            {
                ulong done = 0;
                var opts = new RunOptions { Progress = (d, total) => done = d };
                using (var r = ir.CallAsync(ctx, opts, CancellationToken.None, ctx.Str("hi"), ctx.Str("m")).Result)
                    Assert.Equal("m|hi", r.AsString());
                Assert.Equal(1UL, done, "progress");
                using (var r = ir.CallAsync(ctx, ctx.Str("x"), ctx.Str("m")).Result)
                    Assert.Equal("m|x", r.AsString());
                // Input errors fault the Task (they are not thrown by CallAsync).
                Task<Value> bad = ir.CallAsync(ctx, ctx.Int(1), ctx.Str("m"));
                Assert.Equal(ErrorCode.InvalidArgument, Faulted(bad, "wrong kind").Code);
                Assert.Throws<ArgumentNullException>(() => ir.CallAsync(null, ctx.Str("x"), ctx.Str("m")));
            }
        }

        [Test]
        public void IrCallAsyncIsCancelledByItsToken()
        {
            using (var ir = AskIr(ctx))
            using (var cts = new CancellationTokenSource())
            {
                var sw = Stopwatch.StartNew();
                Task<Value> pending = ir.CallAsync(ctx, null, cts.Token, ctx.Str("a"), ctx.Str("slow"));
                Assert.False(pending.IsCompleted, "a 2 s call is still running");
                cts.CancelAfter(30);
                Assert.Equal(ErrorCode.Cancelled, Faulted(pending, "cancelled").Code);
                Assert.True(sw.ElapsedMilliseconds < 1500, "cancelled after " + sw.ElapsedMilliseconds + " ms");
                // A token cancelled before the start: the run ends at once.
                Task<Value> never = ir.CallAsync(ctx, null, cts.Token, ctx.Str("a"), ctx.Str("slow"));
                Assert.Equal(ErrorCode.Cancelled, Faulted(never, "cancelled before").Code);
            }
        }

        [Test]
        public void IrCallIsCancelledByItsToken()
        {
            using (var ir = AskIr(ctx))
            using (var cts = new CancellationTokenSource())
            {
                using (var r = ir.Call(ctx, null, cts.Token, ctx.Str("b"), ctx.Str("m")))
                    Assert.Equal("m|b", r.AsString());
                cts.CancelAfter(30);
                var sw = Stopwatch.StartNew();
                Assert.ThrowsAf(ErrorCode.Cancelled, () => ir.Call(ctx, null, cts.Token, ctx.Str("a"), ctx.Str("slow")));
                Assert.True(sw.ElapsedMilliseconds < 1500, "cancelled after " + sw.ElapsedMilliseconds + " ms");
                var timeout = new RunOptions { Timeout = TimeSpan.FromMilliseconds(30) };
                Assert.ThrowsAf(ErrorCode.Timeout, () => ir.Call(ctx, timeout, CancellationToken.None, ctx.Str("a"), ctx.Str("slow")));
            }
        }

        [Test]
        public void IrCallAsyncRunsNowOnALazyContext()
        {
            using (var lazy = Context.Lazy())
            using (var echo = Provider.Echo(""))
            using (var ir = AskIr(lazy))
            {
                lazy.Route("*", echo);
                using (var r = ir.CallAsync(lazy, lazy.Str("z"), lazy.Str("m")).Result)
                {
                    Assert.True(r.IsReady, "ran, not recorded");
                    Assert.Equal("m|z", r.AsString());
                }
            }
        }

        [Test]
        public void EvalAsyncEvaluatesPromisesTogether()
        {
            using (var lazy = Context.Lazy())
            using (var echo = Provider.Echo("{\"latency_ms\": 300}"))
            {
                lazy.Route("*", echo);
                Value[] outs = Enumerable.Range(0, 4).Select(i =>
                {
                    using (var msgs = lazy.FromJson("[{\"role\":\"user\",\"content\":\"q" + i + "\"}]"))
                    using (var model = lazy.Str("m"))
                        return lazy.LmCall(msgs, model);
                }).ToArray();
                var sw = Stopwatch.StartNew();
                Task evaluated = lazy.EvalAsync(outs);
                Assert.False(evaluated.IsCompleted, "four 300 ms calls are still running");
                Assert.True(evaluated.Wait(10000), "evaluated");
                Assert.True(sw.ElapsedMilliseconds < 1100, "4 calls of 300 ms took " + sw.ElapsedMilliseconds + " ms");
                Assert.True(outs.All(v => v.IsReady), "every promise ready");
                Assert.Equal("m|q2", outs[2].AsString());
                foreach (var v in outs) v.Dispose();

                // A promise of another context: Eval's error faults the Task.
                using (var other = Context.Lazy())
                using (var x = other.Str("x"))
                using (var p = other.Format("{}", x))
                    Assert.Equal(ErrorCode.InvalidArgument, Faulted(lazy.EvalAsync(p), "foreign promise").Code);
            }
        }

        [Test]
        public void GraphsAndProgramsSaveAndLoadAsync()
        {
            string dir = Path.Combine(Path.GetTempPath(), "af-cs-async-" + Process.GetCurrentProcess().Id);
            Directory.CreateDirectory(dir);
            try
            {
                using (var ir = AskIr(ctx))
                using (var p = Program.Compile(ctx, ir))
                {
                    string irPath = Path.Combine(dir, "ask.afg"), progPath = Path.Combine(dir, "ask.afp");
                    Assert.True(ir.SaveAsync(irPath).Wait(10000), "ir saved");
                    Assert.True(p.SaveAsync(progPath).Wait(10000), "program saved");
                    using (var loaded = Ir.LoadAsync(ctx, irPath).Result)
                        Assert.True(loaded.Equals(ir), "the IR round-trips");
                    using (var loaded = Program.LoadAsync(ctx, progPath).Result)
                    using (var r = loaded.Call(ctx, ctx.Str("l"), ctx.Str("m")))
                        Assert.Equal("m|l", r.AsString());

                    // libaf's errors fault the Task.
                    string missing = Path.Combine(dir, "missing.afg");
                    Assert.Equal(ErrorCode.IO, Faulted(Ir.LoadAsync(ctx, missing), "missing ir").Code);
                    Assert.Equal(ErrorCode.IO, Faulted(Program.LoadAsync(ctx, missing), "missing program").Code);
                    File.WriteAllText(Path.Combine(dir, "junk.afg"), "not a graph");
                    Assert.Equal(ErrorCode.Format, Faulted(Ir.LoadAsync(ctx, Path.Combine(dir, "junk.afg")), "junk").Code);

                    // A token cancelled before the start: nothing is written.
                    using (var cts = new CancellationTokenSource())
                    {
                        cts.Cancel();
                        string never = Path.Combine(dir, "never.afg");
                        var save = ir.SaveAsync(never, cts.Token);
                        Assert.Throws<AggregateException>(() => save.Wait(10000), "cancelled save");
                        Assert.True(save.IsCanceled, "the save Task is cancelled");
                        Assert.False(File.Exists(never), "nothing written");
                        Assert.True(Program.LoadAsync(ctx, progPath, cts.Token).ContinueWith(t => t.IsCanceled).Result,
                                    "the load Task is cancelled");
                    }
                    Assert.Throws<ArgumentNullException>(() => Ir.LoadAsync(null, irPath));
                    Assert.Throws<ArgumentNullException>(() => Program.LoadAsync(null, progPath));
                }
            }
            finally
            {
                Directory.Delete(dir, true);
            }
        }
    }
}
