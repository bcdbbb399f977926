package af_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	af "github.com/libaf/libaf/bindings/go"
)

// lmCall makes an eager LM call of model on one user message.
func lmCall(t *testing.T, eng *af.Engine, model string) (*af.Value, error) {
	t.Helper()
	return eng.LMCall(js(t, eng, `[{"role": "user", "content": "hi"}]`), js(t, eng, `"`+model+`"`))
}

// An eager LM call waiting in a cancel scope ends with CodeCancelled soon
// after its token fires; once the scope is closed, calls run as usual.
func TestCancelScopeStopsAnEagerLMCall(t *testing.T) {
	eng := engineWithSlowModel(t, "", 5000) // "slow" answers after 5 s
	token := must(af.NewCancelToken())(t)
	defer token.Close()
	timer := time.AfterFunc(100*time.Millisecond, token.Trigger)
	defer timer.Stop()
	var elapsed, again time.Duration
	err := eng.WithCancelScope(token, func() error {
		t0 := time.Now()
		out, err := lmCall(t, eng, "slow")
		elapsed = time.Since(t0)
		if out != nil {
			t.Errorf("a cancelled call returned %v", out)
		}
		if !errors.Is(err, af.ErrCancelled) {
			return err
		}
		// A fired token stays fired: the next call that waits ends at once.
		t0 = time.Now()
		_, err = lmCall(t, eng, "slow")
		again = time.Since(t0)
		return err
	})
	wantCode(t, err, af.CodeCancelled)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("errors.Is(err, context.Canceled) is false for %v", err)
	}
	t.Logf("cancelled after %v; the next call in the scope after %v", elapsed, again)
	if elapsed < 50*time.Millisecond || elapsed > 2*time.Second {
		t.Fatalf("the call ended after %v (token fired at 100 ms, the reply takes 5 s)", elapsed)
	}
	if again > time.Second {
		t.Fatalf("a call under a fired token took %v", again)
	}
	// After the scope: calls work (the token is still triggered).
	out := must(lmCall(t, eng, "m"))(t)
	defer out.Close()
	wantJSON(t, out, `"m|hi"`)
}

// The same through a context.Context: its cancellation fires the scope.
func TestCancelContextStopsAnEagerLMCall(t *testing.T) {
	eng := engineWithSlowModel(t, "", 5000)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	timer := time.AfterFunc(100*time.Millisecond, cancel)
	defer timer.Stop()
	t0 := time.Now()
	err := eng.WithCancelContext(ctx, func() error {
		_, err := lmCall(t, eng, "slow")
		return err
	})
	elapsed := time.Since(t0)
	wantCode(t, err, af.CodeCancelled)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("errors.Is(err, context.Canceled) is false for %v", err)
	}
	if elapsed > 2*time.Second {
		t.Fatalf("took %v", elapsed)
	}
	out := must(lmCall(t, eng, "m"))(t)
	defer out.Close()
	wantJSON(t, out, `"m|hi"`)

	// A deadline ends the calls too (with CodeCancelled).
	dctx, dcancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer dcancel()
	t0 = time.Now()
	err = eng.WithCancelContext(dctx, func() error {
		_, err := lmCall(t, eng, "slow")
		return err
	})
	wantCode(t, err, af.CodeCancelled)
	if d := time.Since(t0); d > 2*time.Second {
		t.Fatalf("the deadline stopped the call after %v", d)
	}

	// A ctx already done runs nothing.
	ran := false
	err = eng.WithCancelContext(ctx, func() error { ran = true; return nil })
	wantCode(t, err, af.CodeCancelled)
	if ran || !errors.Is(err, context.Canceled) {
		t.Fatalf("ran=%v err=%v", ran, err)
	}
	// A ctx that never ends opens no scope: fn is simply called.
	must(0, eng.WithCancelContext(context.Background(), func() error {
		out, err := lmCall(t, eng, "m")
		if err == nil {
			out.Close()
		}
		return err
	}))(t)
}

// A blocking host call and a Call of an IR (no ctx that can end, so no token
// of its own) in the scope end too; a CallWith given its own token keeps it.
func TestCancelScopeStopsHostCallsAndRuns(t *testing.T) {
	eng := engineWithSlowModel(t, "", 5000)
	release := make(chan struct{})
	defer close(release)
	must(0, eng.RegisterFunctionBlocking("sleepy", js(t, eng, `"str"`), func([]*af.Value) (*af.Value, error) {
		select { // 3 s, or until the test ends
		case <-time.After(3 * time.Second):
		case <-release:
		}
		return eng.Str("late")
	}))(t)
	ir := askIR(t, eng)
	token := must(af.NewCancelToken())(t)
	defer token.Close()
	own := must(af.NewCancelToken())(t)
	defer own.Close()
	timer := time.AfterFunc(100*time.Millisecond, token.Trigger)
	defer timer.Stop()
	must(0, eng.WithCancelScope(token, func() error {
		t0 := time.Now()
		_, err := eng.HostCall("sleepy", js(t, eng, `"x"`))
		wantCode(t, err, af.CodeCancelled)
		if d := time.Since(t0); d > 2*time.Second {
			t.Errorf("the host call ended after %v (the function sleeps 3 s)", d)
		}
		_, err = eng.Call(context.Background(), ir, js(t, eng, `"q"`), js(t, eng, `"slow"`))
		wantCode(t, err, af.CodeCancelled)
		// A run with a token of its own is not the scope's.
		out, err := eng.CallWith(context.Background(), ir, &af.RunOptions{Cancel: own}, js(t, eng, `"q"`), js(t, eng, `"m"`))
		if err != nil {
			return err
		}
		defer out.Close()
		wantJSON(t, out, `"m|Q:q"`)
		return nil
	}))(t)
}

