package af_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	af "github.com/libaf/libaf/bindings/go"
)

// newEngine is an engine with a slow echo route ("slow", 2 s) and a quick
// one (everything else).
func newEngine(t *testing.T) *af.Engine {
	t.Helper()
	return engineWithSlowModel(t, "", 2000)
}

// engineWithSlowModel is an engine made with options ("" = defaults) whose
// model "slow" answers after slowMs and every other model at once (the echo
// provider: "model|text").
func engineWithSlowModel(t *testing.T, options string, slowMs int) *af.Engine {
	t.Helper()
	var eng *af.Engine
	if options == "" {
		eng = must(af.NewEngine())(t)
	} else {
		eng = must(af.NewEngineWith(options))(t)
	}
	t.Cleanup(eng.Close)
	slow := must(af.NewEchoProvider(fmt.Sprintf(`{"latency_ms": %d}`, slowMs)))(t)
	t.Cleanup(slow.Close)
	quick := must(af.NewEchoProvider(""))(t)
	t.Cleanup(quick.Close)
	must(0, eng.Route("slow", slow))(t)
	must(0, eng.Route("*", quick))(t)
	return eng
}

func TestEngineCallRunsProgramsAndIRs(t *testing.T) {
	eng := newEngine(t)
	ir := askIR(t, eng)
	prog := must(af.Compile(eng, ir))(t)
	defer prog.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, c := range []struct {
		name string
		ctx  context.Context
		fn   af.Callable
	}{
		{"program, background", context.Background(), prog},
		{"program, cancellable", ctx, prog},
		{"ir, background", context.Background(), ir},
		{"ir, cancellable", ctx, ir},
	} {
		out, err := eng.Call(c.ctx, c.fn, js(t, eng, `"hi"`), js(t, eng, `"m"`))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		wantJSON(t, out, `"m|Q:hi"`)
	}
	// Options pass through: the progress callback sees every equation.
	var last atomic.Uint64
	opts := &af.RunOptions{Progress: func(done, total uint64) { last.Store(done*100 + total) }}
	wantJSON(t, must(eng.CallWith(ctx, ir, opts, js(t, eng, `"p"`), js(t, eng, `"m"`)))(t), `"m|Q:p"`)
	if last.Load() != 202 {
		t.Fatalf("progress: last done*100+total = %d", last.Load())
	}
}

func TestEngineCallEndsWhenTheContextIsCancelled(t *testing.T) {
	eng := newEngine(t)
	for _, fn := range []af.Callable{must(af.Compile(eng, askIR(t, eng)))(t), askIR(t, eng)} {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(30*time.Millisecond, cancel)
		start := time.Now()
		_, err := eng.Call(ctx, fn, js(t, eng, `"a"`), js(t, eng, `"slow"`))
		// Far less than the 2 s the request takes: the run was cancelled.
		if took := time.Since(start); took > 1500*time.Millisecond {
			t.Fatalf("cancel took %v", took)
		}
		wantCode(t, err, af.CodeCancelled)
		if !errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("cancel: %v", err)
		}
	}
}

func TestEngineCallDeadlineIsATimeout(t *testing.T) {
	eng := newEngine(t)
	for _, fn := range []af.Callable{must(af.Compile(eng, askIR(t, eng)))(t), askIR(t, eng)} {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		start := time.Now()
		_, err := eng.Call(ctx, fn, js(t, eng, `"a"`), js(t, eng, `"slow"`))
		cancel()
		if took := time.Since(start); took > 1500*time.Millisecond {
			t.Fatalf("deadline took %v", took)
		}
		wantCode(t, err, af.CodeTimeout)
		if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, af.ErrTimeout) || errors.Is(err, context.Canceled) {
			t.Fatalf("deadline: %v", err)
		}
	}
	// The earlier of RunOptions.Timeout and the deadline wins, both ways.
	prog := must(af.Compile(eng, askIR(t, eng)))(t)
	long, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	_, err := eng.CallWith(long, prog, &af.RunOptions{Timeout: 30 * time.Millisecond}, js(t, eng, `"a"`), js(t, eng, `"slow"`))
	wantCode(t, err, af.CodeTimeout)
	short, cancel2 := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel2()
	_, err = eng.CallWith(short, prog, &af.RunOptions{Timeout: time.Hour}, js(t, eng, `"a"`), js(t, eng, `"slow"`))
	wantCode(t, err, af.CodeTimeout)
}

