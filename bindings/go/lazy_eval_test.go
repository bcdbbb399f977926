package af_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	af "github.com/libaf/libaf/bindings/go"
)

// slowLazy is a lazy engine made with options whose model "slow" answers
// after 3 s and every other model at once (the echo provider: "model|text").
func slowLazy(t *testing.T, options string) *af.Engine {
	t.Helper()
	return engineWithSlowModel(t, options, 3000)
}

// askModel records an LM call of model on q: a promise on a lazy engine.
func askModel(t *testing.T, eng *af.Engine, model, q string) *af.Value {
	t.Helper()
	msgs := js(t, eng, fmt.Sprintf(`[{"role":"user","content":%q}]`, q))
	p := must(eng.LMCall(msgs, js(t, eng, fmt.Sprintf("%q", model))))(t)
	t.Cleanup(p.Close)
	return p
}

// quickly runs f and fails the test if it took 2 s or more (the slow model
// takes 3 s: an evaluation that was not stopped waits for it).
func quickly(t *testing.T, f func() error) error {
	t.Helper()
	t0 := time.Now()
	err := f()
	if took := time.Since(t0); took >= 2*time.Second {
		t.Fatalf("took %v: the evaluation was not stopped", took)
	}
	return err
}

// wantRead asserts that reading p fails with code.
func wantRead(t *testing.T, p *af.Value, code af.Code) {
	t.Helper()
	_, err := p.JSON()
	wantCode(t, err, code)
}

func TestEvalWithTimeout(t *testing.T) {
	eng := slowLazy(t, `{"lazy": true}`)
	t.Run("RunOptions.Timeout", func(t *testing.T) {
		p := askModel(t, eng, "slow", "q")
		err := quickly(t, func() error {
			return eng.EvalWith(context.Background(), &af.RunOptions{Timeout: 100 * time.Millisecond}, p)
		})
		wantCode(t, err, af.CodeTimeout)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("errors.Is(%v, context.DeadlineExceeded) = false", err)
		}
		if !p.Ready() {
			t.Fatal("the stopped promise is not ready")
		}
		wantRead(t, p, af.CodeTimeout)
		wantRead(t, p, af.CodeTimeout) // later too
	})
	t.Run("ctx deadline", func(t *testing.T) {
		p := askModel(t, eng, "slow", "q")
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		err := quickly(t, func() error { return eng.EvalWith(ctx, nil, p) })
		wantCode(t, err, af.CodeTimeout)
		wantRead(t, p, af.CodeTimeout)
	})
	t.Run("in time", func(t *testing.T) {
		p := askModel(t, eng, "m", "q")
		must(0, eng.EvalWith(context.Background(), &af.RunOptions{Timeout: 5 * time.Second}, p))(t)
		wantJSON(t, p, `"m|q"`)
	})
}

func TestEvalWithCancel(t *testing.T) {
	eng := slowLazy(t, `{"lazy": true}`)
	t.Run("CancelToken", func(t *testing.T) {
		p := askModel(t, eng, "slow", "q")
		token := must(af.NewCancelToken())(t)
		defer token.Close()
		go func() {
			time.Sleep(100 * time.Millisecond)
			token.Trigger()
		}()
		err := quickly(t, func() error {
			return eng.EvalWith(context.Background(), &af.RunOptions{Cancel: token}, p)
		})
		wantCode(t, err, af.CodeCancelled)
		wantRead(t, p, af.CodeCancelled)
	})
	t.Run("ctx", func(t *testing.T) {
		p := askModel(t, eng, "slow", "q")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			time.Sleep(100 * time.Millisecond)
			cancel()
		}()
		err := quickly(t, func() error { return eng.EvalWith(ctx, nil, p) })
		wantCode(t, err, af.CodeCancelled)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("errors.Is(%v, context.Canceled) = false", err)
		}
		wantRead(t, p, af.CodeCancelled)
	})
	t.Run("ctx already done", func(t *testing.T) {
		p := askModel(t, eng, "m", "q")
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		wantCode(t, eng.EvalWith(ctx, nil, p), af.CodeCancelled)
		if p.Ready() {
			t.Fatal("a ctx already done evaluated the promise")
		}
		wantJSON(t, p, `"m|q"`) // still pending: a read evaluates it
	})
	t.Run("bad options", func(t *testing.T) {
		p := askModel(t, eng, "m", "q")
		token := must(af.NewCancelToken())(t)
		defer token.Close()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		wantCode(t, eng.EvalWith(ctx, &af.RunOptions{Cancel: token}, p), af.CodeInvalidArgument)
		wantCode(t, eng.EvalWith(context.Background(), &af.RunOptions{Summary: true}, p), af.CodeInvalidArgument)
		wantCode(t, eng.EvalWith(nil, nil, p), af.CodeInvalidArgument)
		if p.Ready() {
			t.Fatal("rejected options evaluated the promise")
		}
	})
}

