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

// The cookbook in README.md is the body of Example_cookbook (which go test
// compiles and runs, checking its output), with one indentation level less.
func TestReadmeCookbookIsTheExample(t *testing.T) {
	readme := string(must(os.ReadFile("README.md"))(t))
	example := string(must(os.ReadFile("cookbook_example_test.go"))(t))
	shown := between(t, between(t, readme, "## Cookbook", "\n## "), "```go", "```")
	code := between(t, example, "// cookbook:begin", "// cookbook:end")
	var dedented strings.Builder
	for _, line := range strings.SplitAfter(code, "\n") {
		dedented.WriteString(strings.TrimPrefix(line, "\t"))
	}
	if shown != dedented.String() {
		t.Fatalf("README.md's cookbook differs from Example_cookbook; copy it again:\n%s", dedented.String())
	}
}
