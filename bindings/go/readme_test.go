package af_test

import (
	"os"
	"strings"
	"testing"
)

// between returns the text of s after the line containing begin and before
// the line containing end.
func between(t *testing.T, s, begin, end string) string {
	t.Helper()
	i := strings.Index(s, begin)
	if i < 0 {
		t.Fatalf("%q not found", begin)
	}
	s = s[i+len(begin):]
	s = s[strings.Index(s, "\n")+1:]
	j := strings.Index(s, end)
	if j < 0 {
		t.Fatalf("%q not found", end)
	}
	s = s[:j]
	return s[:strings.LastIndex(s, "\n")+1]
}

// wantReadmeShows asserts that the first Go block of README.md after
// heading (and before end) is the code of cookbook_example_test.go between
// the lines holding begin and stop (the body of example), with one
// indentation level less.
func wantReadmeShows(t *testing.T, heading, end, begin, stop, example string) {
	t.Helper()
	readme := string(must(os.ReadFile("README.md"))(t))
	source := string(must(os.ReadFile("cookbook_example_test.go"))(t))
	shown := between(t, between(t, readme, heading, end), "```go", "```")
	code := between(t, source, begin, stop)
	var dedented strings.Builder
	for _, line := range strings.SplitAfter(code, "\n") {
		dedented.WriteString(strings.TrimPrefix(line, "\t"))
	}
	if shown != dedented.String() {
		t.Fatalf("README.md's %s differs from %s; copy it again:\n%s", heading, example, dedented.String())
	}
}

// The cookbook in README.md is the body of Example_cookbook (which go test
// compiles and runs, checking its output), with one indentation level less.
func TestReadmeCookbookIsTheExample(t *testing.T) {
	wantReadmeShows(t, "## Cookbook", "\n## ", "// cookbook:begin", "// cookbook:end", "Example_cookbook")
}

// The cookbook's rolling summary (Scan) is the body of
// Example_rollingSummary, with one indentation level less.
func TestReadmeRollingSummaryIsTheExample(t *testing.T) {
	wantReadmeShows(t, "### A rolling summary", "\n## ", "// rolling-summary:begin", "// rolling-summary:end",
		"Example_rollingSummary")
}

// The cookbook's agent loop (LMToolCall, ToolResults) is the body of
// Example_agentLoop, with one indentation level less.
func TestReadmeAgentLoopIsTheExample(t *testing.T) {
	wantReadmeShows(t, "### An agent loop", "\n## ", "// agent-loop:begin", "// agent-loop:end",
		"Example_agentLoop")
}
