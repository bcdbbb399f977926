using System;
using System.Linq;
using System.Threading;
using System.Threading.Tasks;

namespace Af.Tests
{
    public sealed class TraceTests : IDisposable
    {
        private readonly Context ctx = new Context();

        public void Dispose() => ctx.Dispose();

        // hello(x) = concat(format("Hello, {}!", x), "?")
        private static Value Hello(Context c, Value[] a)
        {
            using (var greeting = c.Format("Hello, {}!", a[0]))
            using (var q = c.Str("?"))
                return c.Concat(greeting, q);
        }

        private Ir TraceHello()
        {
            using (var example = ctx.Str("x"))
                return ctx.Trace(Hello, new[] { example });
        }

        private string CallStr(Ir ir, params string[] inputs)
        {
            var vals = inputs.Select(s => ctx.Str(s)).ToArray();
            try
            {
                using (var r = ir.Call(ctx, vals)) return r.AsString();
            }
            finally
            {
                foreach (var v in vals) v.Dispose();
            }
        }

        [Test]
        public void TracedListOfAnyLengthCallsABatchedIr()
        {
            using (var t = ctx.Str("t"))
            using (var one = ctx.Trace((c, a) => c.Format("Triage: {}", a[0]), new[] { t }))
            using (var each = one.Batch(ctx))
            using (var example = Value.FromJson(ctx, "[\"an example\"]"))
            using (var lists = Value.FromJson(ctx, "[true]"))
            using (var all = ctx.TraceWith((c, a) => each.Call(c, a), new[] { example }, lists))
            {
                // The batched equations are recorded once: the program is the batched IR.
                Assert.True(all.Equals(each), "the traced program is the batched IR");
                using (var three = Value.FromJson(ctx, "[\"a\",\"b\",\"c\"]"))
                using (var r = all.Call(ctx, three))
                    Assert.Equal("[\"Triage: a\",\"Triage: b\",\"Triage: c\"]", r.ToJson());
                using (var oneItem = Value.FromJson(ctx, "[\"a\"]"))
                using (var r = all.Call(ctx, oneItem))
                    Assert.Equal("[\"Triage: a\"]", r.ToJson());
                using (var bad = Value.FromJson(ctx, "[\"a\",2]"))
                {
                    var ex = Assert.ThrowsAf(ErrorCode.InvalidArgument, () => all.Call(ctx, bad).Dispose());
                    Assert.Contains("input[0][1]", ex.Message);
                }
                using (var notList = ctx.Str("not a list"))
                {
                    var ex = Assert.ThrowsAf(ErrorCode.InvalidArgument,
                        () => ctx.TraceWith((c, a) => a[0], new[] { notList }, lists).Dispose());
                    Assert.Contains("only a list", ex.Message);
                }
            }
        }

        // 1. -------------------------------------------------------------
        [Test]
        public void HelloFromLambda()
        {
            using (var example = ctx.Str("x"))
            using (var ir = ctx.Trace((c, a) =>
                   {
                       using (var g = c.Format("Hello, {}!", a[0]))
                       using (var q = c.Str("?"))
                           return c.Concat(g, q);
                   }, new[] { example }))
            using (var world = ctx.Str("World"))
            using (var result = ir.Call(ctx, world))
            {
                Assert.Equal(ValueKind.Str, result.Kind);
                Assert.Equal("Hello, World!?", result.AsString());
                Assert.Equal(1, ir.InputCount, "input count");
            }
        }

        [Test]
        public void HelloNonAscii()
        {
            using (var ir = TraceHello())
                Assert.Equal("Hello, héllo ✓!?", CallStr(ir, "héllo ✓"));
            using (var example = ctx.Str("x"))
            using (var ir = ctx.Trace((c, a) => c.Format("« {} » ✓", a[0]), example))
                Assert.Equal("« 𝄞 » ✓", CallStr(ir, "𝄞"));
        }

