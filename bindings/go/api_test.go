package af_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	af "github.com/libaf/libaf/bindings/go"
)

// js parses JSON into a value (closed when the test ends).
func js(t *testing.T, ctx *af.Context, s string) *af.Value {
	t.Helper()
	v := must(ctx.FromJSON(s))(t)
	t.Cleanup(v.Close)
	return v
}

// wantJSON asserts that v's compact JSON is want.
func wantJSON(t *testing.T, v *af.Value, want string) {
	t.Helper()
	if got := must(v.JSON())(t); got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

// formatIR traces f(x, y) = format("<{}|{a}>", x, a=y).
func formatIR(t *testing.T, ctx *af.Context) *af.IR {
	t.Helper()
	ir := must(af.Trace(ctx, func(ctx *af.Context, in []*af.Value) (*af.Value, error) {
		named, err := ctx.Dict([]string{"a"}, []*af.Value{in[1]})
		if err != nil {
			return nil, err
		}
		defer named.Close()
		return ctx.FormatNamed("<{}|{a}>", named, in[0])
	}, js(t, ctx, `"x"`), js(t, ctx, `"y"`)))(t)
	t.Cleanup(ir.Close)
	return ir
}

// askIR traces ask(q, model) = lm_call([{"role":"user","content":format("Q:{}", q)}], model).
func askIR(t *testing.T, ctx *af.Context) *af.IR {
	t.Helper()
	role := js(t, ctx, `"user"`)
	ir := must(af.Trace(ctx, func(ctx *af.Context, in []*af.Value) (*af.Value, error) {
		content, err := ctx.Format("Q:{}", in[0])
		if err != nil {
			return nil, err
		}
		msg, err := ctx.Dict([]string{"role", "content"}, []*af.Value{role, content})
		if err != nil {
			return nil, err
		}
		msgs, err := ctx.List(msg)
		if err != nil {
			return nil, err
		}
		return ctx.LMCall(msgs, in[1])
	}, js(t, ctx, `"q"`), js(t, ctx, `"m"`)))(t)
	t.Cleanup(ir.Close)
	return ir
}

func TestPullbackOfFormat(t *testing.T) {
	ctx := newCtx(t)
	pb := must(formatIR(t, ctx).Pullback(ctx))(t)
	defer pb.Close()
	wantJSON(t, must(pb.Call(ctx, js(t, ctx, `["p","q"]`), js(t, ctx, `"g"`)))(t), `["<p|q>",["g","g"]]`)
}

func TestPushforwardBatchDCECSESched(t *testing.T) {
	ctx := newCtx(t)
	ir := formatIR(t, ctx)
	pf := must(ir.Pushforward(ctx))(t)
	wantJSON(t, must(pf.Call(ctx, js(t, ctx, `["p","q"]`), js(t, ctx, `["dp","dq"]`)))(t), `["<p|q>","<dp|dq>"]`)
	b := must(ir.Batch(ctx, js(t, ctx, `[true, false]`)))(t)
	wantJSON(t, must(b.Call(ctx, js(t, ctx, `["a","b"]`), js(t, ctx, `"s"`)))(t), `["<a|s>","<b|s>"]`)
	_, err := b.Call(ctx, js(t, ctx, `[]`), js(t, ctx, `"s"`))
	if e := wantCode(t, err, af.CodeInvalidArgument); !strings.Contains(e.Message, "empty") {
		t.Fatalf("message %q", e.Message)
	}

	// [concat(x, x), concat(x, x), format("{}", x)]
	three := must(af.Trace(ctx, func(ctx *af.Context, in []*af.Value) (*af.Value, error) {
		a, _ := ctx.Concat(in[0], in[0])
		b, _ := ctx.Concat(in[0], in[0])
		c, err := ctx.Format("{}", in[0])
		if err != nil {
			return nil, err
		}
		return ctx.List(a, b, c)
	}, js(t, ctx, `"x"`)))(t)
	if err := three.Validate(); err != nil {
		t.Fatal(err)
	}
	cse := must(three.CSE(ctx))(t)
	if n := cse.EqnCount(); n != 2 {
		t.Fatalf("cse eqns = %d, want 2", n)
	}
	if n := must(three.CSEWith(ctx, true))(t).EqnCount(); n != 2 {
		t.Fatalf("cse_ex eqns = %d, want 2", n)
	}
	if n := must(three.CSEOptions(ctx, `{"merge_nondeterministic": true}`))(t).EqnCount(); n != 2 {
		t.Fatalf("cse_with eqns = %d, want 2", n)
	}
	if _, err := three.CSEOptions(ctx, `{"merge": true}`); err == nil || !strings.Contains(err.Error(), `unknown option "merge"`) {
		t.Fatalf("cse_with unknown key: %v", err)
	}
	wantJSON(t, must(cse.Call(ctx, js(t, ctx, `"z"`)))(t), `["zz","zz","z"]`)
	dce := must(three.DCE(ctx, js(t, ctx, `[false, false, true]`)))(t)
	if dce.EqnCount() != 1 || dce.EqnPrim(0) != "format" {
		t.Fatalf("dce: %s", dce)
	}
	wantJSON(t, must(dce.Call(ctx, js(t, ctx, `"z"`)))(t), `[null,null,"z"]`)
	_, _, err = three.EqnSched(0)
	wantCode(t, err, af.CodeNotFound)
	s := must(three.Sched(ctx))(t)
	level, prio, err := s.EqnSched(0)
	if err != nil || level != 0 || prio <= 0 {
		t.Fatalf("sched(0) = %d, %g, %v", level, prio, err)
	}
	_, err = three.DCE(ctx, js(t, ctx, `[1]`))
	wantCode(t, err, af.CodeInvalidArgument)
}

func branchIRs(t *testing.T, ctx *af.Context) []af.Branch {
	a := must(af.Trace(ctx, func(ctx *af.Context, in []*af.Value) (*af.Value, error) {
		return ctx.Format("A{}", in[0])
	}, js(t, ctx, `"x"`)))(t)
	b := must(af.Trace(ctx, func(ctx *af.Context, in []*af.Value) (*af.Value, error) {
		return ctx.Concat(in[0], in[0])
	}, js(t, ctx, `"x"`)))(t)
	return []af.Branch{{Name: "a", IR: a}, {Name: "b", IR: b}}
}

func TestSwitch(t *testing.T) {
	ctx := newCtx(t)
	br := branchIRs(t, ctx)
	ir := must(af.Trace(ctx, func(ctx *af.Context, in []*af.Value) (*af.Value, error) {
		return ctx.Switch(in[0], br, in[1])
	}, js(t, ctx, `"k"`), js(t, ctx, `"x"`)))(t)
	if ir.EqnCount() != 1 || ir.EqnPrim(0) != "switch" {
		t.Fatalf("ir: %s", ir)
	}
	wantJSON(t, must(ir.Call(ctx, js(t, ctx, `"a"`), js(t, ctx, `"hi"`)))(t), `"Ahi"`)
	wantJSON(t, must(ir.Call(ctx, js(t, ctx, `"b"`), js(t, ctx, `"hi"`)))(t), `"hihi"`)
	wantJSON(t, must(ctx.Switch(js(t, ctx, `"b"`), br, js(t, ctx, `"o"`)))(t), `"oo"`)
	_, err := ir.Call(ctx, js(t, ctx, `"c"`), js(t, ctx, `"hi"`))
	wantCode(t, err, af.CodeNotFound)
	pb := must(ir.Pullback(ctx))(t)
	wantJSON(t, must(pb.Call(ctx, js(t, ctx, `["b","p"]`), js(t, ctx, `"g"`)))(t), `["pp",[null,"gg"]]`)
	_, err = ctx.Switch(js(t, ctx, `"a"`), nil, js(t, ctx, `"o"`))
	wantCode(t, err, af.CodeInvalidArgument)
}

func TestWhileLoop(t *testing.T) {
	ctx := newCtx(t)
	yes := must(af.Trace(ctx, func(ctx *af.Context, in []*af.Value) (*af.Value, error) {
		return ctx.Match(in[0], in[0])
	}, js(t, ctx, `"x"`)))(t)
	no := must(af.Trace(ctx, func(ctx *af.Context, in []*af.Value) (*af.Value, error) {
		bang, err := ctx.Concat(in[0], js(t, ctx, `"!"`))
		if err != nil {
			return nil, err
		}
		return ctx.Match(in[0], bang)
	}, js(t, ctx, `"x"`)))(t)
	// cond(s) = s != "aaa" for s in {a, aa, aaa}, as a switch on s.
	cond := must(af.Trace(ctx, func(ctx *af.Context, in []*af.Value) (*af.Value, error) {
		return ctx.Switch(in[0], []af.Branch{{"a", yes}, {"aa", yes}, {"aaa", no}}, in[0])
	}, js(t, ctx, `"s"`)))(t)
	body := must(af.Trace(ctx, func(ctx *af.Context, in []*af.Value) (*af.Value, error) {
		return ctx.Concat(in[0], js(t, ctx, `"a"`))
	}, js(t, ctx, `"s"`)))(t)
	for _, c := range []struct {
		max  uint64
		want string
	}{{10, `"aaa"`}, {1, `"aa"`}, {0, `"a"`}} {
		wantJSON(t, must(ctx.WhileLoop(cond, body, js(t, ctx, `"a"`), c.max))(t), c.want)
	}
	_, err := ctx.WhileLoop(body, body, js(t, ctx, `"a"`), 3)
	wantCode(t, err, af.CodeInvalidArgument)
}

func TestHostFunctionInTracedProgram(t *testing.T) {
	ctx := newCtx(t)
	var calls atomic.Int32
	must(0, ctx.RegisterFunction("upper", js(t, ctx, `"str"`), func(args []*af.Value) (*af.Value, error) {
		calls.Add(1)
		s, err := args[0].AsString()
		if err != nil {
			return nil, err
		}
		return ctx.Str(strings.ToUpper(s))
	}))(t)
	ir := must(af.Trace(ctx, func(ctx *af.Context, in []*af.Value) (*af.Value, error) {
		u, err := ctx.HostCall("upper", in[0])
		if err != nil {
			return nil, err
		}
		return ctx.Format("<{}>", u)
	}, js(t, ctx, `"x"`)))(t)
	if calls.Load() != 0 {
		t.Fatal("tracing called the host function")
	}
	if ir.EqnPrim(0) != "host_call" {
		t.Fatalf("ir: %s", ir)
	}
	wantJSON(t, must(ir.Call(ctx, js(t, ctx, `"abc"`)))(t), `"<ABC>"`)
	wantJSON(t, must(ctx.HostCall("upper", js(t, ctx, `"q"`)))(t), `"Q"`)
	if calls.Load() != 2 {
		t.Fatalf("calls = %d", calls.Load())
	}
	_, err := ir.Pullback(ctx)
	wantCode(t, err, af.CodeInvalidArgument)
}

func TestHostFunctionErrors(t *testing.T) {
	ctx := newCtx(t)
	sentinel := errors.New("no results for cats")
	must(0, ctx.RegisterFunction("search", js(t, ctx, `"str"`), func(args []*af.Value) (*af.Value, error) {
		return nil, sentinel
	}))(t)
	_, err := ctx.HostCall("search", js(t, ctx, `"cats"`))
	e := wantCode(t, err, af.CodeCallback)
	if !strings.Contains(e.Message, "search") {
		t.Fatalf("message %q", e.Message)
	}
	var cause *af.Error
	if !errors.As(e.Unwrap(), &cause) || cause.Message != "no results for cats" {
		t.Fatalf("cause of %v", err)
	}

	must(0, ctx.RegisterFunction("coded", js(t, ctx, `"str"`), func([]*af.Value) (*af.Value, error) {
		return nil, af.NewError(af.CodeProvider, "quota")
	}))(t)
	_, err = ctx.HostCall("coded")
	e = wantCode(t, err, af.CodeCallback)
	if !errors.As(e.Unwrap(), &cause) || cause.Code() != af.CodeProvider || cause.Message != "quota" {
		t.Fatalf("cause of %v", err)
	}

	must(0, ctx.RegisterFunction("boom", js(t, ctx, `"str"`), func([]*af.Value) (*af.Value, error) {
		panic("kaboom")
	}))(t)
	_, err = ctx.HostCall("boom")
	if e := wantCode(t, err, af.CodeCallback); !strings.Contains(e.Error(), "kaboom") {
		t.Fatalf("%v", err)
	}
	_, err = ctx.HostCall("missing")
	if e := wantCode(t, err, af.CodeNotFound); !strings.Contains(e.Message, "missing") {
		t.Fatalf("%v", err)
	}
	err = ctx.RegisterFunction("", js(t, ctx, `"str"`), func([]*af.Value) (*af.Value, error) { return nil, nil })
	wantCode(t, err, af.CodeInvalidArgument)
}

func TestScopes(t *testing.T) {
	ctx := newCtx(t)
	var calls atomic.Int32
	// Pure: memoize answers (and compile merges) only calls of pure functions.
	must(0, ctx.RegisterFunctionWith("count", js(t, ctx, `"str"`), &af.FunctionOptions{Pure: true}, func(a []*af.Value) (*af.Value, error) {
		calls.Add(1)
		return a[0].Clone()
	}))(t)
	ir := must(af.Trace(ctx, func(ctx *af.Context, in []*af.Value) (*af.Value, error) {
		e, err := ctx.Concat(in[0], js(t, ctx, `"!"`))
		if err != nil {
			return nil, err
		}
		k, err := ctx.Checkpoint(e, "k", "c")
		if err != nil {
			return nil, err
		}
		a, err := ctx.HostCall("count", in[0])
		if err != nil {
			return nil, err
		}
		b, err := ctx.HostCall("count", in[0])
		if err != nil {
			return nil, err
		}
		return ctx.List(k, a, b)
	}, js(t, ctx, `"x"`)))(t)
	must(0, ctx.PushCollect("c"))(t)
	must(ir.Call(ctx, js(t, ctx, `"a"`)))(t)
	must(ir.Call(ctx, js(t, ctx, `"b"`)))(t)
	wantJSON(t, must(ctx.PopCollect())(t), `{"k":["a!","b!"]}`)

	must(0, ctx.PushInject("c", js(t, ctx, `{"k":["injected"]}`)))(t)
	wantJSON(t, must(ir.Call(ctx, js(t, ctx, `"a"`)))(t), `["injected","a","a"]`)
	wantJSON(t, must(ir.Call(ctx, js(t, ctx, `"a"`)))(t), `["a!","a","a"]`)
	must(0, ctx.PopInject())(t)

	calls.Store(0)
	must(0, ctx.PushMemoize())(t)
	must(ir.Call(ctx, js(t, ctx, `"m"`)))(t)
	must(ir.Call(ctx, js(t, ctx, `"m"`)))(t)
	must(0, ctx.PopMemoize())(t)
	if calls.Load() != 1 {
		t.Fatalf("memoized calls = %d, want 1", calls.Load())
	}
	_, err := ctx.PopCollect()
	wantCode(t, err, af.CodeInvalidArgument)
	wantCode(t, ctx.PopInject(), af.CodeInvalidArgument)
	wantCode(t, ctx.PopMemoize(), af.CodeInvalidArgument)
}

// Scopes belong to the goroutine that pushed them (libaf scopes are per OS
// thread; Push keeps the goroutine on its thread until Pop): goroutines that
// yield between calls still see their own scope, and never another's.
func TestScopesPerGoroutine(t *testing.T) {
	ctx := newCtx(t)
	ir := must(af.Trace(ctx, func(ctx *af.Context, in []*af.Value) (*af.Value, error) {
		return ctx.Checkpoint(in[0], "k", "c")
	}, js(t, ctx, `"x"`)))(t)
	const runs = 30
	var wg sync.WaitGroup
	got := make([]string, 2)
	errs := make([]error, 2)
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			in, err := ctx.Str(string(rune('a' + g)))
			if err == nil {
				err = ctx.PushCollect("c")
			}
			for i := 0; err == nil && i < runs; i++ {
				runtime.Gosched() // lets the scheduler move the goroutine
				_, err = ir.Call(ctx, in)
			}
			if err == nil {
				var v *af.Value
				if v, err = ctx.PopCollect(); err == nil {
					got[g], err = v.JSON()
				}
			}
			errs[g] = err
		}(g)
	}
	wg.Wait()
	for g := 0; g < 2; g++ {
		if errs[g] != nil {
			t.Fatal(errs[g])
		}
		want := `{"k":[` + strings.TrimSuffix(strings.Repeat(`"`+string(rune('a'+g))+`",`, runs), ",") + `]}`
		if got[g] != want {
			t.Fatalf("goroutine %d collected %s, want %s", g, got[g], want)
		}
	}
}