func TestEngineCallWithAContextAlreadyDoneRunsNothing(t *testing.T) {
	eng := must(af.NewEngine())(t)
	defer eng.Close()
	echo := must(af.NewEchoProvider(""))(t)
	defer echo.Close()
	must(0, eng.Route("*", echo))(t)
	prog := must(af.Compile(eng, askIR(t, eng)))(t)
	defer prog.Close()

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := eng.Call(cancelled, prog, js(t, eng, `"a"`), js(t, eng, `"m"`))
	wantCode(t, err, af.CodeCancelled)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	_, err = eng.Call(expired, prog, js(t, eng, `"a"`), js(t, eng, `"m"`))
	wantCode(t, err, af.CodeTimeout)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("expired: %v", err)
	}
	if stats := must(echo.Stats())(t); !strings.Contains(stats, `"submitted":0`) {
		t.Fatalf("a request was made: %s", stats)
	}
}

func TestEngineCallMisuse(t *testing.T) {
	eng := newEngine(t)
	prog := must(af.Compile(eng, askIR(t, eng)))(t)
	defer prog.Close()
	in := []*af.Value{js(t, eng, `"a"`), js(t, eng, `"m"`)}
	_, err := eng.Call(nil, prog, in...)
	wantCode(t, err, af.CodeInvalidArgument)
	_, err = eng.Call(context.Background(), nil, in...)
	wantCode(t, err, af.CodeInvalidArgument)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	token := must(af.NewCancelToken())(t)
	defer token.Close()
	_, err = eng.CallWith(ctx, prog, &af.RunOptions{Cancel: token}, in...)
	if e := wantCode(t, err, af.CodeInvalidArgument); !strings.Contains(e.Message, "RunOptions.Cancel") {
		t.Fatalf("%v", err)
	}
	// With a ctx that never ends, the token alone stops the run.
	time.AfterFunc(30*time.Millisecond, token.Trigger)
	_, err = eng.CallWith(context.Background(), prog, &af.RunOptions{Cancel: token}, js(t, eng, `"a"`), js(t, eng, `"slow"`))
	wantCode(t, err, af.CodeCancelled)
	// A closed program or engine is an error, not a crash.
	closed := must(af.Compile(eng, askIR(t, eng)))(t)
	closed.Close()
	_, err = eng.Call(ctx, closed, in...)
	wantCode(t, err, af.CodeInvalidArgument)
	gone := must(af.NewEngine())(t)
	gone.Close()
	_, err = gone.Call(ctx, prog, in...)
	wantCode(t, err, af.CodeInvalidArgument)
}

func TestEngineCallOnALazyEngine(t *testing.T) {
	eng := must(af.NewLazyEngine())(t)
	defer eng.Close()
	echo := must(af.NewEchoProvider(""))(t)
	defer echo.Close()
	must(0, eng.Route("*", echo))(t)
	prog := must(af.Compile(eng, askIR(t, eng)))(t)
	defer prog.Close()
	// A ctx that never ends: recorded like any operation, run when read.
	promise := must(eng.Call(context.Background(), prog, js(t, eng, `"a"`), js(t, eng, `"m"`)))(t)
	if promise.Ready() {
		t.Fatal("a recorded call is ready before it is read")
	}
	wantJSON(t, promise, `"m|Q:a"`)
	// A ctx that can end: it runs now, under ctx.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := must(eng.Call(ctx, prog, js(t, eng, `"b"`), js(t, eng, `"m"`)))(t)
	if !out.Ready() {
		t.Fatal("a call under a cancellable ctx did not run")
	}
	wantJSON(t, out, `"m|Q:b"`)
}

