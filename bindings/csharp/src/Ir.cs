using System;
using System.Runtime.InteropServices;
using System.Threading;
using System.Threading.Tasks;

namespace Af
{
    /// <summary>A traced program of primitives, immutable once built (safe to
    /// use from several threads at once). Equality is structural.</summary>
    public sealed partial class Ir : IDisposable, IEquatable<Ir>
    {
        public IrHandle Handle { get; }

        /// <summary>Wraps h, taking ownership of its reference.</summary>
        public Ir(IrHandle h)
        {
            if (h == null) throw new ArgumentNullException(nameof(h));
            Handle = h;
        }

        public void Dispose() => Handle.Dispose();

        /// <summary>A new reference to the same IR.</summary>
        public Ir Clone()
        {
            using (var b = new Borrow())
            {
                IntPtr p = Native.af_ir_clone(b.Add(Handle));
                if (p == IntPtr.Zero) throw AfException.Create(ErrorCode.Internal, "af_ir_clone returned null");
                return new Ir(new IrHandle(p));
            }
        }

        /// <summary>Runs the IR on inputs (one per positional input, matching
        /// the traced structure and leaf kinds). Inside a trace, the IR's
        /// equations are inlined into that trace instead.</summary>
        public Value Call(Context ctx, params Value[] inputs)
        {
            if (ctx == null) throw new ArgumentNullException(nameof(ctx));
            using (var b = new Borrow())
            {
                IntPtr c = b.Add(ctx.Handle);
                IntPtr ir = b.Add(Handle);
                IntPtr[] ins = b.AddAll(inputs, nameof(inputs));
                AfException.Check(Native.af_ir_call(c, ir, ins, (UIntPtr)(ulong)ins.Length, out IntPtr o));
                return Value.Own(o, ctx.Handle);
            }
        }

        /// <summary>Runs the IR with options and waits; cancelling ct (from any
        /// thread) ends the run with CANCELLED. The IR is compiled through the
        /// context's plan cache, as Call does, and run as a program: on a lazy
        /// context it runs now.</summary>
        public Value Call(Context ctx, RunOptions options, CancellationToken ct, params Value[] inputs)
        {
            using (var p = Program.Compile(ctx, this))
                return p.Call(ctx, options, ct, inputs);
        }

        /// <summary>Runs the IR asynchronously: compiled through the context's
        /// plan cache and started on its scheduler, so no thread waits for it
        /// (on a lazy context it runs now). The Task completes with the output
        /// or faults with an AfException, input errors included (CANCELLED when
        /// ct is cancelled, TIMEOUT, ...).</summary>
        public Task<Value> CallAsync(Context ctx, RunOptions options = null, CancellationToken ct = default(CancellationToken),
                                     params Value[] inputs)
        {
            if (ctx == null) throw new ArgumentNullException(nameof(ctx));
            try
            {
                // The run holds the program until it finishes.
                using (var p = Program.Compile(ctx, this))
                    return p.CallAsync(ctx, options, ct, inputs);
            }
            catch (AfException e)
            {
                var failed = new TaskCompletionSource<Value>();
                failed.SetException(e);
                return failed.Task;
            }
        }

        /// <summary>CallAsync without options or cancellation.</summary>
        public Task<Value> CallAsync(Context ctx, params Value[] inputs) => CallAsync(ctx, null, default(CancellationToken), inputs);

        /// <summary>The text form (stable across versions).</summary>
        public string ToText()
        {
            using (var b = new Borrow())
            {
                AfException.Check(Native.af_ir_to_text(b.Add(Handle), out AfBytes bytes));
                return Utf8.TakeBytes(ref bytes);
            }
        }

        /// <summary>Graphviz DOT.</summary>
        public string ToDot()
        {
            using (var b = new Borrow())
            {
                AfException.Check(Native.af_ir_to_dot(b.Add(Handle), out AfBytes bytes));
                return Utf8.TakeBytes(ref bytes);
            }
        }

        public int EqnCount
        {
            get
            {
                using (var b = new Borrow())
                    return checked((int)(ulong)Native.af_ir_eqn_count(b.Add(Handle)));
            }
        }

        /// <summary>Primitive name of equation i; null if out of range.</summary>
        public string EqnPrim(int i)
        {
            if (i < 0) return null;
            using (var b = new Borrow())
                return Utf8.FromNulTerminated(Native.af_ir_eqn_prim(b.Add(Handle), (UIntPtr)(ulong)i));
        }

