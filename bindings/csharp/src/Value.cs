using System;
using System.Collections.Generic;
using System.Runtime.InteropServices;

namespace Af
{
    /// <summary>The AF_KIND_* of a value.</summary>
    public enum ValueKind
    {
        Null = Native.AF_KIND_NULL,
        Bool = Native.AF_KIND_BOOL,
        Int = Native.AF_KIND_INT,
        Float = Native.AF_KIND_FLOAT,
        Str = Native.AF_KIND_STR,
        List = Native.AF_KIND_LIST,
        Dict = Native.AF_KIND_DICT,
        /// <summary>A traced leaf (only seen inside a trace).</summary>
        Placeholder = Native.AF_KIND_PLACEHOLDER,
    }

    /// <summary>An immutable libaf value tree (null, bool, int, float, str,
    /// list, dict; a placeholder inside a trace). Owns one reference. A
    /// pending promise of a lazy context (and a clone, item, list or dict
    /// made from it) keeps that context alive until it is disposed or
    /// collected, even if the Context is disposed or collected first.</summary>
    public sealed partial class Value : IDisposable
    {
        public ValueHandle Handle { get; }

        /// <summary>Wraps h, taking ownership of its reference.</summary>
        public Value(ValueHandle h)
        {
            if (h == null) throw new ArgumentNullException(nameof(h));
            Handle = h;
        }

        /// <summary>Wraps an owned af_value_t*. Throws if it is IntPtr.Zero.</summary>
        internal static Value Own(IntPtr p)
        {
            if (p == IntPtr.Zero) throw AfException.Create(ErrorCode.Internal, "libaf returned a null value");
            return new Value(new ValueHandle(p));
        }

        /// <summary>Own for what an operation on ctx returned (ctx borrowed by
        /// the caller): a pending promise holds ctx.</summary>
        internal static Value Own(IntPtr p, ContextHandle ctx)
        {
            if (p == IntPtr.Zero || !IsPending(p)) return Own(p);
            ctx.Hold();
            return new Value(new ValueHandle(p, new[] { ctx }));
        }

        /// <summary>Own for a value made from others (a clone, an item, a
        /// list): while pending it holds the contexts they hold, which the
        /// caller keeps alive meanwhile (it borrows those values).</summary>
        internal static Value Own(IntPtr p, ContextHandle[] contexts)
        {
            if (p == IntPtr.Zero || contexts.Length == 0 || !IsPending(p)) return Own(p);
            foreach (var c in contexts) c.Hold();
            return new Value(new ValueHandle(p, contexts));
        }

        // A promise not evaluated yet needs its context (af.h, "Lifetimes");
        // a concrete or evaluated value does not, nor a placeholder (inside a
        // trace, where af_value_ready is 0 too).
        private static bool IsPending(IntPtr p) => Native.af_value_ready(p) == 0 && Native.af_is_tracing() == 0;

        // The contexts the values hold, each once.
        private static ContextHandle[] ContextsOf(Value[] values)
        {
            List<ContextHandle> all = null;
            foreach (var v in values)
                foreach (var c in v.Handle.Contexts)
                {
                    if (all == null) all = new List<ContextHandle>();
                    if (!all.Contains(c)) all.Add(c);
                }
            return all == null ? ValueHandle.NoContexts : all.ToArray();
        }

        /// <summary>A new reference to a borrowed af_value_t* (e.g. an input of
        /// a trace callback); the caller keeps its own reference.</summary>
        public static Value FromBorrowed(IntPtr p)
        {
            if (p == IntPtr.Zero) throw new ArgumentNullException(nameof(p));
            return Own(Native.af_value_clone(p));
        }

        public void Dispose() => Handle.Dispose();

        /// <summary>A new reference to the same (immutable) value.</summary>
        public Value Clone()
        {
            using (var b = new Borrow())
                return Own(Native.af_value_clone(b.Add(Handle)), Handle.Contexts);
        }

        // --- Construction ------------------------------------------------

        // Values belong to no context: the native constructors
        // (af_value_<kind>_new) take none. ctx is still checked (not null, not
        // disposed) and held for the call, as before.