// Scopes nest without shielding (the token of every open scope stops what
// runs inside it; a fired token ends nothing outside its own scope), belong
// to the goroutine that opened them (a goroutine started inside runs on
// another thread, outside the scope), and close however fn returns, panics
// included.
func TestCancelScopesNestAndStayOnTheirGoroutine(t *testing.T) {
	eng := engineWithSlowModel(t, "", 5000)
	call := func(model string) func() error {
		return func() error {
			out, err := lmCall(t, eng, model)
			if err == nil {
				out.Close()
			}
			return err
		}
	}
	newToken := func() *af.CancelToken {
		token := must(af.NewCancelToken())(t)
		t.Cleanup(token.Close)
		return token
	}
	// "slow1" answers after 150 ms: a call that really waits, that a fired
	// token stops at its first check.
	slow := must(af.NewEchoProvider(`{"latency_ms": 150}`))(t)
	defer slow.Close()
	must(0, eng.Route("slow1", slow))(t)

	outer, inner := newToken(), newToken()
	err := eng.WithCancelScope(outer, func() error {
		err := eng.WithCancelScope(inner, func() error {
			// Neither token fired: calls run.
			if err := call("slow1")(); err != nil {
				return err
			}
			// The outer token stops a call inside the inner scope: an
			// inner scope never shields from an outer one.
			outer.Trigger()
			wantCode(t, call("slow1")(), af.CodeCancelled)
			// Nor does a WithCancelContext of a ctx that never ends.
			wantCode(t, eng.WithCancelContext(context.Background(), call("slow1")), af.CodeCancelled)
			// Another goroutine is not in this goroutine's scopes.
			done := make(chan error)
			go func() { done <- call("slow1")() }()
			if err := <-done; err != nil {
				t.Errorf("a call on another goroutine: %v", err)
			}
			return nil
		})
		if err != nil {
			return err
		}
		// Back in the outer scope: its token has fired.
		return call("slow1")()
	})
	wantCode(t, err, af.CodeCancelled)
	// Outside both scopes, calls run again.
	must(0, call("slow1")())(t)

	// A fired token ends nothing outside its own scope: a fired inner token
	// leaves the (unfired) outer scope's calls running.
	outer = newToken()
	inner.Trigger()
	must(0, eng.WithCancelScope(outer, func() error {
		wantCode(t, eng.WithCancelScope(inner, call("slow1")), af.CodeCancelled)
		return call("slow1")()
	}))(t)
	must(0, call("slow1")())(t)

	fired := newToken()
	fired.Trigger()
	// A panic in fn closes the scope and goes on.
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Fatalf("recovered %v", r)
			}
		}()
		_ = eng.WithCancelScope(fired, func() error { panic("boom") })
	}()
	must(0, call("slow1")())(t)
}

func TestCancelScopeRefusesBadArguments(t *testing.T) {
	eng := newEngine(t)
	token := must(af.NewCancelToken())(t)
	var ran atomic.Int32
	fn := func() error { ran.Add(1); return nil }
	wantCode(t, eng.WithCancelScope(nil, fn), af.CodeInvalidArgument)
	wantCode(t, eng.WithCancelScope(token, nil), af.CodeInvalidArgument)
	wantCode(t, eng.WithCancelContext(nil, fn), af.CodeInvalidArgument)
	wantCode(t, eng.WithCancelContext(context.Background(), nil), af.CodeInvalidArgument)
	// A token closed inside the scope: the scope keeps its own reference.
	must(0, eng.WithCancelScope(token, func() error {
		token.Close()
		return fn()
	}))(t)
	err := eng.WithCancelScope(token, fn) // closed now
	if ae := wantCode(t, err, af.CodeInvalidArgument); !strings.Contains(ae.Message, "closed") {
		t.Fatalf("got %v", err)
	}
	closed := must(af.NewEngine())(t)
	closed.Close()
	wantCode(t, closed.WithCancelScope(must(af.NewCancelToken())(t), fn), af.CodeInvalidArgument)
	if n := ran.Load(); n != 1 {
		t.Fatalf("fn ran %d times, want 1", n)
	}
}
