using System;
using System.Collections.Concurrent;
using System.Collections.Generic;
using System.Threading;

namespace Af.Tests
{
    /// <summary>Methods racing Dispose of the same object (README, "Threads
    /// and Dispose"): each call returns normally or throws
    /// ObjectDisposedException, and nothing touches freed native memory (a
    /// use after free would crash the run or corrupt results).</summary>
    public sealed class HandleRaceTests
    {
        private const int Workers = 6;

        // Runs each action on its own thread in a loop, and dispose on another
        // thread after a short random delay; returns once all have stopped.
        // A worker stops at its first ObjectDisposedException (or after
        // maxIters); any other exception is recorded in errors.
        private static void Race(IList<Action> actions, Action dispose, Random rnd,
                                 ConcurrentQueue<string> errors, ref int disposedSeen, int maxIters = 2000)
        {
            int seen = 0;
            using (var go = new ManualResetEventSlim())
            {
                var threads = new List<Thread>();
                foreach (var act in actions)
                {
                    var a = act;
                    threads.Add(new Thread(() =>
                    {
                        go.Wait();
                        for (int i = 0; i < maxIters; i++)
                        {
                            try
                            {
                                a();
                            }
                            catch (ObjectDisposedException)
                            {
                                Interlocked.Increment(ref seen);
                                return;
                            }
                            catch (Exception ex)
                            {
                                errors.Enqueue(ex.GetType().Name + ": " + ex.Message);
                                return;
                            }
                        }
                    }));
                }
                int delay = rnd.Next(0, 2000);
                threads.Add(new Thread(() =>
                {
                    go.Wait();
                    Thread.SpinWait(delay);
                    dispose();
                }));
                foreach (var t in threads) t.Start();
                go.Set();
                foreach (var t in threads) t.Join();
            }
            disposedSeen += seen;
        }

        private static void Use(IDisposable d)
        {
            if (d != null) d.Dispose();
        }

        [Test]
        public void ValueMethodsRacingDispose()
        {
            var errors = new ConcurrentQueue<string>();
            int disposedSeen = 0;
            var rnd = new Random(1);
            using (var ctx = new Context())
            {
                for (int round = 0; round < 150; round++)
                {
                    Value dict = ctx.FromJson("{\"a\": \"hello\", \"b\": [1, 2, 3]}");
                    Value str = ctx.Str("world");
                    var actions = new List<Action>
                    {
                        () => Assert.Equal("{\"a\":\"hello\",\"b\":[1,2,3]}", dict.ToJson(), "ToJson"),
                        () => Assert.Equal(ValueKind.Dict, dict.Kind, "Kind"),
                        () => Assert.Equal("world", str.AsString(), "AsString"),
                        () => { using (var b = dict["b"]) Assert.Equal(3, b.Count, "Count"); },
                        () => { using (var a = dict[0]) Assert.Equal("hello", a.AsString(), "index"); },
                        () => { Assert.Equal(2, dict.Keys.Count, "Keys"); Use(dict.Clone()); },
                        () => { string s = str.ToString(); Assert.True(s == "\"world\"" || s == "<disposed value>", "ToString " + s); },
                    };
                    Race(actions, () => { dict.Dispose(); str.Dispose(); }, rnd, errors, ref disposedSeen);
                    Assert.Throws<ObjectDisposedException>(() => dict.ToJson(), "after the race");
                }
            }
            Assert.Equal("", string.Join("\n", errors), "unexpected exceptions");
            Assert.True(disposedSeen > 0, "some calls saw the Dispose");
        }

        [Test]
        public void ProgramIrAndContextRacingDispose()
        {
            var errors = new ConcurrentQueue<string>();
            int disposedSeen = 0;
            var rnd = new Random(2);
            for (int round = 0; round < 40; round++)
            {
                var ctx = new Context();
                Ir ir = ctx.Trace((c, a) => c.Format("<{}>", a[0]), ctx.Str("x"));
                Program prog = Program.Compile(ctx, ir);
                Value input = ctx.Str("q");
                var actions = new List<Action>
                {
                    () => { using (var v = prog.Call(ctx, input)) Assert.Equal("<q>", v.AsString(), "Program.Call"); },
                    () => { using (var v = ir.Call(ctx, input)) Assert.Equal("<q>", v.AsString(), "Ir.Call"); },
                    () => Assert.Contains("format", ir.ToJson(), "Ir.ToJson"),
                    () => ir.ToString(),
                    () => { using (var v = ctx.Str("s")) Assert.Equal("s", v.AsString(), "Context.Str"); },
                    () => { using (var v = ctx.Format("{}!", input)) Assert.Equal("q!", v.AsString(), "Format"); },
                };
                Race(actions, () => { prog.Dispose(); ir.Dispose(); input.Dispose(); ctx.Dispose(); },
                     rnd, errors, ref disposedSeen, 300);
            }
            Assert.Equal("", string.Join("\n", errors), "unexpected exceptions");
            Assert.True(disposedSeen > 0, "some calls saw the Dispose");
        }

