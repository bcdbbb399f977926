// Conversions.cs — implicit conversions from .NET scalars to Value, so calls
// read `ctx.Match(q, "ping")` instead of `ctx.Match(q, ctx.Str("ping"))`.
// Values are not tied to a context (af.h); the constructors libaf offers
// still take one, so these use one process-wide context made on first use
// and never disposed.
using System;
using System.Threading;

namespace Af
{
    public sealed partial class Context
    {
        private static readonly Lazy<Context> s_values =
            new Lazy<Context>(() => new Context(), LazyThreadSafetyMode.ExecutionAndPublication);

        /// <summary>The context behind Value's implicit conversions.</summary>
        internal static Context ForValues => s_values.Value;
    }

    public sealed partial class Value
    {
        /// <summary>A str (ArgumentNullException for null; use Value.Null).</summary>
        public static implicit operator Value(string s) => Str(Context.ForValues, s);
        /// <summary>An int (int, short, ... convert through long).</summary>
        public static implicit operator Value(long i) => Int(Context.ForValues, i);
        public static implicit operator Value(double f) => Float(Context.ForValues, f);
        public static implicit operator Value(bool b) => Bool(Context.ForValues, b);
    }
}