func TestProgramSyncAsyncWithEcho(t *testing.T) {
	ctx := newCtx(t)
	echo := must(af.NewEchoProvider(""))(t)
	defer echo.Close()
	must(0, ctx.Route("*", echo))(t)
	p := must(af.Compile(ctx, askIR(t, ctx)))(t)
	defer p.Close()
	wantJSON(t, must(p.Call(ctx, js(t, ctx, `"hi"`), js(t, ctx, `"gpt-test"`)))(t), `"gpt-test|Q:hi"`)

	f := must(p.CallAsync(ctx, nil, js(t, ctx, `"there"`), js(t, ctx, `"m2"`)))(t)
	defer f.Close()
	select {
	case <-f.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("run did not finish")
	}
	if !f.Ready() {
		t.Fatal("not ready after Done")
	}
	wantJSON(t, must(f.Wait())(t), `"m2|Q:there"`)
	wantJSON(t, must(f.Wait())(t), `"m2|Q:there"`)

	var mu sync.Mutex
	var last [2]uint64
	opts := &af.RunOptions{Profile: true, Progress: func(done, total uint64) {
		mu.Lock()
		last = [2]uint64{done, total}
		mu.Unlock()
	}}
	out := must(p.Run(context.Background(), ctx, opts, js(t, ctx, `"r"`), js(t, ctx, `"m"`)))(t)
	wantJSON(t, out, `"m|Q:r"`)
	mu.Lock()
	if last != [2]uint64{2, 2} {
		t.Fatalf("last progress %v", last)
	}
	mu.Unlock()

	_, err := p.CallAsync(ctx, nil, js(t, ctx, `1`))
	wantCode(t, err, af.CodeInvalidArgument)

	slow := must(af.NewEchoProvider(`{"latency_ms": 2000}`))(t)
	defer slow.Close()
	must(0, ctx.Route("slow", slow))(t)
	_, err = p.CallWith(ctx, &af.RunOptions{Timeout: 50 * time.Millisecond}, js(t, ctx, `"a"`), js(t, ctx, `"slow"`))
	wantCode(t, err, af.CodeTimeout)
	goctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = p.Run(goctx, ctx, nil, js(t, ctx, `"a"`), js(t, ctx, `"slow"`))
	wantCode(t, err, af.CodeCancelled)
	// A context without routes: NOT_FOUND naming the model.
	_, err = p.Call(newCtx(t), js(t, ctx, `"a"`), js(t, ctx, `"nowhere"`))
	if e := wantCode(t, err, af.CodeNotFound); !strings.Contains(e.Message, "nowhere") {
		t.Fatalf("%v", err)
	}
}

