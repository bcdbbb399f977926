package af_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	af "github.com/libaf/libaf/bindings/go"
)

// Host functions registered pure or effectful (FunctionOptions.Pure): what
// compile (DCE, CSE), memoize and a lazy engine may do with their calls, how
// EqnJSON shows it, and the registration's errors. "send" stands for a tool
// with an effect, "lookup" for a pure one; both return "tag:arg" and count
// their calls.

// tagged returns a host function answering "tag:arg" and counting its calls.
func tagged(eng *af.Engine, tag string, calls *atomic.Int32) af.HostFunc {
	return func(args []*af.Value) (*af.Value, error) {
		calls.Add(1)
		s, err := args[0].AsString()
		if err != nil {
			return nil, err
		}
		return eng.Str(tag + ":" + s)
	}
}

// taggedAsync is tagged as an AsyncHostFunc.
func taggedAsync(eng *af.Engine, tag string, calls *atomic.Int32) af.AsyncHostFunc {
	fn := tagged(eng, tag, calls)
	return func(_ context.Context, args []*af.Value) (*af.Value, error) { return fn(args) }
}

// registration registers "send" (effectful) and "lookup" (pure) one way.
type registration struct {
	name     string
	register func(t *testing.T, eng *af.Engine, sent, looked *atomic.Int32)
}

var pure = &af.FunctionOptions{Pure: true}

// registrations: every way the binding registers a host function, each
// registering send with the default (effectful) and lookup pure.
var registrations = []registration{
	{"sync", func(t *testing.T, eng *af.Engine, sent, looked *atomic.Int32) {
		must(0, eng.RegisterFunction("send", js(t, eng, `"str"`), tagged(eng, "sent", sent)))(t)
		must(0, eng.RegisterFunctionWith("lookup", js(t, eng, `"str"`), pure, tagged(eng, "found", looked)))(t)
	}},
	{"with nil options", func(t *testing.T, eng *af.Engine, sent, looked *atomic.Int32) {
		must(0, eng.RegisterFunctionWith("send", js(t, eng, `"str"`), nil, tagged(eng, "sent", sent)))(t)
		must(0, eng.RegisterFunctionWith("lookup", js(t, eng, `"str"`), &af.FunctionOptions{Pure: true, Blocking: false}, tagged(eng, "found", looked)))(t)
	}},
	{"blocking", func(t *testing.T, eng *af.Engine, sent, looked *atomic.Int32) {
		must(0, eng.RegisterFunctionBlocking("send", js(t, eng, `"str"`), tagged(eng, "sent", sent)))(t)
		must(0, eng.RegisterFunctionWith("lookup", js(t, eng, `"str"`), &af.FunctionOptions{Pure: true, Blocking: true}, tagged(eng, "found", looked)))(t)
	}},
	{"async", func(t *testing.T, eng *af.Engine, sent, looked *atomic.Int32) {
		must(0, eng.RegisterFunctionAsync("send", js(t, eng, `"str"`), taggedAsync(eng, "sent", sent)))(t)
		must(0, eng.RegisterFunctionAsyncWith("lookup", js(t, eng, `"str"`), pure, taggedAsync(eng, "found", looked)))(t)
	}},
}

// registerBoth registers send (effectful) and lookup (pure) as plain
// functions.
func registerBoth(t *testing.T, eng *af.Engine) (sent, looked *atomic.Int32) {
	t.Helper()
	sent, looked = new(atomic.Int32), new(atomic.Int32)
	registrations[0].register(t, eng, sent, looked)
	return sent, looked
}

// traceUnused traces f(x) = x, calling send(x) and lookup(x) and reading
// neither.
func traceUnused(t *testing.T, eng *af.Engine) *af.IR {
	t.Helper()
	ir := must(af.Trace(eng, func(e *af.Engine, in []*af.Value) (*af.Value, error) {
		for _, name := range []string{"send", "lookup"} {
			r, err := e.HostCall(name, in[0])
			if err != nil {
				return nil, err
			}
			r.Close()
		}
		return in[0].Clone()
	}, js(t, eng, `"x"`)))(t)
	t.Cleanup(ir.Close)
	return ir
}

// traceTwice traces f(x) = concat(name(x), name(x)): two equal calls.
func traceTwice(t *testing.T, eng *af.Engine, name string) *af.IR {
	t.Helper()
	ir := must(af.Trace(eng, func(e *af.Engine, in []*af.Value) (*af.Value, error) {
		a, err := e.HostCall(name, in[0])
		if err != nil {
			return nil, err
		}
		defer a.Close()
		b, err := e.HostCall(name, in[0])
		if err != nil {
			return nil, err
		}
		defer b.Close()
		return e.Concat(a, b)
	}, js(t, eng, `"x"`)))(t)
	t.Cleanup(ir.Close)
	return ir
}

