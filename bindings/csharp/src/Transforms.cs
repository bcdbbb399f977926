// Transforms.cs — IR -> IR transforms (batch, pushforward, pullback, dce,
// cse, sched), validation and saved graphs (.afg) as members of Ir.
using System;
using System.Runtime.InteropServices;
using System.Threading;
using System.Threading.Tasks;

namespace Af
{
    public sealed partial class Ir
    {
        private delegate IntPtr TransformCall(IntPtr ctx, IntPtr ir, IntPtr arg, out IntPtr output);

        private Ir Transform(Context ctx, Value arg, TransformCall call)
        {
            if (ctx == null) throw new ArgumentNullException(nameof(ctx));
            using (var b = new Borrow())
            {
                IntPtr c = b.Add(ctx.Handle);
                IntPtr ir = b.Add(Handle);
                AfException.Check(call(c, ir, b.Add(arg), out IntPtr o));
                return Own(o);
            }
        }

        internal static Ir Own(IntPtr p)
        {
            if (p == IntPtr.Zero) throw AfException.Create(ErrorCode.Internal, "libaf returned success without an IR");
            return new Ir(new IrHandle(p));
        }

        /// <summary>batch (vmap). inAxes: a bool tree that is a prefix of the
        /// list of inputs (true = batched), or null for every input. Batched
        /// leaves arrive as lists and every output leaf comes back as a list.</summary>
        public Ir Batch(Context ctx, Value inAxes = null) =>
            Transform(ctx, inAxes, (IntPtr c, IntPtr i, IntPtr a, out IntPtr o) => Native.af_batch(c, i, a, out o));

        /// <summary>pushforward (jvp): the result takes (primals, tangents) and
        /// returns [outputs, output_tangents], null where a tangent is zero.</summary>
        public Ir Pushforward(Context ctx) =>
            Transform(ctx, null, (IntPtr c, IntPtr i, IntPtr a, out IntPtr o) => Native.af_pushforward(c, i, out o));

        /// <summary>pullback (vjp): the result takes (primals, output_cotangent)
        /// and returns [outputs, input_cotangents], null where nothing flows.</summary>
        public Ir Pullback(Context ctx) =>
            Transform(ctx, null, (IntPtr c, IntPtr i, IntPtr a, out IntPtr o) => Native.af_pullback(c, i, out o));

        /// <summary>Dead code elimination. outUsed: a bool tree prefix of the
        /// output (null = every output); outputs marked false become null.</summary>
        public Ir Dce(Context ctx, Value outUsed = null) =>
            Transform(ctx, outUsed, (IntPtr c, IntPtr i, IntPtr a, out IntPtr o) => Native.af_dce(c, i, a, out o));

        /// <summary>Common subexpression elimination of pure equations; with
        /// mergeNondeterministic, LM calls and host functions too.</summary>
        public Ir Cse(Context ctx, bool mergeNondeterministic = false)
        {
            byte[] opts = Utf8.Encode(mergeNondeterministic ? "{\"merge_nondeterministic\": true}" : "{}", "options");
            return Transform(ctx, null, (IntPtr c, IntPtr i, IntPtr a, out IntPtr o) => Native.af_cse_with(c, i, opts, Utf8.Len(opts), out o));
        }

        /// <summary>Annotates every equation with its level and priority.</summary>
        public Ir Sched(Context ctx) =>
            Transform(ctx, null, (IntPtr c, IntPtr i, IntPtr a, out IntPtr o) => Native.af_sched(c, i, out o));

        /// <summary>(level, priority) of equation i of a scheduled IR
        /// (NOT_FOUND if the IR was not scheduled).</summary>
        public void EqnSched(int i, out uint level, out double priority)
        {
            if (i < 0) throw new ArgumentOutOfRangeException(nameof(i));
            using (var b = new Borrow())
                AfException.Check(Native.af_ir_eqn_sched(b.Add(Handle), (UIntPtr)(ulong)i, out level, out priority));
        }

        /// <summary>Checks SSA, arity and kinds (INVALID_ARGUMENT naming the
        /// first problem).</summary>
        public void Validate()
        {
            using (var b = new Borrow())
                AfException.Check(Native.af_ir_validate(b.Add(Handle)));
        }

        // --- Saved graphs ----------------------------------------------------