func TestHostProviderFromAnotherGoroutine(t *testing.T) {
	ctx := newCtx(t)
	host := must(af.NewHostProvider(func(req *af.LMRequest) {
		go func() {
			j, err := req.JSON()
			if err != nil {
				req.Fail(err)
				return
			}
			if strings.Contains(j, `"model":"fail"`) {
				req.Fail(af.NewError(af.CodeProvider, "host says no"))
				return
			}
			i := strings.Index(j, `"content":"`) + len(`"content":"`)
			req.Complete("host:" + j[i:i+strings.Index(j[i:], `"`)])
		}()
	}))(t)
	defer host.Close()
	must(0, ctx.Route("*", host))(t)
	p := must(af.Compile(ctx, askIR(t, ctx)))(t)
	defer p.Close()
	wantJSON(t, must(p.Call(ctx, js(t, ctx, `"hi"`), js(t, ctx, `"m"`)))(t), `"host:Q:hi"`)
	_, err := p.Call(ctx, js(t, ctx, `"hi"`), js(t, ctx, `"fail"`))
	if e := wantCode(t, err, af.CodeProvider); !strings.Contains(e.Error(), "host says no") {
		t.Fatalf("%v", err)
	}
	stats := must(host.Stats())(t)
	if !strings.Contains(stats, `"finished":2`) {
		t.Fatalf("stats %s", stats)
	}
}

