using System;
using System.Collections.Concurrent;
using System.Text.RegularExpressions;
using System.Threading;
using System.Threading.Tasks;

namespace Af.Tests
{
    /// <summary>A callback's exception travels inside its error (an
    /// af_error_new_with payload): callbacks failing at once with the same
    /// message each give their own caller their own exception object, also
    /// through nested host functions, traces and host providers.</summary>
    public sealed class ErrorPayloadTests : IDisposable
    {
        private const int Iterations = 200;
        private const string SameMessage = "the tool is down";
        private static readonly TimeSpan Overlap = TimeSpan.FromSeconds(10);

        private readonly Context ctx = new Context();

        public void Dispose() => ctx.Dispose();

        /// <summary>Exceptions that differ only by Tag: their messages (and
        /// so the errors libaf sees) are identical.</summary>
        public sealed class TaggedException : Exception
        {
            public string Tag { get; }

            public TaggedException(string tag) : base(SameMessage)
            {
                Tag = tag;
            }
        }

        private static string TagOf(int i, int k) => "run-" + i + "-" + (char)('a' + k);

        /// <summary>Runs call(tag) for two tags on two threads at once, and
        /// returns what each threw (or null).</summary>
        private static Exception[] TwoAtOnce(int i, Action<string> call)
        {
            var tasks = new Task<Exception>[2];
            for (int k = 0; k < 2; k++)
            {
                string tag = TagOf(i, k);
                tasks[k] = Task.Factory.StartNew(() =>
                {
                    try
                    {
                        call(tag);
                        return null;
                    }
                    catch (Exception ex)
                    {
                        return ex;
                    }
                }, TaskCreationOptions.LongRunning);
            }
            Assert.True(Task.WaitAll(tasks, TimeSpan.FromSeconds(60)), "iteration " + i + " finished");
            return new[] { tasks[0].Result, tasks[1].Result };
        }

        /// <summary>Throws a new TaggedException for tag once both callbacks of
        /// the iteration have made theirs (so both errors are in flight at
        /// once, with the same message).</summary>
        private static Exception FailTogether(Barrier both, ConcurrentDictionary<string, Exception> thrown, string tag)
        {
            var ex = new TaggedException(tag);
            Assert.True(thrown.TryAdd(tag, ex), "one failure per tag: " + tag);
            both.SignalAndWait(Overlap);
            return ex;
        }

        private static void IsOwn(ConcurrentDictionary<string, Exception> thrown, string tag, Exception got, string what)
        {
            Assert.True(got != null, what + " " + tag + ": the exception came back");
            var tagged = got as TaggedException;
            Assert.True(tagged != null, what + " " + tag + ": a TaggedException, not " + got);
            Assert.Equal(tag, tagged.Tag, what + ": the caller's own exception");
            Assert.Same(thrown[tag], got, what + " " + tag + ": the very object thrown");
        }

        /// <summary>Code names come from libaf's one table
        /// (af_error_code_name).</summary>
        [Test]
        public void CodeNamesAreLibafs()
        {
            Assert.Equal("NOT_FOUND", AfException.NameOf(ErrorCode.NotFound), "NotFound");
            Assert.Equal("OUT_OF_MEMORY", AfException.NameOf(ErrorCode.OutOfMemory), "OutOfMemory");
            Assert.Equal("UNKNOWN", AfException.NameOf((ErrorCode)99), "99");
            try
            {
                ctx.HostCall("no such function").Dispose();
                Assert.True(false, "a call of an unregistered function fails");
            }
            catch (AfException e)
            {
                Assert.Equal("NOT_FOUND", e.CodeName, "CodeName");
            }
        }

        [Test]
        public void ConcurrentHostFailuresWithTheSameMessageGetTheirOwnExceptions()
        {
            var both = new Barrier(2);
            var thrown = new ConcurrentDictionary<string, Exception>();
            ctx.RegisterFunctionBlocking("flaky", ctx.Str("str"),
                args => throw FailTogether(both, thrown, args[0].AsString()));
            for (int i = 0; i < Iterations; i++)
            {
                Exception[] got = TwoAtOnce(i, tag =>
                {
                    using (var arg = ctx.Str(tag)) ctx.HostCall("flaky", arg).Dispose();
                });
                for (int k = 0; k < 2; k++)
                {
                    var af = got[k] as AfCallbackException;
                    Assert.True(af != null, "CALLBACK error: " + got[k]);
                    Assert.Contains(SameMessage, af.Message, "message");
                    IsOwn(thrown, TagOf(i, k), af.InnerException, "host function");
                }
            }
        }