        // 2. -------------------------------------------------------------
        [Test]
        public void BadTemplatesInsideTrace()
        {
            foreach (var tmpl in new[] { "Hello, {", "{} {0}", "}", "{0} {}" })
            {
                using (var example = ctx.Str("x"))
                {
                    var ex = Assert.ThrowsAf(ErrorCode.InvalidArgument,
                        () => ctx.Trace((c, a) => c.Format(tmpl, a[0], a[0]), example).Dispose(),
                        "template " + tmpl);
                    Assert.Equal(1, (int)ex.Code, "code of " + tmpl);
                }
                Assert.False(Library.IsTracing, "trace ended after a failure");
            }
        }

        [Test]
        public void BadTemplatesOutsideTrace()
        {
            using (var x = ctx.Str("x"))
            {
                Assert.ThrowsAf(ErrorCode.InvalidArgument, () => ctx.Format("Hello, {", x).Dispose(), "unbalanced");
                Assert.ThrowsAf(ErrorCode.InvalidArgument, () => ctx.Format("{} {0}", x, x).Dispose(), "mixed numbering");
                Assert.ThrowsAf(ErrorCode.InvalidArgument, () => ctx.Format("{} {}", x).Dispose(), "missing positional");
                Assert.ThrowsAf(ErrorCode.InvalidArgument, () => ctx.Format("{name}", x).Dispose(), "missing named");
            }
        }

        [Test]
        public void FormatOutsideTraceEvaluates()
        {
            using (var bob = ctx.Str("Bob"))
            using (var two = ctx.Int(2))
            using (var half = ctx.Float(2.5))
            using (var hi = ctx.Str("Hi"))
            using (var named = Value.Dict(ctx, ("g", hi)))
            {
                using (var r = ctx.Format("Hello, {}!", bob)) Assert.Equal("Hello, Bob!", r.AsString());
                using (var r = ctx.Format("{} {} {{}}", two, half)) Assert.Equal("2 2.5 {}", r.AsString());
                using (var r = ctx.Format("{1}{0}", bob, two)) Assert.Equal("2Bob", r.AsString());
                using (var r = ctx.FormatNamed("{g}, {}!", new[] { bob }, named)) Assert.Equal("Hi, Bob!", r.AsString());
                using (var r = ctx.Concat(bob, hi, bob)) Assert.Equal("BobHiBob", r.AsString());
                using (var list = ctx.FromJson("[1,\"a\",2.0]"))
                using (var r = ctx.Format("{}", list)) Assert.Equal("[1,\"a\",2.0]", r.AsString(), "containers as JSON");
                Assert.ThrowsAf(ErrorCode.InvalidArgument, () => ctx.Concat(bob, two).Dispose(), "concat of an int");
                using (var r = ctx.Match(bob, bob)) Assert.True(r.AsBool(), "match equal");
                using (var r = ctx.Match(bob, hi)) Assert.False(r.AsBool(), "match different");
            }
        }

        [Test]
        public void FormatSingleItemContainerAsJson()
        {
            // af.h, af_format: non-string arguments are stringified as JSON.
            using (var one = ctx.FromJson("[\"a\"]"))
            using (var r = ctx.Format("{}", one)) Assert.Equal("[\"a\"]", r.AsString(), "format of [\"a\"]");
            using (var d = ctx.FromJson("{\"k\":1}"))
            using (var r = ctx.Format("{}", d)) Assert.Equal("{\"k\":1}", r.AsString(), "format of {\"k\":1}");
        }

        [Test]
        public void FormatStringifiesContainerHoldingPlaceholder()
        {
            // af.h, af_format: a list or dict argument may hold placeholders;
            // it is stringified as JSON when the program runs.
            using (var example = ctx.Str("x"))
            using (var ir = ctx.Trace((c, a) =>
                {
                    using (var list = c.List(a[0])) return c.Format("{}", list);
                }, example))
                Assert.Equal("[\"a\"]", CallStr(ir, "a"));
        }

        // 3. -------------------------------------------------------------
        [Test]
        public void WrongInputKindAtCall()
        {
            using (var ir = TraceHello())
            using (var i = ctx.Int(42))
            {
                var ex = Assert.ThrowsAf(ErrorCode.InvalidArgument, () => ir.Call(ctx, i).Dispose(), "int where str traced");
                Assert.Equal(1, (int)ex.Code);
                Assert.Contains("str", ex.Message, "names the expected kind");
                Assert.Contains("int", ex.Message, "names the found kind");
            }
        }