func TestCancelWithParkedRequest(t *testing.T) {
	ctx := newCtx(t)
	parked := make(chan *af.LMRequest, 1)
	host := must(af.NewHostProvider(func(req *af.LMRequest) { parked <- req }))(t)
	defer host.Close()
	must(0, ctx.Route("*", host))(t)
	p := must(af.Compile(ctx, askIR(t, ctx)))(t)
	f := must(p.CallAsync(ctx, nil, js(t, ctx, `"q"`), js(t, ctx, `"m"`)))(t)
	defer f.Close()
	req := <-parked
	if f.Ready() {
		t.Fatal("ready before the answer")
	}
	f.Cancel()
	_, err := f.Wait()
	wantCode(t, err, af.CodeCancelled)
	if !req.Cancelled() {
		t.Fatal("request not marked cancelled")
	}
	must(0, req.Complete("late"))(t)
	wantCode(t, req.Complete("twice"), af.CodeInvalidArgument)
}

func TestSchemaCallAndProviders(t *testing.T) {
	ctx := newCtx(t)
	echo := must(af.NewEchoProvider(`{"max_in_flight": 2}`))(t)
	defer echo.Close()
	must(0, ctx.Route("*", echo))(t)
	out := must(ctx.LMSchemaCall(js(t, ctx, `[{"role":"user","content":"rate"}]`), js(t, ctx, `"m"`),
		js(t, ctx, `{"score": {"type": "int", "min": 3, "max": 9}}`)))(t)
	wantJSON(t, out, `{"score":3}`)
	must(0, echo.SetMaxInFlight(4))(t)
	if s := must(echo.Stats())(t); !strings.Contains(s, `"max_in_flight":4`) {
		t.Fatalf("stats %s", s)
	}
	// A clone is the same provider: it sees the same counters.
	clone := must(echo.Clone())(t)
	echo.Close()
	if s := must(clone.Stats())(t); !strings.Contains(s, `"submitted":1`) {
		t.Fatalf("clone stats %s", s)
	}
	clone.Close()
	_, err := af.NewEchoProvider(`{"nope": 1}`)
	wantCode(t, err, af.CodeInvalidArgument)
	_, err = af.NewOpenAIProvider(`{}`)
	wantCode(t, err, af.CodeInvalidArgument)
	_, err = af.NewReplayProvider(`{}`)
	wantCode(t, err, af.CodeInvalidArgument)
	_, err = ctx.LMCall(js(t, ctx, `[{"content":"no role"}]`), js(t, ctx, `"m"`))
	wantCode(t, err, af.CodeInvalidArgument)
}

