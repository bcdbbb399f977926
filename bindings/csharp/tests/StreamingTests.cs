using System;
using System.Collections.Generic;

namespace Af.Tests
{
    /// <summary>Streaming runs, sampling params, fallback routes and provider
    /// options.</summary>
    public sealed class StreamingTests
    {
        // q -> lm_call([user q], "m", params) (params null = none).
        private static Ir TraceAsk(Context ctx, string paramsJson)
        {
            using (var q = ctx.Str("q"))
                return ctx.Trace((c, a) =>
                {
                    using (var role = c.Str("user"))
                    using (var msg = Value.Dict(c, ("role", role), ("content", a[0])))
                    using (var msgs = c.List(msg))
                    using (var model = c.Str("m"))
                    {
                        if (paramsJson == null) return c.LmCall(msgs, model);
                        using (var p = c.FromJson(paramsJson)) return c.LmCall(msgs, model, p);
                    }
                }, q);
        }

        // Runs ir on q with a stream callback: the result and each (eqn, item)'s text.
        private static string Streamed(Context ctx, Ir ir, string q, string tag, Dictionary<string, string> got)
        {
            var opts = new RunOptions
            {
                StreamTag = tag,
                Stream = (eqn, item, piece) =>
                {
                    lock (got)
                    {
                        string k = eqn + "/" + item;
                        if (piece == null) got.Remove(k);
                        else got[k] = (got.TryGetValue(k, out string s) ? s : "") + piece;
                    }
                }
            };
            using (var prog = Program.Compile(ctx, ir))
            using (var input = ctx.Str(q))
            using (var out_ = prog.Call(ctx, opts, input))
                return out_.AsString();
        }

        [Test]
        public void StreamedRunsDeliverPieces()
        {
            using (var ctx = new Context())
            using (var echo = Provider.Echo(""))
            {
                ctx.Route("*", echo);
                using (var ir = TraceAsk(ctx, null))
                {
                    var got = new Dictionary<string, string>();
                    Assert.Equal("m|one two", Streamed(ctx, ir, "one two", null, got), "result");
                    Assert.Equal("m|one two", got["0/0"], "pieces");
                    var none = new Dictionary<string, string>();
                    Streamed(ctx, ir, "x", "live", none);
                    Assert.Equal(0, none.Count, "an untagged equation streamed");
                }
            }
        }

        [Test]
        public void HostProviderStreamsAndRestarts()
        {
            using (var ctx = new Context())
            using (var host = Provider.Host(req =>
            {
                if (req.Json.Contains("\"stream\":true"))
                {
                    req.Stream("wro");
                    req.RestartStream();
                    req.Stream("he");
                    req.Stream("llo");
                }
                req.Complete("hello");
            }))
            {
                ctx.Route("*", host);
                using (var ir = TraceAsk(ctx, null))
                {
                    var got = new Dictionary<string, string>();
                    Assert.Equal("hello", Streamed(ctx, ir, "q", null, got), "result");
                    Assert.Equal("hello", got["0/0"], "pieces after the restart");
                }
            }
        }

        [Test]
        public void SamplingParamsAreInTheIr()
        {
            using (var ctx = new Context())
            using (var ir = TraceAsk(ctx, "{\"temperature\": 0, \"max_tokens\": 16}"))
            {
                Assert.Contains("max_tokens=16", ir.ToText(), "IR text");
                Assert.Contains("temperature=0.0", ir.ToText(), "IR text");
                var e = Assert.ThrowsAf(ErrorCode.InvalidArgument, () => TraceAsk(ctx, "{\"top_p\": 2}").Dispose(), "top_p");
                Assert.Contains("top_p", e.Message, "message");
            }
        }

        [Test]
        public void FallbackRoutesAndProviderOptions()
        {
            using (var ctx = new Context())
            using (var down = Provider.Host(req => req.Fail(ErrorCode.Provider, "down")))
            using (var echo = Provider.Echo(""))
            {
                ctx.RouteFallback("*", down, echo);
                using (var ir = TraceAsk(ctx, null))
                using (var q = ctx.Str("q"))
                using (var out_ = ir.Call(ctx, q))
                    Assert.Equal("m|q", out_.AsString(), "the fallback answers");
                Assert.ThrowsAf(ErrorCode.InvalidArgument, () => ctx.RouteFallback("*"), "an empty list");
                echo.SetOptions("{\"requests_per_minute\": 60, \"schema_retries\": 1}");
                Assert.Contains("\"requests_per_minute\":60", echo.Stats(), "stats");
                Assert.Contains("\"schema_retries\":1", echo.Stats(), "stats");
                var e = Assert.ThrowsAf(ErrorCode.InvalidArgument, () => echo.SetOptions("{\"rpm\": 1}"), "unknown");
                Assert.Contains("rpm", e.Message, "message");
            }
        }
    }
}