        [Test]
        public void WrongInputCountAtCall()
        {
            using (var ir = TraceHello())
            using (var a = ctx.Str("a"))
            {
                Assert.ThrowsAf(ErrorCode.InvalidArgument, () => ir.Call(ctx).Dispose(), "no inputs");
                Assert.ThrowsAf(ErrorCode.InvalidArgument, () => ir.Call(ctx, a, a).Dispose(), "two inputs");
            }
        }

        [Test]
        public void CallRejectsPlaceholderInput()
        {
            // af.h, af_ir_call: each input must match the traced leaf kinds; a
            // placeholder (here one of a finished trace) is not a str.
            Value leaked = null;
            using (var example = ctx.Str("x"))
            using (var ir = ctx.Trace((c, a) => { leaked = a[0].Clone(); return c.Concat(a[0]); }, example))
            using (leaked)
            {
                Assert.Equal(ValueKind.Placeholder, leaked.Kind, "leaked input kind");
                Assert.ThrowsAf(ErrorCode.InvalidArgument, () => ir.Call(ctx, leaked).Dispose(), "call with a placeholder");
            }
        }

        // 5. -------------------------------------------------------------
        [Test]
        public void AfExceptionFromLambdaIsRethrown()
        {
            var thrown = new AfException(ErrorCode.Callback, "custom failure ✓");
            using (var example = ctx.Str("x"))
            {
                var caught = Assert.Throws<AfException>(
                    () => ctx.Trace((c, a) => { throw thrown; }, example).Dispose(), "AfException");
                Assert.Same(thrown, caught, "the original exception");
                Assert.Equal(ErrorCode.Callback, caught.Code);
                Assert.Equal("custom failure ✓", caught.Message);

                var notFound = new AfException(ErrorCode.NotFound, "nope");
                var caught2 = Assert.Throws<AfException>(
                    () => ctx.Trace((c, a) => { throw notFound; }, example).Dispose(), "AfException NotFound");
                Assert.Same(notFound, caught2, "the original exception");
            }
        }

        [Test]
        public void ManagedExceptionFromLambdaIsRethrown()
        {
            var thrown = new InvalidOperationException("managed failure");
            using (var example = ctx.Str("x"))
            {
                var caught = Assert.Throws<InvalidOperationException>(
                    () => ctx.Trace((c, a) => ThrowFromHelper(thrown), example).Dispose(), "InvalidOperationException");
                Assert.Same(thrown, caught, "the original exception");
                Assert.Contains("ThrowFromHelper", caught.StackTrace, "original stack trace kept");
                // The context is still usable afterwards.
                using (var ir = TraceHello()) Assert.Equal("Hello, again!?", CallStr(ir, "again"));
                Assert.False(Library.IsTracing, "not tracing after the failure");
            }
        }

        [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.NoInlining)]
        private static Value ThrowFromHelper(Exception ex)
        {
            throw ex;
        }

        [Test]
        public void ExceptionAfterOperationsIsRethrown()
        {
            using (var example = ctx.Str("x"))
            {
                var caught = Assert.Throws<FormatException>(() => ctx.Trace((c, a) =>
                {
                    var v = c.Format("{}!", a[0]);
                    throw new FormatException("after recording " + v.Kind);
                }, example).Dispose(), "FormatException");
                Assert.Contains("Placeholder", caught.Message, "inputs were placeholders");
            }
        }

        [Test]
        public void ExceptionFromNestedTraceReachesOutermostCaller()
        {
            var thrown = new ArgumentException("deep");
            using (var example = ctx.Str("x"))
            {
                var caught = Assert.Throws<ArgumentException>(() => ctx.Trace((c, a) =>
                {
                    using (var inner = c.Trace((c2, a2) => { throw thrown; }, a[0]))
                        return inner.Call(c, a[0]);
                }, example).Dispose(), "nested");
                Assert.Same(thrown, caught, "the original exception");
            }
        }

