using System;
using System.Runtime.ExceptionServices;
using System.Runtime.InteropServices;

namespace Af
{
    /// <summary>Library-wide information and functions.</summary>
    public static class Library
    {
        /// <summary>"MAJOR.MINOR.PATCH" of the loaded libaf.</summary>
        public static string Version => Utf8.FromNulTerminated(Native.af_version());

        /// <summary>AF_ABI_VERSION of the loaded libaf.</summary>
        public static uint AbiVersion => Native.af_abi_version();

        /// <summary>True if the calling thread is inside a trace callback.</summary>
        public static bool IsTracing => Native.af_is_tracing() != 0;

        /// <summary>Every option libaf reads from JSON options, as JSON
        /// (af_options_json): {"af_context_new_with": [key...],
        /// "af_provider_new": {"echo": [key...], ...},
        /// "af_provider_set_options": [key...]}, each key {"key", "kind",
        /// "default", "min", "max", "doc", "keys"}.</summary>
        public static string OptionsJson()
        {
            AfException.Check(Native.af_options_json(out AfBytes bytes));
            return Utf8.TakeBytes(ref bytes);
        }

        /// <summary>Adds an instant event to the profile of the run calling
        /// this host function: a marker on the run's timeline ("cache miss",
        /// "page 3 fetched"). name: not empty; argsJson: a JSON object shown
        /// with the event, or null for none. It counts when called from a host
        /// function (RegisterFunction, RegisterFunctionBlocking, or an async
        /// function before it returns its Task: not later, from another
        /// thread) while a run that records a profile (RunOptions.Profile or
        /// ProfilePath) calls it, and is then an event {"ph": "i", "cat":
        /// "host", "name", "args": {"eqn": ..., "args": argsJson}} on the
        /// calling thread's track. Anywhere else (no run, an eager call, a run
        /// without a profile) it does nothing. AfInvalidArgumentException:
        /// name empty, argsJson malformed or not an object.</summary>
        public static void ProfileEvent(string name, string argsJson = null)
        {
            byte[] n = Utf8.Encode(name, nameof(name));
            byte[] a = argsJson == null ? null : Utf8.Encode(argsJson, nameof(argsJson));
            AfException.Check(Native.af_profile_event(n, Utf8.Len(n), a, a == null ? UIntPtr.Zero : Utf8.Len(a)));
        }
    }

    /// <summary>A libaf context: what a program needs at run time. Creates
    /// values, traces functions into IRs, and records operations (Format,
    /// Concat, ...) into the trace running on this thread, or evaluates them
    /// right away outside a trace.</summary>
    public sealed partial class Context : IDisposable
    {
        public ContextHandle Handle { get; }

        public Context()
        {
            AfException.Check(Native.af_context_new(out IntPtr p));
            if (p == IntPtr.Zero) throw AfException.Create(ErrorCode.Internal, "af_context_new returned null");
            Handle = new ContextHandle(p);
        }

        public void Dispose() => Handle.Dispose();

        /// <summary>True if the calling thread is inside a trace callback.</summary>
        public static bool IsTracing => Library.IsTracing;

        // --- Value shortcuts ---------------------------------------------
        public Value FromJson(string json) => Value.FromJson(this, json);
        public Value Null() => Value.Null(this);
        public Value Bool(bool b) => Value.Bool(this, b);
        public Value Int(long i) => Value.Int(this, i);
        public Value Float(double f) => Value.Float(this, f);
        public Value Str(string s) => Value.Str(this, s);
        public Value List(params Value[] items) => Value.List(this, items);

        // --- Tracing -----------------------------------------------------

        private sealed class TraceState
        {
            public Context Context;
            public Func<Context, Value[], Value> Fn;
            // fn threw: the error af_trace returns carries the exception
            // (CallbackErrors), rethrown by TraceRaw.
            public bool Threw;
        }

        // Rooted for the life of the process: native code may call it during
        // any af_trace, and it carries no per-call state (that is user_data).
        private static readonly Native.TraceFn s_traceTrampoline = TraceTrampoline;

        private static IntPtr TraceTrampoline(IntPtr userData, IntPtr ctx, IntPtr inputs, UIntPtr nInputs, IntPtr output)
        {
            TraceState st = null;
            Value[] args = null;
            try
            {
                if (output != IntPtr.Zero) Marshal.WriteIntPtr(output, IntPtr.Zero);
                st = (TraceState)GCHandle.FromIntPtr(userData).Target;
                int n = checked((int)(ulong)nInputs);
                args = new Value[n];
                for (int i = 0; i < n; i++)
                    args[i] = Value.FromBorrowed(Marshal.ReadIntPtr(inputs, i * IntPtr.Size));
                Value result = st.Fn(st.Context, args);
                if (result == null)
                    throw new InvalidOperationException("the traced function returned null; return a Value");
                // libaf takes the returned reference: hand it a new one so the
                // managed Value keeps (and later drops) its own.
                using (var b = new Borrow())
                {
                    IntPtr owned = Native.af_value_clone(b.Add(result));
                    Marshal.WriteIntPtr(output, owned);
                }
                return IntPtr.Zero;
            }
            catch (Exception ex)
            {
                if (st != null) st.Threw = true;
                return CallbackErrors.Send(ex, ErrorCode.Callback, "");
            }
            finally
            {
                // Inputs are placeholders that only mean something inside this
                // trace: release our references now rather than at GC time.
                if (args != null)
                    foreach (var a in args)
                        if (a != null) a.Dispose();
            }
        }