func TestFormerNamesStillWork(t *testing.T) {
	// Context is Engine: values of either name are interchangeable.
	var old *af.Context = must(af.NewContext())(t)
	var eng *af.Engine = old
	defer eng.Close()
	lazy := must(af.NewLazyContext())(t)
	defer lazy.Close()
	with := must(af.NewContextWith(`{"host_threads": 2}`))(t)
	defer with.Close()
	if _, err := af.NewEngineWith(`{"nope": 1}`); err == nil {
		t.Fatal("an unknown option was accepted")
	}
	// The deprecated Run keeps its contract: a deadline is CodeCancelled.
	slow := must(af.NewEchoProvider(`{"latency_ms": 2000}`))(t)
	defer slow.Close()
	must(0, eng.Route("*", slow))(t)
	prog := must(af.Compile(eng, askIR(t, eng)))(t)
	defer prog.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	_, err := prog.Run(ctx, old, nil, js(t, eng, `"a"`), js(t, eng, `"m"`))
	wantCode(t, err, af.CodeCancelled)
}

// RunOptions.MaxValueBytes bounds the value one equation builds: a format
// of 1000 "{0}" fields over "x" builds 1000 bytes, and fails with
// CodeOutOfMemory naming the option and the primitive past the limit, on
// every call path that takes options.
func TestRunOptionsMaxValueBytes(t *testing.T) {
	eng := newCtx(t)
	tmpl := strings.Repeat("{0}", 1000)
	ir := must(af.Trace(eng, func(eng *af.Engine, in []*af.Value) (*af.Value, error) {
		return eng.Format(tmpl, in[0])
	}, js(t, eng, `"x"`)))(t)
	defer ir.Close()
	prog := must(af.Compile(eng, ir))(t)
	defer prog.Close()
	want := `"` + strings.Repeat("x", 1000) + `"`
	cancellable, cancel := context.WithCancel(context.Background())
	defer cancel()
	paths := []struct {
		name string
		call func(opts *af.RunOptions) (*af.Value, error)
	}{
		{"Program.CallWith", func(o *af.RunOptions) (*af.Value, error) {
			return prog.CallWith(eng, o, js(t, eng, `"x"`))
		}},
		{"Program.CallWithSummary", func(o *af.RunOptions) (*af.Value, error) {
			v, _, err := prog.CallWithSummary(eng, o, js(t, eng, `"x"`))
			return v, err
		}},
		{"Engine.CallWith, program", func(o *af.RunOptions) (*af.Value, error) {
			return eng.CallWith(context.Background(), prog, o, js(t, eng, `"x"`))
		}},
		{"Engine.CallWith, IR, cancellable ctx", func(o *af.RunOptions) (*af.Value, error) {
			return eng.CallWith(cancellable, ir, o, js(t, eng, `"x"`))
		}},
		{"Program.CallAsync", func(o *af.RunOptions) (*af.Value, error) {
			f, err := prog.CallAsync(eng, o, js(t, eng, `"x"`))
			if err != nil {
				return nil, err
			}
			defer f.Close()
			return f.Wait()
		}},
	}
	for _, p := range paths {
		for _, limit := range []uint64{100, 999} {
			_, err := p.call(&af.RunOptions{MaxValueBytes: limit})
			ae := wantCode(t, err, af.CodeOutOfMemory)
			if !strings.Contains(ae.Message, "max_value_bytes") || !strings.Contains(ae.Message, "format") {
				t.Fatalf("%s, limit %d: message %q", p.name, limit, ae.Message)
			}
			if !errors.Is(err, af.ErrOutOfMemory) {
				t.Fatalf("%s: errors.Is(err, ErrOutOfMemory) is false: %v", p.name, err)
			}
		}
		// The default (nil options, 0), exactly the result's size, and more.
		for _, o := range []*af.RunOptions{nil, {}, {MaxValueBytes: 1000}, {MaxValueBytes: 1 << 20}} {
			out, err := p.call(o)
			if err != nil {
				t.Fatalf("%s, options %+v: %v", p.name, o, err)
			}
			wantJSON(t, out, want)
			out.Close()
		}
	}
}