func TestSaveLoadRoundTrip(t *testing.T) {
	ctx := newCtx(t)
	ir := traceHello(t, ctx)
	path := filepath.Join(t.TempDir(), "hello.afg")
	must(0, ir.Save(path))(t)
	back := must(af.LoadIR(ctx, path))(t)
	if !back.Equal(ir) {
		t.Fatal("loaded IR differs")
	}
	wantJSON(t, must(back.Call(ctx, js(t, ctx, `"World"`)))(t), `"Hello, World!?"`)
	data := must(ir.Bytes())(t)
	again := must(af.IRFromBytes(ctx, data))(t)
	if again.Hash() != ir.Hash() {
		t.Fatal("hash differs")
	}
	if s := must(af.VerifyGraph(ctx, data))(t); !strings.Contains(s, "format") {
		t.Fatalf("summary %s", s)
	}
	text := must(af.GraphToJSON(ctx, data))(t)
	if b := must(af.GraphFromJSON(ctx, text))(t); string(b) != string(data) {
		t.Fatal("JSON round trip changed the bytes")
	}
	bad := append([]byte(nil), data...)
	bad[len(bad)-1] ^= 0xff
	_, err := af.IRFromBytes(ctx, bad)
	wantCode(t, err, af.CodeFormat)
	_, err = af.IRFromBytes(ctx, nil)
	wantCode(t, err, af.CodeFormat)
	_, err = af.LoadIR(ctx, "/nonexistent/dir/x.afg")
	wantCode(t, err, af.CodeIO)
}

