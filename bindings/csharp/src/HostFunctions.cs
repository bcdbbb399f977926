// HostFunctions.cs — control flow (switch, while_loop, scan), host functions,
// run-time scopes (collect, inject, memoize, cancel), routes and LM calls, as members
// of Context.
using System;
using System.Collections.Generic;
using System.Linq;
using System.Runtime.InteropServices;
using System.Threading;
using System.Threading.Tasks;

namespace Af
{
    /// <summary>Options of a host function's registration
    /// (Context.RegisterFunction and its siblings; af.h AF_FUNCTION_*).</summary>
    [Flags]
    public enum FunctionFlags : uint
    {
        /// <summary>Effectful (the default): every call runs exactly once per
        /// run, even when its result is unused; equal calls are not merged and
        /// a memoize scope never answers one.</summary>
        None = 0,
        /// <summary>No effects (same arguments, same result): libaf may drop a
        /// call whose result is unused (on a lazy context: never read), merge
        /// equal calls and answer one from a memoize scope.</summary>
        Pure = 1,
        /// <summary>Each call runs on the context's host pool
        /// (RegisterFunctionBlocking); not for async functions.</summary>
        Blocking = 2,
    }

    public sealed partial class Context
    {
        // --- Control flow ----------------------------------------------------

        /// <summary>Runs the branch named by key (a str) on operands. Every
        /// branch takes the operands' structure and kinds and all return one
        /// structure. Recorded inside a trace, evaluated outside. NOT_FOUND
        /// (when it runs) for a key no branch has. branches: name -> IR (a
        /// Dictionary, or a list of pairs).</summary>
        public Value Switch(Value key, IEnumerable<KeyValuePair<string, Ir>> branches, params Value[] operands)
        {
            if (key == null) throw new ArgumentNullException(nameof(key));
            if (branches == null) throw new ArgumentNullException(nameof(branches));
            return Switch(key, branches.ToArray(), operands);
        }

        private Value Switch(Value key, KeyValuePair<string, Ir>[] branches, Value[] operands)
        {
            var names = new IntPtr[branches.Length];
            var lens = new UIntPtr[branches.Length];
            var irs = new IntPtr[branches.Length];
            try
            {
                using (var b = new Borrow())
                {
                    for (int i = 0; i < branches.Length; i++)
                    {
                        if (branches[i].Value == null)
                            throw new ArgumentNullException(nameof(branches), "branch " + i + " has no IR");
                        byte[] n = Utf8.Encode(branches[i].Key, nameof(branches));
                        // +1: a valid pointer even for an empty name.
                        names[i] = Marshal.AllocHGlobal(n.Length + 1);
                        Marshal.Copy(n, 0, names[i], n.Length);
                        lens[i] = Utf8.Len(n);
                        irs[i] = b.Add(branches[i].Value.Handle);
                    }
                    IntPtr c = b.Add(Handle);
                    IntPtr k = b.Add(key);
                    IntPtr[] ops = b.AddAll(operands, nameof(operands));
                    AfException.Check(Native.af_switch(c, k, names, lens, irs, (UIntPtr)(ulong)irs.Length, ops,
                                                       (UIntPtr)(ulong)ops.Length, out IntPtr o));
                    return Value.Own(o, Handle);
                }
            }
            finally
            {
                foreach (var p in names)
                    if (p != IntPtr.Zero) Marshal.FreeHGlobal(p);
            }
        }

        /// <summary>state = init; while cond(state) is true and fewer than
        /// maxIters iterations ran, state = body(state); returns the state.</summary>
        public Value WhileLoop(Ir cond, Ir body, Value init, ulong maxIters)
        {
            if (cond == null) throw new ArgumentNullException(nameof(cond));
            if (body == null) throw new ArgumentNullException(nameof(body));
            if (init == null) throw new ArgumentNullException(nameof(init));
            using (var b = new Borrow())
            {
                AfException.Check(Native.af_while_loop(b.Add(Handle), b.Add(cond.Handle), b.Add(body.Handle), b.Add(init),
                                                       maxIters, out IntPtr o));
                return Value.Own(o, Handle);
            }
        }

