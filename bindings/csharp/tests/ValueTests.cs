using System;
using System.Collections.Generic;

namespace Af.Tests
{
    public sealed class ValueTests : IDisposable
    {
        private readonly Context ctx = new Context();

        public void Dispose() => ctx.Dispose();

        [Test]
        public void VersionMatchesHeader()
        {
            Assert.Equal(Native.AF_VERSION_STRING, Library.Version, "af_version");
            Assert.Equal(Native.AF_ABI_VERSION, Library.AbiVersion, "af_abi_version");
            Assert.False(Library.IsTracing, "tracing outside a trace");
        }

        [Test]
        public void ScalarsRoundTrip()
        {
            using (var n = ctx.Null())
            using (var t = ctx.Bool(true))
            using (var i = ctx.Int(long.MinValue))
            using (var f = ctx.Float(0.1))
            using (var s = ctx.Str("plain"))
            {
                Assert.Equal(ValueKind.Null, n.Kind);
                Assert.Equal("null", n.ToJson());
                Assert.Equal(ValueKind.Bool, t.Kind);
                Assert.True(t.AsBool(), "AsBool");
                Assert.Equal("true", t.ToJson());
                Assert.Equal(ValueKind.Int, i.Kind);
                Assert.Equal(long.MinValue, i.AsInt());
                Assert.Equal(ValueKind.Float, f.Kind);
                Assert.Equal(0.1, f.AsFloat());
                Assert.Equal("0.1", f.ToJson());
                Assert.Equal(ValueKind.Str, s.Kind);
                Assert.Equal("plain", s.AsString());
                Assert.Equal("\"plain\"", s.ToJson());
            }
        }

        [Test]
        public void JsonKeepsIntVersusFloat()
        {
            using (var two = ctx.FromJson("2"))
            using (var twoF = ctx.FromJson("2.0"))
            using (var big = ctx.FromJson("1e30"))
            using (var built = ctx.Float(2.0))
            {
                Assert.Equal(ValueKind.Int, two.Kind, "kind of 2");
                Assert.Equal(ValueKind.Float, twoF.Kind, "kind of 2.0");
                Assert.Equal("2", two.ToJson());
                Assert.Equal("2.0", twoF.ToJson());
                Assert.Equal("2.0", built.ToJson());
                Assert.Equal(ValueKind.Float, big.Kind, "kind of 1e30");
                Assert.Equal(1e30, big.AsFloat());
                Assert.Equal(2L, two.AsInt());
                Assert.Equal(2.0, twoF.AsFloat());
            }
        }

        [Test]
        public void ListAndDictAccess()
        {
            using (var v = ctx.FromJson("{\"b\": [1, 2.5, \"x\", true, null], \"a\": {\"k\": \"v\"}}"))
            {
                Assert.Equal(ValueKind.Dict, v.Kind);
                Assert.Equal(2, v.Count, "dict count");
                var keys = v.Keys;
                Assert.Equal(2, keys.Count, "keys count");
                Assert.Equal("b", keys[0], "insertion order kept");
                Assert.Equal("a", keys[1], "insertion order kept");
                using (var b = v["b"])
                {
                    Assert.Equal(ValueKind.List, b.Kind);
                    Assert.Equal(5, b.Count, "list count");
                    using (var x = b[0]) Assert.Equal(1L, x.AsInt());
                    using (var x = b[1]) Assert.Equal(2.5, x.AsFloat());
                    using (var x = b[2]) Assert.Equal("x", x.AsString());
                    using (var x = b[3]) Assert.True(x.AsBool(), "b[3]");
                    using (var x = b[4]) Assert.Equal(ValueKind.Null, x.Kind);
                    Assert.Equal("[1,2.5,\"x\",true,null]", b.ToJson());
                    Assert.Throws<AfException>(() => b[5].Dispose(), "index out of range");
                    Assert.Throws<ArgumentOutOfRangeException>(() => b[-1].Dispose(), "negative index");
                }
                using (var second = v[1])
                using (var k = second["k"])
                    Assert.Equal("v", k.AsString(), "i-th dict entry");
                var e = Assert.ThrowsAf(ErrorCode.NotFound, () => v["missing"].Dispose(), "missing key");
                Assert.Contains("missing", e.Message, "NOT_FOUND names the key");
                Assert.Equal(2, (int)e.Code, "NOT_FOUND is code 2");
            }
        }

        [Test]
        public void KindMismatchIsInvalidArgument()
        {
            using (var s = ctx.Str("x"))
            using (var i = ctx.Int(3))
            {
                Assert.ThrowsAf(ErrorCode.InvalidArgument, () => s.AsInt(), "AsInt on str");
                Assert.ThrowsAf(ErrorCode.InvalidArgument, () => i.AsString(), "AsString on int");
                Assert.ThrowsAf(ErrorCode.InvalidArgument, () => i.AsFloat(), "AsFloat on int");
                Assert.ThrowsAf(ErrorCode.InvalidArgument, () => s.AsBool(), "AsBool on str");
                Assert.ThrowsAf(ErrorCode.InvalidArgument, () => { var n = s.Count; }, "Count on str");
                Assert.ThrowsAf(ErrorCode.InvalidArgument, () => { var n = i.Keys; }, "Keys on int");
            }
        }