        // The arguments a host function receives are valid for the call: the
        // binding disposes them when the callback returns. Threads still using
        // one then get ObjectDisposedException, never freed memory.
        [Test]
        public void BorrowedHostArgumentUsedAfterTheCallbackReturns()
        {
            var errors = new ConcurrentQueue<string>();
            int disposedSeen = 0;
            using (var ctx = new Context())
            {
                var threads = new List<Thread>();
                ctx.RegisterFunction("leak", "str", args =>
                {
                    Value arg = args[0];
                    using (var started = new CountdownEvent(Workers))
                    {
                        for (int k = 0; k < Workers; k++)
                        {
                            var t = new Thread(() =>
                            {
                                started.Signal();
                                for (int i = 0; i < 100000; i++)
                                {
                                    try
                                    {
                                        if (arg.AsString() != "hi") errors.Enqueue("AsString changed");
                                        if (arg.ToJson() != "\"hi\"") errors.Enqueue("ToJson changed");
                                        if (arg.Kind != ValueKind.Str) errors.Enqueue("Kind changed");
                                    }
                                    catch (ObjectDisposedException)
                                    {
                                        Interlocked.Increment(ref disposedSeen);
                                        return;
                                    }
                                    catch (Exception ex)
                                    {
                                        errors.Enqueue(ex.GetType().Name + ": " + ex.Message);
                                        return;
                                    }
                                }
                            });
                            lock (threads) threads.Add(t);
                            t.Start();
                        }
                        started.Wait();
                    }
                    return arg.AsString() + "!";
                });
                for (int round = 0; round < 30; round++)
                {
                    using (var hi = ctx.Str("hi"))
                    using (var r = ctx.HostCall("leak", hi))
                        Assert.Equal("hi!", r.AsString(), "result");
                }
                foreach (var t in threads) t.Join();
            }
            Assert.Equal("", string.Join("\n", errors), "unexpected exceptions");
            Assert.True(disposedSeen > 0, "some threads outlived the call");
        }

        // A trace input (a placeholder) used on another thread while the
        // traced function returns.
        [Test]
        public void BorrowedTraceInputUsedAfterTheCallbackReturns()
        {
            var errors = new ConcurrentQueue<string>();
            using (var ctx = new Context())
            {
                var threads = new List<Thread>();
                for (int round = 0; round < 30; round++)
                {
                    using (var ex = ctx.Str("x"))
                    using (var ir = ctx.Trace((c, a) =>
                    {
                        Value arg = a[0];
                        using (var started = new CountdownEvent(2))
                        {
                            for (int k = 0; k < 2; k++)
                            {
                                var t = new Thread(() =>
                                {
                                    started.Signal();
                                    for (int i = 0; i < 100000; i++)
                                    {
                                        try
                                        {
                                            if (arg.Kind != ValueKind.Placeholder) errors.Enqueue("Kind changed");
                                            arg.ToString();
                                            Use(arg.Clone());
                                        }
                                        catch (ObjectDisposedException)
                                        {
                                            return;
                                        }
                                        catch (Exception e)
                                        {
                                            errors.Enqueue(e.GetType().Name + ": " + e.Message);
                                            return;
                                        }
                                    }
                                });
                                threads.Add(t);
                                t.Start();
                            }
                            started.Wait();
                        }
                        return c.Concat(arg, arg);
                    }, ex))
                    using (var hi = ctx.Str("hi"))
                    using (var r = ir.Call(ctx, hi))
                        Assert.Equal("hihi", r.AsString(), "result");
                }
                foreach (var t in threads) t.Join();
            }
            Assert.Equal("", string.Join("\n", errors), "unexpected exceptions");
        }
    }
}
