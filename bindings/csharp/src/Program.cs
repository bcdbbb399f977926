// Program.cs — compiled programs, run options and runs in flight (Task-based).
using System;
using System.Runtime.InteropServices;
using System.Threading;
using System.Threading.Tasks;

namespace Af
{
    /// <summary>Options of a run; the defaults are what a run without
    /// options does.</summary>
    public sealed class RunOptions
    {
        /// <summary>A failure does not cancel the rest; each failed output leaf
        /// becomes {"error": {"code", "name", "message"}}.</summary>
        public bool KeepGoing { get; set; }

        /// <summary>Record a profile (ProgramRun.Profile).</summary>
        public bool Profile { get; set; }

        /// <summary>In a batched program, an item that fails becomes its error
        /// value in every output list; the other items complete (their LM
        /// calls are not cancelled).</summary>
        public bool ItemErrors { get; set; }

        /// <summary>The run fails with TIMEOUT after this long (null = none).</summary>
        public TimeSpan? Timeout { get; set; }

        /// <summary>Where to write the profile as Chrome trace JSON.</summary>
        public string ProfilePath { get; set; }

        /// <summary>Called from libaf threads (never concurrently for one run)
        /// with done and total equations; must be quick. Exceptions are
        /// swallowed (progress is advisory).</summary>
        public Action<ulong, ulong> Progress { get; set; }

        /// <summary>Triggering this token ends the run with CANCELLED (also a
        /// blocking Call, from another thread).</summary>
        public CancelToken Cancel { get; set; }

        /// <summary>Record the run summary of a run started with Start or
        /// CallAsync (ProgramRun.Summary); a blocking call gets it from
        /// Program.CallWithSummary instead.</summary>
        public bool Summary { get; set; }

        /// <summary>LM replies as they arrive: (equation index, batch item,
        /// the next piece of text, or null when what that equation and item
        /// streamed so far does not count). From libaf threads, never
        /// concurrently for one run; must be quick; exceptions are swallowed.
        /// The run's result is the same as without it.</summary>
        public Action<uint, ulong, string> Stream { get; set; }

        /// <summary>Only LM equations carrying this tag stream (null = all).</summary>
        public string StreamTag { get; set; }

        /// <summary>The largest value one equation may build, in bytes (a
        /// format or concat result, ...; 0 = the default, 1 GiB). Past it the
        /// run fails with OUT_OF_MEMORY (AfOutOfMemoryException) naming the
        /// primitive and the size.</summary>
        public ulong MaxValueBytes { get; set; }

        /// <summary>A run journal (null = none; see <see cref="Journal"/>): a
        /// SQLite file recording each LM call this run completes, committed
        /// before the call's result is used. Rerunning the same program on the
        /// same inputs with the same journal answers the calls recorded there
        /// without reaching their provider, so a run that was killed resumes
        /// where it stopped. Created (mode 0600: it holds LM replies
        /// in clear) when missing, with missing parent directories. The run
        /// fails at its start with AfInvalidArgumentException (a journal of
        /// another program or other inputs), AfFormatException (not a journal,
        /// or corrupt) or AfIOException (cannot be created or opened). Program
        /// runs only: Context.Eval refuses it (INVALID_ARGUMENT).</summary>
        public string JournalPath { get; set; }

        // Rooted for the life of the process (see Context.s_freeHandle).
        private static readonly Native.ProgressFn s_progress = ProgressTrampoline;
        private static readonly Native.StreamFn s_stream = StreamTrampoline;

        private static void StreamTrampoline(IntPtr userData, uint eqn, ulong item, IntPtr text, UIntPtr len)
        {
            try
            {
                string piece = null;
                if (text != IntPtr.Zero)
                {
                    var bytes = new byte[(int)len];
                    Marshal.Copy(text, bytes, 0, bytes.Length);
                    piece = System.Text.Encoding.UTF8.GetString(bytes);
                }
                ((Action<uint, ulong, string>)GCHandle.FromIntPtr(userData).Target)(eqn, item, piece);
            }
            catch (Exception)
            {
                // Never unwind into libaf.
            }
        }

        private static void ProgressTrampoline(IntPtr userData, ulong done, ulong total)
        {
            try
            {
                ((Action<ulong, ulong>)GCHandle.FromIntPtr(userData).Target)(done, total);
            }
            catch (Exception)
            {
                // Never unwind into libaf.
            }
        }

