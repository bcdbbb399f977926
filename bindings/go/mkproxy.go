//go:build ignore

// mkproxy writes one version of this module into a Go module proxy directory,
// laid out as the GOPROXY protocol serves it (so GOPROXY=file://DIR resolves
// it, as proxy.golang.org would after the tag bindings/go/vX.Y.Z):
//
//	DIR/<module>/@v/list             the versions, one a line
//	DIR/<module>/@v/<version>.info   {"Version", "Time"}
//	DIR/<module>/@v/<version>.mod    go.mod
//	DIR/<module>/@v/<version>.zip    the module zip: <module>@<version>/<file>
//
// The files come from standard input, one path a line relative to this
// directory (check_proxy.sh lists what git tracks here). They are filtered as
// Go's module zips are (golang.org/x/mod/zip): no files of nested modules, no
// vendor directories, regular files only, no two paths equal but for case.
//
//	usage: go run mkproxy.go -version v0.1.0 [-time RFC3339] DIR < FILES
package main

import (
	"archive/zip"
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

func main() {
	version := flag.String("version", "", "the version to write, e.g. v0.1.0")
	stamp := flag.String("time", "", "the version's time (RFC 3339; default now)")
	flag.Parse()
	if *version == "" || !strings.HasPrefix(*version, "v") || flag.NArg() != 1 {
		fail("usage: go run mkproxy.go -version vX.Y.Z [-time RFC3339] DIR < FILES")
	}
	when := time.Now().UTC()
	if *stamp != "" {
		t, err := time.Parse(time.RFC3339, *stamp)
		if err != nil {
			fail("-time: %v", err)
		}
		when = t.UTC()
	}

	gomod, err := os.ReadFile("go.mod")
	if err != nil {
		fail("%v (run mkproxy.go from the module's directory)", err)
	}
	module := modulePath(gomod)
	files := moduleFiles(readLines(os.Stdin))

	dir := filepath.Join(flag.Arg(0), filepath.FromSlash(module), "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fail("%v", err)
	}
	info, _ := json.Marshal(struct {
		Version string
		Time    string
	}{*version, when.Format(time.RFC3339)})
	write(filepath.Join(dir, *version+".info"), info)
	write(filepath.Join(dir, *version+".mod"), gomod)
	writeZip(filepath.Join(dir, *version+".zip"), module+"@"+*version+"/", files)
	write(filepath.Join(dir, "list"), versionList(filepath.Join(dir, "list"), *version))
	fmt.Printf("%s@%s: %d files in %s\n", module, *version, len(files), dir)
}

func modulePath(gomod []byte) string {
	for _, line := range strings.Split(string(gomod), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`)
		}
	}
	fail("go.mod has no module line")
	return ""
}

// moduleFiles keeps the paths a module zip may hold, sorted.
func moduleFiles(paths []string) []string {
	nested := map[string]bool{} // directories of other modules
	for _, p := range paths {
		if d := path.Dir(p); path.Base(p) == "go.mod" && d != "." {
			nested[d] = true
		}
	}
	var keep []string
	folded := map[string]string{}
	for _, p := range paths {
		if p != path.Clean(p) || path.IsAbs(p) || p == ".." || strings.HasPrefix(p, "../") {
			fail("%q: not a path inside the module", p)
		}
		if excluded(p, nested) {
			continue
		}
		if st, err := os.Lstat(p); err != nil || !st.Mode().IsRegular() {
			continue // deleted since listed, or a symlink: Go's zips hold neither
		}
		if other, ok := folded[strings.ToLower(p)]; ok {
			fail("%q and %q differ only in case", other, p)
		}
		folded[strings.ToLower(p)] = p
		keep = append(keep, p)
	}
	sort.Strings(keep)
	return keep
}

func excluded(p string, nested map[string]bool) bool {
	for d := path.Dir(p); d != "."; d = path.Dir(d) {
		if nested[d] || path.Base(d) == "vendor" {
			return true
		}
	}
	return false
}

func writeZip(name, prefix string, files []string) {
	f, err := os.Create(name)
	if err != nil {
		fail("%v", err)
	}
	zw := zip.NewWriter(f)
	for _, p := range files {
		w, err := zw.Create(prefix + p) // no timestamps: the same files make the same zip
		if err != nil {
			fail("%v", err)
		}
		src, err := os.Open(p)
		if err != nil {
			fail("%v", err)
		}
		if _, err := io.Copy(w, src); err != nil {
			fail("%s: %v", p, err)
		}
		src.Close()
	}
	if err := zw.Close(); err != nil {
		fail("%v", err)
	}
	if err := f.Close(); err != nil {
		fail("%v", err)
	}
}

func versionList(name, version string) []byte {
	old, _ := os.ReadFile(name)
	seen := map[string]bool{version: true}
	for _, v := range strings.Fields(string(old)) {
		seen[v] = true
	}
	var all []string
	for v := range seen {
		all = append(all, v)
	}
	sort.Strings(all)
	return []byte(strings.Join(all, "\n") + "\n")
}

func readLines(r io.Reader) []string {
	var lines []string
	s := bufio.NewScanner(r)
	for s.Scan() {
		if l := strings.TrimSpace(s.Text()); l != "" {
			lines = append(lines, strings.TrimPrefix(l, "./"))
		}
	}
	return lines
}

func write(name string, data []byte) {
	if err := os.WriteFile(name, data, 0o644); err != nil {
		fail("%v", err)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "mkproxy: "+format+"\n", args...)
	os.Exit(1)
}