        [Test]
        public void BadJsonIsInvalidArgument()
        {
            Assert.ThrowsAf(ErrorCode.InvalidArgument, () => ctx.FromJson("{").Dispose(), "malformed");
            Assert.ThrowsAf(ErrorCode.InvalidArgument, () => ctx.FromJson("{\"a\":1,\"a\":2}").Dispose(), "duplicate key");
            Assert.ThrowsAf(ErrorCode.InvalidArgument, () => ctx.FromJson("9223372036854775808").Dispose(), "int64 overflow");
            Assert.ThrowsAf(ErrorCode.InvalidArgument, () => ctx.FromJson("").Dispose(), "empty");
        }

        [Test]
        public void NanHasNoJson()
        {
            using (var nan = ctx.Float(double.NaN))
            {
                Assert.ThrowsAf(ErrorCode.InvalidArgument, () => nan.ToJson(), "NaN to JSON");
                Assert.True(double.IsNaN(nan.AsFloat()), "NaN value kept");
            }
        }

        [Test]
        public void BuildListAndDict()
        {
            using (var a = ctx.Int(1))
            using (var b = ctx.Str("two"))
            using (var l = ctx.List(a, b))
            using (var d = Value.Dict(ctx, ("x", a), ("y", l)))
            using (var empty = ctx.List())
            {
                Assert.Equal("[1,\"two\"]", l.ToJson());
                Assert.Equal("{\"x\":1,\"y\":[1,\"two\"]}", d.ToJson());
                Assert.Equal(0, empty.Count, "empty list");
                Assert.Equal("[]", empty.ToJson());
                // The caller keeps its own reference: a is still usable.
                Assert.Equal(1L, a.AsInt());
                Assert.ThrowsAf(ErrorCode.InvalidArgument, () => Value.Dict(ctx, ("x", a), ("x", b)).Dispose(), "duplicate dict key");
                var kvs = new List<KeyValuePair<string, Value>> { new KeyValuePair<string, Value>("k", b) };
                using (var d2 = Value.Dict(ctx, kvs)) Assert.Equal("{\"k\":\"two\"}", d2.ToJson());
                Assert.Throws<ArgumentNullException>(() => ctx.List(a, null).Dispose(), "null item");
            }
        }

        [Test]
        public void NonAsciiRoundTrip()
        {
            const string s = "héllo ✓ 𝄞 日本";
            using (var v = ctx.Str(s))
            {
                Assert.Equal(s, v.AsString(), "str round trip");
                using (var back = ctx.FromJson(v.ToJson()))
                    Assert.Equal(s, back.AsString(), "JSON round trip");
            }
            using (var d = ctx.FromJson("{\"clé ✓\": \"valeur ✓\"}"))
            {
                Assert.Equal("clé ✓", d.Keys[0], "non-ASCII key");
                using (var x = d["clé ✓"]) Assert.Equal("valeur ✓", x.AsString());
            }
            using (var e = ctx.Str(""))
                Assert.Equal("", e.AsString(), "empty string");
        }

        [Test]
        public void LoneSurrogateIsRejectedBeforeC()
        {
            Assert.Throws<ArgumentException>(() => ctx.Str("bad \ud800").Dispose(), "lone surrogate");
        }

        [Test]
        public void CloneAndDispose()
        {
            var v = ctx.Str("kept");
            var c = v.Clone();
            v.Dispose();
            Assert.Equal("kept", c.AsString(), "clone survives the original");
            c.Dispose();
            Assert.Throws<ObjectDisposedException>(() => c.AsString(), "use after dispose");
            c.Dispose(); // idempotent
            Assert.Equal("<disposed value>", c.ToString());
        }

        [Test]
        public void UndisposedValuesAreFinalized()
        {
            for (int i = 0; i < 2000; i++) ctx.Str("garbage " + i);
            GC.Collect();
            GC.WaitForPendingFinalizers();
            using (var v = ctx.Str("still fine")) Assert.Equal("still fine", v.AsString());
        }

        [Test]
        public void ErrorCodesMatchHeader()
        {
            Assert.Equal(1, (int)ErrorCode.InvalidArgument);
            Assert.Equal(2, (int)ErrorCode.NotFound);
            Assert.Equal(3, (int)ErrorCode.Schema);
            Assert.Equal(4, (int)ErrorCode.Format);
            Assert.Equal(5, (int)ErrorCode.Version);
            Assert.Equal(6, (int)ErrorCode.Provider);
            Assert.Equal(7, (int)ErrorCode.Timeout);
            Assert.Equal(8, (int)ErrorCode.Cancelled);
            Assert.Equal(9, (int)ErrorCode.Callback);
            Assert.Equal(10, (int)ErrorCode.IO);
            Assert.Equal(11, (int)ErrorCode.OutOfMemory);
            Assert.Equal(12, (int)ErrorCode.Internal);
        }

        [Test]
        public void NativeErrorRoundTrip()
        {
            byte[] msg = System.Text.Encoding.UTF8.GetBytes("boom ✓");
            IntPtr e = Native.af_error_new(7, msg, (UIntPtr)(ulong)msg.Length);
            Assert.True(e != IntPtr.Zero, "af_error_new");
            var ex = AfException.FromNative(e);
            Assert.Equal(ErrorCode.Timeout, ex.Code);
            Assert.Equal("boom ✓", ex.Message);
            Assert.True(ex.InnerException == null, "no cause");
            Assert.True(AfException.FromNative(IntPtr.Zero) == null, "null error");
            Assert.Equal(1, Native.af_error_code(IntPtr.Zero), "code of NULL");
        }
    }
}
