// Provider.cs — LM providers (echo, openai, replay, host) and the requests a
// host provider answers.
using System;
using System.Runtime.InteropServices;
using System.Threading;

namespace Af
{
    /// <summary>Where LM requests go. May be routed in several contexts; its
    /// limit (max in flight) is shared by all of them. A routed provider stays
    /// alive in its contexts after Dispose.</summary>
    public sealed class Provider : IDisposable
    {
        public ProviderHandle Handle { get; }

        public Provider(ProviderHandle h)
        {
            Handle = h ?? throw new ArgumentNullException(nameof(h));
        }

        public void Dispose() => Handle.Dispose();

        private delegate IntPtr NewFn(byte[] options, UIntPtr len, out IntPtr provider);

        private static Provider Make(string optionsJson, NewFn make)
        {
            byte[] o = Utf8.Encode(optionsJson ?? "", nameof(optionsJson));
            AfException.Check(make(o, Utf8.Len(o), out IntPtr p));
            if (p == IntPtr.Zero) throw AfException.Create(ErrorCode.Internal, "libaf returned no provider");
            return new Provider(new ProviderHandle(p));
        }

        /// <summary>Any built-in type from a spec naming it: {"type":
        /// "anthropic", ...options} (echo, openai, anthropic, ollama or replay),
        /// so a whole provider can come from a config file.</summary>
        public static Provider FromSpec(string specJson) =>
            Make(specJson, (byte[] o, UIntPtr n, out IntPtr p) => Native.af_provider_new(o, n, out p));

        /// <summary>Deterministic and offline: answers "&lt;model&gt;|&lt;content of
        /// the last message&gt;". optionsJson: a JSON object (null = defaults).</summary>
        public static Provider Echo(string optionsJson = null) =>
            Make(optionsJson, (byte[] o, UIntPtr n, out IntPtr p) => Native.af_provider_echo_new(o, n, out p));

        /// <summary>An OpenAI-compatible chat-completions endpoint ("base_url"
        /// required).</summary>
        public static Provider OpenAI(string optionsJson) =>
            Make(optionsJson, (byte[] o, UIntPtr n, out IntPtr p) => Native.af_provider_openai_new(o, n, out p));

        /// <summary>Answers from (or records to) a JSON Lines file ("path"
        /// required).</summary>
        public static Provider Replay(string optionsJson) =>
            Make(optionsJson, (byte[] o, UIntPtr n, out IntPtr p) => Native.af_provider_replay_new(o, n, out p));

        // Rooted for the life of the process; the callback travels in user_data.
        private static readonly Native.SubmitFn s_submit = Submit;

        private static void Submit(IntPtr userData, IntPtr req)
        {
            LmRequest r = null;
            try
            {
                r = new LmRequest(req);
                ((Action<LmRequest>)GCHandle.FromIntPtr(userData).Target)(r);
            }
            catch (Exception ex)
            {
                // Never unwind into libaf: the exception fails the request.
                if (r != null) r.TryFailWith(ex);
                else Native.af_error_free(Native.af_lm_request_fail(req, IntPtr.Zero));
            }
        }

        /// <summary>The host answers: fn receives each request and must finish
        /// it exactly once (Complete or Fail), from any thread, now or later.
        /// fn runs on a libaf thread and must not block for long; an exception
        /// it throws fails the request. fn is released once, when the provider
        /// is freed.</summary>
        public static Provider Host(Action<LmRequest> fn)
        {
            if (fn == null) throw new ArgumentNullException(nameof(fn));
            GCHandle gch = GCHandle.Alloc(fn); // freed by libaf (destroy), also on error
            AfException.Check(Native.af_provider_host_new(s_submit, GCHandle.ToIntPtr(gch), Context.s_freeHandle, out IntPtr p));
            return new Provider(new ProviderHandle(p));
        }

        /// <summary>Changes the limit of requests in flight (0 = unlimited).</summary>
        public void SetMaxInFlight(uint maxInFlight)
        {
            using (var b = new Borrow())
                AfException.Check(Native.af_provider_set_max_in_flight(b.Add(Handle), maxInFlight));
        }

        /// <summary>Changes the options every provider takes (max_in_flight,
        /// requests_per_minute, tokens_per_minute, schema_retries), e.g.
        /// {"requests_per_minute": 500}; keys not given keep their values.</summary>
        public void SetOptions(string optionsJson)
        {
            byte[] o = Utf8.Encode(optionsJson, nameof(optionsJson));
            using (var b = new Borrow())
                AfException.Check(Native.af_provider_set_options(b.Add(Handle), o, Utf8.Len(o)));
        }

        /// <summary>Counters as JSON: submitted, started, finished, in_flight,
        /// queued, peak_in_flight, max_in_flight, prompt_tokens,
        /// completion_tokens, requests_per_minute, tokens_per_minute,
        /// rate_waits, schema_retries.</summary>
        public string Stats()
        {
            using (var b = new Borrow())
            {
                AfException.Check(Native.af_provider_stats(b.Add(Handle), out AfBytes o));
                return Utf8.TakeBytes(ref o);
            }
        }

