using System;
using System.Collections.Concurrent;
using System.Diagnostics;
using System.IO;
using System.Threading;

namespace Af.Tests
{
    /// <summary>Run journals: RunOptions.JournalPath, Journal.SummaryJson and
    /// Journal.Compact.</summary>
    public sealed class JournalTests : IDisposable
    {
        private readonly Context ctx = new Context();
        private readonly string dir = Path.Combine(Path.GetTempPath(), "af-cs-journal-" + Guid.NewGuid().ToString("N"));
        private int requests;            // requests the counting provider received
        private volatile string failing; // it fails the request with this content

        // The program's output for the inputs ["q0", "q1"].
        private const string Expected = "[[\"r:q0\",\"r:q1\"],[\"r:more:r:q0\",\"r:more:r:q1\"]]";

        public JournalTests()
        {
            Directory.CreateDirectory(dir);
        }

        public void Dispose()
        {
            ctx.Dispose();
            try
            {
                Directory.Delete(dir, true);
            }
            catch (IOException)
            {
                // Left behind in the temp directory.
            }
        }

        // Counts each request and answers "r:<content of the last message>"
        // at once (or fails it when that content is `failing`).
        private Provider Counting()
        {
            return Provider.Host(req =>
            {
                Interlocked.Increment(ref requests);
                string content = LastContent(req);
                if (content == failing) req.Fail(ErrorCode.Provider, "refusing " + content);
                else req.Complete("r:" + content);
            });
        }

        private static string LastContent(LmRequest req)
        {
            using (var c = new Context())
            using (var v = c.FromJson(req.Json))
            using (var msgs = v["messages"])
            using (var last = msgs[msgs.Count - 1])
            using (var content = last["content"])
                return content.AsString();
        }

        private static Value Ask(Context c, Value content, Value model)
        {
            using (var role = c.Str("user"))
            using (var msg = Value.Dict(c, ("role", role), ("content", content)))
            using (var msgs = c.List(msg))
                return c.LmCall(msgs, model);
        }

        // For each question q of a list: [a = lm(q), lm("more:" + a)], as
        // [[a...], [second...]]: two LM calls per item, the second needing the
        // first.
        private Program TwoAsksPerItem()
        {
            using (var example = ctx.FromJson("\"q\""))
            using (var one = ctx.Trace((c, a) =>
            {
                using (var model = c.Str("m"))
                using (var first = Ask(c, a[0], model))
                using (var more = c.Str("more:"))
                using (var q2 = c.Concat(more, first))
                using (var second = Ask(c, q2, model))
                    return c.List(first, second);
            }, example))
            using (var batched = one.Batch(ctx))
                return Program.Compile(ctx, batched);
        }

        private string Run(Program p, string journal, string inputsJson = "[\"q0\",\"q1\"]")
        {
            using (var inputs = ctx.FromJson(inputsJson))
            using (var output = p.Call(ctx, new RunOptions { JournalPath = journal }, inputs))
                return output.ToJson();
        }

        private int TakeRequests() => Interlocked.Exchange(ref requests, 0);

        private long Field(string json, params string[] path)
        {
            Value v = ctx.FromJson(json);
            try
            {
                foreach (string key in path)
                {
                    Value next = v[key];
                    v.Dispose();
                    v = next;
                }
                return v.AsInt();
            }
            finally
            {
                v.Dispose();
            }
        }

        private static string FileMode(string path)
        {
            var psi = new ProcessStartInfo("stat", "-c %a \"" + path + "\"")
            {
                UseShellExecute = false,
                RedirectStandardOutput = true,
            };
            using (var proc = Process.Start(psi))
            {
                string mode = proc.StandardOutput.ReadToEnd().Trim();
                proc.WaitForExit();
                Assert.Equal(0, proc.ExitCode, "stat -c %a " + path);
                return mode;
            }
        }

