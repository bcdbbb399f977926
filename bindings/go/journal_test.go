package af_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	af "github.com/libaf/libaf/bindings/go"
)

// journalHost counts the requests it receives and answers each at once
// "<model>:<content of the last message>", or fails it (CodeProvider) while
// down(model) holds; answered counts the requests it answered.
type journalHost struct {
	received, answered atomic.Int32
	down               atomic.Value // string: the model refused ("" = none)
}

func newJournalHost(t *testing.T, eng *af.Engine) *journalHost {
	t.Helper()
	h := &journalHost{}
	h.down.Store("")
	p := must(af.NewHostProvider(func(req *af.LMRequest) {
		h.received.Add(1)
		j, err := req.JSON()
		if err != nil {
			_ = req.Fail(err)
			return
		}
		var r struct {
			Model    string
			Messages []struct{ Content string }
		}
		if err := json.Unmarshal([]byte(j), &r); err != nil {
			_ = req.Fail(err)
			return
		}
		if r.Model == h.down.Load().(string) {
			_ = req.Fail(af.NewError(af.CodeProvider, r.Model+" is down"))
			return
		}
		h.answered.Add(1)
		_ = req.Complete(r.Model + ":" + r.Messages[len(r.Messages)-1].Content)
	}))(t)
	t.Cleanup(p.Close)
	must(0, eng.Route("*", p))(t)
	return h
}

// journalProgram compiles, batched over a list of questions, two LM calls
// per item, the second on the first's reply: a = m(q), b = m2("more on " +
// a); the output is [[a...], [b...]].
func journalProgram(t *testing.T, eng *af.Engine) *af.Program {
	t.Helper()
	one := must(af.Trace(eng, func(ctx *af.Context, in []*af.Value) (*af.Value, error) {
		a, err := ask(ctx, in[0], "m")
		if err != nil {
			return nil, err
		}
		more, err := ctx.Format("more on {}", a)
		if err != nil {
			return nil, err
		}
		b, err := ask(ctx, more, "m2")
		if err != nil {
			return nil, err
		}
		return ctx.List(a, b)
	}, js(t, eng, `"q"`)))(t)
	defer one.Close()
	batched := must(one.Batch(eng, nil))(t)
	defer batched.Close()
	p := must(af.Compile(eng, batched))(t)
	t.Cleanup(p.Close)
	return p
}

const journalWant = `[["m:q0","m:q1"],["m2:more on m:q0","m2:more on m:q1"]]`

// runJSON runs p with opts and returns its output's JSON.
func runJSON(t *testing.T, eng *af.Engine, p *af.Program, opts *af.RunOptions, inputs ...*af.Value) string {
	t.Helper()
	out := must(p.CallWith(eng, opts, inputs...))(t)
	defer out.Close()
	return must(out.JSON())(t)
}