// hostEqns returns the EqnJSON of ir's host_call equations, in order.
func hostEqns(t *testing.T, ir *af.IR) []string {
	t.Helper()
	var out []string
	for i := 0; i < ir.EqnCount(); i++ {
		if ir.EqnPrim(i) == "host_call" {
			out = append(out, must(ir.EqnJSON(i))(t))
		}
	}
	return out
}

func wantCalls(t *testing.T, what string, calls *atomic.Int32, want int32) {
	t.Helper()
	if got := calls.Load(); got != want {
		t.Fatalf("%s: %d calls, want %d", what, got, want)
	}
}

// An unused call of an effectful function runs (compile's DCE keeps it);
// an unused call of a pure one is dropped. For every registration method.
func TestEffectsUnusedEffectfulCallRunsUnusedPureCallDoesNot(t *testing.T) {
	for _, r := range registrations {
		t.Run(r.name, func(t *testing.T) {
			eng := newCtx(t)
			var sent, looked atomic.Int32
			r.register(t, eng, &sent, &looked)
			ir := traceUnused(t, eng)
			wantJSON(t, must(ir.Call(eng, js(t, eng, `"a"`)))(t), `"a"`)
			wantCalls(t, "send", &sent, 1)
			wantCalls(t, "lookup", &looked, 0)
			wantJSON(t, must(ir.Call(eng, js(t, eng, `"b"`)))(t), `"b"`)
			wantCalls(t, "send", &sent, 2)
			wantCalls(t, "lookup", &looked, 0)

			// DCE itself: the effectful call stays, the pure one goes.
			dce := must(ir.DCE(eng, nil))(t)
			defer dce.Close()
			eqns := hostEqns(t, dce)
			if len(eqns) != 1 || !strings.Contains(eqns[0], `"name":"send"`) {
				t.Fatalf("host calls after DCE: %v", eqns)
			}
		})
	}
}

// Two equal calls of a pure function in one traced program run once
// (compile merges them); of an effectful one, twice. CSE merges only the
// pure ones, even with mergeNondeterministic.
func TestEffectsEqualCallsMergeOnlyWhenPure(t *testing.T) {
	for _, r := range registrations {
		t.Run(r.name, func(t *testing.T) {
			eng := newCtx(t)
			var sent, looked atomic.Int32
			r.register(t, eng, &sent, &looked)
			send2, lookup2 := traceTwice(t, eng, "send"), traceTwice(t, eng, "lookup")
			wantJSON(t, must(send2.Call(eng, js(t, eng, `"a"`)))(t), `"sent:asent:a"`)
			wantCalls(t, "send", &sent, 2)
			wantJSON(t, must(lookup2.Call(eng, js(t, eng, `"a"`)))(t), `"found:afound:a"`)
			wantCalls(t, "lookup", &looked, 1)

			merged := must(send2.CSEWith(eng, true))(t)
			defer merged.Close()
			if n := len(hostEqns(t, merged)); n != 2 {
				t.Fatalf("CSEWith(true) left %d send calls, want 2", n)
			}
			merged = must(lookup2.CSE(eng))(t)
			defer merged.Close()
			if n := len(hostEqns(t, merged)); n != 1 {
				t.Fatalf("CSE left %d lookup calls, want 1", n)
			}
		})
	}
}

// Memoize answers a call of a pure function from an earlier run, never one
// of an effectful function.
func TestEffectsMemoizeAnswersOnlyPureCalls(t *testing.T) {
	eng := newCtx(t)
	sent, looked := registerBoth(t, eng)
	s, l := traceTwice(t, eng, "send"), traceTwice(t, eng, "lookup")

	// Without memoize, each run of l calls lookup (once: its two calls merge).
	wantJSON(t, must(l.Call(eng, js(t, eng, `"a"`)))(t), `"found:afound:a"`)
	wantJSON(t, must(l.Call(eng, js(t, eng, `"a"`)))(t), `"found:afound:a"`)
	wantCalls(t, "lookup without memoize", looked, 2)
	looked.Store(0)

	must(0, eng.PushMemoize())(t)
	for i := 0; i < 2; i++ {
		wantJSON(t, must(s.Call(eng, js(t, eng, `"a"`)))(t), `"sent:asent:a"`)
	}
	wantCalls(t, "send under memoize", sent, 4)
	for i := 0; i < 2; i++ {
		wantJSON(t, must(l.Call(eng, js(t, eng, `"a"`)))(t), `"found:afound:a"`)
	}
	wantCalls(t, "lookup under memoize", looked, 1)
	must(0, eng.PopMemoize())(t)
}

