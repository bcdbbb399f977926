package af_test

import (
	"errors"
	"strings"
	"sync"
	"testing"

	af "github.com/libaf/libaf/bindings/go"
)

// traceAsk traces q -> lm_call([user q], "m", params) (params "" = none).
func traceAsk(t *testing.T, ctx *af.Context, params string) *af.IR {
	fn := func(ctx *af.Context, in []*af.Value) (*af.Value, error) {
		role, err := ctx.Str("user")
		if err != nil {
			return nil, err
		}
		defer role.Close()
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
		model, err := ctx.Str("m")
		if err != nil {
			return nil, err
		}
		defer model.Close()
		if params == "" {
			return ctx.LMCall(msgs, model)
		}
		p, err := ctx.FromJSON(params)
		if err != nil {
			return nil, err
		}
		defer p.Close()
		return ctx.LMCallWith(msgs, model, p)
	}
	q := js(t, ctx, `"q"`)
	defer q.Close()
	return must(af.Trace(ctx, fn, q))(t)
}

// streamed runs ir on q with a stream callback; returns the result and the
// text each (equation, item) ended with.
func streamed(t *testing.T, ctx *af.Context, ir *af.IR, q string, tag string) (string, map[[2]uint64]string) {
	prog := must(af.Compile(ctx, ir))(t)
	defer prog.Close()
	var mu sync.Mutex
	got := map[[2]uint64]string{}
	opts := &af.RunOptions{StreamTag: tag, Stream: func(eqn uint32, item uint64, text string, restart bool) {
		mu.Lock()
		defer mu.Unlock()
		k := [2]uint64{uint64(eqn), item}
		if restart {
			delete(got, k)
		} else {
			got[k] += text
		}
	}}
	in := js(t, ctx, q)
	defer in.Close()
	out := must(prog.CallWith(ctx, opts, in))(t)
	defer out.Close()
	mu.Lock()
	defer mu.Unlock()
	return must(out.JSON())(t), got
}

func TestStreamedRunsDeliverPieces(t *testing.T) {
	ctx := newCtx(t)
	echo := must(af.NewEchoProvider(""))(t)
	defer echo.Close()
	must(0, ctx.Route("*", echo))(t)
	ir := traceAsk(t, ctx, "")
	defer ir.Close()
	out, got := streamed(t, ctx, ir, `"one two"`, "")
	if out != `"m|one two"` || got[[2]uint64{0, 0}] != "m|one two" || len(got) != 1 {
		t.Fatalf("result %s, pieces %v", out, got)
	}
	if _, got := streamed(t, ctx, ir, `"x"`, "live"); len(got) != 0 {
		t.Fatalf("an untagged equation streamed: %v", got)
	}
}

func TestHostProviderStreamsAndRestarts(t *testing.T) {
	ctx := newCtx(t)
	host := must(af.NewHostProvider(func(req *af.LMRequest) {
		if s, _ := req.JSON(); strings.Contains(s, `"stream":true`) {
			_ = req.Stream("wro")
			_ = req.RestartStream()
			_ = req.Stream("he")
			_ = req.Stream("llo")
		}
		_ = req.Complete("hello")
	}))(t)
	defer host.Close()
	must(0, ctx.Route("*", host))(t)
	ir := traceAsk(t, ctx, "")
	defer ir.Close()
	out, got := streamed(t, ctx, ir, `"q"`, "")
	if out != `"hello"` || got[[2]uint64{0, 0}] != "hello" {
		t.Fatalf("result %s, pieces %v", out, got)
	}
}

func TestSamplingParamsAreInTheIR(t *testing.T) {
	ctx := newCtx(t)
	ir := traceAsk(t, ctx, `{"temperature": 0, "max_tokens": 16}`)
	defer ir.Close()
	if text := must(ir.Text())(t); !strings.Contains(text, "max_tokens=16") || !strings.Contains(text, "temperature=0.0") {
		t.Fatalf("IR %s", text)
	}
}

func TestFallbackRoutesAndProviderOptions(t *testing.T) {
	ctx := newCtx(t)
	down := must(af.NewHostProvider(func(req *af.LMRequest) {
		_ = req.Fail(af.NewError(af.CodeProvider, "down"))
	}))(t)
	defer down.Close()
	echo := must(af.NewEchoProvider(""))(t)
	defer echo.Close()
	must(0, ctx.RouteFallback("*", down, echo))(t)
	ir := traceAsk(t, ctx, "")
	defer ir.Close()
	q := js(t, ctx, `"q"`)
	defer q.Close()
	out := must(ir.Call(ctx, q))(t)
	defer out.Close()
	if s := must(out.JSON())(t); s != `"m|q"` {
		t.Fatalf("fallback answered %s", s)
	}
	var e *af.Error
	if err := ctx.RouteFallback("*"); !errors.As(err, &e) || e.Code() != af.CodeInvalidArgument {
		t.Fatalf("an empty fallback list: %v", err)
	}
	must(0, echo.SetOptions(`{"requests_per_minute": 60, "schema_retries": 1}`))(t)
	if s := must(echo.Stats())(t); !strings.Contains(s, `"requests_per_minute":60`) || !strings.Contains(s, `"schema_retries":1`) {
		t.Fatalf("stats %s", s)
	}
	if err := echo.SetOptions(`{"rpm": 1}`); !errors.As(err, &e) || !strings.Contains(e.Error(), "rpm") {
		t.Fatalf("an unknown option: %v", err)
	}
}
