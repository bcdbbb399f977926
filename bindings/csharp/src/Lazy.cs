using System;
using System.Threading;
using System.Threading.Tasks;

namespace Af
{
    /// <summary>Lazy contexts and the plan cache. On a lazy context every
    /// operation made outside a trace records a promise: a Value whose kind
    /// and structure are known at once and whose content is computed when it
    /// is read (AsString, ToJson, ...) or when Eval evaluates several promises
    /// as one run, so their independent LM calls are in flight together. A
    /// promise disposed before it ran never runs. A pending promise keeps its
    /// context alive: disposing or dropping the Context first frees the
    /// native context only with the last such promise.</summary>
    public sealed partial class Context
    {
        private Context(ContextHandle handle) { Handle = handle; }

        /// <summary>A context with options, a JSON object as for
        /// af_context_new_with: {"lazy": true, "plan_cache": {"max_entries",
        /// "max_bytes", "dir", "max_disk_bytes"}, "host_threads",
        /// "eager_timeout_ms", "host_wait_ms", "eval_timeout_ms"}.
        /// "eval_timeout_ms" (lazy contexts; 0 = none) is the deadline of every
        /// evaluation a read or Eval starts: past it the evaluation fails with
        /// TIMEOUT (Eval with RunOptions.Timeout sets its own).
        /// AfException (InvalidArgument) for unknown keys or wrong kinds, (Io)
        /// for an unwritable cache directory.</summary>
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
        /// observable operations. The context's "eval_timeout_ms" bounds it
        /// (TIMEOUT).</summary>
        public void Eval(params Value[] values)
        {
            using (var b = new Borrow())
            {
                IntPtr ctx = b.Add(Handle);
                IntPtr[] ptrs = b.AddAll(values ?? new Value[0], nameof(values));
                AfException.Check(Native.af_eval(ctx, ptrs, (UIntPtr)ptrs.Length));
            }
        }

        /// <summary>Eval with a run's options for this one evaluation
        /// (af_eval_with): Timeout (null = the context's "eval_timeout_ms"),
        /// Cancel, ItemErrors, Profile/ProfilePath, Progress, Stream/StreamTag
        /// and MaxValueBytes as for a program run (KeepGoing is always on).
        /// Throws AfTimeoutException or AfCancelledException when the deadline
        /// or the cancel stopped the evaluation: the promises it was
        /// evaluating then throw that error when read, later too.
        /// RunOptions.Summary is INVALID_ARGUMENT: use EvalWithSummary; so is
        /// RunOptions.JournalPath (journals are for program runs).</summary>
        public void Eval(RunOptions options, params Value[] values)
        {
            if (options != null && options.Summary)
                throw new AfInvalidArgumentException("RunOptions.Summary records the summary of a run started with Start "
                                                     + "or CallAsync; an evaluation gets it from EvalWithSummary");
            EvalNative(options, IntPtr.Zero, values);
        }

        /// <summary>Eval with options; cancelling ct (from any thread) stops
        /// the evaluation with CANCELLED (through a cancel token replacing
        /// options.Cancel).</summary>
        public void Eval(RunOptions options, CancellationToken ct, params Value[] values)
        {
            if (!ct.CanBeCanceled)
            {
                Eval(options, values);
                return;
            }
            using (var token = new CancelToken())
            using (ct.Register(token.Trigger))
                Eval(RunOptions.WithCancel(options, token), values);
        }

        /// <summary>Eval with options, and the evaluation's run summary as
        /// JSON (af.h "Run summaries"), set before this returns or throws; null
        /// when nothing ran. options.Summary is not needed.</summary>
        public void EvalWithSummary(RunOptions options, out string summary, params Value[] values)
        {
            RunOptions.WithSummary(bytes => EvalNative(options, bytes, values), out summary);
        }

        // af_eval_with; summary: NULL or an af_bytes_t in unmanaged memory.
        // Returns true: WithSummary takes a function with a result.
        private bool EvalNative(RunOptions options, IntPtr summary, Value[] values)
        {
            using (var b = new Borrow())
            {
                IntPtr ctx = b.Add(Handle);
                IntPtr[] ptrs = b.AddAll(values ?? new Value[0], nameof(values));
                var opts = RunOptions.ToNativeBlocking(options, b, summary);
                try
                {
                    AfException.Check(Native.af_eval_with(ctx, ptrs, (UIntPtr)ptrs.Length, ref opts));
                    return true;
                }
                finally
                {
                    RunOptions.FreeNative(ref opts);
                }
            }
        }

        /// <summary>Eval on the thread pool: the Task completes once the
        /// promises are evaluated (reading them then runs nothing) or faults
        /// with Eval's AfException. To stop it, use the overload taking
        /// options and a CancellationToken.</summary>
        public Task EvalAsync(params Value[] values)
        {
            var copy = values == null ? new Value[0] : (Value[])values.Clone();
            return Task.Run(() => Eval(copy));
        }

        /// <summary>Eval(options, ct, values) on the thread pool: the Task
        /// faults with AfCancelledException when ct is cancelled (the
        /// evaluation stops, in-flight LM requests included), with
        /// AfTimeoutException past options.Timeout.</summary>
        public Task EvalAsync(RunOptions options, CancellationToken ct, params Value[] values)
        {
            var copy = values == null ? new Value[0] : (Value[])values.Clone();
            return Task.Run(() => Eval(options, ct, copy));
        }

        /// <summary>The counters as JSON: {"programs": {"compiles"}, "plan_cache": {"hits", "misses",
        /// "disk_hits", "evictions", "entries", "bytes", "not_kept",
        /// "disk_files", "disk_bytes", "disk_evictions"}, "lazy": {"recorded",
        /// "evaluated", "dropped", "pending", "evaluations", "timed_out",
        /// "cancelled"}} (af_context_stats).</summary>
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
