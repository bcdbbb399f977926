using System;
using System.Linq;

namespace Af.Tests
{
    /// <summary>Context.Scan (af_scan): a carry threaded through a list, one
    /// output per item. Eager, reverse, no items, a tree of lists, traced over
    /// a list input of any length, batch, pullback against the body unrolled
    /// by hand, a lazy promise, and the errors of bad bodies and inputs.</summary>
    public sealed class ScanTests : IDisposable
    {
        private readonly Context ctx = new Context();

        public void Dispose() => ctx.Dispose();

        private Value J(string json) => ctx.FromJson(json);

        private static void JsonIs(string expected, Value v, string what = "value")
        {
            using (v) Assert.Equal(expected, v.ToJson(), what);
        }

        // body(c, x) = [concat(c, x), format("<{}>", x)]
        private static Value Step(Context c, Value carry, Value x)
        {
            using (var next = c.Concat(carry, x))
            using (var y = c.Format("<{}>", x))
                return c.List(next, y);
        }

        private Ir Body()
        {
            using (var c = ctx.Str("c"))
            using (var x = ctx.Str("x"))
                return ctx.Trace((t, a) => Step(t, a[0], a[1]), c, x);
        }

        // f(init, xs) = scan(body, init, xs), xs a list input of any length.
        private Ir ScanProgram(Ir body, bool reverse = false)
        {
            using (var init = ctx.Str("c"))
            using (var xs = J("[\"x\"]"))
            using (var lists = J("[false, true]"))
                return ctx.TraceWith((c, a) => c.Scan(body, a[0], a[1], reverse), new[] { init, xs }, lists);
        }

        // The same as ScanProgram over three items (inputs init, x0, x1, x2),
        // unrolled by hand.
        private Ir Unrolled()
        {
            var examples = new[] { ctx.Str("c"), ctx.Str("x"), ctx.Str("x"), ctx.Str("x") };
            try
            {
                return ctx.Trace((c, a) =>
                {
                    Value carry = a[0].Clone();
                    var ys = new Value[3];
                    try
                    {
                        for (int i = 0; i < 3; i++)
                        {
                            using (var step = Step(c, carry, a[1 + i]))
                            {
                                carry.Dispose();
                                carry = step[0];
                                ys[i] = step[1];
                            }
                        }
                        using (var list = c.List(ys))
                            return c.List(carry, list);
                    }
                    finally
                    {
                        carry.Dispose();
                        foreach (var y in ys)
                            if (y != null) y.Dispose();
                    }
                }, examples);
            }
            finally
            {
                foreach (var e in examples) e.Dispose();
            }
        }

        // The leaves of a tree's JSON in order, whatever the nesting (the
        // bodies here write no brackets into strings).
        private static string Leaves(Value v)
        {
            using (v) return v.ToJson().Replace("[", "").Replace("]", "");
        }

        [Test]
        public void EagerScanThreadsTheCarryAndKeepsYsByIndex()
        {
            using (var body = Body())
            using (var init = ctx.Str(">"))
            using (var xs = J("[\"a\",\"b\",\"c\"]"))
            {
                JsonIs("[\">abc\",[\"<a>\",\"<b>\",\"<c>\"]]", ctx.Scan(body, init, xs), "forward");
                // Reverse: the last item first; ys stay at their items' indices.
                JsonIs("[\">cba\",[\"<a>\",\"<b>\",\"<c>\"]]", ctx.Scan(body, init, xs, true), "reverse");
                JsonIs("[\">abc\",[\"<a>\",\"<b>\",\"<c>\"]]", ctx.Scan(body, init, xs, false), "reverse: false");
                // No items: the initial carry and empty ys.
                using (var none = J("[]"))
                    JsonIs("[\">\",[]]", ctx.Scan(body, init, none), "no items");
            }
        }