        /// <summary>The C struct for these options. The caller frees
        /// ProfilePath, StreamTag and JournalPath (FreeNative) after the call
        /// and keeps the Borrow (which holds the cancel token) until then;
        /// libaf frees the progress and stream handles (their destroy
        /// functions) exactly once, also when the call fails.</summary>
        internal static Native.AfRunOptions ToNative(RunOptions o, Borrow b)
        {
            var n = new Native.AfRunOptions { StructSize = (uint)Marshal.SizeOf(typeof(Native.AfRunOptions)) };
            if (o == null) return n;
            if (o.KeepGoing) n.Flags |= Native.AF_RUN_KEEP_GOING;
            if (o.Profile) n.Flags |= Native.AF_RUN_PROFILE;
            if (o.ItemErrors) n.Flags |= Native.AF_RUN_ITEM_ERRORS;
            if (o.Summary) n.Flags |= Native.AF_RUN_SUMMARY;
            if (o.Timeout.HasValue)
            {
                if (o.Timeout.Value <= TimeSpan.Zero)
                    throw new ArgumentOutOfRangeException(nameof(Timeout), "the timeout must be positive (null = none)");
                n.TimeoutMs = Math.Max(1UL, (ulong)o.Timeout.Value.TotalMilliseconds);
            }
            if (!string.IsNullOrEmpty(o.ProfilePath))
            {
                byte[] p = Utf8.Encode(o.ProfilePath, nameof(ProfilePath));
                n.ProfilePath = Marshal.AllocHGlobal(p.Length + 1);
                Marshal.Copy(p, 0, n.ProfilePath, p.Length);
                n.ProfilePathLen = Utf8.Len(p);
            }
            n.MaxValueBytes = o.MaxValueBytes;
            if (!string.IsNullOrEmpty(o.JournalPath))
            {
                byte[] j = Utf8.Encode(o.JournalPath, nameof(JournalPath));
                n.JournalPath = Marshal.AllocHGlobal(j.Length + 1);
                Marshal.Copy(j, 0, n.JournalPath, j.Length);
                n.JournalPathLen = Utf8.Len(j);
            }
            if (o.Cancel != null) n.Cancel = b.Add(o.Cancel.Handle);
            if (o.Progress != null)
            {
                n.Progress = Marshal.GetFunctionPointerForDelegate(s_progress);
                n.ProgressUserData = GCHandle.ToIntPtr(GCHandle.Alloc(o.Progress));
                n.ProgressDestroy = Marshal.GetFunctionPointerForDelegate(Context.s_freeHandle);
            }
            if (!string.IsNullOrEmpty(o.StreamTag))
            {
                byte[] t = Utf8.Encode(o.StreamTag, nameof(StreamTag));
                n.StreamTag = Marshal.AllocHGlobal(t.Length + 1);
                Marshal.Copy(t, 0, n.StreamTag, t.Length);
                n.StreamTagLen = Utf8.Len(t);
            }
            if (o.Stream != null)
            {
                n.Stream = Marshal.GetFunctionPointerForDelegate(s_stream);
                n.StreamUserData = GCHandle.ToIntPtr(GCHandle.Alloc(o.Stream));
                n.StreamDestroy = Marshal.GetFunctionPointerForDelegate(Context.s_freeHandle);
            }
            return n;
        }

        /// <summary>ToNative for a blocking call (af_program_call_with,
        /// af_eval_with): its run summary goes to summary (an af_bytes_t in
        /// unmanaged memory, or IntPtr.Zero for none), never through the
        /// Summary flag, which is for asynchronous runs.</summary>
        internal static Native.AfRunOptions ToNativeBlocking(RunOptions o, Borrow b, IntPtr summary)
        {
            var n = ToNative(o, b);
            n.Flags &= ~Native.AF_RUN_SUMMARY;
            n.Summary = summary;
            return n;
        }

        /// <summary>Runs a blocking call given an af_bytes_t in unmanaged
        /// memory for its run summary; summary is what libaf wrote there (null
        /// when nothing ran), set also when call throws.</summary>
        internal static T WithSummary<T>(Func<IntPtr, T> call, out string summary)
        {
            summary = null;
            IntPtr bytes = Marshal.AllocHGlobal(Marshal.SizeOf(typeof(AfBytes)));
            try
            {
                Marshal.StructureToPtr(new AfBytes(), bytes, false);
                try
                {
                    return call(bytes);
                }
                finally
                {
                    var got = (AfBytes)Marshal.PtrToStructure(bytes, typeof(AfBytes));
                    if (got.Data != IntPtr.Zero) summary = Utf8.TakeBytes(ref got);
                }
            }
            finally
            {
                Marshal.FreeHGlobal(bytes);
            }
        }

