using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using System.Threading;

namespace Af.Tests
{
    /// <summary>The README's cookbook, its rolling summary (Context.Scan) and
    /// its agent loop (LmToolCall, ToolResults), compiled and run here;
    /// ReadmeShowsTheCookbook, ReadmeShowsTheRollingSummary and
    /// ReadmeShowsTheAgentLoop keep README.md's copies identical. Also the
    /// implicit conversions.</summary>
    public sealed class CookbookTests
    {
        [Test]
        public void Cookbook()
        {
            var printed = new List<string>();
            Action<object> print = o => printed.Add(o.ToString());
            // cookbook:begin
            using (var ctx = new Context())
            {
                // A host tool: registered by name (a saved graph refers to the name only).
                ctx.RegisterFunction("shout", "str", args => args[0].AsString().ToUpperInvariant());

                // Trace, with a switch on a match result.
                var pong = ctx.Trace((c, a) => "pong", "q");
                var loud = ctx.Trace((c, a) => c.HostCall("shout", a[0]), "q");
                var reply = ctx.Trace((c, a) =>
                {
                    Value key = c.Format("{}", c.Match(a[0], "ping")); // "true" or "false"
                    var branches = new Dictionary<string, Ir> { { "true", pong }, { "false", loud } };
                    return c.Switch(key, branches, a[0]);
                }, "q");

                // Compile and run; batch runs the same program over a list.
                var prog = Program.Compile(ctx, reply);
                print(prog.Call(ctx, "ping").ToJson());
                var batched = Program.Compile(ctx, reply.Batch(ctx));
                print(batched.Call(ctx, ctx.FromJson("[\"ping\", \"hi\"]")).ToJson());

                // Run asynchronously, then cancel (a slow echo model stands in for an LM).
                using (var slow = Provider.Echo("{\"latency_ms\": 5000}")) ctx.Route("*", slow);
                var ask = ctx.Trace((c, a) =>
                {
                    Value msg = Value.Dict(c, ("role", (Value)"user"), ("content", a[0]));
                    return c.LmCall(c.List(msg), "some-model");
                }, "q");
                using (var cts = new CancellationTokenSource())
                {
                    var pending = Program.Compile(ctx, ask).CallAsync(ctx, null, cts.Token, "hi");
                    cts.Cancel();
                    try { pending.Wait(); }
                    catch (AggregateException e) { print(e.InnerException is AfCancelledException); }
                }

                // Save; load in another process (here another context) and register its tools there.
                string path = Path.Combine(Path.GetTempPath(), "af-cookbook-" + Guid.NewGuid() + ".afg");
                prog.Save(path);
                using (var other = new Context())
                {
                    other.RegisterFunction("shout", "str", args => args[0].AsString() + "!");
                    print(Program.Load(other, path).Call(other, "hi").ToJson());
                }
                File.Delete(path);

                // Pullback: text feedback on the output flows back to each input.
                var greet = ctx.Trace((c, a) => c.Format("Hello, {}!", a[0]), "x");
                Value back = greet.Pullback(ctx).Call(ctx, ctx.List("Ada"), "be warmer");
                print(back[0].ToJson() + " " + back[1].Count);
            }
            // cookbook:end
            Assert.Equal("\"pong\"|[\"pong\",\"HI\"]|True|\"hi!\"|\"Hello, Ada!\" 1", string.Join("|", printed));
        }

