using System;
using System.Collections.Generic;

namespace Af.Tests
{
    /// <summary>The priority hint: with one request in flight, the call tagged
    /// "urgent" starts before an equally ready untagged one.</summary>
    public sealed class PriorityTests
    {
        private static string FirstModel(bool urgent)
        {
            using (var ctx = new Context())
            {
                var order = new List<string>();
                var host = Provider.Host(req =>
                {
                    lock (order) order.Add(req.Json.Contains("\"model\":\"first\"") ? "first" : "second");
                    req.Complete("ok");
                });
                using (host)
                {
                    host.SetMaxInFlight(1);
                    ctx.Route("*", host);
                    using (var q = ctx.Str("q"))
                    using (var ir = ctx.Trace((c, a) =>
                    {
                        using (var msgs = c.FromJson("[{\"role\":\"user\",\"content\":\"q\"}]"))
                        using (var m1 = c.Str("first"))
                        using (var m2 = c.Str("second"))
                        {
                            Value first;
                            if (urgent)
                                using (c.Tag("urgent")) first = c.LmCall(msgs, m1);
                            else
                                first = c.LmCall(msgs, m1);
                            using (first)
                            using (var second = c.LmCall(msgs, m2))
                                return c.List(first, second);
                        }
                    }, q))
                    using (var out_ = ir.Call(ctx, q)) { }
                }
                lock (order)
                {
                    Assert.Equal(2, order.Count, "requests");
                    return order[0];
                }
            }
        }

        [Test]
        public void UrgentTagStartsFirst()
        {
            // Untagged, the later of two equal roots starts first; the hint turns it round.
            Assert.Equal("second", FirstModel(false), "untagged");
            Assert.Equal("first", FirstModel(true), "urgent");
        }
    }
}