        [Test]
        public void LambdaReturningNull()
        {
            using (var example = ctx.Str("x"))
                Assert.Throws<InvalidOperationException>(() => ctx.Trace((c, a) => null, example).Dispose(), "null output");
        }

        [Test]
        public void CallbackErrorCauseBecomesInnerException()
        {
            // Through the raw API: a callback error is chained as the cause of
            // a CALLBACK error, which AfException exposes as InnerException.
            Native.TraceFn raw = (ud, c, ins, n, o) =>
            {
                byte[] m = System.Text.Encoding.UTF8.GetBytes("provider down ✓");
                return Native.af_error_new(Native.AF_ERR_PROVIDER, m, (UIntPtr)(ulong)m.Length);
            };
            using (var example = ctx.Str("x"))
            {
                IntPtr err = Native.af_trace(ctx.Handle.DangerousGetHandle(), raw, IntPtr.Zero,
                    new[] { example.Handle.DangerousGetHandle() }, (UIntPtr)1UL, IntPtr.Zero, out IntPtr ir);
                GC.KeepAlive(raw);
                GC.KeepAlive(example);
                Assert.True(ir == IntPtr.Zero, "no IR on failure");
                var ex = AfException.FromNative(err);
                Assert.True(ex != null, "af_trace failed");
                Assert.Equal(ErrorCode.Callback, ex.Code, "outer code");
                var inner = ex.InnerException as AfException;
                Assert.True(inner != null, "InnerException is an AfException");
                Assert.Equal(ErrorCode.Provider, inner.Code, "cause code");
                Assert.Equal("provider down ✓", inner.Message, "cause message");
            }
        }

        // 6. -------------------------------------------------------------
        [Test]
        public void TextAndEquations()
        {
            using (var ir = TraceHello())
            {
                string text = ir.ToText();
                Assert.Contains("format", text, "text");
                Assert.Contains("concat", text, "text");
                Assert.Equal(2, ir.EqnCount, "EqnCount");
                Assert.Equal("format", ir.EqnPrim(0), "prim 0");
                Assert.Equal("concat", ir.EqnPrim(1), "prim 1");
                Assert.True(ir.EqnPrim(2) == null, "prim out of range is null");
                Assert.True(ir.EqnPrim(-1) == null, "negative prim index is null");
                Assert.Equal(text, ir.ToString(), "ToString is the text");
                string dot = ir.ToDot();
                Assert.Contains("digraph", dot, "dot");
            }
        }

        [Test]
        public void StructuralEqualityAndHash()
        {
            using (var a = TraceHello())
            using (var b = TraceHello())
            using (var example = ctx.Str("x"))
            using (var other = ctx.Trace((c, x) => c.Format("Bye, {}!", x[0]), example))
            using (var clone = a.Clone())
            {
                Assert.True(a.Equals(b), "same program, equal");
                Assert.True(a.Equals((object)b), "Equals(object)");
                Assert.Equal(a.Hash, b.Hash, "hash");
                Assert.Equal(a.GetHashCode(), b.GetHashCode(), "GetHashCode");
                Assert.False(a.Equals(other), "different program");
                Assert.NotEqual(a.Hash, other.Hash, "different hash");
                Assert.True(a.Equals(clone), "clone");
                Assert.False(a.Equals(null), "null");
            }
        }

        [Test]
        public void IsTracingInsideLambda()
        {
            bool inside = false;
            using (var example = ctx.Str("x"))
            using (ctx.Trace((c, a) => { inside = Context.IsTracing; return c.Concat(a[0], a[0]); }, example))
            {
                Assert.True(inside, "IsTracing inside the lambda");
                Assert.False(Context.IsTracing, "IsTracing after");
            }
        }

