// Handles.cs — one SafeHandle per libaf handle type. Each owns one libaf
// reference and drops it exactly once (Dispose or finalizer).
using System;
using System.Runtime.InteropServices;
using System.Threading;

namespace Af
{
    /// <summary>A context. The pending promises recorded on it (see
    /// ValueHandle) hold it too: af.h ("Lifetimes") says a promise does not
    /// keep its context alive and bindings must, so af_context_free runs when
    /// the last of this handle and those promises is released. A Dispose (or
    /// the finalizer) while a promise lives defers the free to that promise
    /// (so do not dispose that last promise inside a libaf callback).
    /// </summary>
    public sealed class ContextHandle : SafeHandle
    {
        // This handle (until ReleaseHandle) plus one per promise holding it.
        // Not SafeHandle's own count: DangerousAddRef refuses a disposed
        // handle, and a promise read or cloned after Dispose must still work.
        private int _holders = 1;
        private IntPtr _ctx;

        public ContextHandle() : base(IntPtr.Zero, true) { }

        /// <summary>Takes ownership of one reference to ctx.</summary>
        public ContextHandle(IntPtr ctx) : base(IntPtr.Zero, true) { SetHandle(ctx); }

        public override bool IsInvalid => handle == IntPtr.Zero;

        /// <summary>One more holder. Only while the caller has one already:
        /// a Borrow of this handle, or a promise holding it.</summary>
        internal void Hold() => Interlocked.Increment(ref _holders);

        /// <summary>Releases one holder; the last frees the context.</summary>
        internal void Unhold()
        {
            if (Interlocked.Decrement(ref _holders) == 0) Native.af_context_free(_ctx);
        }

        protected override bool ReleaseHandle()
        {
            _ctx = handle; // read by the last Unhold, after the fence of the decrement
            Unhold();
            return true;
        }
    }

    public sealed class ValueHandle : SafeHandle
    {
        internal static readonly ContextHandle[] NoContexts = new ContextHandle[0];

        // The contexts this value's pending promises were recorded on, each
        // Hold()'d once for this handle and released after the value.
        private ContextHandle[] _contexts = NoContexts;

        public ValueHandle() : base(IntPtr.Zero, true) { }

        /// <summary>Takes ownership of one reference to v.</summary>
        public ValueHandle(IntPtr v) : base(IntPtr.Zero, true) { SetHandle(v); }

        /// <summary>Takes ownership of v and of one hold on each context.</summary>
        internal ValueHandle(IntPtr v, ContextHandle[] heldContexts) : base(IntPtr.Zero, true)
        {
            _contexts = heldContexts;
            SetHandle(v);
        }

        /// <summary>The contexts this value keeps alive (usually none).</summary>
        internal ContextHandle[] Contexts => _contexts;

        public override bool IsInvalid => handle == IntPtr.Zero;

        protected override bool ReleaseHandle()
        {
            Native.af_value_free(handle);
            ContextHandle[] held = _contexts;
            _contexts = NoContexts;
            foreach (var c in held) c.Unhold();
            return true;
        }
    }

    public sealed class IrHandle : SafeHandle
    {
        public IrHandle() : base(IntPtr.Zero, true) { }

        /// <summary>Takes ownership of one reference to ir.</summary>
        public IrHandle(IntPtr ir) : base(IntPtr.Zero, true) { SetHandle(ir); }

        public override bool IsInvalid => handle == IntPtr.Zero;

        protected override bool ReleaseHandle()
        {
            Native.af_ir_free(handle);
            return true;
        }
    }

    /// <summary>A walk. af.h does not say whether a walk keeps its context
    /// and IR alive, so this handle holds a reference on both SafeHandles
    /// and releases them after af_walk_free.</summary>
    public sealed class WalkHandle : SafeHandle
    {
        private SafeHandle[] _deps = new SafeHandle[0];

        public WalkHandle() : base(IntPtr.Zero, true) { }

        /// <summary>Takes ownership of w. deps must already be AddRef'd once
        /// each by the caller; they are released when the walk is freed.</summary>
        internal WalkHandle(IntPtr w, SafeHandle[] addRefdDeps) : base(IntPtr.Zero, true)
        {
            _deps = addRefdDeps ?? new SafeHandle[0];
            SetHandle(w);
        }

        public override bool IsInvalid => handle == IntPtr.Zero;

        protected override bool ReleaseHandle()
        {
            Native.af_walk_free(handle);
            foreach (var d in _deps) d.DangerousRelease();
            _deps = new SafeHandle[0];
            return true;
        }
    }
    public sealed class ProgramHandle : SafeHandle
    {
        public ProgramHandle() : base(IntPtr.Zero, true) { }

        /// <summary>Takes ownership of one reference to p.</summary>
        public ProgramHandle(IntPtr p) : base(IntPtr.Zero, true) { SetHandle(p); }

        public override bool IsInvalid => handle == IntPtr.Zero;

        protected override bool ReleaseHandle()
        {
            Native.af_program_free(handle);
            return true;
        }
    }

    /// <summary>A run in flight. Freeing it does not cancel the run.</summary>
    public sealed class FutureHandle : SafeHandle
    {
        public FutureHandle() : base(IntPtr.Zero, true) { }

        /// <summary>Takes ownership of f.</summary>
        public FutureHandle(IntPtr f) : base(IntPtr.Zero, true) { SetHandle(f); }

        public override bool IsInvalid => handle == IntPtr.Zero;

        protected override bool ReleaseHandle()
        {
            Native.af_future_free(handle);
            return true;
        }
    }

    public sealed class ProviderHandle : SafeHandle
    {
        public ProviderHandle() : base(IntPtr.Zero, true) { }

        /// <summary>Takes ownership of one reference to p.</summary>
        public ProviderHandle(IntPtr p) : base(IntPtr.Zero, true) { SetHandle(p); }

        public override bool IsInvalid => handle == IntPtr.Zero;

        protected override bool ReleaseHandle()
        {
            Native.af_provider_free(handle);
            return true;
        }
    }

    /// <summary>A cancel token. Freeing it does not affect runs already
    /// started (they hold their own reference).</summary>
    public sealed class CancelHandle : SafeHandle
    {
        public CancelHandle() : base(IntPtr.Zero, true) { }

        /// <summary>Takes ownership of c.</summary>
        public CancelHandle(IntPtr c) : base(IntPtr.Zero, true) { SetHandle(c); }

        public override bool IsInvalid => handle == IntPtr.Zero;

        protected override bool ReleaseHandle()
        {
            Native.af_cancel_free(handle);
            return true;
        }
    }
}