func TestEvalTimeoutOption(t *testing.T) {
	eng := slowLazy(t, `{"lazy": true, "eval_timeout_ms": 100}`)
	read := askModel(t, eng, "slow", "read")
	wantCode(t, quickly(t, func() error { _, err := read.JSON(); return err }), af.CodeTimeout)
	wantRead(t, read, af.CodeTimeout)

	evaluated := askModel(t, eng, "slow", "eval")
	wantCode(t, quickly(t, func() error { return eng.Eval(evaluated) }), af.CodeTimeout)
	wantRead(t, evaluated, af.CodeTimeout)

	// EvalWith's timeout replaces the engine's.
	slow := must(af.NewEchoProvider(`{"latency_ms": 300}`))(t)
	defer slow.Close()
	must(0, eng.Route("slowish", slow))(t)
	p := askModel(t, eng, "slowish", "q")
	must(0, eng.EvalWith(context.Background(), &af.RunOptions{Timeout: 5 * time.Second}, p))(t)
	wantJSON(t, p, `"slowish|q"`)
	if n := counter(t, eng, "lazy", "timed_out"); n != 2 {
		t.Fatalf("timed_out = %d, want 2", n)
	}
}

// droppedEngine records LM calls (promise("q") answers "m|q") on a lazy
// engine and returns what build makes of them: the only reference to the
// engine left.
func droppedEngine(t *testing.T, build func(eng *af.Engine, promise func(q string) *af.Value) *af.Value) *af.Value {
	eng := must(af.NewLazyEngine())(t)
	echo := must(af.NewEchoProvider(""))(t)
	must(0, eng.Route("*", echo))(t)
	echo.Close()
	return build(eng, func(q string) *af.Value {
		msgs := must(eng.FromJSON(fmt.Sprintf(`[{"role":"user","content":%q}]`, q)))(t)
		defer msgs.Close()
		model := must(eng.Str("m"))(t)
		defer model.Close()
		return must(eng.LMCall(msgs, model))(t)
	})
	// eng is unreachable from here on, except through the value.
}

// collect runs the garbage collector and gives finalizers time to run.
func collect() {
	for i := 0; i < 5; i++ {
		runtime.GC()
		runtime.Gosched()
		time.Sleep(10 * time.Millisecond)
	}
}

// A promise, and every value holding one, keeps its engine alive: each
// case's value is the last reference to its engine while it is collected.
func TestPromiseKeepsItsEngineAlive(t *testing.T) {
	other := must(af.NewLazyEngine())(t)
	defer other.Close()
	identity := must(af.Trace(other, func(eng *af.Engine, in []*af.Value) (*af.Value, error) {
		return in[0].Clone()
	}, js(t, other, `"x"`)))(t)
	defer identity.Close()
	cases := []struct {
		name  string
		build func(eng *af.Engine, promise func(q string) *af.Value) *af.Value
		// read returns the promise to read out of v (closing v first when
		// it is another handle, so that only the promise is left).
		read func(t *testing.T, v *af.Value) *af.Value
	}{
		{"promise", func(eng *af.Engine, promise func(string) *af.Value) *af.Value {
			return promise("x")
		}, func(t *testing.T, v *af.Value) *af.Value { return v }},
		{"list, then its item", func(eng *af.Engine, promise func(string) *af.Value) *af.Value {
			item := promise("x")
			defer item.Close()
			return must(eng.List(item))(t)
		}, func(t *testing.T, v *af.Value) *af.Value {
			defer v.Close()
			return must(v.Index(0))(t)
		}},
		{"dict, then its value", func(eng *af.Engine, promise func(string) *af.Value) *af.Value {
			item := promise("x")
			defer item.Close()
			return must(eng.Dict([]string{"k"}, []*af.Value{item}))(t)
		}, func(t *testing.T, v *af.Value) *af.Value {
			defer v.Close()
			return must(v.Key("k"))(t)
		}},
		{"clone", func(eng *af.Engine, promise func(string) *af.Value) *af.Value {
			p := promise("x")
			defer p.Close()
			return must(p.Clone())(t)
		}, func(t *testing.T, v *af.Value) *af.Value { return v }},
		{"operation on a promise", func(eng *af.Engine, promise func(string) *af.Value) *af.Value {
			p := promise("x")
			defer p.Close()
			return must(eng.Format("{}", p))(t)
		}, func(t *testing.T, v *af.Value) *af.Value { return v }},
		// A call on another lazy engine passes its input through: its
		// output is the first engine's promise.
		{"passed through a call on another engine", func(eng *af.Engine, promise func(string) *af.Value) *af.Value {
			p := promise("x")
			defer p.Close()
			return must(identity.Call(other, p))(t)
		}, func(t *testing.T, v *af.Value) *af.Value { return v }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for i := 0; i < 3; i++ {
				v := droppedEngine(t, c.build)
				collect()
				p := c.read(t, v)
				collect()
				if p.Ready() {
					t.Fatal("the promise was evaluated before it was read")
				}
				wantJSON(t, p, `"m|x"`)
				p.Close()
			}
			collect() // the engines are collectable now: the process survives their finalizers
		})
	}
}