        [Test]
        public void InputsArePlaceholders()
        {
            ValueKind kind = ValueKind.Null;
            AfException readError = null;
            using (var example = ctx.Str("x"))
            using (ctx.Trace((c, a) =>
            {
                kind = a[0].Kind;
                try { a[0].AsString(); } catch (AfException e) { readError = e; }
                return c.Concat(a[0]);
            }, example))
            {
                Assert.Equal(ValueKind.Placeholder, kind, "input kind");
                Assert.True(readError != null && readError.Code == ErrorCode.InvalidArgument, "reading a placeholder");
            }
        }

        [Test]
        public void StructuredInputs()
        {
            using (var example = ctx.FromJson("{\"name\": \"x\", \"tags\": [\"a\", \"b\"]}"))
            using (var ir = ctx.Trace((c, a) =>
            {
                using (var name = a[0]["name"])
                using (var tags = a[0]["tags"])
                using (var t0 = tags[0])
                using (var t1 = tags[1])
                    return c.List(c.Format("{}:{}", name, t0), c.Concat(t1, name));
            }, example))
            using (var input = ctx.FromJson("{\"name\": \"N\", \"tags\": [\"p\", \"q\"]}"))
            using (var r = ir.Call(ctx, input))
            {
                Assert.Equal("[\"N:p\",\"qN\"]", r.ToJson());
                using (var bad = ctx.FromJson("{\"name\": \"N\", \"tags\": [\"p\"]}"))
                    Assert.ThrowsAf(ErrorCode.InvalidArgument, () => ir.Call(ctx, bad).Dispose(), "wrong structure");
            }
        }

        [Test]
        public void StaticMask()
        {
            using (var g = ctx.Str("Hi"))
            using (var n = ctx.Str("x"))
            using (var t = ctx.Bool(true))
            using (var f = ctx.Bool(false))
            using (var mask = ctx.List(t, f))
            {
                string seen = null;
                using (var ir = ctx.Trace((c, a) =>
                {
                    seen = a[0].AsString(); // static leaf: the example itself
                    return c.Format("{}, {}!", a[0], a[1]);
                }, new[] { g, n }, mask))
                {
                    Assert.Equal("Hi", seen, "static leaf readable while tracing");
                    Assert.Equal("Hi, Bob!", CallStr(ir, "Hi", "Bob"));
                    Assert.ThrowsAf(ErrorCode.InvalidArgument, () => CallStr(ir, "Yo", "Bob"), "static leaf differs");
                }
                using (var badMask = ctx.List(t, f, t))
                    Assert.ThrowsAf(ErrorCode.InvalidArgument,
                        () => ctx.Trace((c, a) => c.Concat(a[0], a[1]), new[] { g, n }, badMask).Dispose(), "mask not a prefix");
            }
        }

        [Test]
        public void Tags()
        {
            using (var example = ctx.Str("x"))
            using (var tagged = ctx.Trace((c, a) =>
            {
                using (c.Tag("greeting-tag"))
                using (var g = c.Format("Hello, {}!", a[0]))
                using (var q = c.Str("?"))
                    return c.Concat(g, q);
            }, example))
            using (var plain = TraceHello())
            {
                Assert.Contains("greeting-tag", tagged.ToText(), "tag in text");
                Assert.False(tagged.Equals(plain), "tags are part of equality");
                Assert.Equal("Hello, t!?", CallStr(tagged, "t"));
            }
            Assert.ThrowsAf(ErrorCode.InvalidArgument, () => ctx.PushTag("outside"), "tag outside a trace");
            using (var example = ctx.Str("x"))
                Assert.ThrowsAf(ErrorCode.InvalidArgument,
                    () => ctx.Trace((c, a) => { c.PopTag(); return c.Concat(a[0]); }, example).Dispose(), "pop without push");
        }

