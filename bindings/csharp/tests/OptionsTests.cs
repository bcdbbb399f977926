using System.Linq;
using System.Text.RegularExpressions;

namespace Af.Tests
{
    /// <summary>Library.OptionsJson (af_options_json): the description of
    /// every JSON option, and the readers taking exactly what it lists.</summary>
    public sealed class OptionsTests
    {
        [Test]
        public void EveryTableIsDescribed()
        {
            string d = Library.OptionsJson();
            foreach (var table in new[] { "af_context_new_with", "af_provider_new", "af_provider_set_options", "\"echo\"" })
                Assert.True(d.Contains(table), "described: " + table);
            var keys = Regex.Matches(d, "\"key\":\"(\\w+)\"").Cast<Match>().Select(m => m.Groups[1].Value).ToList();
            Assert.True(keys.Contains("eval_timeout_ms") && keys.Contains("max_in_flight"), "keys: " + string.Join(",", keys));
            Assert.True(Regex.Matches(d, "\"doc\":\"\"").Count == 0, "every key has a doc");
        }

        [Test]
        public void ADescribedKeyIsTakenAndAnotherIsRefusedByName()
        {
            using (var ctx = Context.WithOptions("{\"lazy\": true, \"eval_timeout_ms\": 5000}")) { }
            var e = Assert.ThrowsAf(ErrorCode.InvalidArgument, () => Context.WithOptions("{\"eval_timeout\": 5}"));
            Assert.True(e.Message.Contains("eval_timeout"), e.Message);
        }
    }
}
