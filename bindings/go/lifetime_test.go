package af_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	af "github.com/libaf/libaf/bindings/go"
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

// errSawClosed is what a use whose method has no error result returns when
// that result says the handle was closed (KindInvalid, 0, false).
var errSawClosed = errors.New("the method reported a closed handle")

// wantClosedOrNil accepts nil, errSawClosed and the binding's closed-handle
// error (CodeInvalidArgument, "<handle> is closed ..."); anything else is
// returned as a failure.
func wantClosedOrNil(err error) error {
	if err == nil || err == errSawClosed {
		return nil
	}
	var ae *af.Error
	if errors.As(err, &ae) && ae.Code() == af.CodeInvalidArgument && strings.Contains(ae.Message, " is closed") {
		return nil
	}
	return fmt.Errorf("want a result or the closed-handle error, got %v", err)
}

// result is err, or a failure naming what when ok is false.
func result(err error, ok bool, what string, got any) error {
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("unexpected %s: %v", what, got)
	}
	return nil
}

// orClosed turns the "closed" result of a method without an error result
// into errSawClosed, and any other unexpected result into a failure.
func orClosed(closed bool, what string, got any) error {
	if closed {
		return errSawClosed
	}
	return fmt.Errorf("unexpected %s: %v", what, got)
}

// raceUsesWithClose makes rounds objects with mk; on each, readers
// goroutines call use (up to maxUses times, stopping once it reports the
// handle closed) while another goroutine calls close after a varying number
// of yields, so that the Close lands before, during and after the uses.
// Every use must complete normally or report the handle closed; a use that
// touched freed memory would crash the process (or corrupt the heap)
// instead. After the round, a use must report the handle closed.
func raceUsesWithClose(t *testing.T, rounds, readers, maxUses int, mk func() (use func() error, close func())) {
	t.Helper()
	var report sync.Once
	mixed := 0 // rounds where some uses completed and some saw the handle closed
	for r := 0; r < rounds && !t.Failed(); r++ {
		use, closeFn := mk()
		var completed, closed atomic.Int32
		var start, wg sync.WaitGroup
		start.Add(1)
		for g := 0; g < readers; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				start.Wait()
				for i := 0; i < maxUses; i++ {
					err := use()
					if ferr := wantClosedOrNil(err); ferr != nil {
						report.Do(func() { t.Errorf("round %d: %v", r, ferr) })
						return
					}
					if err != nil {
						closed.Add(1)
						return // closed: every later use is closed too
					}
					completed.Add(1)
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			start.Wait()
			for i := 0; i < r%16; i++ {
				runtime.Gosched()
			}
			closeFn()
		}()
		start.Done()
		wg.Wait()
		if completed.Load() > 0 && closed.Load() > 0 {
			mixed++
		}
		if err := use(); err == nil {
			t.Fatalf("round %d: a use after Close succeeded", r)
		} else if ferr := wantClosedOrNil(err); ferr != nil {
			t.Fatalf("round %d: %v", r, ferr)
		}
	}
	t.Logf("%d rounds, %d with the Close among the uses", rounds, mixed)
}

