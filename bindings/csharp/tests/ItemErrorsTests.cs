using System;
using System.Threading;

namespace Af.Tests
{
    /// <summary>Per-item errors in batched runs (RunOptions.ItemErrors).</summary>
    public sealed class ItemErrorsTests : IDisposable
    {
        private readonly Context ctx = new Context();
        private int cancelled;

        public void Dispose() => ctx.Dispose();

        // Fails "q<i>" with i % 3 == 0 at once; answers the others "ok q<i>"
        // 30 ms later, counting the answers libaf had cancelled meanwhile.
        private Provider FailEveryThird()
        {
            return Provider.Host(req => new Thread(() =>
            {
                string content;
                using (var v = ctx.FromJson(req.Json))
                using (var msgs = v["messages"])
                using (var last = msgs[msgs.Count - 1])
                using (var c = last["content"])
                    content = c.AsString();
                if (int.Parse(content.Substring(1)) % 3 == 0)
                {
                    req.Fail(ErrorCode.Provider, "item " + content + " refused");
                    return;
                }
                Thread.Sleep(30);
                if (req.IsCancelled) Interlocked.Increment(ref cancelled);
                req.Complete("ok " + content);
            }).Start());
        }

        [Test]
        public void FailingItemsBecomeErrorValuesAndTheRestComplete()
        {
            using (var host = FailEveryThird())
            {
                ctx.Route("m", host);
                using (var one = ctx.Trace((c, a) =>
                {
                    using (var role = c.Str("user"))
                    using (var msg = Value.Dict(c, ("role", role), ("content", a[0])))
                    using (var msgs = c.List(msg))
                    using (var model = c.Str("m"))
                    using (var answer = c.LmCall(msgs, model))
                    using (var bang = c.Str("!"))
                    using (var marked = c.Concat(answer, bang))
                        return c.List(answer, marked);
                }, ctx.FromJson("\"q\"")))
                using (var batched = one.Batch(ctx))
                using (var p = Program.Compile(ctx, batched))
                using (var qs = ctx.FromJson("[\"q0\",\"q1\",\"q2\",\"q3\",\"q4\",\"q5\",\"q6\",\"q7\",\"q8\"]"))
                {
                    using (var out_ = p.Call(ctx, new RunOptions { ItemErrors = true }, qs))
                    using (var answers = out_[0])
                    using (var marks = out_[1])
                    {
                        Assert.Equal(9, answers.Count, "items");
                        for (int i = 0; i < 9; i++)
                            using (var a = answers[i])
                            using (var m = marks[i])
                            {
                                if (i % 3 == 0)
                                {
                                    using (var e = a["error"])
                                    using (var code = e["code"])
                                    using (var name = e["name"])
                                    using (var msg = e["message"])
                                    {
                                        Assert.Equal(6L, code.AsInt(), "code");
                                        Assert.Equal("PROVIDER", name.AsString(), "name");
                                        Assert.Contains("item q" + i + " refused", msg.AsString());
                                    }
                                    Assert.Equal(a.ToJson(), m.ToJson(), "later step passes the error on");
                                }
                                else
                                {
                                    Assert.Equal("ok q" + i, a.AsString(), "answer");
                                    Assert.Equal("ok q" + i + "!", m.AsString(), "marked");
                                }
                            }
                    }
                    Assert.Equal(0, cancelled, "cancelled answers");
                    Assert.ThrowsAf(ErrorCode.Provider, () => p.Call(ctx, qs));
                    Thread.Sleep(100); // the cancelled run's answers finish
                }
            }
        }
    }
}