        /// <summary>A copy of o (null = the defaults) with every option kept
        /// but Cancel, which becomes cancel.</summary>
        internal static RunOptions WithCancel(RunOptions o, CancelToken cancel)
        {
            var copy = o == null ? new RunOptions() : (RunOptions)o.MemberwiseClone();
            copy.Cancel = cancel;
            return copy;
        }

        internal static void FreeNative(ref Native.AfRunOptions n)
        {
            if (n.ProfilePath != IntPtr.Zero) Marshal.FreeHGlobal(n.ProfilePath);
            n.ProfilePath = IntPtr.Zero;
            if (n.StreamTag != IntPtr.Zero) Marshal.FreeHGlobal(n.StreamTag);
            n.StreamTag = IntPtr.Zero;
            if (n.JournalPath != IntPtr.Zero) Marshal.FreeHGlobal(n.JournalPath);
            n.JournalPath = IntPtr.Zero;
        }
    }

    /// <summary>A cancel token: one Trigger cancels every run given it in its
    /// RunOptions (running now or started later). Thread-safe.</summary>
    public sealed class CancelToken : IDisposable
    {
        public CancelHandle Handle { get; }

        public CancelToken()
        {
            AfException.Check(Native.af_cancel_new(out IntPtr c));
            Handle = new CancelHandle(c);
        }

        /// <summary>Cancels the token's runs; later runs with it end at once.
        /// Idempotent.</summary>
        public void Trigger()
        {
            using (var b = new Borrow()) Native.af_cancel_trigger(b.Add(Handle));
        }

        /// <summary>True once triggered.</summary>
        public bool IsTriggered
        {
            get
            {
                using (var b = new Borrow()) return Native.af_cancel_triggered(b.Add(Handle)) != 0;
            }
        }

        /// <summary>Frees the handle (runs already started keep the token).</summary>
        public void Dispose() => Handle.Dispose();
    }

    /// <summary>A compiled program for the dataflow executor: every equation
    /// starts the moment its inputs exist and independent LM calls run
    /// concurrently. Immutable; may be run from several threads at once.</summary>
    public sealed class Program : IDisposable
    {
        public ProgramHandle Handle { get; }

        public Program(ProgramHandle h)
        {
            Handle = h ?? throw new ArgumentNullException(nameof(h));
        }

        public void Dispose() => Handle.Dispose();

        /// <summary>Compiles ir (validate, DCE, CSE, plan). INVALID_ARGUMENT if
        /// the IR does not validate.</summary>
        public static Program Compile(Context ctx, Ir ir)
        {
            if (ctx == null) throw new ArgumentNullException(nameof(ctx));
            if (ir == null) throw new ArgumentNullException(nameof(ir));
            using (var b = new Borrow())
            {
                AfException.Check(Native.af_compile(b.Add(ctx.Handle), b.Add(ir.Handle), out IntPtr p));
                if (p == IntPtr.Zero) throw AfException.Create(ErrorCode.Internal, "af_compile returned no program");
                return new Program(new ProgramHandle(p));
            }
        }

        /// <summary>Writes the compiled program (its IR and its plan) to path,
        /// so Load runs it without compiling again. The file also loads with
        /// Ir.Load.</summary>
        public void Save(string path)
        {
            byte[] p = Utf8.Encode(path, nameof(path));
            using (var b = new Borrow())
                AfException.Check(Native.af_program_save(b.Add(Handle), p, Utf8.Len(p)));
        }

        /// <summary>Reads a program saved by Save (its plan is checked against
        /// the IR; a graph saved from an IR is compiled here).</summary>
        public static Program Load(Context ctx, string path)
        {
            if (ctx == null) throw new ArgumentNullException(nameof(ctx));
            byte[] p = Utf8.Encode(path, nameof(path));
            using (var b = new Borrow())
            {
                AfException.Check(Native.af_program_load(b.Add(ctx.Handle), p, Utf8.Len(p), out IntPtr o));
                if (o == IntPtr.Zero) throw AfException.Create(ErrorCode.Internal, "af_program_load returned no program");
                return new Program(new ProgramHandle(o));
            }
        }

        /// <summary>Save on the thread pool. ct is observed before the write
        /// starts (libaf's write cannot be interrupted).</summary>
        public Task SaveAsync(string path, CancellationToken ct = default(CancellationToken)) =>
            Task.Run(() => Save(path), ct);

        /// <summary>Load on the thread pool. ct is observed before the read
        /// starts (libaf's checks cannot be interrupted).</summary>
        public static Task<Program> LoadAsync(Context ctx, string path, CancellationToken ct = default(CancellationToken))
        {
            if (ctx == null) throw new ArgumentNullException(nameof(ctx));
            return Task.Run(() => Load(ctx, path), ct);
        }