// TestCloseRacingUse: for every handle type, methods racing Close on the
// same object complete normally or return the closed-handle error; none
// touches freed memory (which would crash the process: cgo has no
// recoverable error for it).
func TestCloseRacingUse(t *testing.T) {
	rounds := 300
	if testing.Short() {
		rounds = 50
	}
	const readers = 4
	eng := newCtx(t)
	echo := must(af.NewEchoProvider(""))(t)
	defer echo.Close()
	must(0, eng.Route("*", echo))(t)
	ir := askIR(t, eng)
	eqns := ir.EqnCount()
	irBytes := must(ir.Bytes())(t)
	prog := must(af.Compile(eng, ir))(t)
	defer prog.Close()
	q, m := js(t, eng, `"q"`), js(t, eng, `"m"`)
	const answer = `"m|Q:q"`
	// valueIs checks (and closes) a value a use made.
	valueIs := func(v *af.Value, err error, want string) error {
		if err != nil {
			return err
		}
		defer v.Close()
		got, err := v.JSON()
		return result(err, got == want, "JSON", got)
	}

	t.Run("Value", func(t *testing.T) {
		raceUsesWithClose(t, rounds, readers, 200, func() (func() error, func()) {
			v := must(eng.FromJSON(`["a",1]`))(t)
			return func() error {
				if s, err := v.JSON(); err != nil || s != `["a",1]` {
					return result(err, false, "JSON", s)
				}
				if k := v.Kind(); k != af.KindList {
					return orClosed(k == af.KindInvalid, "Kind", k)
				}
				if n, err := v.Len(); err != nil || n != 2 {
					return result(err, false, "Len", n)
				}
				if !v.Ready() {
					return errSawClosed // false only for a closed value here
				}
				if s := v.String(); s != `["a",1]` {
					return orClosed(s == "<af.Value closed>", "String", s)
				}
				item, err := v.Index(0)
				return valueIs(item, err, `"a"`)
			}, v.Close
		})
	})
	t.Run("Context", func(t *testing.T) {
		raceUsesWithClose(t, rounds, readers, 100, func() (func() error, func()) {
			e := must(af.NewEngine())(t)
			return func() error {
				if s, err := e.Stats(); err != nil || !strings.Contains(s, "plan_cache") {
					return result(err, false, "Stats", s)
				}
				v, err := e.Str("x")
				return valueIs(v, err, `"x"`)
			}, e.Close
		})
	})
	t.Run("IR", func(t *testing.T) {
		raceUsesWithClose(t, rounds, readers, 100, func() (func() error, func()) {
			// A new IR, not a Clone: Close then frees the C object itself.
			c := must(af.IRFromBytes(eng, irBytes))(t)
			return func() error {
				if s, err := c.Text(); err != nil || s == "" {
					return result(err, false, "Text", s)
				}
				if s, err := c.JSON(); err != nil || !strings.Contains(s, "eqns") {
					return result(err, false, "JSON", s)
				}
				if n := c.EqnCount(); n != eqns {
					return orClosed(n == 0, "EqnCount", n)
				}
				if !c.Equal(ir) {
					return errSawClosed // false only for a closed IR here
				}
				return nil
			}, c.Close
		})
	})
	t.Run("Program", func(t *testing.T) {
		raceUsesWithClose(t, rounds, readers, 50, func() (func() error, func()) {
			fresh := must(af.IRFromBytes(eng, irBytes))(t)
			p := must(af.Compile(eng, fresh))(t)
			fresh.Close()
			return func() error {
				c, err := p.Clone()
				if err != nil {
					return err
				}
				c.Close()
				v, err := p.Call(eng, q, m)
				return valueIs(v, err, answer)
			}, p.Close
		})
	})
	t.Run("Provider", func(t *testing.T) {
		raceUsesWithClose(t, rounds, readers, 200, func() (func() error, func()) {
			p := must(af.NewEchoProvider(""))(t)
			return func() error {
				s, err := p.Stats()
				return result(err, strings.Contains(s, "in_flight"), "Stats", s)
			}, p.Close
		})
	})
	t.Run("CancelToken", func(t *testing.T) {
		// Triggered is quick: more uses, yielding, so that the Close lands
		// among them.
		raceUsesWithClose(t, rounds, readers, 1000, func() (func() error, func()) {
			tok := must(af.NewCancelToken())(t)
			// Triggered reports false for an open and a closed token alike:
			// the flag ends the uses once Close has returned.
			var closed atomic.Bool
			return func() error {
				if tok.Triggered() {
					return fmt.Errorf("triggered without Trigger")
				}
				runtime.Gosched()
				return orClosedIf(closed.Load())
			}, func() { tok.Close(); closed.Store(true) }
		})
	})
	t.Run("Walk", func(t *testing.T) {
		raceUsesWithClose(t, rounds, readers, 100, func() (func() error, func()) {
			w := must(ir.Walk(eng, q, m))(t)
			first, in, err := w.Next()
			must(0, err)(t)
			in.Close()
			return func() error {
				// Next is read-only until Eval or Send: the same equation.
				eqn, in, err := w.Next()
				if err != nil {
					return err
				}
				in.Close()
				return result(nil, eqn == first, "equation", eqn)
			}, w.Close
		})
	})
	t.Run("Future", func(t *testing.T) {
		raceUsesWithClose(t, rounds, readers, 50, func() (func() error, func()) {
			f := must(prog.CallAsync(eng, &af.RunOptions{Summary: true}, q, m))(t)
			return func() error {
				f.Ready()
				if s, err := f.Summary(); err != nil || !strings.Contains(s, "wall_ms") {
					return result(err, false, "Summary", s)
				}
				v, err := f.Wait()
				return valueIs(v, err, answer)
			}, f.Close
		})
	})
}

