using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;

namespace Af.Tests
{
    /// <summary>The shared conformance corpus: every golden .afg of
    /// tests/conformance/graphs (found by walking the folder) runs on the
    /// inputs of its .expected.json and must give the expected output or
    /// error code, on a context with what the folder's README says a host
    /// must provide: host function golden.shout (s -> s + "!") and models
    /// golden-* routed to the echo provider.</summary>
    public static class ConformanceTests
    {
        private static string CorpusDir()
        {
            string repo = Environment.GetEnvironmentVariable("AF_REPO");
            Assert.True(!string.IsNullOrEmpty(repo), "AF_REPO is set (build.sh)");
            return Path.Combine(repo, "tests", "conformance", "graphs");
        }

        [Test]
        public static void EveryGoldenGraphLoadsAndRuns()
        {
            string dir = CorpusDir();
            var failures = new List<string>();
            int ran = 0;
            using (var ctx = new Context())
            using (var kinds = ctx.Str("str"))
            using (var echo = Provider.Echo())
            {
                ctx.RegisterFunction("golden.shout", kinds, a => ctx.Str(a[0].AsString() + "!"));
                ctx.Route("golden-*", echo);
                foreach (string afg in Directory.GetFiles(dir, "*.afg").OrderBy(p => p, StringComparer.Ordinal))
                {
                    string name = Path.GetFileNameWithoutExtension(afg);
                    string expected = Path.Combine(dir, name + ".expected.json");
                    if (!File.Exists(expected)) continue; // not a golden graph (README)
                    ran++;
                    Ir ir;
                    try
                    {
                        ir = Ir.Load(ctx, afg);
                    }
                    catch (AfException ex)
                    {
                        failures.Add(name + ": load failed: " + ex.Message);
                        continue;
                    }
                    using (ir)
                    using (var spec = ctx.FromJson(File.ReadAllText(expected)))
                    {
                        // The README defines only "cases"; a file that needs
                        // more (host functions, providers) is skipped, loudly.
                        var extra = spec.Keys.Where(k => k != "cases").ToList();
                        if (extra.Count > 0)
                        {
                            Console.WriteLine("     skipping " + name + ": needs " + string.Join(", ", extra) +
                                              ", which this runner does not provide");
                            continue;
                        }
                        using (var cases = spec["cases"])
                            for (int i = 0; i < cases.Count; i++)
                                using (var c = cases[i])
                                    RunCase(ctx, ir, c, name + " case " + i, failures);
                    }
                }
            }
            Assert.True(ran >= 3, "golden graphs found in " + dir + ": " + ran);
            Assert.Equal("", string.Join("\n", failures), "conformance failures");
        }

        private static void RunCase(Context ctx, Ir ir, Value c, string what, List<string> failures)
        {
            Value[] args;
            using (var inputs = c["inputs"])
                args = Enumerable.Range(0, inputs.Count).Select(k => inputs[k]).ToArray();
            bool wantsError = c.Keys.Contains("error");
            try
            {
                using (var got = ir.Call(ctx, args))
                {
                    if (wantsError)
                    {
                        failures.Add(what + ": expected an error, got " + got.ToJson());
                        return;
                    }
                    using (var want = c["output"])
                        if (got.ToJson() != want.ToJson())
                            failures.Add(what + ": expected " + want.ToJson() + ", got " + got.ToJson());
                }
            }
            catch (AfException ex)
            {
                if (!wantsError)
                {
                    failures.Add(what + ": unexpected error " + ex.Code + ": " + ex.Message);
                    return;
                }
                using (var code = c["error"])
                    if ((long)ex.Code != code.AsInt())
                        failures.Add(what + ": expected error " + code.AsInt() + ", got " + (int)ex.Code + ": " + ex.Message);
            }
            finally
            {
                foreach (var a in args) a.Dispose();
            }
        }
    }
}
