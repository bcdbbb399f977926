using System;
using System.IO;
using System.Linq;
using System.Reflection;
using System.Runtime.InteropServices;
using System.Text.RegularExpressions;

namespace Af.Tests
{
    public static class NativeTests
    {
        private static MethodInfo[] Imports()
        {
            return typeof(Native).GetMethods(BindingFlags.Public | BindingFlags.Static)
                .Where(m => m.GetCustomAttributes(typeof(DllImportAttribute), false).Length > 0)
                .ToArray();
        }

        [Test]
        public static void FunctionOptionsMatchTheHeader()
        {
            // af_function_options_t: two uint32_t, then five pointers (48 bytes on 64-bit).
            var t = typeof(Native.AfFunctionOptions);
            int p = IntPtr.Size;
            Assert.Equal(8 + 5 * p, Marshal.SizeOf(t), "sizeof(af_function_options_t)");
            string[] fields = { "StructSize", "Flags", "Fn", "AsyncFn", "UserData", "Destroy", "ResultKinds" };
            int[] offsets = { 0, 4, 8, 8 + p, 8 + 2 * p, 8 + 3 * p, 8 + 4 * p };
            for (int i = 0; i < fields.Length; i++)
                Assert.Equal(offsets[i], (int)Marshal.OffsetOf(t, fields[i]), "offset of " + fields[i]);

            string text = File.ReadAllText(Environment.GetEnvironmentVariable("AF_HEADER"));
            foreach (var flag in new[] { Tuple.Create("AF_FUNCTION_PURE", Native.AF_FUNCTION_PURE, (uint)FunctionFlags.Pure),
                                         Tuple.Create("AF_FUNCTION_BLOCKING", Native.AF_FUNCTION_BLOCKING, (uint)FunctionFlags.Blocking) })
            {
                Match m = Regex.Match(text, @"#define\s+" + flag.Item1 + @"\s+(\d+)u");
                Assert.True(m.Success, flag.Item1 + " in af.h");
                Assert.Equal(uint.Parse(m.Groups[1].Value), flag.Item2, "Native." + flag.Item1);
                Assert.Equal(flag.Item2, flag.Item3, "FunctionFlags for " + flag.Item1);
            }
        }

        [Test]
        public static void EveryImportResolves()
        {
            foreach (var m in Imports())
            {
                try
                {
                    Marshal.Prelink(m);
                }
                catch (Exception ex)
                {
                    throw new AssertionException(m.Name + " does not resolve in libaf: " + ex.GetType().Name + ": " + ex.Message);
                }
            }
        }
    }
}