        /// <summary>A carry threaded through a list: carry = init; for each
        /// item of xs in order (last to first when reverse), [carry, y] =
        /// body(carry, item); returns [carry, ys]: the last carry and, for each
        /// y leaf, the list of its values by item index (a reverse scan keeps
        /// ys at their items' indices). xs is a list, or a tree whose leaves
        /// are lists of one length (the item is the tree of their i-th items);
        /// in a trace it is usually a list input of any length (TraceWith and
        /// a list mask). body is an IR of two inputs, (carry, item), returning
        /// [next carry, y] with the carry's structure and kinds. Recorded
        /// inside a trace (one scan equation with every rule: batch, push,
        /// pull), evaluated outside, a promise on a lazy context. No items:
        /// [init, ys of empty lists], nothing runs. AfInvalidArgumentException
        /// when body does not take (init, an item), does not return [carry, y]
        /// or changes the carry's structure or a kind, when a leaf of xs is
        /// not a list, or (when it runs) the lists of xs differ in
        /// length.</summary>
        public Value Scan(Ir body, Value init, Value xs, bool reverse = false)
        {
            if (body == null) throw new ArgumentNullException(nameof(body));
            if (init == null) throw new ArgumentNullException(nameof(init));
            if (xs == null) throw new ArgumentNullException(nameof(xs));
            using (var b = new Borrow())
            {
                AfException.Check(Native.af_scan(b.Add(Handle), b.Add(body.Handle), b.Add(init), b.Add(xs),
                                                 reverse ? 1 : 0, out IntPtr o));
                return Value.Own(o, Handle);
            }
        }

        // --- Host functions --------------------------------------------------

        // Rooted for the life of the process: libaf may call them from any
        // thread for as long as a function is registered. Per-function state
        // travels in user_data (a GCHandle freed by s_freeHandle, once).
        private static readonly Native.HostFn s_hostTrampoline = HostTrampoline;
        internal static readonly Native.DestroyFn s_freeHandle = FreeHandle;

        private static void FreeHandle(IntPtr userData)
        {
            try
            {
                GCHandle.FromIntPtr(userData).Free();
            }
            catch (Exception)
            {
                // Never unwind into libaf.
            }
        }

        /// <summary>The af_error_t* for an exception thrown by a callback: an
        /// AfException keeps its code and message, anything else is CALLBACK
        /// with the exception's type and message. The error carries ex (its
        /// af_error_new_with payload), so the caller gets ex itself back
        /// (CallbackErrors).</summary>
        internal static IntPtr ErrorFor(Exception ex) => CallbackErrors.Send(ex, ErrorCode.Callback, "");

        private static IntPtr HostTrampoline(IntPtr userData, IntPtr args, UIntPtr n, IntPtr output)
        {
            Value[] vals = null;
            try
            {
                Marshal.WriteIntPtr(output, IntPtr.Zero);
                var fn = (Func<Value[], Value>)GCHandle.FromIntPtr(userData).Target;
                int count = checked((int)(ulong)n);
                vals = new Value[count];
                for (int i = 0; i < count; i++)
                    vals[i] = Value.FromBorrowed(Marshal.ReadIntPtr(args, i * IntPtr.Size));
                Value result = fn(vals);
                if (result == null)
                    throw new InvalidOperationException("the host function returned null; return a Value");
                using (var b = new Borrow())
                    Marshal.WriteIntPtr(output, Native.af_value_clone(b.Add(result)));
                return IntPtr.Zero;
            }
            catch (Exception ex)
            {
                return ErrorFor(ex);
            }
            finally
            {
                if (vals != null)
                    foreach (var v in vals)
                        if (v != null) v.Dispose();
            }
        }

