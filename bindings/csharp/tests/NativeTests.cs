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
        public static void EveryHeaderFunctionIsImported()
        {
            string header = Environment.GetEnvironmentVariable("AF_HEADER");
            Assert.True(!string.IsNullOrEmpty(header) && File.Exists(header), "AF_HEADER names af.h (set by build.sh): " + header);
            string text = File.ReadAllText(header);
            var declared = Regex.Matches(text, @"AF_API\s[^;]*?\b(af_\w+)\s*\(")
                .Cast<Match>().Select(m => m.Groups[1].Value).Distinct().ToList();
            Assert.True(declared.Count > 40, "parsed af.h functions: " + declared.Count);
            var imported = Imports().Select(m => m.Name).ToList();
            var missing = declared.Except(imported).ToList();
            var extra = imported.Except(declared).ToList();
            Assert.Equal("", string.Join(", ", missing), "af.h functions missing from Native");
            Assert.Equal("", string.Join(", ", extra), "Native imports not in af.h");
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