        [Test]
        public void Fold()
        {
            using (var example = ctx.Str("x"))
            using (var ir = ctx.Trace((c, a) =>
            {
                Value k;
                using (c.Fold())
                using (var p = c.Str("a"))
                using (var q = c.Str("b"))
                    k = c.Format("{}-{}", p, q);
                Assert.Equal("a-b", k.AsString(), "folded result is concrete");
                return c.Concat(k, a[0]);
            }, example))
            {
                Assert.Equal(1, ir.EqnCount, "only concat recorded");
                Assert.Equal("a-bX", CallStr(ir, "X"));
            }
            using (var example = ctx.Str("x"))
            {
                var ex = Assert.ThrowsAf(ErrorCode.InvalidArgument, () => ctx.Trace((c, a) =>
                {
                    using (c.Fold()) return c.Format("{}", a[0]);
                }, example).Dispose(), "fold of a placeholder");
                Assert.Contains("fold", ex.Message, "message says fold");
            }
            // Fold scopes outside a trace are no-ops (docs/SEMANTICS.md).
            ctx.PushFold();
            ctx.PopFold();
        }

        [Test]
        public void MatchTraced()
        {
            using (var example = ctx.Str("x"))
            using (var ir = ctx.Trace((c, a) => { using (var yes = c.Str("yes")) return c.Match(a[0], yes); }, example))
            using (var yes = ctx.Str("yes"))
            using (var no = ctx.Str("no"))
            {
                using (var r = ir.Call(ctx, yes)) { Assert.Equal(ValueKind.Bool, r.Kind); Assert.True(r.AsBool(), "yes"); }
                using (var r = ir.Call(ctx, no)) Assert.False(r.AsBool(), "no");
            }
        }

        [Test]
        public void StopGradientDependsCheckpoint()
        {
            using (var x = ctx.Str("x"))
            using (var y = ctx.Str("y"))
            using (var ir = ctx.Trace((c, a) =>
            {
                using (var f = c.Format("<{}>", a[0]))
                using (var s = c.StopGradient(f))
                using (var k = c.Checkpoint(s, "ck-key", "ck-coll"))
                    return c.Depends(k, a[1]);
            }, new[] { x, y }))
            {
                Assert.Equal("<A>", CallStr(ir, "A", "B"));
                string text = ir.ToText();
                Assert.Contains("ck-key", text, "checkpoint key in text");
                Assert.Contains("ck-coll", text, "checkpoint collection in text");
                var prims = Enumerable.Range(0, ir.EqnCount).Select(i => ir.EqnPrim(i)).ToList();
                Assert.Equal(4, prims.Count, "format, stop_gradient, checkpoint, depends: " + string.Join(",", prims));
                Assert.True(prims.All(p => !string.IsNullOrEmpty(p)), "every prim named");
            }
            using (var v = ctx.Str("v"))
            using (var d = ctx.Str("d"))
            {
                using (var r = ctx.StopGradient(v)) Assert.Equal("v", r.AsString(), "eager stop_gradient");
                using (var r = ctx.Depends(v, d)) Assert.Equal("v", r.AsString(), "eager depends");
                using (var r = ctx.Checkpoint(v, "k", "c")) Assert.Equal("v", r.AsString(), "eager checkpoint");
            }
        }

        [Test]
        public void CallInsideTraceInlines()
        {
            using (var hello = TraceHello())
            using (var example = ctx.Str("x"))
            using (var outer = ctx.Trace((c, a) =>
            {
                using (var h = hello.Call(c, a[0]))
                    return c.Concat(h, h);
            }, example))
            {
                Assert.Equal(3, outer.EqnCount, "format, concat inlined + concat");
                Assert.Equal("Hello, A!?Hello, A!?", CallStr(outer, "A"));
            }
        }