        /// <summary>Registers fn as host function name (replacing an earlier
        /// one). resultKinds: the result's structure with kind names as leaves
        /// ("str", {"n": "int"}, ...). fn receives the argument trees (valid for
        /// the call: Clone one to keep it) and may run on any thread,
        /// concurrently. An exception it throws becomes the cause of a CALLBACK
        /// error (an AfException keeps its code). libaf releases fn exactly
        /// once: when replaced, when the context is disposed, or at once if
        /// registration fails. The function is effectful: see the overload
        /// taking FunctionFlags.</summary>
        public void RegisterFunction(string name, Value resultKinds, Func<Value[], Value> fn) =>
            RegisterFunction(name, resultKinds, FunctionFlags.None, fn);

        /// <summary>RegisterFunction with flags: FunctionFlags.Pure for a
        /// function without effects (its calls may be dropped when unused,
        /// merged when equal, answered by a memoize scope), Blocking to run it
        /// on the host pool (as RegisterFunctionBlocking). Without Pure every
        /// call runs exactly once per run. AfInvalidArgumentException for
        /// unknown flag bits.</summary>
        public void RegisterFunction(string name, Value resultKinds, FunctionFlags flags, Func<Value[], Value> fn) =>
            Register(name, resultKinds, flags, fn, false);

        /// <summary>RegisterFunction for functions that block (network, disk,
        /// processes): each call runs on the context's host pool, at most
        /// "host_threads" at once (a context option, default 8), never on a
        /// scheduler thread.</summary>
        public void RegisterFunctionBlocking(string name, Value resultKinds, Func<Value[], Value> fn) =>
            RegisterFunctionBlocking(name, resultKinds, FunctionFlags.None, fn);

        /// <summary>RegisterFunctionBlocking with flags (FunctionFlags.Pure;
        /// Blocking is implied).</summary>
        public void RegisterFunctionBlocking(string name, Value resultKinds, FunctionFlags flags, Func<Value[], Value> fn) =>
            Register(name, resultKinds, flags | FunctionFlags.Blocking, fn, false);

        /// <summary>Registers an async host function: fn starts the work and
        /// returns its Task; no libaf thread waits for it. The token is
        /// cancelled when the run no longer wants the result (cancelled, timed
        /// out, failed elsewhere). fn owns its argument Values. A faulted Task
        /// fails the call as a thrown exception would. Outside a trace,
        /// HostCall waits for the Task.</summary>
        public void RegisterFunctionAsync(string name, Value resultKinds, Func<Value[], CancellationToken, Task<Value>> fn) =>
            RegisterFunctionAsync(name, resultKinds, FunctionFlags.None, fn);

        /// <summary>RegisterFunctionAsync with flags (FunctionFlags.Pure).
        /// FunctionFlags.Blocking is AfInvalidArgumentException: an async
        /// function never blocks a thread.</summary>
        public void RegisterFunctionAsync(string name, Value resultKinds, FunctionFlags flags,
                                          Func<Value[], CancellationToken, Task<Value>> fn) =>
            Register(name, resultKinds, flags, fn, true);

        /// <summary>RegisterFunctionAsync without a cancellation token.</summary>
        public void RegisterFunctionAsync(string name, Value resultKinds, Func<Value[], Task<Value>> fn) =>
            RegisterFunctionAsync(name, resultKinds, FunctionFlags.None, fn);

        /// <summary>RegisterFunctionAsync with flags, without a cancellation
        /// token.</summary>
        public void RegisterFunctionAsync(string name, Value resultKinds, FunctionFlags flags, Func<Value[], Task<Value>> fn)
        {
            if (fn == null) throw new ArgumentNullException(nameof(fn));
            RegisterFunctionAsync(name, resultKinds, flags, (args, _) => fn(args));
        }