// On a lazy engine a promise of an effectful call runs at Eval even when it
// was closed unread (once); a pure one closed unread never runs.
func TestEffectsLazyRunsDroppedEffectfulCalls(t *testing.T) {
	for _, r := range registrations {
		t.Run(r.name, func(t *testing.T) {
			eng := newLazy(t)
			var sent, looked atomic.Int32
			r.register(t, eng, &sent, &looked)
			x := js(t, eng, `"a"`)
			must(eng.HostCall("send", x))(t).Close()
			must(eng.HostCall("lookup", x))(t).Close()
			wantCalls(t, "send before Eval (recorded, not run)", &sent, 0)
			must(0, eng.Eval())(t)
			wantCalls(t, "send", &sent, 1)
			wantCalls(t, "lookup", &looked, 0)

			// Evaluated by Eval, then read: it ran once.
			kept := must(eng.HostCall("send", x))(t)
			defer kept.Close()
			must(0, eng.Eval())(t)
			wantJSON(t, kept, `"sent:a"`)
			wantCalls(t, "send", &sent, 2)

			// A pure promise read runs.
			found := must(eng.HostCall("lookup", x))(t)
			defer found.Close()
			wantJSON(t, found, `"found:a"`)
			wantCalls(t, "lookup", &looked, 1)
		})
	}
}

// Registered pure, an async and a blocking function work (outside a trace
// and in a program) and their equal calls merge.
func TestEffectsPureAsyncAndBlockingFunctionsWork(t *testing.T) {
	eng := newCtx(t)
	var asyncCalls, blockingCalls atomic.Int32
	must(0, eng.RegisterFunctionAsyncWith("lookup_async", js(t, eng, `"str"`), pure, taggedAsync(eng, "async", &asyncCalls)))(t)
	must(0, eng.RegisterFunctionWith("lookup_pool", js(t, eng, `"str"`), &af.FunctionOptions{Pure: true, Blocking: true}, tagged(eng, "pool", &blockingCalls)))(t)
	wantJSON(t, must(eng.HostCall("lookup_async", js(t, eng, `"q"`)))(t), `"async:q"`)
	wantJSON(t, must(eng.HostCall("lookup_pool", js(t, eng, `"q"`)))(t), `"pool:q"`)
	wantCalls(t, "async", &asyncCalls, 1)
	wantCalls(t, "blocking", &blockingCalls, 1)
	wantJSON(t, must(traceTwice(t, eng, "lookup_async").Call(eng, js(t, eng, `"a"`)))(t), `"async:aasync:a"`)
	wantJSON(t, must(traceTwice(t, eng, "lookup_pool").Call(eng, js(t, eng, `"a"`)))(t), `"pool:apool:a"`)
	wantCalls(t, "async", &asyncCalls, 2)
	wantCalls(t, "blocking", &blockingCalls, 2)
}