        /// <summary>A new reference to the same provider.</summary>
        public Provider Clone()
        {
            using (var b = new Borrow())
                return new Provider(new ProviderHandle(Native.af_provider_clone(b.Add(Handle))));
        }
    }

    /// <summary>One LM request handed to a host provider. Finish it exactly
    /// once with Complete or Fail, from any thread; a request that is
    /// finalized unfinished fails with PROVIDER.</summary>
    public sealed class LmRequest
    {
        // Json and IsCancelled read the request while another thread may
        // finish (and so free) it: both hold _lock, as does taking it.
        private readonly object _lock = new object();
        private IntPtr _req;

        internal LmRequest(IntPtr req)
        {
            _req = req;
        }

        ~LmRequest()
        {
            TryFail(ErrorCode.Provider, "the host provider dropped the request without answering it");
        }

        private IntPtr Take()
        {
            IntPtr r;
            lock (_lock) r = Interlocked.Exchange(ref _req, IntPtr.Zero);
            if (r == IntPtr.Zero)
                throw AfException.Create(ErrorCode.InvalidArgument, "the LM request was already completed or failed");
            GC.SuppressFinalize(this);
            return r;
        }

        /// <summary>The request as JSON: {"model", "messages": [{"role",
        /// "content"}...]} plus "schema"/"json_schema" for schema calls and
        /// "tags" when present.</summary>
        public string Json
        {
            get
            {
                lock (_lock)
                {
                    IntPtr r = _req;
                    if (r == IntPtr.Zero)
                        throw AfException.Create(ErrorCode.InvalidArgument, "the LM request was already completed or failed");
                    AfException.Check(Native.af_lm_request_json(r, out AfBytes o));
                    // The finalizer frees the request: it must not run while
                    // libaf reads it.
                    GC.KeepAlive(this);
                    return Utf8.TakeBytes(ref o);
                }
            }
        }

        /// <summary>True if the run no longer wants the answer (the request
        /// must still be finished).</summary>
        public bool IsCancelled
        {
            get
            {
                lock (_lock)
                {
                    IntPtr r = _req;
                    bool cancelled = r != IntPtr.Zero && Native.af_lm_request_cancelled(r) != 0;
                    GC.KeepAlive(this);
                    return cancelled;
                }
            }
        }

        /// <summary>Streams a piece of the reply before Complete (the run
        /// streams when Json has "stream": true; ignored otherwise).</summary>
        public void Stream(string text)
        {
            byte[] t = Utf8.Encode(text, nameof(text));
            StreamNative(t.Length == 0 ? new byte[1] : t, Utf8.Len(t));
        }

        /// <summary>What was streamed so far does not count: the reply starts
        /// over.</summary>
        public void RestartStream() => StreamNative(null, UIntPtr.Zero);

        private void StreamNative(byte[] text, UIntPtr len)
        {
            lock (_lock)
            {
                IntPtr r = _req;
                if (r == IntPtr.Zero)
                    throw AfException.Create(ErrorCode.InvalidArgument, "the LM request was already completed or failed");
                AfException.Check(Native.af_lm_request_stream(r, text, len));
                GC.KeepAlive(this);
            }
        }

        /// <summary>Answers with the reply text (for schema calls: the JSON the
        /// schema describes).</summary>
        public void Complete(string content)
        {
            byte[] c = Utf8.Encode(content, nameof(content));
            AfException.Check(Native.af_lm_request_complete(Take(), c, Utf8.Len(c)));
        }

        /// <summary>Fails the request with code (use PROVIDER for a failed
        /// call) and message.</summary>
        public void Fail(ErrorCode code, string message)
        {
            IntPtr r = Take();
            AfException.Check(Native.af_lm_request_fail(r, AfException.ToNative(code, message)));
        }

        /// <summary>Fails with what the host provider threw; the caller gets ex
        /// itself back as the cause. Never throws.</summary>
        internal void TryFailWith(Exception ex)
        {
            IntPtr r;
            lock (_lock) r = Interlocked.Exchange(ref _req, IntPtr.Zero);
            if (r == IntPtr.Zero) return;
            GC.SuppressFinalize(this);
            Native.af_error_free(Native.af_lm_request_fail(r, CallbackErrors.Send(ex, ErrorCode.Provider, "the host provider threw ")));
        }

        /// <summary>Fail that never throws (finalizer and callback paths).</summary>
        internal void TryFail(ErrorCode code, string message)
        {
            IntPtr r;
            lock (_lock) r = Interlocked.Exchange(ref _req, IntPtr.Zero);
            if (r == IntPtr.Zero) return;
            GC.SuppressFinalize(this);
            Native.af_error_free(Native.af_lm_request_fail(r, AfException.ToNative(code, message)));
        }
    }
}