        /// <summary>Traces fn once on placeholders shaped like examples into an
        /// IR. fn receives this context and one Value per example, and returns
        /// the output tree. staticMask: a bool tree that is a prefix of the list
        /// of inputs (true = static), or null for all dynamic. An exception
        /// thrown by fn is rethrown here unchanged (same object and stack).
        /// </summary>
        public Ir Trace(Func<Context, Value[], Value> fn, Value[] examples, Value staticMask = null)
        {
            return TraceRaw(fn, examples, staticMask, null, false);
        }

        /// <summary>Trace with a list mask: a bool tree that is a prefix of the
        /// list of inputs whose true leaves mark example lists (of leaves of one
        /// kind, or nested lists of them) traced as lists of any length: one
        /// placeholder each, an input of kind list&lt;T&gt;, what a batched IR
        /// (Ir.Batch) takes. Calls pass lists of any length. INVALID_ARGUMENT
        /// naming the input path for a list mask that is not a prefix of the
        /// inputs or marks something other than a non-empty list of one kind.
        /// </summary>
        public Ir TraceWith(Func<Context, Value[], Value> fn, Value[] examples, Value listMask, Value staticMask = null)
        {
            return TraceRaw(fn, examples, staticMask, listMask, true);
        }

        // af_trace, or af_trace_with when `with` is set.
        private Ir TraceRaw(Func<Context, Value[], Value> fn, Value[] examples, Value staticMask, Value listMask, bool with)
        {
            if (fn == null) throw new ArgumentNullException(nameof(fn));
            if (examples == null) throw new ArgumentNullException(nameof(examples));
            var st = new TraceState { Context = this, Fn = fn };
            GCHandle gch = GCHandle.Alloc(st);
            IntPtr err;
            IntPtr ir;
            try
            {
                using (var b = new Borrow())
                {
                    IntPtr c = b.Add(Handle);
                    IntPtr[] ex = b.AddAll(examples, nameof(examples));
                    IntPtr mask = b.Add(staticMask);
                    if (with)
                    {
                        var o = new Native.AfTraceOptions
                        {
                            StructSize = (uint)Marshal.SizeOf(typeof(Native.AfTraceOptions)),
                            StaticMask = mask,
                            ListMask = b.Add(listMask),
                        };
                        err = Native.af_trace_with(c, s_traceTrampoline, GCHandle.ToIntPtr(gch), ex,
                                                   (UIntPtr)(ulong)ex.Length, ref o, out ir);
                    }
                    else
                    {
                        err = Native.af_trace(c, s_traceTrampoline, GCHandle.ToIntPtr(gch), ex,
                                              (UIntPtr)(ulong)ex.Length, mask, out ir);
                    }
                }
            }
            finally
            {
                gch.Free();
                GC.KeepAlive(s_traceTrampoline);
            }
            if (st.Threw && err != IntPtr.Zero)
            {
                // The managed exception is the real story; libaf's CALLBACK
                // error (and anything built on top of it) only wraps it. It
                // is read from the error's payload before the error is freed.
                Exception thrown = CallbackErrors.Carried(err);
                if (thrown != null)
                {
                    Native.af_error_free(err);
                    Native.af_ir_free(ir);
                    ExceptionDispatchInfo.Capture(thrown).Throw(); // same object, stack kept
                    throw thrown; // not reached
                }
            }
            AfException.Check(err);
            if (ir == IntPtr.Zero) throw AfException.Create(ErrorCode.Internal, "af_trace returned no IR");
            return new Ir(new IrHandle(ir));
        }

        /// <summary>Trace with one example per input.</summary>
        public Ir Trace(Func<Context, Value[], Value> fn, params Value[] examples)
        {
            return Trace(fn, examples, null);
        }

        // --- Tags and fold -----------------------------------------------

        /// <summary>While pushed, equations recorded by the innermost trace of
        /// this thread carry tag. INVALID_ARGUMENT outside a trace.</summary>
        public void PushTag(string tag)
        {
            byte[] t = Utf8.Encode(tag, nameof(tag));
            using (var b = new Borrow())
                AfException.Check(Native.af_tag_push(b.Add(Handle), t, Utf8.Len(t)));
        }

        public void PopTag()
        {
            using (var b = new Borrow())
                AfException.Check(Native.af_tag_pop(b.Add(Handle)));
        }

        /// <summary>PushTag now, PopTag on Dispose: <c>using (ctx.Tag("x")) {...}</c></summary>
        public IDisposable Tag(string tag)
        {
            PushTag(tag);
            return new Scope(this, c => c.PopTag());
        }