// FunctionOptions.Blocking runs calls on the host pool: with "host_threads"
// 2 two independent calls of a function that blocks run at once, while the
// executor starts the same function registered without Blocking on its own
// thread, one call after the other.
func TestEffectsBlockingOptionUsesTheHostPool(t *testing.T) {
	eng := must(af.NewEngineWith(`{"host_threads": 2}`))(t)
	defer eng.Close()
	overlap := func(name string, opts *af.FunctionOptions) int32 {
		var active, most atomic.Int32
		must(0, eng.RegisterFunctionWith(name, js(t, eng, `"str"`), opts, func(args []*af.Value) (*af.Value, error) {
			n := active.Add(1)
			defer active.Add(-1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(300 * time.Millisecond)
			return args[0].Clone()
		}))(t)
		ir := must(af.Trace(eng, func(e *af.Engine, in []*af.Value) (*af.Value, error) {
			a, err := e.HostCall(name, in[0])
			if err != nil {
				return nil, err
			}
			defer a.Close()
			b, err := e.HostCall(name, in[1])
			if err != nil {
				return nil, err
			}
			defer b.Close()
			return e.List(a, b)
		}, js(t, eng, `"x"`), js(t, eng, `"y"`)))(t)
		defer ir.Close()
		wantJSON(t, must(ir.Call(eng, js(t, eng, `"1"`), js(t, eng, `"2"`)))(t), `["1","2"]`)
		return most.Load()
	}
	inline := overlap("inline", &af.FunctionOptions{Pure: true})
	t.Logf("without Blocking: %d calls at once", inline)
	if inline != 1 {
		t.Skipf("the executor ran %d calls of a function without Blocking at once: overlap cannot tell the host pool", inline)
	}
	if n := overlap("pool", &af.FunctionOptions{Pure: true, Blocking: true}); n != 2 {
		t.Fatalf("Blocking with a pool of 2: %d calls at once, want 2", n)
	}
}

// Blocking with an async function is refused with CodeInvalidArgument,
// naming the method called; nothing is registered.
func TestEffectsBlockingAsyncIsInvalid(t *testing.T) {
	eng := newCtx(t)
	var calls atomic.Int32
	err := eng.RegisterFunctionAsyncWith("f", js(t, eng, `"str"`), &af.FunctionOptions{Blocking: true}, taggedAsync(eng, "f", &calls))
	ae := wantCode(t, err, af.CodeInvalidArgument)
	if msg := ae.Error(); !strings.Contains(msg, "(*Engine).RegisterFunctionAsyncWith") || strings.Contains(msg, "af_register_function") {
		t.Fatalf("message: %v", ae)
	}
	_, err = eng.HostCall("f", js(t, eng, `"q"`))
	wantCode(t, err, af.CodeNotFound)
	// Pure alone is fine for the same function.
	must(0, eng.RegisterFunctionAsyncWith("f", js(t, eng, `"str"`), pure, taggedAsync(eng, "f", &calls)))(t)
	wantJSON(t, must(eng.HostCall("f", js(t, eng, `"q"`)))(t), `"f:q"`)
	// The other registrations' errors name their own method.
	err = eng.RegisterFunctionWith("", js(t, eng, `"str"`), pure, tagged(eng, "f", &calls))
	if msg := wantCode(t, err, af.CodeInvalidArgument).Error(); !strings.Contains(msg, "(*Engine).RegisterFunctionWith") {
		t.Fatalf("message: %v", msg)
	}
	err = eng.RegisterFunctionBlocking("", js(t, eng, `"str"`), tagged(eng, "f", &calls))
	if msg := wantCode(t, err, af.CodeInvalidArgument).Error(); !strings.Contains(msg, "(*Engine).RegisterFunctionBlocking") {
		t.Fatalf("message: %v", msg)
	}
	wantCode(t, eng.RegisterFunctionWith("f", js(t, eng, `"str"`), pure, nil), af.CodeInvalidArgument)
	wantCode(t, eng.RegisterFunctionAsyncWith("f", js(t, eng, `"str"`), pure, nil), af.CodeInvalidArgument)
}

// EqnJSON shows the flag ("pure": true among the params, "effects"), and a
// graph saved and loaded keeps it: it runs by the flags it was traced with.
func TestEffectsEqnJSONAndSavedGraphs(t *testing.T) {
	eng := newCtx(t)
	sent, looked := registerBoth(t, eng)
	ir := traceUnused(t, eng)
	eqns := hostEqns(t, ir)
	if len(eqns) != 2 {
		t.Fatalf("host calls: %v", eqns)
	}
	s, l := eqns[0], eqns[1]
	for _, want := range []string{`"name":"send"`, `"effects":true`} {
		if !strings.Contains(s, want) {
			t.Fatalf("send's eqn lacks %s: %s", want, s)
		}
	}
	if strings.Contains(s, `"pure"`) {
		t.Fatalf("send's eqn says pure: %s", s)
	}
	for _, want := range []string{`"name":"lookup"`, `"effects":false`, `"pure":true`} {
		if !strings.Contains(l, want) {
			t.Fatalf("lookup's eqn lacks %s: %s", want, l)
		}
	}

	loaded := must(af.IRFromBytes(eng, must(ir.Bytes())(t)))(t)
	defer loaded.Close()
	if !ir.Equal(loaded) {
		t.Fatal("loaded graph differs")
	}
	// Swap the registrations: the graph still says send is effectful and
	// lookup pure.
	must(0, eng.RegisterFunctionWith("send", js(t, eng, `"str"`), pure, tagged(eng, "sent", sent)))(t)
	must(0, eng.RegisterFunction("lookup", js(t, eng, `"str"`), tagged(eng, "found", looked)))(t)
	wantJSON(t, must(loaded.Call(eng, js(t, eng, `"a"`)))(t), `"a"`)
	wantCalls(t, "send", sent, 1)
	wantCalls(t, "lookup", looked, 0)
	// A new trace records the new flags.
	eqns = hostEqns(t, traceUnused(t, eng))
	if !strings.Contains(eqns[0], `"pure":true`) || strings.Contains(eqns[1], `"pure"`) {
		t.Fatalf("retraced: %v", eqns)
	}
}