        [Test]
        public void RollingSummary()
        {
            var printed = new List<string>();
            Action<object> print = o => printed.Add(o.ToString());
            // rolling-summary:begin
            using (var ctx = new Context())
            {
                // The echo provider stands in for an LM: it answers "<model>|<last message>".
                using (var echo = Provider.Echo()) ctx.Route("summarizer", echo);

                // One step: [the summary so far, the next chunk] -> [new summary, new summary].
                var step = ctx.Trace((c, a) =>
                {
                    Value prompt = c.Format("Update the summary <{}> with: {}", a[0], a[1]);
                    Value msg = Value.Dict(c, ("role", (Value)"user"), ("content", prompt));
                    Value summary = c.LmCall(c.List(msg), "summarizer");
                    return c.List(summary, summary);
                }, "summary", "chunk");

                // Traced once over a list of chunks of any length (list mask [false, true]):
                // carry = the summary, y = the summary after each chunk.
                var summarize = Program.Compile(ctx, ctx.TraceWith((c, a) => c.Scan(step, a[0], a[1]),
                    new Value[] { "", ctx.List("chunk") }, ctx.FromJson("[false, true]")));

                // A long document, cut into chunks on the host; the result is [summary, ys].
                string doc = "Ada wrote a program. Babbage built the engine. It was never finished.";
                Value chunks = ctx.List(doc.Split(new[] { ". " }, StringSplitOptions.None).Select(s => (Value)s).ToArray());
                Value result = summarize.Call(ctx, "-", chunks);
                print(result[0].AsString());    // the final summary
                print(result[1].Count);         // one summary per chunk
                print(result[1][0].AsString()); // the summary after the first chunk
                // The same program on a document of another length.
                print(summarize.Call(ctx, "-", ctx.List("Short.")).ToJson());
            }
            // rolling-summary:end
            Assert.Equal(string.Join("|",
                "summarizer|Update the summary <summarizer|Update the summary <summarizer|Update the summary <-> with: " +
                "Ada wrote a program> with: Babbage built the engine> with: It was never finished.",
                "3",
                "summarizer|Update the summary <-> with: Ada wrote a program",
                "[\"summarizer|Update the summary <-> with: Short.\",[\"summarizer|Update the summary <-> with: Short.\"]]"),
                string.Join("|", printed));
        }

        [Test]
        public void AgentLoop()
        {
            var printed = new List<string>();
            Action<object> print = o => printed.Add(o.ToString());
            // agent-loop:begin
            using (var ctx = new Context())
            {
                // Offered tools, echo calls each one once, in order, with the smallest arguments
                // its schema allows; then it answers "<model>|<last message>" (the last tool's result).
                using (var echo = Provider.Echo()) ctx.Route("agent", echo);

                // Host tools: each takes the call's arguments (JSON text) and returns a str.
                ctx.RegisterFunction("add", "str", args =>
                {
                    Value a = ctx.FromJson(args[0].AsString());
                    return (a["a"].AsInt() + a["b"].AsInt()).ToString();
                });
                var facts = new Dictionary<string, string> { { "capital_of_france", "Paris" }, { "boiling_point", "100 C" } };
                ctx.RegisterFunction("lookup", "str", args => facts[ctx.FromJson(args[0].AsString())["key"].AsString()]);

                Value tools = ctx.FromJson(@"[
                  {""name"": ""add"", ""description"": ""The sum of two integers."",
                   ""parameters"": {""a"": {""type"": ""int"", ""min"": 1}, ""b"": {""type"": ""int"", ""min"": 2}}},
                  {""name"": ""lookup"", ""description"": ""A fact, by key."",
                   ""parameters"": {""key"": {""type"": ""enum"", ""values"": [""capital_of_france"", ""boiling_point""]}}}]");
                Value messages = ctx.FromJson(@"[
                  {""role"": ""system"", ""content"": ""Use the tools, then answer in one line.""},
                  {""role"": ""user"", ""content"": ""What is 1 + 2, and what is the capital of France?""}]");

                // One tool call -> [carry, its result]: a switch on the tool's name.
                var branches = new Dictionary<string, Ir>
                {
                    { "add", ctx.Trace((c, a) => c.HostCall("add", a[0]), "{}") },
                    { "lookup", ctx.Trace((c, a) => c.HostCall("lookup", a[0]), "{}") },
                };
                Value call = Value.Dict(ctx, ("name", (Value)"add"), ("arguments", (Value)"{}"));
                var runTool = ctx.Trace((c, a) => c.List(a[0], c.Switch(a[1]["name"], branches, a[1]["arguments"])),
                                        "", call);

                // One step: ask the model, run every tool it called (a scan: a final answer calls
                // none, and a scan of no items runs nothing), append the turn and the results.
                Value state = ctx.FromJson("{\"history\": \"\", \"called\": true, \"text\": \"\"}");
                var step = ctx.Trace((c, a) =>
                {
                    Value r = c.LmToolCall(messages, a[0]["history"], "agent", tools);
                    Value calls = Value.Dict(c, ("name", r["names"]), ("arguments", r["arguments"]));
                    Value results = c.Scan(runTool, "", calls)[1];
                    Value history = c.ToolResults(a[0]["history"], r["turn"], results);
                    return Value.Dict(c, ("history", history), ("called", r["called"]), ("text", r["text"]));
                }, state);
                var stillCalling = ctx.Trace((c, a) => a[0]["called"], state);

                // The agent: steps while the model calls tools, at most 4 (its input: the history so far).
                var agent = ctx.Trace((c, a) =>
                {
                    Value start = Value.Dict(c, ("history", a[0]), ("called", (Value)true), ("text", (Value)""));
                    return c.WhileLoop(stillCalling, step, start, 4);
                }, "");
                Value result = Program.Compile(ctx, agent).Call(ctx, "");
                print(result["text"].AsString());   // the answer
                Value turns = ctx.FromJson(result["history"].AsString());
                print(turns.Count);                  // add's call, "3", lookup's call, "Paris", the answer
                print(turns[3]["content"].AsString());
                // Saved and loaded, the same program gives the same result.
                Ir loaded = Ir.FromBytes(ctx, agent.ToBytes());
                print(loaded.Call(ctx, "").ToJson() == result.ToJson());
            }
            // agent-loop:end
            Assert.Equal("agent|Paris|5|Paris|True", string.Join("|", printed));
        }