        [Test]
        public void ConcurrentAsyncHostFailuresInProgramsGetTheirOwnExceptions()
        {
            var both = new Barrier(2);
            var thrown = new ConcurrentDictionary<string, Exception>();
            ctx.RegisterFunctionAsync("flaky", ctx.Str("str"), (args, ct) =>
            {
                string tag = args[0].AsString();
                foreach (var a in args) a.Dispose();
                return Task.Run(new Func<Value>(() => throw FailTogether(both, thrown, tag)));
            });
            using (var ir = ctx.Trace((c, a) => c.HostCall("flaky", a[0]), ctx.Str("x")))
            using (var p = Program.Compile(ctx, ir))
            {
                for (int i = 0; i < Iterations; i++)
                {
                    Exception[] got = TwoAtOnce(i, tag =>
                    {
                        using (var arg = ctx.Str(tag)) p.CallAsync(ctx, arg).GetAwaiter().GetResult().Dispose();
                    });
                    for (int k = 0; k < 2; k++)
                    {
                        var af = got[k] as AfCallbackException;
                        Assert.True(af != null, "CALLBACK error: " + got[k]);
                        IsOwn(thrown, TagOf(i, k), af.InnerException, "async host function in a program");
                    }
                }
            }
        }

        [Test]
        public void NestedHostFunctionsKeepEveryLayer()
        {
            // outer calls inner, which throws; outer lets inner's error (an
            // AfCallbackException holding inner's exception) escape, and its
            // own caller gets CALLBACK -> outer's AfException -> inner's.
            var both = new Barrier(2);
            var thrown = new ConcurrentDictionary<string, Exception>();
            var escaped = new ConcurrentDictionary<string, Exception>();
            ctx.RegisterFunctionBlocking("inner", ctx.Str("str"),
                args => throw FailTogether(both, thrown, args[0].AsString()));
            ctx.RegisterFunctionBlocking("outer", ctx.Str("str"), args =>
            {
                string tag = args[0].AsString();
                try
                {
                    return ctx.HostCall("inner", args[0]);
                }
                catch (AfException ex)
                {
                    escaped[tag] = ex;
                    throw;
                }
            });
            using (var ir = ctx.Trace((c, a) => c.HostCall("outer", a[0]), ctx.Str("x")))
            using (var p = Program.Compile(ctx, ir))
            {
                for (int i = 0; i < Iterations; i++)
                {
                    Exception[] got = TwoAtOnce(i, tag =>
                    {
                        using (var arg = ctx.Str(tag)) p.Call(ctx, arg).Dispose();
                    });
                    for (int k = 0; k < 2; k++)
                    {
                        string tag = TagOf(i, k);
                        var af = got[k] as AfCallbackException;
                        Assert.True(af != null, "CALLBACK error: " + got[k]);
                        Assert.Same(escaped[tag], af.InnerException, "outer's exception " + tag);
                        IsOwn(thrown, tag, af.InnerException.InnerException, "inner host function");
                    }
                }
            }
        }

        [Test]
        public void ExceptionCrossingATraceKeepsItsIdentity()
        {
            // The traced function runs a program (on another thread: this one
            // is tracing) whose host function throws; the AfException that
            // escapes the traced function is rethrown by Trace as itself, with
            // the host function's exception inside.
            var thrown = new ConcurrentDictionary<string, Exception>();
            using (var other = new Context())
            {
                other.RegisterFunction("flaky", other.Str("str"), args =>
                {
                    var ex = new TaggedException(args[0].AsString());
                    thrown[ex.Tag] = ex;
                    throw ex;
                });
                using (var ir = other.Trace((c, a) => c.HostCall("flaky", a[0]), other.Str("x")))
                using (var p = Program.Compile(other, ir))
                {
                    for (int i = 0; i < 20; i++)
                    {
                        string tag = TagOf(i, 0);
                        Exception escaped = null;
                        var caught = Assert.Throws<AfCallbackException>(() => ctx.Trace((c, a) =>
                        {
                            try
                            {
                                Task.Run(() =>
                                {
                                    using (var arg = other.Str(tag)) p.Call(other, arg).Dispose();
                                }).GetAwaiter().GetResult();
                            }
                            catch (Exception ex)
                            {
                                escaped = ex;
                                throw;
                            }
                            return a[0].Clone();
                        }, ctx.Str("x")).Dispose(), "trace");
                        Assert.Same(escaped, caught, "the traced function's exception");
                        IsOwn(thrown, tag, caught.InnerException, "host function under a trace");
                    }
                }
            }
        }