        [Test]
        public void XsMayBeATreeOfLists()
        {
            using (var example = J("[\"c\",{\"q\":\"x\",\"a\":\"y\"}]"))
            using (var c0 = example[0])
            using (var item = example[1])
            using (var body = ctx.Trace((c, a) =>
            {
                using (var it = a[1])
                using (var q = it["q"])
                using (var ans = it["a"])
                using (var line = c.Format("{}={};", q, ans))
                using (var next = c.Concat(a[0], line))
                    return c.List(next, line);
            }, c0, item))
            using (var init = ctx.Str(""))
            using (var xs = J("{\"q\":[\"1+1\",\"2+2\"],\"a\":[\"2\",\"4\"]}"))
            using (var ragged = J("{\"q\":[\"1+1\",\"2+2\"],\"a\":[\"2\"]}"))
            {
                JsonIs("[\"1+1=2;2+2=4;\",[\"1+1=2;\",\"2+2=4;\"]]", ctx.Scan(body, init, xs));
                var ex = Assert.ThrowsAf(ErrorCode.InvalidArgument, () => ctx.Scan(body, init, ragged).Dispose());
                Assert.Contains("must have one length", ex.Message);
            }
        }

        [Test]
        public void TracedOverAListInputOfAnyLength()
        {
            using (var body = Body())
            using (var ir = ScanProgram(body))
            {
                Assert.Contains("scan[", ir.ToText(), "one scan equation");
                using (var init = ctx.Str("0"))
                {
                    using (var two = J("[\"a\",\"b\"]"))
                        JsonIs("[\"0ab\",[\"<a>\",\"<b>\"]]", ir.Call(ctx, init, two), "two items");
                    using (var four = J("[\"a\",\"b\",\"c\",\"d\"]"))
                        JsonIs("[\"0abcd\",[\"<a>\",\"<b>\",\"<c>\",\"<d>\"]]", ir.Call(ctx, init, four), "four items");
                    using (var none = J("[]"))
                        JsonIs("[\"0\",[]]", ir.Call(ctx, init, none), "no items");
                    using (var p = Program.Compile(ctx, ir))
                    using (var three = J("[\"x\",\"y\",\"z\"]"))
                        JsonIs("[\"0xyz\",[\"<x>\",\"<y>\",\"<z>\"]]", p.Call(ctx, init, three), "compiled");
                }
            }
            using (var body = Body())
            using (var ir = ScanProgram(body, reverse: true))
            using (var init = ctx.Str("0"))
            using (var xs = J("[\"a\",\"b\",\"c\"]"))
                JsonIs("[\"0cba\",[\"<a>\",\"<b>\",\"<c>\"]]", ir.Call(ctx, init, xs), "traced reverse");
        }

        [Test]
        public void BatchMapsTheScanOverDocumentsOfDifferentLengths()
        {
            using (var body = Body())
            using (var ir = ScanProgram(body))
            using (var batched = ir.Batch(ctx))
            using (var inits = J("[\"1\",\"2\"]"))
            using (var docs = J("[[\"a\",\"b\"],[\"c\"]]"))
                JsonIs("[[\"1ab\",\"2c\"],[[\"<a>\",\"<b>\"],[\"<c>\"]]]", batched.Call(ctx, inits, docs));
        }