        /// <summary>A new reference to the same program.</summary>
        public Program Clone()
        {
            using (var b = new Borrow())
                return new Program(new ProgramHandle(Native.af_program_clone(b.Add(Handle))));
        }

        /// <summary>Runs the program and waits.</summary>
        public Value Call(Context ctx, params Value[] inputs) => Call(ctx, null, inputs);

        /// <summary>Runs the program with options and waits.</summary>
        public Value Call(Context ctx, RunOptions options, params Value[] inputs)
        {
            if (options != null && options.Summary)
                throw new AfInvalidArgumentException("RunOptions.Summary records the summary of a run started with Start "
                                                     + "or CallAsync; a blocking call gets it from CallWithSummary");
            return CallNative(ctx, options, IntPtr.Zero, inputs);
        }

        /// <summary>Call, and the run summary as JSON (af.h "Run summaries": per
        /// model calls, tokens, retries, time queued and in flight, and the wall
        /// time), set before this returns or throws: a failed run has one too;
        /// null when nothing ran (invalid inputs). options.Summary is not
        /// needed.</summary>
        public Value CallWithSummary(Context ctx, RunOptions options, out string summary, params Value[] inputs)
        {
            return RunOptions.WithSummary(bytes => CallNative(ctx, options, bytes, inputs), out summary);
        }

        // af_program_call_with; summary: NULL or an af_bytes_t in unmanaged memory.
        private Value CallNative(Context ctx, RunOptions options, IntPtr summary, Value[] inputs)
        {
            if (ctx == null) throw new ArgumentNullException(nameof(ctx));
            using (var b = new Borrow())
            {
                IntPtr c = b.Add(ctx.Handle);
                IntPtr p = b.Add(Handle);
                IntPtr[] ins = b.AddAll(inputs, nameof(inputs));
                var opts = RunOptions.ToNativeBlocking(options, b, summary);
                try
                {
                    AfException.Check(Native.af_program_call_with(c, p, ins, (UIntPtr)(ulong)ins.Length, ref opts, out IntPtr o));
                    return Value.Own(o, ctx.Handle);
                }
                finally
                {
                    RunOptions.FreeNative(ref opts);
                }
            }
        }

        /// <summary>Runs the program with options and waits; cancelling ct ends
        /// the run with CANCELLED (through a cancel token replacing
        /// options.Cancel).</summary>
        public Value Call(Context ctx, RunOptions options, CancellationToken ct, params Value[] inputs)
        {
            if (!ct.CanBeCanceled) return Call(ctx, options, inputs);
            using (var token = new CancelToken())
            using (ct.Register(token.Trigger))
            {
                return Call(ctx, RunOptions.WithCancel(options, token), inputs);
            }
        }

        /// <summary>Starts the program on the context's scheduler and returns
        /// the run at once (input errors are thrown here, run errors by its
        /// Task). Dispose the run when done. The run holds the context and the
        /// program until it finishes, even if the caller drops or disposes
        /// them first.</summary>
        public ProgramRun Start(Context ctx, RunOptions options, params Value[] inputs)
        {
            if (ctx == null) throw new ArgumentNullException(nameof(ctx));
            using (var b = new Borrow())
            {
                IntPtr c = b.Add(ctx.Handle);
                IntPtr p = b.Add(Handle);
                IntPtr[] ins = b.AddAll(inputs, nameof(inputs));
                IntPtr f;
                var opts = RunOptions.ToNative(options, b);
                try
                {
                    AfException.Check(Native.af_program_call_async_with(c, p, ins, (UIntPtr)(ulong)ins.Length, ref opts, out f));
                }
                finally
                {
                    RunOptions.FreeNative(ref opts);
                }
                // Still borrowed here, so pinning them cannot fail on a
                // concurrent Dispose after the run has started.
                return new ProgramRun(new FutureHandle(f), ctx.Handle, Handle);
            }
        }

        /// <summary>Runs the program asynchronously: the Task completes with the
        /// output, or faults with the run's AfException (CANCELLED when ct is
        /// cancelled, TIMEOUT, ...). Input errors are thrown here.</summary>
        public Task<Value> CallAsync(Context ctx, RunOptions options = null, CancellationToken ct = default(CancellationToken),
                                     params Value[] inputs)
        {
            var run = Start(ctx, options, inputs);
            CancellationTokenRegistration reg = ct.Register(run.Cancel);
            return run.Task.ContinueWith(t =>
            {
                reg.Dispose();
                run.Dispose();
                return t;
            }, CancellationToken.None, TaskContinuationOptions.ExecuteSynchronously, TaskScheduler.Default).Unwrap();
        }