        /// <summary>While pushed, what the innermost trace of this thread
        /// records (or, outside a trace, a lazy context) carries name in its
        /// name path ("triage/classify"). INVALID_ARGUMENT outside a trace on
        /// an eager context, for an empty name or one holding '/'.</summary>
        public void PushName(string name)
        {
            byte[] n = Utf8.Encode(name, nameof(name));
            using (var b = new Borrow())
                AfException.Check(Native.af_name_push(b.Add(Handle), n, Utf8.Len(n)));
        }

        public void PopName()
        {
            using (var b = new Borrow())
                AfException.Check(Native.af_name_pop(b.Add(Handle)));
        }

        /// <summary>PushName now, PopName on Dispose: <c>using (ctx.Name("triage")) {...}</c></summary>
        public IDisposable Name(string name)
        {
            PushName(name);
            return new Scope(this, c => c.PopName());
        }

        /// <summary>Between push and pop, operations run at trace time and
        /// their results become literals.</summary>
        public void PushFold()
        {
            using (var b = new Borrow())
                AfException.Check(Native.af_fold_push(b.Add(Handle)));
        }

        public void PopFold()
        {
            using (var b = new Borrow())
                AfException.Check(Native.af_fold_pop(b.Add(Handle)));
        }

        /// <summary>PushFold now, PopFold on Dispose.</summary>
        public IDisposable Fold()
        {
            PushFold();
            return new Scope(this, c => c.PopFold());
        }

        private sealed class Scope : IDisposable
        {
            private Context _ctx;
            private readonly Action<Context> _pop;

            public Scope(Context ctx, Action<Context> pop)
            {
                _ctx = ctx;
                _pop = pop;
            }

            public void Dispose()
            {
                Context c = _ctx;
                if (c == null) return;
                _ctx = null;
                _pop(c);
            }
        }

        // --- Operations --------------------------------------------------

        /// <summary>Python-style template: "{}", "{0}", "{name}", "{{", "}}".
        /// Non-string arguments are stringified as JSON.</summary>
        public Value Format(string template, params Value[] args)
        {
            return FormatNamed(template, args, null);
        }

        /// <summary>Format with named arguments (a dict, or null).</summary>
        public Value FormatNamed(string template, Value[] args, Value named)
        {
            byte[] t = Utf8.Encode(template, nameof(template));
            using (var b = new Borrow())
            {
                IntPtr c = b.Add(Handle);
                IntPtr[] a = b.AddAll(args ?? new Value[0], nameof(args));
                IntPtr nm = b.Add(named);
                AfException.Check(Native.af_format(c, t, Utf8.Len(t), a, (UIntPtr)(ulong)a.Length, nm, out IntPtr o));
                return Value.Own(o, Handle);
            }
        }

        /// <summary>Concatenation of strings (every argument must be a str).</summary>
        public Value Concat(params Value[] args)
        {
            using (var b = new Borrow())
            {
                IntPtr c = b.Add(Handle);
                IntPtr[] a = b.AddAll(args, nameof(args));
                AfException.Check(Native.af_concat(c, a, (UIntPtr)(ulong)a.Length, out IntPtr o));
                return Value.Own(o, Handle);
            }
        }

        /// <summary>String equality: a bool value.</summary>
        public Value Match(Value a, Value b)
        {
            if (a == null) throw new ArgumentNullException(nameof(a));
            if (b == null) throw new ArgumentNullException(nameof(b));
            using (var br = new Borrow())
            {
                AfException.Check(Native.af_match(br.Add(Handle), br.Add(a), br.Add(b), out IntPtr o));
                return Value.Own(o, Handle);
            }
        }

        /// <summary>Identity on a tree; tangents and cotangents through it are Zero.</summary>
        public Value StopGradient(Value v)
        {
            if (v == null) throw new ArgumentNullException(nameof(v));
            using (var b = new Borrow())
            {
                AfException.Check(Native.af_stop_gradient(b.Add(Handle), b.Add(v), out IntPtr o));
                return Value.Own(o, Handle);
            }
        }

        /// <summary>value, produced only after every dep exists.</summary>
        public Value Depends(Value value, params Value[] deps)
        {
            if (value == null) throw new ArgumentNullException(nameof(value));
            using (var b = new Borrow())
            {
                IntPtr c = b.Add(Handle);
                IntPtr v = b.Add(value);
                IntPtr[] d = b.AddAll(deps, nameof(deps));
                AfException.Check(Native.af_depends(c, v, d, (UIntPtr)(ulong)d.Length, out IntPtr o));
                return Value.Own(o, Handle);
            }
        }

        /// <summary>Identity that marks v as checkpoint key of collection.</summary>
        public Value Checkpoint(Value v, string key, string collection)
        {
            if (v == null) throw new ArgumentNullException(nameof(v));
            byte[] k = Utf8.Encode(key, nameof(key));
            byte[] col = Utf8.Encode(collection, nameof(collection));
            using (var b = new Borrow())
            {
                AfException.Check(Native.af_checkpoint(b.Add(Handle), b.Add(v), k, Utf8.Len(k), col, Utf8.Len(col), out IntPtr o));
                return Value.Own(o, Handle);
            }
        }
    }
}
