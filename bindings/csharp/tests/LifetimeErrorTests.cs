using System;
using System.Runtime.CompilerServices;
using System.Threading;
using System.Threading.Tasks;

namespace Af.Tests
{
    /// <summary>Runs that outlive their caller's references, concurrent
    /// Dispose, the exception types per code and callback exceptions coming
    /// back as themselves.</summary>
    public sealed class LifetimeErrorTests
    {
        private static void Collect()
        {
            for (int i = 0; i < 3; i++)
            {
                GC.Collect();
                GC.WaitForPendingFinalizers();
            }
        }

        // ask(q, model) on a context only the run references afterwards.
        [MethodImpl(MethodImplOptions.NoInlining)]
        private static ProgramRun StartOnDroppedContext(int latencyMs)
        {
            var ctx = new Context();
            using (var slow = Provider.Echo("{\"latency_ms\": " + latencyMs + "}")) ctx.Route("*", slow);
            var ir = ctx.Trace((c, a) =>
            {
                using (var content = c.Format("Q:{}", a[0]))
                using (var role = c.Str("user"))
                using (var msg = Value.Dict(c, ("role", role), ("content", content)))
                using (var msgs = c.List(msg))
                    return c.LmCall(msgs, a[1]);
            }, ctx.Str("q"), ctx.Str("m"));
            return Program.Compile(ctx, ir).Start(ctx, null, ctx.Str("q"), ctx.Str("m"));
        }

        [Test]
        public void RunKeepsItsContextAliveThroughCollections()
        {
            for (int i = 0; i < 5; i++)
            {
                using (var run = StartOnDroppedContext(100))
                {
                    Collect();
                    using (var v = run.Wait()) Assert.Equal("\"m|Q:q\"", v.ToJson(), "run " + i);
                }
            }
            // Dropping the run too: the task still completes.
            Task<Value> t = StartOnDroppedContext(50).Task;
            Collect();
            Assert.True(t.Wait(10000), "the task completes");
            using (var v = t.Result) Assert.Equal("\"m|Q:q\"", v.ToJson());
        }

        [Test]
        public void RunSurvivesDisposeOfItsContextAndProgram()
        {
            var ctx = new Context();
            using (var slow = Provider.Echo("{\"latency_ms\": 100}")) ctx.Route("*", slow);
            var ir = ctx.Trace((c, a) =>
            {
                using (var role = c.Str("user"))
                using (var msg = Value.Dict(c, ("role", role), ("content", a[0])))
                using (var msgs = c.List(msg))
                    return c.LmCall(msgs, a[1]);
            }, ctx.Str("q"), ctx.Str("m"));
            var p = Program.Compile(ctx, ir);
            using (var run = p.Start(ctx, null, ctx.Str("x"), ctx.Str("m")))
            {
                p.Dispose();
                ctx.Dispose();
                Collect();
                using (var v = run.Wait()) Assert.Equal("\"m|x\"", v.ToJson());
            }
        }

        [Test]
        public void ConcurrentDisposeOfEveryHandleFreesOnce()
        {
            using (var ctx = new Context())
            {
                Func<IDisposable>[] makers =
                {
                    () => ctx.Str("x"), () => new Context(), () => Provider.Echo(), () => new CancelToken(),
                    () => ctx.Trace((c, a) => c.Concat(a[0], a[0]), ctx.Str("x")),
                };
                foreach (var make in makers)
                {
                    for (int i = 0; i < 200; i++)
                    {
                        IDisposable d = make();
                        using (var go = new ManualResetEventSlim())
                        {
                            var threads = new Thread[4];
                            for (int k = 0; k < threads.Length; k++)
                            {
                                threads[k] = new Thread(() => { go.Wait(); d.Dispose(); });
                                threads[k].Start();
                            }
                            go.Set();
                            foreach (var th in threads) th.Join();
                        }
                    }
                }
                var v = ctx.Str("y");
                v.Dispose();
                Assert.Throws<ObjectDisposedException>(() => v.ToJson(), "use after Dispose");
            }
        }

        [Test]
        public void EachCodeHasItsOwnExceptionType()
        {
            using (var ctx = new Context())
            {
                var nf = Assert.Throws<AfNotFoundException>(() => ctx.HostCall("nowhere"), "NotFound");
                Assert.Equal(ErrorCode.NotFound, nf.Code);
                // The hint names this binding's method, not the C function.
                Assert.Contains("Context.RegisterFunction", nf.Message);
                Assert.False(nf.Message.Contains("af_register_function"), "no C name in " + nf.Message);
                Assert.Throws<AfInvalidArgumentException>(() => ctx.FromJson("{").Dispose(), "bad JSON");
                foreach (ErrorCode code in Enum.GetValues(typeof(ErrorCode)))
                {
                    AfException e = AfException.Create(code, "m");
                    Assert.Equal(code, e.Code);
                    Assert.Equal("Af" + code + "Exception", e.GetType().Name);
                }
            }
        }

        private static Value ThrowFromHost(Value[] args)
        {
            throw new InvalidOperationException("no results");
        }

        [Test]
        public void HostExceptionIsTheInnerExceptionWithItsStack()
        {
            using (var ctx = new Context())
            {
                ctx.RegisterFunction("search", ctx.Str("str"), ThrowFromHost);
                using (var ir = ctx.Trace((c, a) => c.HostCall("search", a[0]), ctx.Str("x")))
                using (var p = Program.Compile(ctx, ir))
                {
                    var ex = Assert.Throws<AfCallbackException>(() => p.Call(ctx, ctx.Str("q")), "sync call");
                    var inner = ex.InnerException as InvalidOperationException;
                    Assert.True(inner != null, "the host's exception as InnerException: " + ex);
                    Assert.Contains("ThrowFromHost", inner.StackTrace, "the host's stack");

                    var agg = Assert.Throws<AggregateException>(() => p.CallAsync(ctx, ctx.Str("q")).Wait(10000), "async");
                    Assert.True(agg.InnerException.InnerException is InvalidOperationException, "async: " + agg);
                }
            }
        }

        [Test]
        public void HostProviderExceptionComesBack()
        {
            var thrown = new TimeZoneNotFoundException("provider bug");
            using (var ctx = new Context())
            {
                using (var host = Provider.Host(req => { throw thrown; })) ctx.Route("*", host);
                using (var ir = ctx.Trace((c, a) =>
                {
                    using (var role = c.Str("user"))
                    using (var msg = Value.Dict(c, ("role", role), ("content", a[0])))
                    using (var msgs = c.List(msg))
                        return c.LmCall(msgs, a[0]);
                }, ctx.Str("q")))
                using (var p = Program.Compile(ctx, ir))
                {
                    var ex = Assert.Throws<AfProviderException>(() => p.Call(ctx, ctx.Str("q")), "provider");
                    Exception e = ex;
                    while (e != null && !ReferenceEquals(e, thrown)) e = e.InnerException;
                    Assert.True(e != null, "the thrown exception is in the chain: " + ex);
                }
            }
        }
    }
}