        [Test]
        public void PullbackGivesFeedbackToInitAndEveryItem()
        {
            using (var body = Body())
            using (var ir = ScanProgram(body))
            using (var unrolled = Unrolled())
            using (var pb = ir.Pullback(ctx))
            using (var upb = unrolled.Pullback(ctx))
            {
                upb.Validate();
                // Feedback on the last carry and on y0 and y2.
                using (var primals = J("[\"i\",[\"a\",\"b\",\"c\"]]"))
                using (var ct = J("[\"G\",[\"y0\",null,\"y2\"]]"))
                using (var r = pb.Call(ctx, primals, ct))
                {
                    using (var output = r[0])
                        Assert.Equal("[\"iabc\",[\"<a>\",\"<b>\",\"<c>\"]]", output.ToJson(), "the primal output");
                    using (var back = r[1])
                        Assert.Equal("[\"G\",[\"Gy0\",\"G\",\"Gy2\"]]", back.ToJson(), "feedback to init and each item");
                    using (var uprimals = J("[\"i\",\"a\",\"b\",\"c\"]"))
                        Assert.Equal(Leaves(upb.Call(ctx, uprimals, ct)), Leaves(r.Clone()), "the same as unrolled by hand");
                }
                // Feedback on the ys only.
                using (var primals = J("[\"i\",[\"a\",\"b\",\"c\"]]"))
                using (var ct = J("[null,[\"y0\",\"y1\",\"y2\"]]"))
                using (var uprimals = J("[\"i\",\"a\",\"b\",\"c\"]"))
                {
                    string scanned = Leaves(pb.Call(ctx, primals, ct));
                    Assert.Contains("iabc", scanned);
                    Assert.Equal(Leaves(upb.Call(ctx, uprimals, ct)), scanned, "ys only: the same as unrolled by hand");
                }
            }
        }

        [Test]
        public void OnALazyContextItIsAPromise()
        {
            using (var lazy = Context.Lazy())
            using (var body = Body())
            using (var init = lazy.Str(""))
            using (var xs = lazy.FromJson("[\"p\",\"q\"]"))
            using (var r = lazy.Scan(body, init, xs))
            {
                Assert.False(r.IsReady, "a promise before the read");
                Assert.Equal("[\"pq\",[\"<p>\",\"<q>\"]]", r.ToJson());
                Assert.True(r.IsReady, "ready after the read");
            }
        }

        [Test]
        public void BadBodiesAndInputsAreRefused()
        {
            using (var body = Body())
            using (var init = ctx.Str(""))
            using (var xs = J("[\"a\"]"))
            {
                using (var notList = ctx.Str("a"))
                {
                    var ex = Assert.ThrowsAf(ErrorCode.InvalidArgument, () => ctx.Scan(body, init, notList).Dispose(), "xs a str");
                    Assert.Contains("not a list", ex.Message);
                    Assert.True(ex is AfInvalidArgumentException, "thrown as AfInvalidArgumentException");
                }
                using (var ints = J("[1,2]"))
                {
                    var ex = Assert.ThrowsAf(ErrorCode.InvalidArgument, () => ctx.Scan(body, init, ints).Dispose(), "items of another kind");
                    Assert.Contains("xs leaf 0 is list<int>", ex.Message);
                }
                using (var one = ctx.Trace((c, a) => a[0].Clone(), init))
                {
                    var ex = Assert.ThrowsAf(ErrorCode.InvalidArgument, () => ctx.Scan(one, init, xs).Dispose(), "one input");
                    Assert.Contains("must take two inputs", ex.Message);
                }
                using (var noPair = ctx.Trace((c, a) => a[1].Clone(), init, init))
                {
                    var ex = Assert.ThrowsAf(ErrorCode.InvalidArgument, () => ctx.Scan(noPair, init, xs).Dispose(), "not [carry, y]");
                    Assert.Contains("must return [next carry, y]", ex.Message);
                }
                using (var boolCarry = ctx.Trace((c, a) =>
                {
                    using (var m = c.Match(a[0], a[1])) return c.List(m, a[1]);
                }, init, init))
                {
                    var ex = Assert.ThrowsAf(ErrorCode.InvalidArgument, () => ctx.Scan(boolCarry, init, xs).Dispose(), "carry turns bool");
                    Assert.Contains("changes carry leaf 0", ex.Message);
                }
                Assert.Throws<ArgumentNullException>(() => ctx.Scan(null, init, xs), "null body");
                Assert.Throws<ArgumentNullException>(() => ctx.Scan(body, null, xs), "null init");
                Assert.Throws<ArgumentNullException>(() => ctx.Scan(body, init, null), "null xs");
            }
        }
    }
}