// orClosedIf is errSawClosed when closed, else nil.
func orClosedIf(closed bool) error {
	if closed {
		return errSawClosed
	}
	return nil
}

// wantClosed asserts that err is the closed-handle error.
func wantClosed(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		t.Fatal("want the closed-handle error, got nil")
	}
	if ferr := wantClosedOrNil(err); ferr != nil {
		t.Fatal(ferr)
	}
}

// A Close called from inside a callback that runs during a use of the same
// handle returns at once (it does not wait for the use it runs in, which
// would deadlock); the handle is freed when that use ends.
func TestCloseInsideCallbackDuringUse(t *testing.T) {
	t.Run("EngineFromTraceFunction", func(t *testing.T) {
		eng := must(af.NewEngine())(t)
		x := must(eng.Str("x"))(t)
		defer x.Close()
		ir, err := callWithin(t, 10*time.Second, func() (*af.IR, error) {
			return af.Trace(eng, func(e *af.Engine, in []*af.Value) (*af.Value, error) {
				e.Close() // Trace holds e: marked closed, freed when Trace returns
				if _, err := e.Str("y"); err == nil {
					return nil, errors.New("an operation on the closed engine succeeded")
				} else if ferr := wantClosedOrNil(err); ferr != nil {
					return nil, ferr
				}
				return in[0], nil
			}, x)
		})
		if err != nil {
			t.Fatalf("Trace: %v", err)
		}
		ir.Close()
		_, err = eng.Str("z")
		wantClosed(t, err)
	})
	t.Run("ValueFromHostFunction", func(t *testing.T) {
		eng := newCtx(t)
		v := must(eng.Str("arg"))(t)
		must(0, eng.RegisterFunction("closer", js(t, eng, `"str"`), func(args []*af.Value) (*af.Value, error) {
			v.Close() // HostCall holds v: marked closed, freed when it returns
			return args[0].Clone()
		}))(t)
		out := must(callWithin(t, 10*time.Second, func() (*af.Value, error) { return eng.HostCall("closer", v) }))(t)
		defer out.Close()
		wantJSON(t, out, `"arg"`)
		_, err := v.JSON()
		wantClosed(t, err)
	})
}