        /// <summary>Writes the IR to path as a saved graph, atomically.</summary>
        public void Save(string path)
        {
            byte[] p = Utf8.Encode(path, nameof(path));
            using (var b = new Borrow())
                AfException.Check(Native.af_ir_save(b.Add(Handle), p, Utf8.Len(p)));
        }

        /// <summary>Reads and checks the saved graph at path (FORMAT, VERSION, IO).</summary>
        public static Ir Load(Context ctx, string path)
        {
            if (ctx == null) throw new ArgumentNullException(nameof(ctx));
            byte[] p = Utf8.Encode(path, nameof(path));
            using (var b = new Borrow())
            {
                AfException.Check(Native.af_ir_load(b.Add(ctx.Handle), p, Utf8.Len(p), out IntPtr o));
                return Own(o);
            }
        }

        /// <summary>Save on the thread pool. ct is observed before the write
        /// starts (libaf's write cannot be interrupted).</summary>
        public Task SaveAsync(string path, CancellationToken ct = default(CancellationToken)) =>
            Task.Run(() => Save(path), ct);

        /// <summary>Load on the thread pool. ct is observed before the read
        /// starts (libaf's checks cannot be interrupted).</summary>
        public static Task<Ir> LoadAsync(Context ctx, string path, CancellationToken ct = default(CancellationToken))
        {
            if (ctx == null) throw new ArgumentNullException(nameof(ctx));
            return Task.Run(() => Load(ctx, path), ct);
        }

        /// <summary>The .afg bytes (the same IR gives the same bytes).</summary>
        public byte[] ToBytes()
        {
            using (var b = new Borrow())
            {
                AfException.Check(Native.af_ir_to_bytes(b.Add(Handle), out AfBytes o));
                return Graph.Take(ref o);
            }
        }

        /// <summary>An IR from .afg bytes, after every check.</summary>
        public static Ir FromBytes(Context ctx, byte[] data)
        {
            if (ctx == null) throw new ArgumentNullException(nameof(ctx));
            if (data == null) throw new ArgumentNullException(nameof(data));
            using (var b = new Borrow())
            {
                AfException.Check(Native.af_ir_from_bytes(b.Add(ctx.Handle), data, Utf8.Len(data), out IntPtr o));
                return Own(o);
            }
        }
    }

    /// <summary>Saved-graph utilities on .afg bytes.</summary>
    public static class Graph
    {
        internal static byte[] Take(ref AfBytes b)
        {
            try
            {
                ulong n = (ulong)b.Len;
                if (n > int.MaxValue) throw AfException.Create(ErrorCode.OutOfMemory, "graph too large for .NET");
                var buf = new byte[(int)n];
                if (n > 0) Marshal.Copy(b.Data, buf, 0, (int)n);
                return buf;
            }
            finally
            {
                Native.af_bytes_free(ref b);
            }
        }

        private delegate IntPtr BytesCall(IntPtr ctx, out AfBytes output);

        private static AfBytes Run(Context ctx, BytesCall call)
        {
            if (ctx == null) throw new ArgumentNullException(nameof(ctx));
            using (var b = new Borrow())
            {
                AfException.Check(call(b.Add(ctx.Handle), out AfBytes o));
                return o;
            }
        }

        /// <summary>Runs every load check; returns a one-line JSON summary.</summary>
        public static string Verify(Context ctx, byte[] data)
        {
            if (data == null) throw new ArgumentNullException(nameof(data));
            var o = Run(ctx, (IntPtr c, out AfBytes r) => Native.af_graph_verify(c, data, Utf8.Len(data), out r));
            return Utf8.TakeBytes(ref o);
        }

        /// <summary>The readable JSON form of .afg bytes (round trip exact).</summary>
        public static string ToJson(Context ctx, byte[] data)
        {
            if (data == null) throw new ArgumentNullException(nameof(data));
            var o = Run(ctx, (IntPtr c, out AfBytes r) => Native.af_graph_to_json(c, data, Utf8.Len(data), out r));
            return Utf8.TakeBytes(ref o);
        }

        /// <summary>.afg bytes from the JSON form (checked as bytes are).</summary>
        public static byte[] FromJson(Context ctx, string json)
        {
            byte[] j = Utf8.Encode(json, nameof(json));
            var o = Run(ctx, (IntPtr c, out AfBytes r) => Native.af_graph_from_json(c, j, Utf8.Len(j), out r));
            return Take(ref o);
        }
    }
}