        /// <summary>Parses exact JSON: integers stay int, numbers with '.' or
        /// 'e' stay float.</summary>
        public static Value FromJson(Context ctx, string json)
        {
            byte[] s = Utf8.Encode(json, nameof(json));
            using (var b = new Borrow())
            {
                b.Add(Ctx(ctx));
                AfException.Check(Native.af_value_json_new(s, Utf8.Len(s), out IntPtr o));
                return Own(o);
            }
        }

        public static Value Null(Context ctx)
        {
            using (var b = new Borrow())
            {
                b.Add(Ctx(ctx));
                AfException.Check(Native.af_value_null_new(out IntPtr o));
                return Own(o);
            }
        }

        public static Value Bool(Context ctx, bool value)
        {
            using (var b = new Borrow())
            {
                b.Add(Ctx(ctx));
                AfException.Check(Native.af_value_bool_new(value ? 1 : 0, out IntPtr o));
                return Own(o);
            }
        }

        public static Value Int(Context ctx, long value)
        {
            using (var b = new Borrow())
            {
                b.Add(Ctx(ctx));
                AfException.Check(Native.af_value_int_new(value, out IntPtr o));
                return Own(o);
            }
        }

        public static Value Float(Context ctx, double value)
        {
            using (var b = new Borrow())
            {
                b.Add(Ctx(ctx));
                AfException.Check(Native.af_value_float_new(value, out IntPtr o));
                return Own(o);
            }
        }

        public static Value Str(Context ctx, string value)
        {
            byte[] s = Utf8.Encode(value, nameof(value));
            using (var b = new Borrow())
            {
                b.Add(Ctx(ctx));
                AfException.Check(Native.af_value_str_new(s, Utf8.Len(s), out IntPtr o));
                return Own(o);
            }
        }

        /// <summary>A list of items (each gets a new reference; the caller
        /// keeps its own).</summary>
        public static Value List(Context ctx, params Value[] items)
        {
            using (var b = new Borrow())
            {
                b.Add(Ctx(ctx));
                IntPtr[] ptrs = b.AddAll(items, nameof(items));
                AfException.Check(Native.af_value_list_new(ptrs, (UIntPtr)(ulong)ptrs.Length, out IntPtr o));
                return Own(o, ContextsOf(items));
            }
        }

        /// <summary>A dict with the entries in enumeration order
        /// (INVALID_ARGUMENT on a duplicate key).</summary>
        public static Value Dict(Context ctx, IEnumerable<KeyValuePair<string, Value>> entries)
        {
            if (entries == null) throw new ArgumentNullException(nameof(entries));
            var list = new List<KeyValuePair<string, Value>>(entries);
            int n = list.Count;
            var keyBytes = new byte[n][];
            var keyLens = new UIntPtr[n];
            var values = new Value[n];
            for (int i = 0; i < n; i++)
            {
                keyBytes[i] = Utf8.Encode(list[i].Key, "entries key");
                keyLens[i] = Utf8.Len(keyBytes[i]);
                values[i] = list[i].Value;
            }
            var pins = new GCHandle[n];
            var keyPtrs = new IntPtr[n];
            try
            {
                for (int i = 0; i < n; i++)
                {
                    pins[i] = GCHandle.Alloc(keyBytes[i], GCHandleType.Pinned);
                    keyPtrs[i] = pins[i].AddrOfPinnedObject();
                }
                using (var b = new Borrow())
                {
                    b.Add(Ctx(ctx));
                    IntPtr[] vals = b.AddAll(values, nameof(entries));
                    AfException.Check(Native.af_value_dict_new(keyPtrs, keyLens, vals, (UIntPtr)(ulong)n, out IntPtr o));
                    return Own(o, ContextsOf(values));
                }
            }
            finally
            {
                for (int i = 0; i < n; i++)
                    if (pins[i].IsAllocated) pins[i].Free();
            }
        }

        /// <summary>A dict from (key, value) tuples, in order.</summary>
        public static Value Dict(Context ctx, params (string Key, Value Value)[] entries)
        {
            if (entries == null) throw new ArgumentNullException(nameof(entries));
            var kvs = new List<KeyValuePair<string, Value>>(entries.Length);
            foreach (var e in entries) kvs.Add(new KeyValuePair<string, Value>(e.Key, e.Value));
            return Dict(ctx, kvs);
        }