        // Every registration: one af_register_function_with. fn is a
        // Func<Value[], Value> (s_hostTrampoline) or, when isAsync, a
        // Func<Value[], CancellationToken, Task<Value>> (s_asyncHostTrampoline).
        private void Register(string name, Value resultKinds, FunctionFlags flags, Delegate fn, bool isAsync)
        {
            if (fn == null) throw new ArgumentNullException(nameof(fn));
            if (resultKinds == null) throw new ArgumentNullException(nameof(resultKinds));
            byte[] n = Utf8.Encode(name, nameof(name));
            using (var b = new Borrow())
            {
                IntPtr c = b.Add(Handle);
                var o = new Native.AfFunctionOptions
                {
                    StructSize = (uint)Marshal.SizeOf(typeof(Native.AfFunctionOptions)),
                    Flags = (uint)flags,
                    Fn = isAsync ? IntPtr.Zero : Marshal.GetFunctionPointerForDelegate(s_hostTrampoline),
                    AsyncFn = isAsync ? Marshal.GetFunctionPointerForDelegate(s_asyncHostTrampoline) : IntPtr.Zero,
                    Destroy = Marshal.GetFunctionPointerForDelegate(s_freeHandle),
                    ResultKinds = b.Add(resultKinds),
                };
                // Freed by libaf through s_freeHandle, also on error (bad
                // flags included: only a too small struct_size skips it).
                GCHandle gch = GCHandle.Alloc(fn);
                o.UserData = GCHandle.ToIntPtr(gch);
                IntPtr err;
                try
                {
                    err = Native.af_register_function_with(c, n, Utf8.Len(n), ref o);
                }
                catch (Exception)
                {
                    gch.Free(); // the call never reached libaf (no such symbol): nothing took it
                    throw;
                }
                AfException.Check(err);
            }
        }

        private static readonly Native.AsyncHostFn s_asyncHostTrampoline = AsyncHostTrampoline;

        // How often a running async function's request is checked for
        // cancellation.
        private const int CancelPollMs = 10;

        private static void AsyncHostTrampoline(IntPtr userData, IntPtr args, UIntPtr n, IntPtr req)
        {
            var call = new AsyncHostCall(req);
            try
            {
                var fn = (Func<Value[], CancellationToken, Task<Value>>)GCHandle.FromIntPtr(userData).Target;
                int count = checked((int)(ulong)n);
                var vals = new Value[count];
                for (int i = 0; i < count; i++)
                    vals[i] = Value.Own(Native.af_value_clone(Marshal.ReadIntPtr(args, i * IntPtr.Size)));
                Task<Value> task = fn(vals, call.Token);
                if (task == null) throw new InvalidOperationException("the async host function returned a null Task");
                task.ContinueWith(t => call.Finish(t), TaskScheduler.Default);
            }
            catch (Exception ex)
            {
                call.Fail(ex); // never unwind into libaf
            }
        }

        /// <summary>One call in flight: finishes and frees the request once,
        /// and cancels the token when the run gives up on it.</summary>
        private sealed class AsyncHostCall
        {
            private readonly object _mu = new object();
            private readonly CancellationTokenSource _cts = new CancellationTokenSource();
            private readonly Timer _poll;
            private IntPtr _req;

            internal AsyncHostCall(IntPtr req)
            {
                _req = req;
                _poll = new Timer(_ => Poll(), null, CancelPollMs, CancelPollMs);
            }

            internal CancellationToken Token => _cts.Token;

            private void Poll()
            {
                lock (_mu)
                {
                    if (_req == IntPtr.Zero || Native.af_host_request_cancelled(_req) == 0) return;
                }
                try { _cts.Cancel(); } catch (Exception) { /* a callback's failure has nowhere to go */ }
            }

            internal void Finish(Task<Value> t)
            {
                if (t.IsFaulted) Fail(t.Exception.InnerExceptions.Count == 1 ? t.Exception.InnerException : t.Exception);
                else if (t.IsCanceled) Fail(new OperationCanceledException("the async host function was cancelled"));
                else if (t.Result == null) Fail(new InvalidOperationException("the async host function returned null; return a Value"));
                else
                {
                    try
                    {
                        using (var b = new Borrow())
                        {
                            IntPtr v = b.Add(t.Result);
                            // A refusal (wrong kinds) already failed the call with the same error.
                            Done(r => Native.af_error_free(Native.af_host_request_complete(r, v)));
                        }
                    }
                    catch (Exception ex)
                    {
                        Fail(ex);
                    }
                }
            }