// TestConformanceCorpus runs every golden graph of tests/conformance/graphs
// (found by walking the folder) on the inputs of its .expected.json, on a
// context with what the folder's README says a host must provide: host
// function golden.shout (s -> s + "!") and models golden-* routed to echo.
func TestConformanceCorpus(t *testing.T) {
	ctx := newCtx(t)
	must(0, ctx.RegisterFunction("golden.shout", js(t, ctx, `"str"`), func(args []*af.Value) (*af.Value, error) {
		s, err := args[0].AsString()
		if err != nil {
			return nil, err
		}
		return ctx.Str(s + "!")
	}))(t)
	echo := must(af.NewEchoProvider(""))(t)
	defer echo.Close()
	must(0, ctx.Route("golden-*", echo))(t)
	dir := filepath.Join("..", "..", "tests", "conformance", "graphs")
	entries := must(os.ReadDir(dir))(t)
	ran := 0
	for _, ent := range entries {
		name, ok := strings.CutSuffix(ent.Name(), ".afg")
		if !ok {
			continue
		}
		expected, err := os.ReadFile(filepath.Join(dir, name+".expected.json"))
		if errors.Is(err, os.ErrNotExist) {
			continue // an .afg without expectations is not a golden graph
		}
		ran++
		t.Run(name, func(t *testing.T) {
			ir := must(af.LoadIR(ctx, filepath.Join(dir, ent.Name())))(t)
			defer ir.Close()
			spec := js(t, ctx, string(expected))
			// The README defines only "cases"; a file that needs more (host
			// functions, providers) is skipped, loudly, until specified.
			for _, k := range must(spec.Keys())(t) {
				if k != "cases" {
					t.Skipf("%s needs %q, which this runner does not provide", name, k)
				}
			}
			cases := must(spec.Key("cases"))(t)
			n := must(cases.Len())(t)
			for i := 0; i < n; i++ {
				c := must(cases.Index(i))(t)
				in := must(c.Key("inputs"))(t)
				args := make([]*af.Value, must(in.Len())(t))
				for k := range args {
					args[k] = must(in.Index(k))(t)
				}
				got, err := ir.Call(ctx, args...)
				if code, kerr := c.Key("error"); kerr == nil {
					want := must(code.AsInt())(t)
					var ae *af.Error
					if !errors.As(err, &ae) || int64(ae.Code()) != want {
						t.Errorf("case %d: want error %d, got %v / %v", i, want, got, err)
					}
					continue
				}
				want := must(must(c.Key("output"))(t).JSON())(t)
				if err != nil {
					t.Errorf("case %d: %v", i, err)
					continue
				}
				if g := must(got.JSON())(t); g != want {
					t.Errorf("case %d: got %s, want %s", i, g, want)
				}
			}
		})
	}
	if ran < 3 {
		t.Fatalf("only %d golden graphs in %s", ran, dir)
	}
}

