using System;
using System.Diagnostics;
using System.Linq;

namespace Af.Tests
{
    /// <summary>Lazy contexts: promises evaluate on read, Eval runs
    /// independent LM calls together, dropped promises never run, the plan
    /// cache compiles a repeated structure once.</summary>
    public sealed class LazyTests : IDisposable
    {
        private readonly Context ctx = Context.Lazy();

        public void Dispose() => ctx.Dispose();

        private Value Ask(string q)
        {
            using (var msgs = ctx.FromJson("[{\"role\":\"user\",\"content\":\"" + q + "\"}]"))
            using (var model = ctx.Str("m"))
                return ctx.LmCall(msgs, model);
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
    }
}