// An engine closed while a host function of one of its async runs is in a
// call on it is freed when that call returns, by a goroutine of its own:
// af_context_free joins the engine's threads, the one waiting for that host
// function among them, so freeing it from the host function would hang.
func TestEngineClosedDuringHostFunctionCall(t *testing.T) {
	eng := must(af.NewEngine())(t)
	entered, proceed := make(chan struct{}), make(chan struct{})
	var once sync.Once
	kinds := must(eng.FromJSON(`"str"`))(t)
	defer kinds.Close()
	must(0, eng.RegisterFunction("inner", kinds, func(args []*af.Value) (*af.Value, error) {
		once.Do(func() { close(entered) })
		<-proceed
		return args[0].Clone()
	}))(t)
	outerReturned := make(chan struct{})
	must(0, eng.RegisterFunction("outer", kinds, func(args []*af.Value) (*af.Value, error) {
		v, err := eng.HostCall("inner", args[0]) // holds eng while inner runs
		close(outerReturned)
		return v, err
	}))(t)
	x := must(eng.Str("x"))(t)
	defer x.Close()
	ir := must(af.Trace(eng, func(e *af.Engine, in []*af.Value) (*af.Value, error) {
		return e.HostCall("outer", in[0])
	}, x))(t)
	defer ir.Close()
	prog := must(af.Compile(eng, ir))(t)
	defer prog.Close()
	f := must(prog.CallAsync(eng, nil, x))(t)
	defer f.Close()
	<-entered
	callWithin(t, 10*time.Second, func() (struct{}, error) { eng.Close(); return struct{}{}, nil })
	_, err := eng.Str("y")
	wantClosed(t, err)
	close(proceed)
	// HostCall's release frees the engine: had it called af_context_free
	// itself, that would wait for this very host function to return, and
	// HostCall would never return.
	select {
	case <-outerReturned:
	case <-time.After(10 * time.Second):
		t.Fatal("the host call holding the closed engine did not return")
	}
	// The run ends (with its value, or cancelled by the engine's free).
	if out, err := callWithin(t, 10*time.Second, f.Wait); err == nil {
		out.Close()
	}
}

// TestBorrowedInputRacingTraceReturn: a trace function's inputs are
// borrowed for the call, but a goroutine may (wrongly) still use one while
// the trace function returns. That use completes on a live value or gets
// the closed-handle error; it never reads the input libaf freed.
func TestBorrowedInputRacingTraceReturn(t *testing.T) {
	rounds := 100
	if testing.Short() {
		rounds = 30
	}
	const readers = 4
	eng := newCtx(t)
	x := js(t, eng, `"x"`)
	var mixed int
	for r := 0; r < rounds; r++ {
		var wg sync.WaitGroup
		var completed, closed atomic.Int64
		errs := make(chan error, readers)
		ir, err := af.Trace(eng, func(e *af.Engine, in []*af.Value) (*af.Value, error) {
			v := in[0]
			// What the input reads as while it is lent, on this goroutine.
			wantJSON, jerr := v.JSON()
			wantStr, wantKind := v.String(), v.Kind()
			started := make(chan struct{}, readers)
			for g := 0; g < readers; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					started <- struct{}{}
					for i := 0; ; i++ {
						s, err := v.JSON()
						if err != nil && (jerr == nil || err.Error() != jerr.Error()) {
							if ferr := wantClosedOrNil(err); ferr != nil {
								errs <- fmt.Errorf("JSON: %v", ferr)
							}
							closed.Add(1)
							return
						}
						if err == nil && s != wantJSON {
							errs <- fmt.Errorf("JSON %q, want %q", s, wantJSON)
							return
						}
						if k := v.Kind(); k != wantKind && k != af.KindInvalid {
							errs <- fmt.Errorf("Kind %v, want %v", k, wantKind)
							return
						}
						if s := v.String(); s != wantStr && s != "<af.Value closed>" {
							errs <- fmt.Errorf("String %q, want %q", s, wantStr)
							return
						}
						completed.Add(1)
						if i > 100000 {
							errs <- errors.New("the input never read as closed after the trace function returned")
							return
						}
					}
				}()
			}
			for g := 0; g < readers; g++ {
				<-started
			}
			return e.Format("{}!", v) // the readers still read v meanwhile
		}, x)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("round %d: %v", r, err)
		}
		if err != nil {
			t.Fatalf("round %d: Trace: %v", r, err)
		}
		ir.Close()
		if completed.Load() > 0 && closed.Load() == readers {
			mixed++
		}
	}
	t.Logf("%d rounds, %d with reads on both sides of the return", rounds, mixed)
}
