using System;
using System.Threading.Tasks;

namespace Af
{
    /// <summary>Lazy contexts and the plan cache. On a lazy context every
    /// operation made outside a trace records a promise: a Value whose kind
    /// and structure are known at once and whose content is computed when it
    /// is read (AsString, ToJson, ...) or when Eval evaluates several promises
    /// as one run, so their independent LM calls are in flight together. A
    /// promise disposed before it ran never runs.</summary>
    public sealed partial class Context
    {
        private Context(ContextHandle handle) { Handle = handle; }

        /// <summary>A context with options, a JSON object as for
        /// af_context_new_with: {"lazy": true, "plan_cache": {"max_entries",
        /// "max_bytes", "dir"}}. AfException (InvalidArgument) for unknown
        /// keys or wrong kinds, (Io) for an unwritable cache directory.</summary>
        public static Context WithOptions(string optionsJson)
        {
            byte[] o = Utf8.Encode(optionsJson ?? "", nameof(optionsJson));
            AfException.Check(Native.af_context_new_with(o, Utf8.Len(o), out IntPtr p));
            if (p == IntPtr.Zero) throw new AfException(ErrorCode.Internal, "af_context_new_with returned null");
            return new Context(new ContextHandle(p));
        }

        /// <summary>A lazy context with the default plan cache.</summary>
        public static Context Lazy() => WithOptions("{\"lazy\": true}");

        /// <summary>Evaluates the promises among values (deep) and the
        /// context's pending observable operations (checkpoints, depends, host
        /// calls) as one run. A failed operation does not fail Eval: reading
        /// its promises throws its error. No values: runs just the pending
        /// observable operations.</summary>
        public void Eval(params Value[] values)
        {
            using (var b = new Borrow())
            {
                IntPtr ctx = b.Add(Handle);
                IntPtr[] ptrs = b.AddAll(values ?? new Value[0], nameof(values));
                AfException.Check(Native.af_eval(ctx, ptrs, (UIntPtr)ptrs.Length));
            }
        }

        /// <summary>Eval on the thread pool: the Task completes once the
        /// promises are evaluated (reading them then runs nothing) or faults
        /// with Eval's AfException. It takes no CancellationToken because
        /// libaf's evaluation blocks the thread running it and cannot be
        /// interrupted (disposing the context cancels it).</summary>
        public Task EvalAsync(params Value[] values)
        {
            var copy = values == null ? new Value[0] : (Value[])values.Clone();
            return Task.Run(() => Eval(copy));
        }

        /// <summary>The counters as JSON: {"plan_cache": {"hits", "misses",
        /// "disk_hits", "evictions", "entries", "bytes"}, "lazy": {"recorded",
        /// "evaluated", "dropped", "pending"}}.</summary>
        public string Stats()
        {
            using (var b = new Borrow())
            {
                AfException.Check(Native.af_context_stats(b.Add(Handle), out AfBytes o));
                return Utf8.TakeBytes(ref o);
            }
        }
    }

    public sealed partial class Value
    {
        /// <summary>True when reading this value runs nothing: it is concrete,
        /// or every promise in it has been evaluated (with a result or an
        /// error).</summary>
        public bool IsReady
        {
            get
            {
                using (var b = new Borrow()) return Native.af_value_ready(b.Add(Handle)) != 0;
            }
        }
    }
}