            internal void Fail(Exception ex) =>
                Done(r => Native.af_error_free(Native.af_host_request_fail(r, ErrorFor(ex))));

            private void Done(Action<IntPtr> finish)
            {
                IntPtr r;
                lock (_mu)
                {
                    r = _req;
                    _req = IntPtr.Zero;
                }
                if (r == IntPtr.Zero) return;
                _poll.Dispose();
                try { finish(r); }
                finally
                {
                    Native.af_host_request_free(r);
                }
            }
        }

        /// <summary>Calls host function name: recorded inside a trace, called at
        /// once outside. NOT_FOUND if it is not registered, CALLBACK if it failed.</summary>
        public Value HostCall(string name, params Value[] args)
        {
            byte[] n = Utf8.Encode(name, nameof(name));
            using (var b = new Borrow())
            {
                IntPtr c = b.Add(Handle);
                IntPtr[] a = b.AddAll(args, nameof(args));
                AfException.Check(Native.af_host_call(c, n, Utf8.Len(n), a, (UIntPtr)(ulong)a.Length, out IntPtr o));
                return Value.Own(o, Handle);
            }
        }

        // --- Run-time scopes -------------------------------------------------
        // A scope belongs to the thread that pushed it: it applies to the
        // runs that thread starts, never to other threads' runs. Push and pop
        // on one thread (not across an await that may resume elsewhere).

        /// <summary>Opens a collect scope: every checkpoint of collection that
        /// runs appends its value under its key.</summary>
        public void PushCollect(string collection)
        {
            byte[] s = Utf8.Encode(collection, nameof(collection));
            using (var b = new Borrow())
                AfException.Check(Native.af_collect_push(b.Add(Handle), s, Utf8.Len(s)));
        }

        /// <summary>Closes the innermost collect scope: {key: [values in
        /// program order]} (docs/SEMANTICS.md §4), however the run was
        /// scheduled.</summary>
        public Value PopCollect()
        {
            using (var b = new Borrow())
            {
                AfException.Check(Native.af_collect_pop(b.Add(Handle), out IntPtr o));
                return Value.Own(o);
            }
        }

        /// <summary>Opens an inject scope: values is {key: [values...]}; a
        /// checkpoint of collection with a queued value yields it instead, the
        /// queued values going to the hits in program order.</summary>
        public void PushInject(string collection, Value values)
        {
            if (values == null) throw new ArgumentNullException(nameof(values));
            byte[] s = Utf8.Encode(collection, nameof(collection));
            using (var b = new Borrow())
                AfException.Check(Native.af_inject_push(b.Add(Handle), s, Utf8.Len(s), b.Add(values)));
        }

        /// <summary>Closes the innermost inject scope.</summary>
        public void PopInject()
        {
            using (var b = new Borrow())
                AfException.Check(Native.af_inject_pop(b.Add(Handle)));
        }

        /// <summary>Opens a memoize scope: identical calls run once. A call of
        /// an effectful host function (registered without FunctionFlags.Pure)
        /// is never answered from it.</summary>
        public void PushMemoize()
        {
            using (var b = new Borrow())
                AfException.Check(Native.af_memoize_push(b.Add(Handle)));
        }

        /// <summary>Closes the innermost memoize scope.</summary>
        public void PopMemoize()
        {
            using (var b = new Borrow())
                AfException.Check(Native.af_memoize_pop(b.Add(Handle)));
        }

        // --- Cancel scopes ---------------------------------------------------

        /// <summary>Opens a cancel scope of token on this thread: until the
        /// matching PopCancelScope, what this thread runs on this context ends
        /// with AfCancelledException once token is triggered (see
        /// CancelScope). Prefer <c>using (ctx.CancelScope(token))</c>, which
        /// pops on the right thread however the block ends.</summary>
        public void PushCancelScope(CancelToken token)
        {
            if (token == null) throw new ArgumentNullException(nameof(token));
            using (var b = new Borrow())
                AfException.Check(Native.af_cancel_scope_push(b.Add(Handle), b.Add(token.Handle)));
        }