        [Test]
        public void WalkEvalAndSend()
        {
            using (var ir = TraceHello())
            using (var world = ctx.Str("World"))
            {
                using (var w = ir.Walk(ctx, world))
                {
                    long idx;
                    Value ins;
                    Assert.True(w.Next(out idx, out ins), "first equation");
                    Assert.Equal(0L, idx, "first index");
                    using (ins) Assert.Contains("World", ins.ToJson(), "format inputs");
                    Assert.ThrowsAf(ErrorCode.InvalidArgument, () => w.Outputs().Dispose(), "outputs while equations remain");
                    w.Eval();
                    Assert.True(w.Next(out idx, out ins), "second equation");
                    Assert.Equal(1L, idx, "second index");
                    using (ins) Assert.Contains("Hello, World!", ins.ToJson(), "concat inputs");
                    Value again;
                    Assert.True(w.Next(out idx, out again), "same equation again");
                    Assert.Equal(1L, idx, "same index again");
                    again.Dispose();
                    using (var wrong = ctx.Int(1))
                        Assert.ThrowsAf(ErrorCode.InvalidArgument, () => w.Send(wrong), "send wrong kind");
                    using (var custom = ctx.Str("custom ✓")) w.Send(custom);
                    Assert.False(w.Next(out idx, out ins), "done");
                    Assert.Equal(-1L, idx, "done index");
                    Assert.True(ins == null, "no inputs when done");
                    using (var o = w.Outputs()) Assert.Equal("custom ✓", o.AsString());
                }
                using (var w = new Walk(ctx, ir, world))
                {
                    long idx;
                    Value ins;
                    int steps = 0;
                    while (w.Next(out idx, out ins)) { ins.Dispose(); w.Eval(); steps++; }
                    Assert.Equal(2, steps, "steps");
                    using (var o = w.Outputs()) Assert.Equal("Hello, World!?", o.AsString());
                }
                using (var i = ctx.Int(3))
                    Assert.ThrowsAf(ErrorCode.InvalidArgument, () => ir.Walk(ctx, i).Dispose(), "walk inputs checked");
            }
        }

        [Test]
        public void WalkKeepsContextAndIrAlive()
        {
            var c2 = new Context();
            var ir = TraceHello();
            var w = ir.Walk(c2, ctx.Str("kept"));
            c2.Dispose();
            ir.Dispose();
            long idx;
            Value ins;
            while (w.Next(out idx, out ins)) { ins.Dispose(); w.Eval(); }
            using (var o = w.Outputs()) Assert.Equal("Hello, kept!?", o.AsString());
            w.Dispose();
        }

        [Test]
        public void ConcurrentCalls()
        {
            using (var ir = TraceHello())
            {
                int failures = 0;
                var threads = Enumerable.Range(0, 8).Select(t => new Thread(() =>
                {
                    for (int i = 0; i < 200; i++)
                    {
                        string name = "t" + t + "-" + i;
                        try
                        {
                            using (var v = ctx.Str(name))
                            using (var r = ir.Call(ctx, v))
                                if (r.AsString() != "Hello, " + name + "!?") Interlocked.Increment(ref failures);
                        }
                        catch (Exception)
                        {
                            Interlocked.Increment(ref failures);
                        }
                    }
                })).ToList();
                threads.ForEach(th => th.Start());
                threads.ForEach(th => th.Join());
                Assert.Equal(0, failures, "failed concurrent calls");
            }
        }

        [Test]
        public void CallAsync()
        {
            using (var ir = TraceHello())
            using (var v = ctx.Str("async"))
            {
                Task<Value> t = ir.CallAsync(ctx, v);
                using (var r = t.Result) Assert.Equal("Hello, async!?", r.AsString());
                using (var i = ctx.Int(1))
                {
                    var agg = Assert.Throws<AggregateException>(() => ir.CallAsync(ctx, i).Wait(), "async failure");
                    var inner = agg.InnerException as AfException;
                    Assert.True(inner != null && inner.Code == ErrorCode.InvalidArgument, "async error is an AfException");
                }
            }
        }

        [Test]
        public void ReentrantTracesOnManyThreads()
        {
            int failures = 0;
            var threads = Enumerable.Range(0, 4).Select(t => new Thread(() =>
            {
                try
                {
                    for (int i = 0; i < 20; i++)
                    {
                        using (var example = ctx.Str("x"))
                        using (var ir = ctx.Trace(Hello, example))
                        using (var v = ctx.Str("n" + i))
                        using (var r = ir.Call(ctx, v))
                            if (r.AsString() != "Hello, n" + i + "!?") Interlocked.Increment(ref failures);
                    }
                }
                catch (Exception)
                {
                    Interlocked.Increment(ref failures);
                }
            })).ToList();
            threads.ForEach(th => th.Start());
            threads.ForEach(th => th.Join());
            Assert.Equal(0, failures, "failed concurrent traces");
        }
    }
}