        public int InputCount
        {
            get
            {
                using (var b = new Borrow())
                    return checked((int)(ulong)Native.af_ir_input_count(b.Add(Handle)));
            }
        }

        /// <summary>Structural hash: equal IRs hash equal whatever their origin.</summary>
        public ulong Hash
        {
            get
            {
                using (var b = new Borrow())
                    return Native.af_ir_hash(b.Add(Handle));
            }
        }

        public bool Equals(Ir other)
        {
            if (other == null) return false;
            if (ReferenceEquals(this, other)) return true;
            using (var b = new Borrow())
                return Native.af_ir_equal(b.Add(Handle), b.Add(other.Handle)) != 0;
        }

        public override bool Equals(object obj) => Equals(obj as Ir);

        public override int GetHashCode()
        {
            ulong h = Hash;
            return unchecked((int)h ^ (int)(h >> 32));
        }

        public override string ToString()
        {
            if (Handle.IsClosed) return "<disposed ir>";
            try { return ToText(); }
            catch (ObjectDisposedException) { return "<disposed ir>"; } // disposed by another thread meanwhile
        }

        /// <summary>Starts a step-by-step walk of this IR on inputs.</summary>
        public Walk Walk(Context ctx, params Value[] inputs) => new Walk(ctx, this, inputs);
    }

    /// <summary>A stepper over an IR: Next gives the next equation and its
    /// inputs; then Eval lets libaf evaluate it or Send supplies its outputs;
    /// when Next returns false, Outputs gives the program's outputs.</summary>
    public sealed class Walk : IDisposable
    {
        public WalkHandle Handle { get; }

        public Walk(Context ctx, Ir ir, params Value[] inputs)
        {
            if (ctx == null) throw new ArgumentNullException(nameof(ctx));
            if (ir == null) throw new ArgumentNullException(nameof(ir));
            // The walk holds its context and IR for its whole life
            // (released by WalkHandle after af_walk_free).
            SafeHandle[] deps = Borrow.Pin(ctx.Handle, ir.Handle);
            IntPtr w = IntPtr.Zero;
            try
            {
                using (var b = new Borrow())
                {
                    IntPtr c = b.Add(ctx.Handle);
                    IntPtr i = b.Add(ir.Handle);
                    IntPtr[] ins = b.AddAll(inputs, nameof(inputs));
                    AfException.Check(Native.af_walk_new(c, i, ins, (UIntPtr)(ulong)ins.Length, out w));
                }
                if (w == IntPtr.Zero) throw AfException.Create(ErrorCode.Internal, "af_walk_new returned null");
                Handle = new WalkHandle(w, deps);
            }
            catch
            {
                Borrow.Unpin(deps);
                throw;
            }
        }

        public void Dispose() => Handle.Dispose();

        /// <summary>The next equation: false when finished (index -1, inputs
        /// null). Calling it again before Eval/Send returns the same equation.
        /// The caller owns (and should dispose) inputs.</summary>
        public bool Next(out long eqnIndex, out Value inputs)
        {
            using (var b = new Borrow())
            {
                AfException.Check(Native.af_walk_next(b.Add(Handle), out UIntPtr idx, out IntPtr ins));
                if (idx == Native.AF_WALK_DONE)
                {
                    if (ins != IntPtr.Zero) Native.af_value_free(ins);
                    eqnIndex = -1;
                    inputs = null;
                    return false;
                }
                eqnIndex = checked((long)(ulong)idx);
                inputs = ins == IntPtr.Zero ? null : Value.Own(ins);
                return true;
            }
        }

        /// <summary>Evaluates the current equation with libaf's implementation.</summary>
        public void Eval()
        {
            using (var b = new Borrow())
                AfException.Check(Native.af_walk_eval(b.Add(Handle)));
        }

        /// <summary>Supplies the current equation's outputs.</summary>
        public void Send(Value outputs)
        {
            if (outputs == null) throw new ArgumentNullException(nameof(outputs));
            using (var b = new Borrow())
                AfException.Check(Native.af_walk_send(b.Add(Handle), b.Add(outputs)));
        }

        /// <summary>The program's output tree; INVALID_ARGUMENT if equations remain.</summary>
        public Value Outputs()
        {
            using (var b = new Borrow())
            {
                AfException.Check(Native.af_walk_outputs(b.Add(Handle), out IntPtr o));
                return Value.Own(o);
            }
        }
    }
}