        [Test]
        public void ARerunIsAnsweredFromTheJournal()
        {
            string journal = Path.Combine(dir, "not", "yet", "there", "run.journal");
            using (var host = Counting())
            using (var p = TwoAsksPerItem())
            {
                ctx.Route("*", host);
                Assert.Equal(Expected, Run(p, journal), "first run");
                Assert.Equal(4, TakeRequests(), "requests of the first run");
                Assert.True(File.Exists(journal), "the journal and its parent directories are created");
                Assert.Equal("600", FileMode(journal), "the journal's mode");

                Assert.Equal(Expected, Run(p, journal), "second run");
                Assert.Equal(0, TakeRequests(), "requests of the second run");

                string summary = Journal.SummaryJson(journal);
                Assert.Equal(4L, Field(summary, "calls"), "calls in " + summary);
                Assert.Equal(4L, Field(summary, "models", "m", "calls"), "calls of model m in " + summary);
                Assert.True(Field(summary, "prompt_tokens") >= 0, "prompt_tokens in " + summary);
                Assert.True(Field(summary, "completion_tokens") >= 0, "completion_tokens in " + summary);
                using (var s = ctx.FromJson(summary))
                using (var program = s["program"])
                using (var inputs = s["inputs"])
                {
                    Assert.True(System.Text.RegularExpressions.Regex.IsMatch(program.AsString(), "^[0-9a-f]+$"),
                                "program hash: " + program.AsString());
                    Assert.True(System.Text.RegularExpressions.Regex.IsMatch(inputs.AsString(), "^[0-9a-f]+$"),
                                "inputs hash: " + inputs.AsString());
                }

                // A run started with Start (af_program_call_async_with) reads it too.
                using (var inputs = ctx.FromJson("[\"q0\",\"q1\"]"))
                using (var run = p.Start(ctx, new RunOptions { JournalPath = journal }, inputs))
                using (var output = run.Task.Result)
                    Assert.Equal(Expected, output.ToJson(), "a started run");
                Assert.Equal(0, TakeRequests(), "requests of the started run");
            }
        }

        [Test]
        public void AJournalOfOtherInputsOrNotAJournalIsRefused()
        {
            string journal = Path.Combine(dir, "run.journal");
            using (var host = Counting())
            using (var p = TwoAsksPerItem())
            {
                ctx.Route("*", host);
                Assert.Equal(Expected, Run(p, journal), "first run");
                Assert.Equal(4, TakeRequests(), "requests of the first run");

                var ex = Assert.ThrowsAf(ErrorCode.InvalidArgument, () => Run(p, journal, "[\"q0\",\"q2\"]"),
                                         "other inputs, same journal");
                Assert.True(ex is AfInvalidArgumentException, "typed exception");
                Assert.Equal(0, TakeRequests(), "requests of the refused run");

                // Another program on the same inputs.
                using (var example = ctx.FromJson("\"q\""))
                using (var one = ctx.Trace((c, a) =>
                {
                    using (var model = c.Str("m"))
                        return Ask(c, a[0], model);
                }, example))
                using (var batched = one.Batch(ctx))
                using (var other = Program.Compile(ctx, batched))
                    Assert.ThrowsAf(ErrorCode.InvalidArgument, () => Run(other, journal), "another program, same journal");
                Assert.Equal(0, TakeRequests(), "requests of the other program");

                // The journal is untouched by the refused runs.
                Assert.Equal(4L, Field(Journal.SummaryJson(journal), "calls"), "calls after the refused runs");
                Assert.Equal(Expected, Run(p, journal), "the right inputs still resume");
                Assert.Equal(0, TakeRequests(), "requests of the resumed run");

                string garbage = Path.Combine(dir, "garbage.journal");
                var bytes = new byte[8192];
                new Random(42).NextBytes(bytes);
                File.WriteAllBytes(garbage, bytes);
                Assert.ThrowsAf(ErrorCode.Format, () => Run(p, garbage), "a run with a garbage journal");
                Assert.Equal(0, TakeRequests(), "requests of the garbage run");
                Assert.ThrowsAf(ErrorCode.Format, () => Journal.SummaryJson(garbage), "SummaryJson of garbage");
                Assert.ThrowsAf(ErrorCode.Format, () => Journal.Compact(garbage), "Compact of garbage");

                string missing = Path.Combine(dir, "missing.journal");
                Assert.ThrowsAf(ErrorCode.NotFound, () => Journal.SummaryJson(missing), "SummaryJson of no file");
                Assert.ThrowsAf(ErrorCode.NotFound, () => Journal.Compact(missing), "Compact of no file");
                Assert.False(File.Exists(missing), "reading creates no journal");
                Assert.Throws<ArgumentNullException>(() => Journal.SummaryJson(null));
                Assert.Throws<ArgumentNullException>(() => Journal.Compact(null));
            }
        }

        [Test]
        public void ACompactedJournalStillResumes()
        {
            string journal = Path.Combine(dir, "run.journal");
            using (var host = Counting())
            using (var p = TwoAsksPerItem())
            {
                ctx.Route("*", host);
                Assert.Equal(Expected, Run(p, journal), "first run");
                Assert.Equal(4, TakeRequests(), "requests of the first run");
                string before = Journal.SummaryJson(journal);

                Journal.Compact(journal);
                Journal.Compact(journal); // idempotent
                string wal = journal + "-wal";
                Assert.True(!File.Exists(wal) || new FileInfo(wal).Length == 0, "the write-ahead log is folded in");
                Assert.Equal(before, Journal.SummaryJson(journal), "summary after Compact");
                Assert.Equal("600", FileMode(journal), "the journal's mode after Compact");

                Assert.Equal(Expected, Run(p, journal), "run after Compact");
                Assert.Equal(0, TakeRequests(), "requests after Compact");
            }
        }

