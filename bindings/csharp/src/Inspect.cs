// Inspect.cs — inspection and graph queries as members of Ir: JSON documents
// (format in docs/INSPECT.md), sub-IRs, reachability, slices, dry-run cost.
using System;
using System.Collections.Generic;
using System.Runtime.InteropServices;

namespace Af
{
    /// <summary>Flags of Ir.RelatedJson.</summary>
    [Flags]
    public enum Related : uint
    {
        Ancestors = 0,
        Descendants = 1,
        /// <summary>Also list the equations inside the found ones' sub-IRs.</summary>
        Deep = 2,
    }

    public sealed partial class Ir
    {
        private delegate IntPtr JsonCall(IntPtr ir, out AfBytes bytes);

        private string Json(JsonCall call)
        {
            using (var b = new Borrow())
            {
                AfException.Check(call(b.Add(Handle), out AfBytes bytes));
                return Utf8.TakeBytes(ref bytes);
            }
        }

        /// <summary>The whole IR: inputs, outputs, topological order,
        /// variables (producer, consumers) and equations.</summary>
        public string ToJson() => Json((IntPtr p, out AfBytes o) => Native.af_ir_json(p, out o));

        /// <summary>Equation i: prim, inputs (vars or literals with kinds),
        /// outputs, deps, params, sub-IR paths, tags.</summary>
        public string EqnJson(int i) =>
            Json((IntPtr p, out AfBytes o) => Native.af_ir_eqn_json(p, Index(i), out o));

        /// <summary>Variable v: kind, producer (null for an input), consumers.</summary>
        public string VarJson(uint v) => Json((IntPtr p, out AfBytes o) => Native.af_ir_var_json(p, v, out o));

        /// <summary>Ancestors or descendants of equation i: {"eqns": [...]}
        /// (and "nested" sub-IR equation paths with Related.Deep).</summary>
        public string RelatedJson(int i, Related flags) =>
            Json((IntPtr p, out AfBytes o) => Native.af_ir_related_json(p, Index(i), (uint)flags, out o));

        /// <summary>RelatedJson with the largest answer of a Related.Deep
        /// query accepted, in UTF-8 bytes (0 = the default, 64 MiB): a larger
        /// one (sub-IRs shared along many paths, long names repeated in each)
        /// is INVALID_ARGUMENT "over the limit of N", found before it is
        /// built.</summary>
        public string RelatedJson(int i, Related flags, ulong maxBytes) =>
            Json((IntPtr p, out AfBytes o) => Native.af_ir_related_json_with(p, Index(i), (uint)flags, maxBytes, out o));

        /// <summary>Dry-run LM cost for batch examples.</summary>
        public string CostJson(long batch) => Json((IntPtr p, out AfBytes o) => Native.af_ir_cost_json(p, batch, out o));

        /// <summary>The sub-IR at path of equation i ("body", "branches/billing").</summary>
        public Ir Sub(int i, string path)
        {
            byte[] p = Utf8.Encode(path, nameof(path));
            using (var b = new Borrow())
            {
                AfException.Check(Native.af_ir_sub(b.Add(Handle), Index(i), p, Utf8.Len(p), out IntPtr o));
                return Own(o);
            }
        }

        /// <summary>The part of the IR computing the outputs at paths outputs
        /// from the inputs at paths inputs (null: the IR's own inputs).
        /// INVALID_ARGUMENT when the inputs do not suffice.</summary>
        public Ir Slice(IReadOnlyList<string> outputs, IReadOnlyList<string> inputs = null)
        {
            if (outputs == null) throw new ArgumentNullException(nameof(outputs));
            var allocated = new List<IntPtr>();
            try
            {
                UIntPtr[] outLens, inLens = null;
                IntPtr[] outPtrs = Paths(outputs, nameof(outputs), allocated, out outLens);
                IntPtr[] inPtrs = inputs == null ? null : Paths(inputs, nameof(inputs), allocated, out inLens);
                using (var b = new Borrow())
                {
                    AfException.Check(Native.af_ir_slice(b.Add(Handle), outPtrs, outLens, (UIntPtr)(ulong)outputs.Count,
                                                         inPtrs, inLens, (UIntPtr)(ulong)(inputs == null ? 0 : inputs.Count),
                                                         out IntPtr o));
                    return Own(o);
                }
            }
            finally
            {
                foreach (IntPtr p in allocated) Marshal.FreeHGlobal(p);
            }
        }

        // Paths in C memory (freed by the caller through `allocated`), in
        // arrays of at least one slot: a chosen empty input list must still
        // reach C as a non-NULL pointer.
        private static IntPtr[] Paths(IReadOnlyList<string> paths, string name, List<IntPtr> allocated, out UIntPtr[] lens)
        {
            var ptrs = new IntPtr[Math.Max(1, paths.Count)];
            lens = new UIntPtr[ptrs.Length];
            for (int k = 0; k < paths.Count; k++)
            {
                byte[] s = Utf8.Encode(paths[k], name);
                ptrs[k] = Marshal.AllocHGlobal(s.Length + 1);
                allocated.Add(ptrs[k]);
                Marshal.Copy(s, 0, ptrs[k], s.Length);
                lens[k] = Utf8.Len(s);
            }
            return ptrs;
        }

        // A negative index is out of range like any other (INVALID_ARGUMENT from libaf).
        private static UIntPtr Index(int i) => unchecked((UIntPtr)(ulong)(long)i);
    }
}