        /// <summary>Closes this thread's innermost cancel scope;
        /// AfInvalidArgumentException if this thread opened none.</summary>
        public void PopCancelScope()
        {
            using (var b = new Borrow())
                AfException.Check(Native.af_cancel_scope_pop(b.Add(Handle)));
        }

        /// <summary>Opens a cancel scope, closed on Dispose:
        /// <c>using (ctx.CancelScope(token)) { ... }</c>. Inside, once
        /// <c>token.Trigger()</c> is called (from any thread), what this
        /// thread runs on this context ends with AfCancelledException,
        /// noticed within 20 ms: eager LmCall / LmSchemaCall / LmToolCall
        /// (the request is aborted), HostCall of an async or blocking host
        /// function (its CancellationToken is cancelled, its late answer
        /// ignored), and Ir/Program Call runs whose options give no cancel
        /// token of their own (RunOptions.Cancel or a CancellationToken
        /// argument wins). A plain host function runs on the calling thread
        /// and is not interrupted; a lazy evaluation takes its token from
        /// Eval(RunOptions, ...). A call that waits under a token already
        /// triggered ends at its first check (an answer ready before that is
        /// still returned).
        ///
        /// The scope belongs to the thread that opened it: it covers that
        /// thread's calls only (not tasks or threads it starts), and must be
        /// disposed on that same thread (Dispose elsewhere throws
        /// InvalidOperationException and leaves the scope open), so do not
        /// await inside the using block (the continuation may resume on
        /// another thread). Scopes nest, and the token of every open scope
        /// stops what runs inside it: an inner scope never shields from an
        /// outer one, and a triggered token ends nothing outside its own
        /// scope. The scope holds its own reference to the token (disposing the token
        /// inside is fine) and keeps the context alive until it is
        /// disposed. Dispose is idempotent.</summary>
        public IDisposable CancelScope(CancelToken token)
        {
            return CancelScopeGuard.Open(this, token, null, default(CancellationTokenRegistration));
        }

        /// <summary>CancelScope with a token triggered when ct is cancelled
        /// (at once if it already is: calls that wait then end at their first
        /// check): <c>using (ctx.CancelScope(ct)) { ... }</c>. A ct that can
        /// never be cancelled (CancellationToken.None) opens a scope that
        /// never fires and so changes nothing: an enclosing scope's token
        /// still stops the block's calls. Same thread rules as
        /// CancelScope(CancelToken).</summary>
        public IDisposable CancelScope(CancellationToken ct)
        {
            var token = new CancelToken();
            CancellationTokenRegistration reg = default(CancellationTokenRegistration);
            try
            {
                reg = ct.Register(token.Trigger);
                return CancelScopeGuard.Open(this, token, token, reg);
            }
            catch
            {
                reg.Dispose(); // waits for a Trigger in progress
                token.Dispose();
                throw;
            }
        }

        /// <summary>An open cancel scope: pops it on Dispose, on the thread
        /// that pushed it, then releases what the scope owns.</summary>
        private sealed class CancelScopeGuard : IDisposable
        {
            private readonly int _thread;
            private SafeHandle[] _pinned; // the context, held until the pop; null once disposed
            private readonly IntPtr _ctx;
            private readonly CancelToken _owned; // made by CancelScope(CancellationToken), else null
            private readonly CancellationTokenRegistration _reg;

            private CancelScopeGuard(SafeHandle[] pinned, IntPtr ctx, CancelToken owned, CancellationTokenRegistration reg)
            {
                _thread = Thread.CurrentThread.ManagedThreadId;
                _pinned = pinned;
                _ctx = ctx;
                _owned = owned;
                _reg = reg;
            }