// A registered function's closure is released when it is replaced and when
// the context closes: its captured object becomes unreachable (a second
// release would panic in cgo.Handle.Delete).
func TestHostFunctionReleasedOnReplaceAndClose(t *testing.T) {
	ctx, err := af.NewContext()
	if err != nil {
		t.Fatal(err)
	}
	kinds := must(ctx.FromJSON(`"str"`))(t)
	defer kinds.Close()
	var freed atomic.Int32
	register := func(reply string) {
		captured := &struct{ s string }{reply}
		runtime.SetFinalizer(captured, func(any) { freed.Add(1) })
		must(0, ctx.RegisterFunction("f", kinds, func([]*af.Value) (*af.Value, error) {
			return ctx.Str(captured.s)
		}))(t)
	}
	register("first")
	register("second")
	out := must(ctx.HostCall("f"))(t)
	wantJSON(t, out, `"second"`)
	ctx.Close()
	deadline := time.Now().Add(5 * time.Second)
	for freed.Load() < 2 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if n := freed.Load(); n != 2 {
		t.Fatalf("released closures = %d, want 2", n)
	}
}

func TestProgramSaveLoad(t *testing.T) {
	ctx := newCtx(t)
	echo := must(af.NewEchoProvider(""))(t)
	defer echo.Close()
	must(0, ctx.Route("*", echo))(t)
	ir := askIR(t, ctx)
	p := must(af.Compile(ctx, ir))(t)
	defer p.Close()
	dir := t.TempDir()
	path := filepath.Join(dir, "ask.afg")
	must(0, p.Save(path))(t)
	back := must(af.LoadProgram(ctx, path))(t)
	defer back.Close()
	wantJSON(t, must(back.Call(ctx, js(t, ctx, `"hi"`), js(t, ctx, `"m"`)))(t), `"m|Q:hi"`)
	if asIR := must(af.LoadIR(ctx, path))(t); !asIR.Equal(ir) {
		t.Fatal("the program file does not load as its IR")
	}
	path2 := filepath.Join(dir, "again.afg")
	must(0, back.Save(path2))(t)
	if a, b := must(os.ReadFile(path))(t), must(os.ReadFile(path2))(t); string(a) != string(b) {
		t.Fatal("the same program saved twice gives different bytes")
	}
	_, err := af.LoadProgram(ctx, "/nonexistent/dir/p.afg")
	wantCode(t, err, af.CodeIO)
}

