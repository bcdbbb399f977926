// Runner.cs — a small reflection-based test runner: runs every public
// method marked [Test] in this assembly (optionally filtered by substrings
// given on the command line), prints each failure, and ends with exactly one
// summary line "N passed, N failed". Exit code 1 if any test failed.
using System;
using System.Collections.Generic;
using System.Linq;
using System.Reflection;

namespace Af.Tests
{
    [AttributeUsage(AttributeTargets.Method)]
    public sealed class TestAttribute : Attribute { }

    public sealed class AssertionException : Exception
    {
        public AssertionException(string message) : base(message) { }
    }

    public static class Assert
    {
        public static void True(bool cond, string what = "condition")
        {
            if (!cond) throw new AssertionException("expected true: " + what);
        }

        public static void False(bool cond, string what = "condition")
        {
            if (cond) throw new AssertionException("expected false: " + what);
        }

        public static void Equal<T>(T expected, T actual, string what = "value")
        {
            if (!EqualityComparer<T>.Default.Equals(expected, actual))
                throw new AssertionException(what + ": expected <" + expected + "> but got <" + actual + ">");
        }

        public static void NotEqual<T>(T notExpected, T actual, string what = "value")
        {
            if (EqualityComparer<T>.Default.Equals(notExpected, actual))
                throw new AssertionException(what + ": expected anything but <" + actual + ">");
        }

        public static void Contains(string needle, string haystack, string what = "text")
        {
            if (haystack == null || !haystack.Contains(needle))
                throw new AssertionException(what + ": expected to contain \"" + needle + "\" but was \"" + haystack + "\"");
        }

        public static void Same(object expected, object actual, string what = "object")
        {
            if (!ReferenceEquals(expected, actual))
                throw new AssertionException(what + ": expected the same instance <" + expected + "> but got <" + actual + ">");
        }

        /// <summary>Runs a, requires an exception of type T or a subclass
        /// (AfException's subclasses per code).</summary>
        public static T Throws<T>(Action a, string what = "action") where T : Exception
        {
            try
            {
                a();
            }
            catch (Exception ex)
            {
                if (ex is T t) return t;
                throw new AssertionException(what + ": expected " + typeof(T).Name + " but got " + ex.GetType().Name + ": " + ex);
            }
            throw new AssertionException(what + ": expected " + typeof(T).Name + " but nothing was thrown");
        }

        /// <summary>Runs a, requires an AfException with the given code.</summary>
        public static AfException ThrowsAf(ErrorCode code, Action a, string what = "action")
        {
            var ex = Throws<AfException>(a, what);
            if (ex.Code != code)
                throw new AssertionException(what + ": expected code " + code + " (" + (int)code + ") but got " + ex.Code + " (" + (int)ex.Code + "): " + ex.Message);
            if (ex.GetType() != AfException.Create(code, "").GetType())
                throw new AssertionException(what + ": code " + code + " thrown as " + ex.GetType().Name);
            if (string.IsNullOrEmpty(ex.Message))
                throw new AssertionException(what + ": error " + code + " has an empty message");
            return ex;
        }
    }

    public static class Runner
    {
        public static int Main(string[] args)
        {
            var tests = typeof(Runner).Assembly.GetTypes()
                .SelectMany(t => t.GetMethods(BindingFlags.Public | BindingFlags.Static | BindingFlags.Instance | BindingFlags.DeclaredOnly))
                .Where(m => m.GetCustomAttributes(typeof(TestAttribute), false).Length > 0)
                .OrderBy(m => m.DeclaringType.FullName, StringComparer.Ordinal)
                .ThenBy(m => m.MetadataToken)
                .ToList();
            int passed = 0, failed = 0;
            foreach (var m in tests)
            {
                string name = m.DeclaringType.Name + "." + m.Name;
                if (args.Length > 0 && !args.Any(a => name.IndexOf(a, StringComparison.OrdinalIgnoreCase) >= 0))
                    continue;
                try
                {
                    object target = m.IsStatic ? null : Activator.CreateInstance(m.DeclaringType);
                    try
                    {
                        m.Invoke(target, null);
                    }
                    finally
                    {
                        var d = target as IDisposable;
                        if (d != null) d.Dispose();
                    }
                    passed++;
                    Console.WriteLine("ok   " + name);
                }
                catch (Exception ex)
                {
                    var inner = ex is TargetInvocationException && ex.InnerException != null ? ex.InnerException : ex;
                    failed++;
                    Console.WriteLine("FAIL " + name);
                    Console.WriteLine("     " + inner.GetType().Name + ": " + inner.Message);
                    Console.WriteLine(Indent(inner.StackTrace));
                }
            }
            // Finalizers of everything the tests did not dispose run here: a
            // double free or use-after-free in a ReleaseHandle would crash now.
            GC.Collect();
            GC.WaitForPendingFinalizers();
            GC.Collect();
            Console.WriteLine(passed + " passed, " + failed + " failed");
            return failed == 0 && passed > 0 ? 0 : 1;
        }

        private static string Indent(string s)
        {
            if (s == null) return "";
            return "       " + s.Replace("\n", "\n       ");
        }
    }
}
