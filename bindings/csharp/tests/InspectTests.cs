using System;
using System.Collections.Generic;
using System.Linq;

namespace Af.Tests
{
    /// <summary>Inspection and graph queries: ancestors/descendants against a
    /// naive reference, a valid topological order, a slice that runs, the
    /// dry-run cost and the errors.</summary>
    public sealed class InspectTests : IDisposable
    {
        private readonly Context ctx = new Context();

        public void Dispose() => ctx.Dispose();

        private static Value Ask(Context c, Value content, string model)
        {
            using (var role = c.Str("user"))
            using (var msg = Value.Dict(c, ("role", role), ("content", content)))
            using (var msgs = c.List(msg))
            using (var m = c.Str(model))
                return c.LmCall(msgs, m);
        }

        // chain(q) = {a: lm(q, m1), b: lm(a, m2), c: q + q}
        private Ir Chain()
        {
            using (var q = ctx.Str("q"))
                return ctx.Trace((c, a) =>
                {
                    using (var x = Ask(c, a[0], "m1"))
                    using (var y = Ask(c, x, "m2"))
                    using (var z = c.Concat(a[0], a[0]))
                        return Value.Dict(c, ("a", x), ("b", y), ("c", z));
                }, q);
        }

        private List<long> Ints(Value list)
        {
            var r = new List<long>();
            for (int k = 0; k < list.Count; k++)
                using (var item = list[k]) r.Add(item.AsInt());
            return r;
        }

        [Test]
        public void QueriesMatchNaiveReference()
        {
            using (var ir = Chain())
            {
                int n = ir.EqnCount;
                var reach = new bool[n, n];
                for (int i = 0; i < n; i++)
                    using (var e = ctx.FromJson(ir.EqnJson(i)))
                    using (var ins = e["in"])
                        for (int k = 0; k < ins.Count; k++)
                            using (var atom = ins[k])
                            {
                                if (!atom.ToJson().Contains("\"var\"")) continue;
                                using (var var = atom["var"])
                                using (var v = ctx.FromJson(ir.VarJson((uint)var.AsInt())))
                                using (var p = v["producer"])
                                    if (p.Kind == ValueKind.Int) reach[i, p.AsInt()] = true;
                            }
                var direct = (bool[,])reach.Clone();
                for (bool changed = true; changed;)
                {
                    changed = false;
                    for (int a = 0; a < n; a++)
                        for (int b = 0; b < n; b++)
                            for (int c = 0; c < n; c++)
                                if (reach[a, b] && reach[b, c] && !reach[a, c]) reach[a, c] = changed = true;
                }
                for (int i = 0; i < n; i++)
                {
                    using (var up = ctx.FromJson(ir.RelatedJson(i, Related.Ancestors)))
                    using (var eq = up["eqns"])
                        Assert.Equal(string.Join(",", Enumerable.Range(0, n).Where(k => reach[i, k])),
                                     string.Join(",", Ints(eq)), "ancestors of " + i);
                    using (var down = ctx.FromJson(ir.RelatedJson(i, Related.Descendants)))
                    using (var eq = down["eqns"])
                        Assert.Equal(string.Join(",", Enumerable.Range(0, n).Where(k => reach[k, i])),
                                     string.Join(",", Ints(eq)), "descendants of " + i);
                }
                using (var whole = ctx.FromJson(ir.ToJson()))
                using (var order = whole["topological_order"])
                {
                    List<long> o = Ints(order);
                    for (int i = 0; i < n; i++)
                        for (int k = 0; k < n; k++)
                            if (direct[i, k]) Assert.True(o.IndexOf(k) < o.IndexOf(i), "eqn " + k + " before " + i);
                }
                Assert.ThrowsAf(ErrorCode.InvalidArgument, () => ir.EqnJson(99));
                Assert.ThrowsAf(ErrorCode.InvalidArgument, () => ir.EqnJson(-1));
            }
        }

        [Test]
        public void SliceRunsAndCostCounts()
        {
            var echo = Provider.Echo();
            ctx.Route("*", echo);
            using (echo)
            using (var ir = Chain())
            using (var q = ctx.Str("hi"))
            using (var full = ir.Call(ctx, q))
            using (var want = full["b"])
            using (var b = ir.Slice(new[] { "b" }, new[] { "0" }))
            using (var got = b.Call(ctx, q))
            {
                // Echo's usage: words sent ("hi", then "m1|hi") and replied
                // ("m1|hi", "m2|m1|hi"), for the full run and the slice's.
                Assert.Contains("\"prompt_tokens\":4,\"completion_tokens\":4", echo.Stats());
                Assert.True(b.EqnCount < ir.EqnCount, "the slice drops the other outputs' equations");
                Assert.Equal("[" + want.ToJson() + "]", got.ToJson());
                var e = Assert.ThrowsAf(ErrorCode.InvalidArgument, () => ir.Slice(new[] { "b" }, new string[0]));
                Assert.Contains("not among the chosen inputs", e.Message);
                Assert.ThrowsAf(ErrorCode.NotFound, () => ir.Sub(0, "body"));
                Assert.Equal("{\"batch\":3,\"total\":{\"calls\":6,\"models\":{\"m1\":3,\"m2\":3}},"
                             + "\"critical_path\":{\"calls\":2,\"models\":{\"m1\":1,\"m2\":1}}}", ir.CostJson(3));
            }
        }

