package af_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	af "github.com/libaf/libaf/bindings/go"
)

func newLazy(t *testing.T) *af.Context {
	t.Helper()
	ctx := must(af.NewLazyContext())(t)
	t.Cleanup(ctx.Close)
	return ctx
}

// counter reads section.field out of ctx.Stats().
func counter(t *testing.T, ctx *af.Context, section, field string) int64 {
	t.Helper()
	var s map[string]map[string]int64
	if err := json.Unmarshal([]byte(must(ctx.Stats())(t)), &s); err != nil {
		t.Fatal(err)
	}
	return s[section][field]
}

func lazyAsk(t *testing.T, ctx *af.Context, q string) *af.Value {
	t.Helper()
	msgs := js(t, ctx, fmt.Sprintf(`[{"role":"user","content":%q}]`, q))
	out := must(ctx.LMCall(msgs, js(t, ctx, `"m"`)))(t)
	return out
}

func TestLazyPromiseEvaluatesWhenRead(t *testing.T) {
	ctx := newLazy(t)
	h := must(ctx.Format("Hello {}", js(t, ctx, `"go"`)))(t)
	defer h.Close()
	if h.Kind() != af.KindStr || h.Ready() {
		t.Fatalf("kind %v ready %v", h.Kind(), h.Ready())
	}
	wantJSON(t, h, `"Hello go"`)
	if !h.Ready() || counter(t, ctx, "lazy", "evaluated") != 1 {
		t.Fatal("not evaluated once")
	}
}

func TestLazyEvalRunsCallsTogether(t *testing.T) {
	ctx := newLazy(t)
	echo := must(af.NewEchoProvider(`{"latency_ms": 200}`))(t)
	defer echo.Close()
	must(0, ctx.Route("*", echo))(t)
	outs := make([]*af.Value, 10)
	for i := range outs {
		outs[i] = lazyAsk(t, ctx, fmt.Sprint("q", i))
		defer outs[i].Close()
	}
	t0 := time.Now()
	must(0, ctx.Eval(outs...))(t)
	if took := time.Since(t0); took > 1500*time.Millisecond {
		t.Fatalf("10 calls of 200 ms took %v", took)
	}
	wantJSON(t, outs[7], `"m|q7"`)
}

func TestLazyDroppedPromiseMakesNoCall(t *testing.T) {
	ctx := newLazy(t)
	echo := must(af.NewEchoProvider(""))(t)
	defer echo.Close()
	must(0, ctx.Route("*", echo))(t)
	lazyAsk(t, ctx, "never").Close()
	kept := lazyAsk(t, ctx, "kept")
	defer kept.Close()
	wantJSON(t, kept, `"m|kept"`)
	if counter(t, ctx, "lazy", "dropped") != 1 {
		t.Fatal("the dropped promise was not dropped")
	}
	var s map[string]int64
	if err := json.Unmarshal([]byte(must(echo.Stats())(t)), &s); err != nil || s["submitted"] != 1 {
		t.Fatalf("provider stats %v (%v)", s, err)
	}
}

func TestLazyPlanCacheAndBadInput(t *testing.T) {
	ctx := must(af.NewContextWith(`{"lazy": true, "plan_cache": {"max_entries": 4}}`))(t)
	defer ctx.Close()
	for i := 0; i < 20; i++ {
		v := must(ctx.Concat(js(t, ctx, `"n"`), js(t, ctx, fmt.Sprintf("%q", fmt.Sprint(i)))))(t)
		wantJSON(t, v, fmt.Sprintf("%q", fmt.Sprint("n", i)))
		v.Close()
	}
	if counter(t, ctx, "plan_cache", "misses") != 1 || counter(t, ctx, "plan_cache", "hits") != 19 {
		t.Fatal(must(ctx.Stats())(t))
	}
	other := newLazy(t)
	foreign := must(other.Format("{}", js(t, other, `"x"`)))(t)
	defer foreign.Close()
	_, err := ctx.Format("{}", foreign)
	wantCode(t, err, af.CodeInvalidArgument)
	wantCode(t, ctx.Eval(foreign), af.CodeInvalidArgument)
	_, err = af.NewContextWith(`{"lazy": "yes"}`)
	wantCode(t, err, af.CodeInvalidArgument)
}