// An explicit Close frees a lazy engine under live promises, as
// af_context_free does: a pending promise becomes unreadable, and a read
// evaluating on another goroutine is cancelled.
func TestEngineCloseUnderLivePromises(t *testing.T) {
	eng := slowLazy(t, `{"lazy": true}`)
	done := askModel(t, eng, "m", "done")
	wantJSON(t, done, `"m|done"`)
	pending := askModel(t, eng, "m", "pending")
	reading := askModel(t, eng, "slow", "reading")
	read := make(chan error, 1)
	go func() { _, err := reading.JSON(); read <- err }()
	time.Sleep(100 * time.Millisecond)
	eng.Close()
	select {
	case err := <-read:
		wantCode(t, err, af.CodeCancelled)
	case <-time.After(2 * time.Second):
		t.Fatal("Close did not cancel the read in progress")
	}
	wantRead(t, pending, af.CodeInvalidArgument)
	wantJSON(t, done, `"m|done"`)
	wantCode(t, eng.EvalWith(context.Background(), nil, pending), af.CodeInvalidArgument) // closed handle
}

// Every function af.h declares is called by the binding (as C.af_x in Go
// or from trampoline.c), or superseded by one that is.
func TestEveryCAPIFunctionIsBound(t *testing.T) {
	// The per-kind registrations: the binding registers every host function
	// (RegisterFunction, ...Blocking, ...Async, ...With) through
	// af_register_function_with, one code path. cgo still declares them
	// from af.h; the binding just no longer calls them.
	superseded := map[string]string{
		"af_register_function":          "af_register_function_with",
		"af_register_function_blocking": "af_register_function_with",
		"af_register_function_async":    "af_register_function_with",
	}
	header, err := os.ReadFile("../../capi/include/af/af.h")
	if err != nil {
		t.Skipf("af.h is not beside this package: %v", err)
	}
	// Go calls C.af_x(...); trampoline.c calls af_x(...).
	var goSrc, cSrc strings.Builder
	for _, f := range must(os.ReadDir("."))(t) {
		switch name := f.Name(); {
		case strings.HasSuffix(name, ".c"):
			cSrc.Write(must(os.ReadFile(name))(t))
		case strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go"):
			goSrc.Write(must(os.ReadFile(name))(t))
		}
	}
	declRe := regexp.MustCompile(`AF_API[^;(]*?\b(af_\w+)\s*\(`)
	decls := declRe.FindAllStringSubmatch(string(header), -1)
	if len(decls) < 100 {
		t.Fatalf("found only %d AF_API functions in af.h", len(decls))
	}
	for _, d := range decls {
		fn := d[1]
		if by, ok := superseded[fn]; ok {
			fn = by
		}
		if !strings.Contains(goSrc.String(), "C."+fn+"(") &&
			!regexp.MustCompile(`\b`+fn+`\(`).MatchString(cSrc.String()) {
			t.Errorf("%s (af.h) is not called by the binding", fn)
		}
	}
}