            public static CancelScopeGuard Open(Context ctx, CancelToken token, CancelToken owned,
                                                CancellationTokenRegistration reg)
            {
                if (token == null) throw new ArgumentNullException(nameof(token));
                SafeHandle[] pinned = Borrow.Pin(ctx.Handle);
                try
                {
                    IntPtr c = pinned[0].DangerousGetHandle();
                    using (var b = new Borrow())
                        AfException.Check(Native.af_cancel_scope_push(c, b.Add(token.Handle)));
                    return new CancelScopeGuard(pinned, c, owned, reg);
                }
                catch
                {
                    Borrow.Unpin(pinned);
                    throw;
                }
            }

            public void Dispose()
            {
                if (_pinned == null) return;
                if (Thread.CurrentThread.ManagedThreadId != _thread)
                    throw new InvalidOperationException(
                        "a cancel scope must be disposed on the thread that opened it (libaf scopes belong to " +
                        "their thread; do not await inside the using block)");
                SafeHandle[] pinned = _pinned;
                _pinned = null;
                try
                {
                    AfException.Check(Native.af_cancel_scope_pop(_ctx));
                }
                finally
                {
                    Borrow.Unpin(pinned);
                    _reg.Dispose(); // waits for a Trigger in progress
                    if (_owned != null) _owned.Dispose();
                }
            }
        }

        // --- Routes and LM calls ---------------------------------------------

        /// <summary>Routes models matching pattern ('*' any run, '?' one
        /// character) to provider; the context keeps a reference.</summary>
        public void Route(string pattern, Provider provider)
        {
            if (provider == null) throw new ArgumentNullException(nameof(provider));
            byte[] p = Utf8.Encode(pattern, nameof(pattern));
            using (var b = new Borrow())
                AfException.Check(Native.af_context_route(b.Add(Handle), p, Utf8.Len(p), b.Add(provider.Handle)));
        }

        /// <summary>Routes models matching pattern to providers in order: the
        /// next is asked after a PROVIDER or TIMEOUT error.</summary>
        public void RouteFallback(string pattern, params Provider[] providers)
        {
            if (providers == null) throw new ArgumentNullException(nameof(providers));
            byte[] p = Utf8.Encode(pattern, nameof(pattern));
            using (var b = new Borrow())
            {
                var raw = new IntPtr[providers.Length];
                for (int i = 0; i < providers.Length; i++)
                {
                    if (providers[i] == null) throw new ArgumentNullException(nameof(providers));
                    raw[i] = b.Add(providers[i].Handle);
                }
                AfException.Check(Native.af_context_route_fallback(b.Add(Handle), p, Utf8.Len(p), raw,
                                                                   (UIntPtr)raw.Length));
            }
        }

        /// <summary>An LM call with sampling params: a dict of temperature,
        /// top_p, max_tokens, seed, stop (part of the recorded equation).</summary>
        public Value LmCall(Value messages, Value model, Value parameters)
        {
            if (messages == null) throw new ArgumentNullException(nameof(messages));
            if (model == null) throw new ArgumentNullException(nameof(model));
            if (parameters == null) throw new ArgumentNullException(nameof(parameters));
            using (var b = new Borrow())
            {
                AfException.Check(Native.af_lm_call_ex(b.Add(Handle), b.Add(messages), b.Add(model), b.Add(parameters),
                                                       out IntPtr o));
                return Value.Own(o, Handle);
            }
        }

        /// <summary>A structured LM call with sampling params.</summary>
        public Value LmSchemaCall(Value messages, Value model, Value schema, Value parameters)
        {
            if (messages == null) throw new ArgumentNullException(nameof(messages));
            if (model == null) throw new ArgumentNullException(nameof(model));
            if (schema == null) throw new ArgumentNullException(nameof(schema));
            if (parameters == null) throw new ArgumentNullException(nameof(parameters));
            using (var b = new Borrow())
            {
                AfException.Check(Native.af_lm_schema_call_ex(b.Add(Handle), b.Add(messages), b.Add(model),
                                                              b.Add(schema), b.Add(parameters), out IntPtr o));
                return Value.Own(o, Handle);
            }
        }