// journalSummary is JournalSummaryJSON(path), decoded.
type journalSummary struct {
	Program          string `json:"program"`
	Inputs           string `json:"inputs"`
	Calls            int    `json:"calls"`
	PromptTokens     int    `json:"prompt_tokens"`
	CompletionTokens int    `json:"completion_tokens"`
	Models           map[string]struct {
		Calls            int `json:"calls"`
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"models"`
}

func summarize(t *testing.T, path string) journalSummary {
	t.Helper()
	s := must(af.JournalSummaryJSON(path))(t)
	var out journalSummary
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		t.Fatalf("summary %s: %v", s, err)
	}
	return out
}

// wantCalls asserts the host received n requests since the last check.
func (h *journalHost) wantCalls(t *testing.T, n int32, what string) {
	t.Helper()
	if got := h.received.Swap(0); got != n {
		t.Fatalf("%s: the provider received %d requests, want %d", what, got, n)
	}
	h.answered.Store(0)
}

func isHex(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
			return false
		}
	}
	return true
}

func TestJournalAnswersARerunWithoutTheProvider(t *testing.T) {
	eng := newCtx(t)
	host := newJournalHost(t, eng)
	p := journalProgram(t, eng)
	// Missing parent directories are created.
	path := filepath.Join(t.TempDir(), "runs", "job.journal")
	opts := &af.RunOptions{JournalPath: path}
	qs := js(t, eng, `["q0","q1"]`)

	if got := runJSON(t, eng, p, opts, qs); got != journalWant {
		t.Fatalf("got %s, want %s", got, journalWant)
	}
	host.wantCalls(t, 4, "the first run")

	// The file holds LM replies: only its owner may read it (its
	// SQLite siblings too, when present).
	fi := must(os.Stat(path))(t)
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("journal mode %v, want 0600", fi.Mode().Perm())
	}
	for _, sib := range []string{path + "-wal", path + "-shm"} {
		if fi, err := os.Stat(sib); err == nil && fi.Mode().Perm()&0o077 != 0 {
			t.Fatalf("%s mode %v: readable by others", filepath.Base(sib), fi.Mode().Perm())
		}
	}

	s := summarize(t, path)
	if s.Calls != 4 || !isHex(s.Program) || !isHex(s.Inputs) ||
		s.Models["m"].Calls != 2 || s.Models["m2"].Calls != 2 ||
		s.PromptTokens != s.Models["m"].PromptTokens+s.Models["m2"].PromptTokens ||
		s.CompletionTokens != s.Models["m"].CompletionTokens+s.Models["m2"].CompletionTokens {
		t.Fatalf("summary %+v", s)
	}

	// The same program on the same inputs with the same journal: every call
	// is answered from it.
	if got := runJSON(t, eng, p, opts, js(t, eng, `["q0","q1"]`)); got != journalWant {
		t.Fatalf("rerun: got %s, want %s", got, journalWant)
	}
	host.wantCalls(t, 0, "the rerun")
	// Through Engine.CallWith under a ctx that can end (which copies the
	// options) and CallAsync (whose C call returns before the run ends).
	goctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := must(eng.CallWith(goctx, p, opts, qs))(t)
	wantJSON(t, out, journalWant)
	out.Close()
	f := must(p.CallAsync(eng, opts, qs))(t)
	defer f.Close()
	out = must(f.Wait())(t)
	wantJSON(t, out, journalWant)
	out.Close()
	host.wantCalls(t, 0, "Engine.CallWith and CallAsync")
	if s2 := summarize(t, path); s2.Calls != 4 || s2.Program != s.Program || s2.Inputs != s.Inputs {
		t.Fatalf("summary after the reruns %+v, before %+v", s2, s)
	}

	// Compacted, the journal still answers.
	must(0, af.JournalCompact(path))(t)
	if s2 := summarize(t, path); s2.Calls != 4 {
		t.Fatalf("summary after compacting %+v", s2)
	}
	if got := runJSON(t, eng, p, opts, qs); got != journalWant {
		t.Fatalf("after compacting: got %s, want %s", got, journalWant)
	}
	host.wantCalls(t, 0, "the run after compacting")
	if fi := must(os.Stat(path))(t); fi.Mode().Perm() != 0o600 {
		t.Fatalf("journal mode after compacting %v, want 0600", fi.Mode().Perm())
	}
}

func TestJournalResumesAFailedRun(t *testing.T) {
	eng := newCtx(t)
	host := newJournalHost(t, eng)
	p := journalProgram(t, eng)
	path := filepath.Join(t.TempDir(), "job.journal")
	opts := &af.RunOptions{JournalPath: path}
	qs := js(t, eng, `["q0","q1"]`)

	host.down.Store("m2")
	_, err := p.CallWith(eng, opts, qs)
	wantCode(t, err, af.CodeProvider)
	recorded := host.answered.Load()
	if recorded == 0 {
		t.Fatal("no call of the failed run was answered")
	}
	if s := summarize(t, path); s.Calls != int(recorded) {
		t.Fatalf("summary %+v after %d answered calls", s, recorded)
	}
	host.received.Store(0)

	host.down.Store("")
	if got := runJSON(t, eng, p, opts, qs); got != journalWant {
		t.Fatalf("got %s, want %s", got, journalWant)
	}
	host.wantCalls(t, 4-recorded, "the resumed run") // only what was missing
	if s := summarize(t, path); s.Calls != 4 {
		t.Fatalf("summary %+v", s)
	}
}

func TestJournalErrors(t *testing.T) {
	eng := newCtx(t)
	host := newJournalHost(t, eng)
	p := journalProgram(t, eng)
	dir := t.TempDir()
	path := filepath.Join(dir, "job.journal")
	opts := &af.RunOptions{JournalPath: path}
	if got := runJSON(t, eng, p, opts, js(t, eng, `["q0","q1"]`)); got != journalWant {
		t.Fatalf("got %s, want %s", got, journalWant)
	}
	host.wantCalls(t, 4, "the first run")
	before := summarize(t, path)

	t.Run("other inputs", func(t *testing.T) {
		_, err := p.CallWith(eng, opts, js(t, eng, `["q0","q9"]`))
		wantCode(t, err, af.CodeInvalidArgument)
		host.wantCalls(t, 0, "a run refused at its start")
	})
	t.Run("another program", func(t *testing.T) {
		other := must(af.Compile(eng, askIR(t, eng)))(t)
		defer other.Close()
		_, err := other.CallWith(eng, opts, js(t, eng, `"q0"`), js(t, eng, `"m"`))
		wantCode(t, err, af.CodeInvalidArgument)
		host.wantCalls(t, 0, "a run refused at its start")
	})
	if s := summarize(t, path); s.Calls != before.Calls || s.Inputs != before.Inputs || s.Program != before.Program {
		t.Fatalf("a refused run changed the journal: %+v, before %+v", s, before)
	}

	t.Run("not a journal", func(t *testing.T) {
		garbage := filepath.Join(dir, "garbage.journal")
		junk := bytes.Repeat([]byte("not a journal\x00\xff\x13"), 512)
		must(0, os.WriteFile(garbage, junk, 0o600))(t)
		_, err := p.CallWith(eng, &af.RunOptions{JournalPath: garbage}, js(t, eng, `["q0","q1"]`))
		wantCode(t, err, af.CodeFormat)
		host.wantCalls(t, 0, "a run refused at its start")
		_, err = af.JournalSummaryJSON(garbage)
		wantCode(t, err, af.CodeFormat)
		wantCode(t, af.JournalCompact(garbage), af.CodeFormat)
		if got := must(os.ReadFile(garbage))(t); !bytes.Equal(got, junk) {
			t.Fatal("the file that is not a journal was changed")
		}
	})
	t.Run("no such file", func(t *testing.T) {
		missing := filepath.Join(dir, "missing.journal")
		_, err := af.JournalSummaryJSON(missing)
		wantCode(t, err, af.CodeNotFound)
		wantCode(t, af.JournalCompact(missing), af.CodeNotFound)
		if _, err := os.Stat(missing); !os.IsNotExist(err) {
			t.Fatalf("reading a missing journal created it: %v", err)
		}
	})
	t.Run("bad paths", func(t *testing.T) {
		_, err := af.JournalSummaryJSON("")
		wantCode(t, err, af.CodeInvalidArgument)
		wantCode(t, af.JournalCompact(""), af.CodeInvalidArgument)
		// libaf's message names this package's function.
		_, err = af.JournalSummaryJSON(filepath.Join(dir, "bad\xff"))
		if e := wantCode(t, err, af.CodeInvalidArgument); !strings.Contains(e.Message, "JournalSummaryJSON") {
			t.Fatalf("%v", err)
		}
		err = af.JournalCompact(filepath.Join(dir, "bad\xff"))
		if e := wantCode(t, err, af.CodeInvalidArgument); !strings.Contains(e.Message, "JournalCompact") {
			t.Fatalf("%v", err)
		}
	})
	t.Run("compact while a run holds it", func(t *testing.T) {
		parked := make(chan *af.LMRequest, 4)
		held := newCtx(t)
		hp := must(af.NewHostProvider(func(req *af.LMRequest) { parked <- req }))(t)
		defer hp.Close()
		must(0, held.Route("*", hp))(t)
		busy := filepath.Join(dir, "busy.journal")
		f := must(af.Compile(held, askIR(t, held)))(t)
		defer f.Close()
		fut := must(f.CallAsync(held, &af.RunOptions{JournalPath: busy}, js(t, held, `"q"`), js(t, held, `"m"`)))(t)
		defer fut.Close()
		req := <-parked // the run is under way, holding its journal
		wantCode(t, af.JournalCompact(busy), af.CodeIO)
		must(0, req.Complete("done"))(t)
		out := must(fut.Wait())(t)
		wantJSON(t, out, `"done"`)
		out.Close()
		must(0, af.JournalCompact(busy))(t)
	})
	t.Run("EvalWith", func(t *testing.T) {
		lazy := must(af.NewLazyEngine())(t)
		t.Cleanup(lazy.Close)
		newJournalHost(t, lazy)
		promise := askModel(t, lazy, "m", "q")
		refused := filepath.Join(dir, "eval.journal")
		err := lazy.EvalWith(context.Background(), &af.RunOptions{JournalPath: refused}, promise)
		wantCode(t, err, af.CodeInvalidArgument)
		if _, err := os.Stat(refused); !os.IsNotExist(err) {
			t.Fatalf("a refused evaluation created its journal: %v", err)
		}
	})
}