func TestCancelTokenStopsABlockingCall(t *testing.T) {
	ctx := newCtx(t)
	slow := must(af.NewEchoProvider(`{"latency_ms": 5000}`))(t)
	defer slow.Close()
	must(0, ctx.Route("*", slow))(t)
	p := must(af.Compile(ctx, askIR(t, ctx)))(t)
	defer p.Close()
	token := must(af.NewCancelToken())(t)
	defer token.Close()
	go func() {
		time.Sleep(50 * time.Millisecond)
		token.Trigger()
	}()
	_, err := p.CallWith(ctx, &af.RunOptions{Cancel: token}, js(t, ctx, `"a"`), js(t, ctx, `"m"`))
	wantCode(t, err, af.CodeCancelled)
	if !token.Triggered() {
		t.Fatal("token not triggered")
	}
	f := must(p.CallAsync(ctx, &af.RunOptions{Cancel: token}, js(t, ctx, `"a"`), js(t, ctx, `"m"`)))(t)
	defer f.Close()
	_, err = f.Wait()
	wantCode(t, err, af.CodeCancelled)
}

// Feedback is text on every field of a schema call: the int and bool fields
// take text, null is Zero, and a number given as feedback is refused.
func TestPullbackOfSchemaCallTakesTextFeedback(t *testing.T) {
	ctx := newCtx(t)
	echo := must(af.NewEchoProvider(`{}`))(t)
	defer echo.Close()
	must(0, ctx.Route("*", echo))(t)
	role := js(t, ctx, `"user"`)
	model := js(t, ctx, `"m"`)
	schema := js(t, ctx, `{"n": {"type": "int"}, "ok": {"type": "bool"}, "why": {"type": "str"}}`)
	ir := must(af.Trace(ctx, func(ctx *af.Context, in []*af.Value) (*af.Value, error) {
		msg, err := ctx.Dict([]string{"role", "content"}, []*af.Value{role, in[0]})
		if err != nil {
			return nil, err
		}
		defer msg.Close()
		msgs, err := ctx.List(msg)
		if err != nil {
			return nil, err
		}
		defer msgs.Close()
		return ctx.LMSchemaCall(msgs, model, schema)
	}, js(t, ctx, `"q"`)))(t)
	defer ir.Close()
	pb := must(ir.Pullback(ctx))(t)
	defer pb.Close()
	out := must(pb.Call(ctx, js(t, ctx, `["ticket"]`),
		js(t, ctx, `{"n": "too low for this ticket", "ok": "should be true: the ticket mentions a refund", "why": null}`)))(t)
	defer out.Close()
	cts := must(out.Index(1))(t)
	defer cts.Close()
	cq := must(cts.Index(0))(t)
	defer cq.Close()
	advice := must(cq.AsString())(t)
	for _, want := range []string{"- $.n = 0\n  feedback: too low for this ticket",
		"- $.ok = false\n  feedback: should be true: the ticket mentions a refund"} {
		if !strings.Contains(advice, want) {
			t.Fatalf("advice %q lacks %q", advice, want)
		}
	}
	_, err := pb.Call(ctx, js(t, ctx, `["ticket"]`), js(t, ctx, `{"n": 3, "ok": "", "why": ""}`))
	if e := wantCode(t, err, af.CodeInvalidArgument); !strings.Contains(e.Message, "feedback must be text") ||
		!strings.Contains(e.Message, `input[1]["n"]`) {
		t.Fatalf("message %q", e.Message)
	}
}

// A provider from a spec naming its type (af_provider_new); an unknown type is refused.
func TestProviderFromSpec(t *testing.T) {
	ctx := newCtx(t)
	echo := must(af.NewProvider(`{"type":"echo"}`))(t)
	defer echo.Close()
	must(0, ctx.Route("m", echo))(t)
	wantJSON(t, must(ctx.LMCall(js(t, ctx, `[{"role":"user","content":"hi"}]`), js(t, ctx, `"m"`)))(t), `"m|hi"`)
	_, err := af.NewProvider(`{"type":"carrier-pigeon"}`)
	var e *af.Error
	if !errors.As(err, &e) || e.Code() != af.CodeInvalidArgument || !strings.Contains(e.Error(), "unknown type") {
		t.Fatalf("an unknown type: %v", err)
	}
}