        // --- Inspection --------------------------------------------------

        public ValueKind Kind
        {
            get
            {
                using (var b = new Borrow())
                    return (ValueKind)Native.af_value_kind(b.Add(Handle));
            }
        }

        /// <summary>Number of items of a list or dict (INVALID_ARGUMENT
        /// otherwise).</summary>
        public int Count
        {
            get
            {
                using (var b = new Borrow())
                {
                    AfException.Check(Native.af_value_len(b.Add(Handle), out UIntPtr n));
                    return checked((int)(ulong)n);
                }
            }
        }

        /// <summary>Item i of a list, or the value of the i-th dict entry
        /// (insertion order).</summary>
        public Value this[int index]
        {
            get
            {
                if (index < 0) throw new ArgumentOutOfRangeException(nameof(index), "index is negative");
                using (var b = new Borrow())
                {
                    AfException.Check(Native.af_value_index(b.Add(Handle), (UIntPtr)(ulong)index, out IntPtr o));
                    return Own(o, Handle.Contexts);
                }
            }
        }

        /// <summary>The value under key in a dict (NOT_FOUND if absent).</summary>
        public Value this[string key]
        {
            get
            {
                byte[] k = Utf8.Encode(key, nameof(key));
                using (var b = new Borrow())
                {
                    AfException.Check(Native.af_value_key(b.Add(Handle), k, Utf8.Len(k), out IntPtr o));
                    return Own(o, Handle.Contexts);
                }
            }
        }

        /// <summary>The keys of a dict in insertion order.</summary>
        public IReadOnlyList<string> Keys
        {
            get
            {
                using (var b = new Borrow())
                {
                    IntPtr v = b.Add(Handle);
                    AfException.Check(Native.af_value_len(v, out UIntPtr n));
                    int count = checked((int)(ulong)n);
                    var keys = new string[count];
                    for (int i = 0; i < count; i++)
                    {
                        AfException.Check(Native.af_value_key_at(v, (UIntPtr)(ulong)i, out IntPtr p, out UIntPtr len));
                        keys[i] = Utf8.FromPtr(p, len);
                    }
                    return keys;
                }
            }
        }

        public string AsString()
        {
            using (var b = new Borrow())
            {
                AfException.Check(Native.af_value_get_str(b.Add(Handle), out IntPtr p, out UIntPtr len));
                return Utf8.FromPtr(p, len); // copied while the handle is still held
            }
        }

        public long AsInt()
        {
            using (var b = new Borrow())
            {
                AfException.Check(Native.af_value_get_int(b.Add(Handle), out long i));
                return i;
            }
        }

        public double AsFloat()
        {
            using (var b = new Borrow())
            {
                AfException.Check(Native.af_value_get_float(b.Add(Handle), out double f));
                return f;
            }
        }

        public bool AsBool()
        {
            using (var b = new Borrow())
            {
                AfException.Check(Native.af_value_get_bool(b.Add(Handle), out int x));
                return x != 0;
            }
        }

        /// <summary>Compact JSON (floats shortest round-trip, e.g. "2.0").
        /// INVALID_ARGUMENT for NaN/infinity and placeholders.</summary>
        public string ToJson()
        {
            using (var b = new Borrow())
            {
                AfException.Check(Native.af_value_to_json(b.Add(Handle), out AfBytes bytes));
                return Utf8.TakeBytes(ref bytes);
            }
        }

        /// <summary>JSON when it has one, else "&lt;kind&gt;" (never throws
        /// for a live value; for debuggers and logs).</summary>
        public override string ToString()
        {
            if (Handle.IsClosed) return "<disposed value>";
            try
            {
                return ToJson();
            }
            catch (AfException)
            {
                try { return "<" + Kind.ToString().ToLowerInvariant() + ">"; }
                catch (ObjectDisposedException) { return "<disposed value>"; }
            }
            catch (ObjectDisposedException)
            {
                return "<disposed value>"; // disposed by another thread meanwhile
            }
        }

        private static ContextHandle Ctx(Context ctx)
        {
            if (ctx == null) throw new ArgumentNullException(nameof(ctx));
            return ctx.Handle;
        }
    }
}