        /// <summary>CallAsync without options or cancellation.</summary>
        public Task<Value> CallAsync(Context ctx, params Value[] inputs) => CallAsync(ctx, null, default(CancellationToken), inputs);
    }

    /// <summary>A run in flight (af_future_t): a Task for its result, plus
    /// readiness, cancellation and the profile.</summary>
    public sealed class ProgramRun : IDisposable
    {
        public FutureHandle Handle { get; }

        /// <summary>Completes with the run's output or faults with its
        /// AfException.</summary>
        public Task<Value> Task => _tcs.Task;

        private readonly TaskCompletionSource<Value> _tcs =
            new TaskCompletionSource<Value>(TaskCreationOptions.RunContinuationsAsynchronously);

        // Rooted for the life of the process; the run travels in user_data.
        private static readonly Native.DoneFn s_done = Done;

        // What the run uses, AddRef'd until Done: without this a caller who
        // keeps only the run (or nothing) lets the finalizer free the context
        // and libaf fails the run with "the context was freed while the run
        // was in flight"; an explicit Dispose of the context is deferred too.
        private SafeHandle[] _pins;

        // Handle itself, pinned (Borrow.Pin) until Done has read the result,
        // even if the run is disposed first: Done's af_future_wait uses it.
        private SafeHandle[] _self;

        internal ProgramRun(FutureHandle h, params SafeHandle[] pins)
        {
            Handle = h;
            _pins = Borrow.Pin(pins);
            _self = Borrow.Pin(Handle);
            GCHandle gch = GCHandle.Alloc(this); // freed by libaf (s_freeHandle) after Done
            IntPtr err = Native.af_future_on_done(Handle.DangerousGetHandle(), s_done, GCHandle.ToIntPtr(gch),
                                                  Context.s_freeHandle);
            if (err != IntPtr.Zero)
            {
                ReleasePins();
                Handle.Dispose();
                AfException.Check(err);
            }
        }

        private void ReleasePins()
        {
            Borrow.Unpin(Interlocked.Exchange(ref _self, null));
            Borrow.Unpin(Interlocked.Exchange(ref _pins, null));
        }

        private static void Done(IntPtr userData)
        {
            try
            {
                var run = (ProgramRun)GCHandle.FromIntPtr(userData).Target;
                try
                {
                    // Handle is pinned (_self) until the finally below.
                    IntPtr err = Native.af_future_wait(run.Handle.DangerousGetHandle(), out IntPtr o);
                    if (err != IntPtr.Zero) run._tcs.TrySetException(AfException.FromNative(err));
                    else run._tcs.TrySetResult(Value.Own(o));
                }
                catch (Exception ex)
                {
                    run._tcs.TrySetException(ex);
                }
                finally
                {
                    run.ReleasePins();
                }
            }
            catch (Exception)
            {
                // Never unwind into libaf.
            }
        }

        /// <summary>Blocks until the run finishes: its output, or throws its
        /// AfException. May be called again (same result).</summary>
        public Value Wait()
        {
            using (var b = new Borrow())
            {
                AfException.Check(Native.af_future_wait(b.Add(Handle), out IntPtr o));
                return Value.Own(o);
            }
        }

        /// <summary>True once the run has finished.</summary>
        public bool IsReady
        {
            get
            {
                using (var b = new Borrow())
                    return Native.af_future_ready(b.Add(Handle)) != 0;
            }
        }

        /// <summary>Finishes the run with CANCELLED and cancels its in-flight
        /// work. A no-op once finished or disposed.</summary>
        public void Cancel()
        {
            try
            {
                using (var b = new Borrow())
                    Native.af_future_cancel(b.Add(Handle));
            }
            catch (ObjectDisposedException)
            {
                // Already disposed: nothing left to cancel from here.
            }
        }

        /// <summary>The run's profile as Chrome trace JSON (INVALID_ARGUMENT if
        /// it was started without Profile or ProfilePath).</summary>
        public string Profile()
        {
            using (var b = new Borrow())
            {
                AfException.Check(Native.af_future_profile(b.Add(Handle), out AfBytes o));
                return Utf8.TakeBytes(ref o);
            }
        }

        /// <summary>The run summary as JSON (af.h "Run summaries"): complete
        /// once the run finished, so far before. INVALID_ARGUMENT if it was
        /// started without RunOptions.Summary.</summary>
        public string Summary()
        {
            using (var b = new Borrow())
            {
                AfException.Check(Native.af_future_summary_json(b.Add(Handle), out AfBytes o));
                return Utf8.TakeBytes(ref o);
            }
        }

        /// <summary>Frees the handle (does not cancel the run).</summary>
        public void Dispose() => Handle.Dispose();
    }
}