        /// <summary>An LM call offering tools the model may call
        /// (af_lm_tool_call). tools: a list of {"name", "description"
        /// (optional), "parameters" (a schema tree as LmSchemaCall's whose
        /// root is a container; left out for no arguments)}, static. history:
        /// a str (may be traced), the JSON array of the turns after messages
        /// as ToolResults builds it ("" for none). Returns a dict: "called"
        /// (bool: the model called tools, the reply is not final), "text"
        /// (str), "names" (list of str, the tools called in order),
        /// "arguments" (list of str, each call's arguments as compact JSON)
        /// and "turn" (str, the model's turn, for ToolResults). A call naming
        /// an unknown tool or with arguments its schema rejects is re-asked,
        /// then AfSchemaException. Recorded inside a trace, one blocking
        /// request outside.</summary>
        public Value LmToolCall(Value messages, Value history, Value model, Value tools)
        {
            return LmToolCallRaw(messages, history, model, tools, null);
        }

        /// <summary>A tool-calling LM call with sampling params (as LmCall's).</summary>
        public Value LmToolCall(Value messages, Value history, Value model, Value tools, Value parameters)
        {
            if (parameters == null) throw new ArgumentNullException(nameof(parameters));
            return LmToolCallRaw(messages, history, model, tools, parameters);
        }

        private Value LmToolCallRaw(Value messages, Value history, Value model, Value tools, Value parameters)
        {
            if (messages == null) throw new ArgumentNullException(nameof(messages));
            if (history == null) throw new ArgumentNullException(nameof(history));
            if (model == null) throw new ArgumentNullException(nameof(model));
            if (tools == null) throw new ArgumentNullException(nameof(tools));
            using (var b = new Borrow())
            {
                AfException.Check(Native.af_lm_tool_call(b.Add(Handle), b.Add(messages), b.Add(history), b.Add(model),
                                                         b.Add(tools), b.Add(parameters), out IntPtr o));
                return Value.Own(o, Handle);
            }
        }

        /// <summary>The history (a str) after a tool-calling turn: history,
        /// then turn (LmToolCall's "turn"), then one tool message per str of
        /// results, answering the turn's calls in order (a final turn takes
        /// no results). Recorded inside a trace (all three may be traced).
        /// AfInvalidArgumentException: not one result per call, a malformed
        /// history or turn.</summary>
        public Value ToolResults(Value history, Value turn, Value results)
        {
            if (history == null) throw new ArgumentNullException(nameof(history));
            if (turn == null) throw new ArgumentNullException(nameof(turn));
            if (results == null) throw new ArgumentNullException(nameof(results));
            using (var b = new Borrow())
            {
                AfException.Check(Native.af_tool_results(b.Add(Handle), b.Add(history), b.Add(turn), b.Add(results),
                                                         out IntPtr o));
                return Value.Own(o, Handle);
            }
        }

        /// <summary>An LM call: messages is a list of {"role", "content"},
        /// model a str. Recorded inside a trace, one blocking request outside.</summary>
        public Value LmCall(Value messages, Value model)
        {
            if (messages == null) throw new ArgumentNullException(nameof(messages));
            if (model == null) throw new ArgumentNullException(nameof(model));
            using (var b = new Borrow())
            {
                AfException.Check(Native.af_lm_call(b.Add(Handle), b.Add(messages), b.Add(model), out IntPtr o));
                return Value.Own(o, Handle);
            }
        }

        /// <summary>A structured LM call: the reply is validated against schema
        /// (a tree of node descriptions) and has its structure.</summary>
        public Value LmSchemaCall(Value messages, Value model, Value schema)
        {
            if (messages == null) throw new ArgumentNullException(nameof(messages));
            if (model == null) throw new ArgumentNullException(nameof(model));
            if (schema == null) throw new ArgumentNullException(nameof(schema));
            using (var b = new Borrow())
            {
                AfException.Check(Native.af_lm_schema_call(b.Add(Handle), b.Add(messages), b.Add(model), b.Add(schema),
                                                           out IntPtr o));
                return Value.Own(o, Handle);
            }
        }
    }
}
