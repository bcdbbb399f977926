package af_test

import (
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"libaf.dev/af"
)

// closeConcurrently calls close from several goroutines released at once.
func closeConcurrently(close func()) {
	var start, wg sync.WaitGroup
	start.Add(1)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start.Wait()
			close()
		}()
	}
	start.Done()
	wg.Wait()
}

// Close is idempotent and frees once even when goroutines race to it; a
// double free aborts the process (malloc: "unaligned tcache chunk") rather
// than failing the test, so the test is that the process survives.
func TestConcurrentCloseOfEveryHandle(t *testing.T) {
	ctx := newCtx(t)
	echo := must(af.NewEchoProvider(""))(t)
	defer echo.Close()
	must(0, ctx.Route("*", echo))(t)
	ir := askIR(t, ctx)
	prog := must(af.Compile(ctx, ir))(t)
	defer prog.Close()
	makers := map[string]func() func(){
		"Value":   func() func() { return must(ctx.Str("x"))(t).Close },
		"Context": func() func() { return must(af.NewContext())(t).Close },
		"IR":      func() func() { return must(ir.Clone())(t).Close },
		"Program": func() func() { return must(prog.Clone())(t).Close },
		"Provider": func() func() {
			return must(af.NewEchoProvider(""))(t).Close
		},
		"CancelToken": func() func() { return must(af.NewCancelToken())(t).Close },
		"Walk": func() func() {
			return must(ir.Walk(ctx, js(t, ctx, `"q"`), js(t, ctx, `"m"`)))(t).Close
		},
		"Future": func() func() {
			f := must(prog.CallAsync(ctx, nil, js(t, ctx, `"q"`), js(t, ctx, `"m"`)))(t)
			return f.Close
		},
	}
	for name, mk := range makers {
		t.Run(name, func(t *testing.T) {
			for i := 0; i < 500; i++ {
				closeConcurrently(mk())
			}
		})
	}
	// A closed handle reports itself closed instead of touching freed memory.
	v := must(ctx.Str("y"))(t)
	closeConcurrently(v.Close)
	_, err := v.JSON()
	wantCode(t, err, af.CodeInvalidArgument)
}

// askAsyncDroppingContext starts askIR on a context that only the run
// references afterwards, then collects garbage while the run is in flight.
func askAsyncDroppingContext(t *testing.T, latencyMs string) *af.Future {
	ctx, err := af.NewContext()
	if err != nil {
		t.Fatal(err)
	}
	slow := must(af.NewEchoProvider(`{"latency_ms": ` + latencyMs + `}`))(t)
	must(0, ctx.Route("*", slow))(t)
	slow.Close()
	p := must(af.Compile(ctx, askIR(t, ctx)))(t)
	q := must(ctx.Str("q"))(t)
	m := must(ctx.Str("m"))(t)
	return must(p.CallAsync(ctx, nil, q, m))(t)
	// ctx, p, q and m are unreachable from here on, except through the run.
}

func TestAsyncRunKeepsItsContextAlive(t *testing.T) {
	for i := 0; i < 5; i++ {
		f := askAsyncDroppingContext(t, "100")
		for j := 0; j < 5; j++ {
			runtime.GC()
			time.Sleep(10 * time.Millisecond)
		}
		out, err := f.Wait()
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		wantJSON(t, out, `"m|Q:q"`)
		f.Close()
	}
}

// A run whose Future is dropped too still completes (nothing to observe but
// that the process survives the collections and the completion callback).
func TestAsyncRunWithDroppedFutureCompletes(t *testing.T) {
	done := make(chan struct{})
	func() {
		f := askAsyncDroppingContext(t, "50")
		go func() { <-f.Done(); close(done) }()
	}()
	for j := 0; j < 5; j++ {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the run did not finish")
	}
}

// callWithin fails the test if call does not return within d (a hang is
// what runtime.Goexit in a callback used to cause).
func callWithin[T any](t *testing.T, d time.Duration, call func() (T, error)) (T, error) {
	t.Helper()
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := call()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-time.After(d):
		t.Fatal("call did not return")
	}
	panic("unreachable")
}

func TestGoexitInHostFunctionIsAnError(t *testing.T) {
	ctx := newCtx(t)
	must(0, ctx.RegisterFunction("quits", js(t, ctx, `"str"`), func([]*af.Value) (*af.Value, error) {
		runtime.Goexit() // what t.Fatal does
		return nil, nil
	}))(t)
	must(0, ctx.RegisterFunction("ok", js(t, ctx, `"str"`), func(args []*af.Value) (*af.Value, error) {
		return args[0].Clone()
	}))(t)
	hostIR := func(name string) *af.IR {
		ir := must(af.Trace(ctx, func(ctx *af.Context, in []*af.Value) (*af.Value, error) {
			return ctx.HostCall(name, in[0])
		}, js(t, ctx, `"x"`)))(t)
		t.Cleanup(ir.Close)
		return ir
	}
	quits := must(af.Compile(ctx, hostIR("quits")))(t)
	defer quits.Close()
	ok := must(af.Compile(ctx, hostIR("ok")))(t)
	defer ok.Close()
	for i := 0; i < 3; i++ {
		_, err := callWithin(t, 10*time.Second, func() (*af.Value, error) { return quits.Call(ctx, js(t, ctx, `"a"`)) })
		if e := wantCode(t, err, af.CodeCallback); !strings.Contains(e.Error(), "runtime.Goexit") {
			t.Fatalf("%v", err)
		}
		out := must(callWithin(t, 10*time.Second, func() (*af.Value, error) { return ok.Call(ctx, js(t, ctx, `"b"`)) }))(t)
		wantJSON(t, out, `"b"`)
	}
}

func TestGoexitInHostProviderFailsTheRequest(t *testing.T) {
	ctx := newCtx(t)
	host := must(af.NewHostProvider(func(req *af.LMRequest) { runtime.Goexit() }))(t)
	defer host.Close()
	must(0, ctx.Route("*", host))(t)
	p := must(af.Compile(ctx, askIR(t, ctx)))(t)
	defer p.Close()
	_, err := callWithin(t, 10*time.Second, func() (*af.Value, error) { return p.Call(ctx, js(t, ctx, `"a"`), js(t, ctx, `"m"`)) })
	if e := wantCode(t, err, af.CodeProvider); !strings.Contains(e.Error(), "runtime.Goexit") {
		t.Fatalf("%v", err)
	}
}

// runtime.Goexit in a trace function (t.Fatal on the tracing goroutine) ends
// that goroutine, as Goexit does; the trace state dies with its locked
// thread, so later traces and calls on the same context still work.
func TestGoexitInTraceFunctionLeavesTheContextUsable(t *testing.T) {
	ctx := newCtx(t)
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		_, _ = af.Trace(ctx, func(*af.Context, []*af.Value) (*af.Value, error) {
			runtime.Goexit()
			return nil, nil
		}, js(t, ctx, `"x"`))
		t.Error("Trace returned after its function called runtime.Goexit")
	}()
	<-exited
	out := must(callWithin(t, 10*time.Second, func() (*af.Value, error) {
		ir, err := af.Trace(ctx, func(ctx *af.Context, in []*af.Value) (*af.Value, error) {
			return ctx.Concat(in[0], in[0])
		}, js(t, ctx, `"x"`))
		if err != nil {
			return nil, err
		}
		defer ir.Close()
		return ir.Call(ctx, js(t, ctx, `"ab"`))
	}))(t)
	wantJSON(t, out, `"abab"`)
}
