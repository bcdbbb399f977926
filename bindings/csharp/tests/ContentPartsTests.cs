using System.Collections.Generic;

namespace Af.Tests
{
    /// <summary>LM call messages whose content is a list of text and image
    /// parts: echo reads the text parts, a host provider sees every part, the
    /// text and the url may be traced, and a malformed part is
    /// AfInvalidArgumentException naming it.</summary>
    public sealed class ContentPartsTests : System.IDisposable
    {
        private const string Png = "iVBORw0KGgo=";
        private const string Url = "https://example.com/cat.png";
        private readonly Context ctx = new Context();

        public void Dispose()
        {
            ctx.Dispose();
        }

        // [{"role": "user", "content": [text, image url, image data, "Be brief."]}]
        private static Value Messages(Context c, Value text, Value url)
        {
            Value parts = c.List(
                Value.Dict(c, ("type", (Value)"text"), ("text", text)),
                Value.Dict(c, ("type", (Value)"image"), ("url", url)),
                Value.Dict(c, ("type", (Value)"image"), ("media_type", (Value)"image/png"), ("data", (Value)Png)),
                Value.Dict(c, ("type", (Value)"text"), ("text", (Value)"Be brief.")));
            return c.List(Value.Dict(c, ("role", (Value)"user"), ("content", parts)));
        }

        [Test]
        public void EchoReadsTheTextParts()
        {
            using (var echo = Provider.Echo())
            {
                ctx.Route("*", echo);
                using (var msgs = Messages(ctx, "What is this?", Url))
                using (var out_ = ctx.LmCall(msgs, "m"))
                    Assert.Equal("m|What is this?\n\nBe brief.", out_.AsString());
            }
        }

        [Test]
        public void AHostProviderSeesEveryPart()
        {
            var seen = new List<string>();
            using (var host = Provider.Host(req =>
                   {
                       lock (seen) seen.Add(req.Json);
                       req.Complete("ok");
                   }))
            {
                ctx.Route("*", host);
                using (var msgs = Messages(ctx, "What is this?", Url))
                using (var out_ = ctx.LmCall(msgs, "m"))
                {
                    Assert.Equal("ok", out_.AsString());
                    Assert.Equal(1, seen.Count, "requests");
                    using (var req = ctx.FromJson(seen[0]))
                    using (var got = req["messages"])
                    {
                        Assert.Equal(msgs.ToJson(), got.ToJson(), "the request's messages");
                        using (var user = got[0])
                        using (var content = user["content"])
                        using (var image = content[1])
                        using (var url = image["url"])
                        using (var data = content[2])
                        using (var b64 = data["data"])
                        using (var mediaType = data["media_type"])
                        {
                            Assert.Equal(Url, url.AsString(), "url");
                            Assert.Equal(Png, b64.AsString(), "data");
                            Assert.Equal("image/png", mediaType.AsString(), "media_type");
                        }
                    }
                }
            }
        }

        [Test]
        public void TracedTextAndUrl()
        {
            using (var echo = Provider.Echo())
            {
                ctx.Route("*", echo);
                using (var ir = ctx.Trace((c, a) => c.LmCall(Messages(c, a[0], a[1]), "m"), "q", "u"))
                {
                    Assert.Equal(1, ir.EqnCount, "equations");
                    Assert.Equal("lm_call", ir.EqnPrim(0), "prim");
                    using (var out_ = ir.Call(ctx, "What is this?", Url))
                        Assert.Equal("m|What is this?\n\nBe brief.", out_.AsString());
                }
            }
        }

        [Test]
        public void ABadPartIsInvalidArgument()
        {
            using (var echo = Provider.Echo())
            {
                ctx.Route("*", echo);
                using (var msgs = ctx.FromJson(
                           "[{\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"hi\"}, " +
                           "{\"type\": \"image\", \"media_type\": \"image/png\", \"data\": \"not base64!\"}]}]"))
                {
                    var ex = Assert.ThrowsAf(ErrorCode.InvalidArgument, () => ctx.LmCall(msgs, "m"));
                    Assert.True(ex is AfInvalidArgumentException, "AfInvalidArgumentException");
                    Assert.Contains("not base64", ex.Message);
                    Assert.Contains("messages[0].content[1]", ex.Message);
                }
            }
        }
    }
}