        [Test]
        public void ConcurrentHostProviderFailuresGetTheirOwnExceptions()
        {
            var thrown = new ConcurrentDictionary<string, Exception>();
            var tagIn = new Regex("run-[0-9]+-[ab]");
            using (var host = Provider.Host(req =>
            {
                var ex = new TaggedException(tagIn.Match(req.Json).Value);
                Assert.True(thrown.TryAdd(ex.Tag, ex), "one request per tag: " + ex.Tag);
                throw ex;
            })) ctx.Route("*", host);
            using (var ir = ctx.Trace((c, a) =>
            {
                using (var role = c.Str("user"))
                using (var msg = Value.Dict(c, ("role", role), ("content", a[0])))
                using (var msgs = c.List(msg))
                using (var model = c.Str("m"))
                    return c.LmCall(msgs, model);
            }, ctx.Str("q")))
            using (var p = Program.Compile(ctx, ir))
            {
                for (int i = 0; i < Iterations; i++)
                {
                    Exception[] got = TwoAtOnce(i, tag =>
                    {
                        using (var arg = ctx.Str(tag)) p.Call(ctx, arg).Dispose();
                    });
                    for (int k = 0; k < 2; k++)
                    {
                        string tag = TagOf(i, k);
                        var af = got[k] as AfProviderException;
                        Assert.True(af != null, "PROVIDER error: " + got[k]);
                        Exception e = af;
                        while (e != null && !(e is TaggedException)) e = e.InnerException;
                        IsOwn(thrown, tag, e, "host provider");
                    }
                }
            }
        }

        // Fails n host calls on a thread of its own (gone when this returns, so
        // no stale stack slot of it keeps anything alive) and drops every
        // reference to what they threw.
        private WeakReference[] FailOnAnotherThread(int n)
        {
            var weak = new WeakReference[n];
            int next = 0;
            ctx.RegisterFunction("once", ctx.Str("str"), args =>
            {
                var ex = new TaggedException("once");
                weak[next++] = new WeakReference(ex);
                throw ex;
            });
            Exception failed = null;
            var t = new Thread(() =>
            {
                try
                {
                    for (int i = 0; i < n; i++)
                    {
                        var caught = Assert.Throws<AfCallbackException>(() => ctx.HostCall("once").Dispose(), "once");
                        Assert.True(caught.InnerException is TaggedException, "the thrown exception: " + caught);
                    }
                }
                catch (Exception ex)
                {
                    failed = ex;
                }
            });
            t.Start();
            t.Join();
            if (failed != null) throw failed;
            Assert.Equal(n, next, "calls");
            return weak;
        }

        [Test]
        public void PayloadIsReleasedWithTheError()
        {
            // The error holding a payload is freed once converted: its destroy
            // frees the GCHandle, so the exception can be collected. (Mono
            // scans stacks conservatively: a stale slot may keep one alive, a
            // leaked handle keeps all of them.)
            const int n = 20;
            WeakReference[] weak = FailOnAnotherThread(n);
            int alive = n;
            for (int i = 0; i < 50 && alive > 0; i++)
            {
                GC.Collect();
                GC.WaitForPendingFinalizers();
                Thread.Sleep(10);
                alive = 0;
                foreach (var w in weak)
                    if (w.IsAlive) alive++;
            }
            Assert.True(alive <= n / 4, alive + " of " + n + " exceptions still alive after their errors were freed");
        }
    }
}