        // switched(k, x) = switch(k, {a: "A" + x, b: x + x}, x) + "!"
        private Ir Switched()
        {
            var branches = new Dictionary<string, Ir>();
            using (var k = ctx.Str("k"))
            using (var x = ctx.Str("x"))
            {
                try
                {
                    branches["a"] = ctx.Trace((c, a) => c.Format("A{}", a[0]), x);
                    branches["b"] = ctx.Trace((c, a) => c.Concat(a[0], a[0]), x);
                    return ctx.Trace((c, a) =>
                    {
                        using (var s = c.Switch(a[0], branches, a[1]))
                        using (var bang = c.Str("!"))
                            return c.Concat(s, bang);
                    }, k, x);
                }
                finally
                {
                    foreach (var b in branches.Values) b.Dispose();
                }
            }
        }

        [Test]
        public void DeepRelatedQueriesAreBoundedInBytes()
        {
            using (var ir = Switched())
            {
                int last = ir.EqnCount - 1;
                Assert.Equal("switch", ir.EqnPrim(0));
                var deep = Related.Ancestors | Related.Deep;
                string answer = ir.RelatedJson(last, deep);
                Assert.Contains("\"nested\":[\"0/branches/", answer, "the branches' equations are listed");
                ulong len = (ulong)System.Text.Encoding.UTF8.GetByteCount(answer);
                Assert.Equal(answer, ir.RelatedJson(last, deep, 0), "0 = the default limit");
                Assert.Equal(answer, ir.RelatedJson(last, deep, len), "a limit of exactly the answer's length");
                var e = Assert.ThrowsAf(ErrorCode.InvalidArgument, () => ir.RelatedJson(last, deep, len - 1));
                Assert.Contains("over the limit of " + (len - 1), e.Message);
                e = Assert.ThrowsAf(ErrorCode.InvalidArgument, () => ir.RelatedJson(last, deep, 1));
                Assert.Contains("over the limit", e.Message);
                Assert.True(e is AfInvalidArgumentException, "thrown as AfInvalidArgumentException");
                // The limit bounds the deep answer (the nested paths); a
                // shallow answer is at most the IR's equation list.
                Assert.Equal(ir.RelatedJson(last, Related.Ancestors), ir.RelatedJson(last, Related.Ancestors, 1));
                Assert.ThrowsAf(ErrorCode.InvalidArgument, () => ir.RelatedJson(99, deep, 1000));
            }
        }

        // named(q) = lm(q, m1) inside the name scopes triage, ask.
        private Ir Named()
        {
            using (var q = ctx.Str("q"))
                return ctx.Trace((c, a) =>
                {
                    using (c.Name("triage"))
                    using (c.Name("ask"))
                        return Ask(c, a[0], "m1");
                }, q);
        }

        [Test]
        public void NamePathsAreRecordedShownAndNameErrors()
        {
            using (var ir = Named())
            using (var hi = ctx.Str("hi"))
            {
                Assert.Contains("@name=\"triage/ask\"", ir.ToText());
                Assert.Contains("\"name_path\":[\"triage\",\"ask\"]", ir.EqnJson(0));
                // No route for m1: the failing call names its path.
                var e = Assert.ThrowsAf(ErrorCode.NotFound, () => ir.Call(ctx, hi));
                Assert.Contains("in triage/ask: ", e.Message);
                Assert.ThrowsAf(ErrorCode.InvalidArgument, () => ctx.PushName("x"), "a name scope outside a trace");
                Assert.ThrowsAf(ErrorCode.InvalidArgument, () => ctx.Trace((c, a) =>
                {
                    using (c.Name("a/b")) return a[0];
                }, hi).Dispose(), "a name holding '/'");
            }
        }

        // Echo counts words: "hi there" in (2), "m1|hi there" out (2).
        private static void CheckSummary(string summary)
        {
            Assert.Contains("\"total\":{\"calls\":1,\"failed\":0,\"prompt_tokens\":2,\"completion_tokens\":2,\"retries\":0,",
                            summary);
            Assert.Contains("\"models\":{\"m1\":{\"calls\":1,", summary);
            Assert.True(summary.StartsWith("{\"wall_ms\":"), summary);
        }

        [Test]
        public void RunSummariesAddUpEchoUsage()
        {
            var echo = Provider.Echo();
            ctx.Route("*", echo);
            using (echo)
            using (var ir = Named())
            using (var p = Program.Compile(ctx, ir))
            using (var hi = ctx.Str("hi there"))
            {
                string summary;
                using (var out1 = p.CallWithSummary(ctx, null, out summary, hi))
                    Assert.Equal("\"m1|hi there\"", out1.ToJson());
                CheckSummary(summary);
                using (var run = p.Start(ctx, new RunOptions { Summary = true }, hi))
                {
                    run.Wait().Dispose();
                    CheckSummary(run.Summary());
                }
                Assert.Contains("\"prompt_tokens\":4,", echo.Stats());
                // Misuse: the async option on a blocking call; no summary recorded.
                Assert.ThrowsAf(ErrorCode.InvalidArgument, () => p.Call(ctx, new RunOptions { Summary = true }, hi));
                using (var plain = p.Start(ctx, null, hi))
                    Assert.ThrowsAf(ErrorCode.InvalidArgument, () => plain.Summary());
                // A failed run has a summary too; nothing ran, none.
                using (var bare = new Context())
                {
                    string failed = null;
                    Assert.ThrowsAf(ErrorCode.NotFound, () => p.CallWithSummary(bare, null, out failed, hi));
                    Assert.Contains("\"calls\":0", failed);
                }
                string none = "unset";
                Assert.ThrowsAf(ErrorCode.InvalidArgument, () => p.CallWithSummary(ctx, null, out none));
                Assert.Equal(null, none);
            }
        }
    }
}