        private static string Between(string s, string begin, string end)
        {
            int i = s.IndexOf(begin, StringComparison.Ordinal);
            Assert.True(i >= 0, "found " + begin);
            s = s.Substring(s.IndexOf('\n', i) + 1);
            int j = s.IndexOf(end, StringComparison.Ordinal);
            Assert.True(j >= 0, "found " + end);
            s = s.Substring(0, j);
            return s.Substring(0, s.LastIndexOf('\n') + 1);
        }

        // The first csharp block of README.md's section `heading` (up to the
        // next "\n## " or "\n### ") equals the lines between "// <marker>:begin"
        // and "// <marker>:end" of this file, unindented.
        private static void ReadmeShows(string heading, string marker, string what)
        {
            string dir = Path.Combine(Environment.GetEnvironmentVariable("AF_REPO") ?? "../..", "bindings", "csharp");
            string readme = File.ReadAllText(Path.Combine(dir, "README.md"));
            string tests = File.ReadAllText(Path.Combine(dir, "tests", "CookbookTests.cs"));
            string section = Between(readme, heading, "\n## ");
            int sub = section.IndexOf("\n### ", StringComparison.Ordinal);
            if (sub >= 0) section = section.Substring(0, sub + 1);
            string shown = Between(section, "```csharp", "```");
            const string indent = "            ";
            string code = string.Concat(Between(tests, "// " + marker + ":begin", "// " + marker + ":end")
                .Split('\n').Select(l => (l.StartsWith(indent) ? l.Substring(indent.Length) : l) + "\n"));
            code = code.Substring(0, code.Length - 1);
            Assert.Equal(code, shown, what);
        }

        [Test]
        public void ReadmeShowsTheCookbook()
        {
            ReadmeShows("## Cookbook", "cookbook", "README.md's cookbook (copy CookbookTests.Cookbook into it)");
        }

        [Test]
        public void ReadmeShowsTheRollingSummary()
        {
            ReadmeShows("### Rolling summary", "rolling-summary",
                        "README.md's rolling summary (copy CookbookTests.RollingSummary into it)");
        }

        [Test]
        public void ReadmeShowsTheAgentLoop()
        {
            ReadmeShows("### Agent loop", "agent-loop", "README.md's agent loop (copy CookbookTests.AgentLoop into it)");
        }

        [Test]
        public void ScalarsConvertToValues()
        {
            Value s = "x", i = 3, l = 1L << 40, f = 2.5, b = true;
            Assert.Equal("\"x\"", s.ToJson());
            Assert.Equal(ValueKind.Int, i.Kind);
            Assert.Equal("1099511627776", l.ToJson());
            Assert.Equal("2.5", f.ToJson());
            Assert.Equal("true", b.ToJson());
            Assert.Throws<ArgumentNullException>(() => { Value n = (string)null; n.Dispose(); }, "null string");
            using (var ctx = new Context())
            using (var m = ctx.Match("a", "a"))
                Assert.True(m.AsBool(), "literals as operands");
        }
    }
}