        [Test]
        public void AFailedRunResumesWhereItStopped()
        {
            string journal = Path.Combine(dir, "run.journal");
            using (var host = Counting())
            using (var p = TwoAsksPerItem())
            {
                ctx.Route("*", host);
                failing = "more:r:q1";
                Assert.ThrowsAf(ErrorCode.Provider, () => Run(p, journal), "the run whose provider fails");
                TakeRequests();
                long recorded = Field(Journal.SummaryJson(journal), "calls");
                // r:q1 was used (by the failing request), so it was committed first.
                Assert.True(recorded >= 1 && recorded <= 3, "calls recorded by the failed run: " + recorded);

                failing = null;
                Assert.Equal(Expected, Run(p, journal), "the resumed run");
                Assert.Equal(4 - recorded, (long)TakeRequests(), "requests of the resumed run");
                Assert.Equal(4L, Field(Journal.SummaryJson(journal), "calls"), "calls after the resumed run");
            }
        }

        [Test]
        public void CompactWhileARunHoldsTheJournalIsIO()
        {
            string journal = Path.Combine(dir, "run.journal");
            var parked = new BlockingCollection<LmRequest>();
            using (var host = Provider.Host(parked.Add))
            using (var p = TwoAsksPerItem())
            using (var inputs = ctx.FromJson("[\"q0\",\"q1\"]"))
            {
                ctx.Route("*", host);
                using (var run = p.Start(ctx, new RunOptions { JournalPath = journal }, inputs))
                {
                    Assert.True(parked.TryTake(out LmRequest first, 10000), "a request arrives");
                    Assert.ThrowsAf(ErrorCode.IO, () => Journal.Compact(journal), "Compact during the run");
                    // Reading is allowed while a run writes.
                    Assert.Equal(0L, Field(Journal.SummaryJson(journal), "calls"), "calls while the run waits");
                    first.Complete("r:" + LastContent(first));
                    // A second run on the same journal while the first holds it.
                    // (With a timeout: were it not refused, its requests would park.)
                    var second = new RunOptions { JournalPath = journal, Timeout = TimeSpan.FromSeconds(5) };
                    Assert.ThrowsAf(ErrorCode.IO, () => p.Call(ctx, second, inputs).Dispose(),
                                    "a second run on a held journal");
                    int answered = 1;
                    while (!run.IsReady)
                    {
                        if (parked.TryTake(out LmRequest req, 100))
                        {
                            req.Complete("r:" + LastContent(req));
                            answered++;
                        }
                    }
                    using (var output = run.Task.Result)
                        Assert.Equal(Expected, output.ToJson(), "the run's output");
                    Assert.Equal(4, answered, "requests answered");
                }
                Journal.Compact(journal);
                Assert.Equal(4L, Field(Journal.SummaryJson(journal), "calls"), "calls after the run");
            }
        }

        [Test]
        public void RunOptionsEndWithTheJournalPath()
        {
            // af_run_options_t on a 64-bit ABI: journal_path follows
            // max_value_bytes (at 112) and ends the struct.
            if (IntPtr.Size != 8) return;
            var t = typeof(Native.AfRunOptions);
            Assert.Equal(112L, (long)System.Runtime.InteropServices.Marshal.OffsetOf(t, "MaxValueBytes"), "max_value_bytes");
            Assert.Equal(120L, (long)System.Runtime.InteropServices.Marshal.OffsetOf(t, "JournalPath"), "journal_path");
            Assert.Equal(128L, (long)System.Runtime.InteropServices.Marshal.OffsetOf(t, "JournalPathLen"), "journal_path_len");
            Assert.Equal(136, System.Runtime.InteropServices.Marshal.SizeOf(t), "sizeof(af_run_options_t)");
        }

        [Test]
        public void EvalRefusesAJournal()
        {
            string journal = Path.Combine(dir, "eval.journal");
            using (var c = Context.Lazy())
            using (var x = c.Str("x"))
            using (var promise = c.Format("<{}>", x))
            {
                Assert.ThrowsAf(ErrorCode.InvalidArgument, () => c.Eval(new RunOptions { JournalPath = journal }, promise),
                                "Eval with a journal");
                Assert.False(File.Exists(journal), "no journal is created");
                Assert.Equal("<x>", promise.AsString(), "the promise evaluates without it");
            }
        }
    }
}
