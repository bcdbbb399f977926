package af_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	af "github.com/libaf/libaf/bindings/go"
)

// ask is lm_call([{"role": "user", "content": content}], model).
func ask(ctx *af.Context, content *af.Value, model string) (*af.Value, error) {
	role, err := ctx.Str("user")
	if err != nil {
		return nil, err
	}
	defer role.Close()
	msg, err := ctx.Dict([]string{"role", "content"}, []*af.Value{role, content})
	if err != nil {
		return nil, err
	}
	defer msg.Close()
	msgs, err := ctx.List(msg)
	if err != nil {
		return nil, err
	}
	defer msgs.Close()
	m, err := ctx.Str(model)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	return ctx.LMCall(msgs, m)
}

// chain(q) = {a: lm(q, m1), b: lm(a, m2), c: q + q}
func traceChain(t *testing.T, ctx *af.Context) *af.IR {
	t.Helper()
	fn := func(ctx *af.Context, in []*af.Value) (*af.Value, error) {
		a, err := ask(ctx, in[0], "m1")
		if err != nil {
			return nil, err
		}
		defer a.Close()
		b, err := ask(ctx, a, "m2")
		if err != nil {
			return nil, err
		}
		defer b.Close()
		c, err := ctx.Concat(in[0], in[0])
		if err != nil {
			return nil, err
		}
		defer c.Close()
		return ctx.Dict([]string{"a", "b", "c"}, []*af.Value{a, b, c})
	}
	x := must(ctx.Str("q"))(t)
	defer x.Close()
	ir := must(af.Trace(ctx, fn, x))(t)
	t.Cleanup(ir.Close)
	return ir
}

func decode[T any](t *testing.T, s string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("bad JSON %q: %v", s, err)
	}
	return v
}

type eqnDoc struct {
	In []struct {
		Var *uint32 `json:"var"`
	} `json:"in"`
}
type varDoc struct {
	Producer *int `json:"producer"`
}
type relatedDoc struct {
	Eqns []int `json:"eqns"`
}

func TestInspectQueriesMatchNaiveReference(t *testing.T) {
	ctx := newCtx(t)
	ir := traceChain(t, ctx)
	n := ir.EqnCount()
	// reach[i][k]: eqn i transitively reads eqn k, from each equation's
	// input vars and their producers, relaxed to a fixpoint.
	reach := make([][]bool, n)
	for i := range reach {
		reach[i] = make([]bool, n)
		e := decode[eqnDoc](t, must(ir.EqnJSON(i))(t))
		for _, a := range e.In {
			if a.Var == nil {
				continue
			}
			v := decode[varDoc](t, must(ir.VarJSON(*a.Var))(t))
			if v.Producer != nil {
				reach[i][*v.Producer] = true
			}
		}
	}
	direct := make([][]bool, n)
	for i := range reach {
		direct[i] = append([]bool(nil), reach[i]...)
	}
	for changed := true; changed; {
		changed = false
		for a := 0; a < n; a++ {
			for b := 0; b < n; b++ {
				for c := 0; c < n; c++ {
					if reach[a][b] && reach[b][c] && !reach[a][c] {
						reach[a][c], changed = true, true
					}
				}
			}
		}
	}
	for i := 0; i < n; i++ {
		up := decode[relatedDoc](t, must(ir.RelatedJSON(i, af.Ancestors))(t))
		down := decode[relatedDoc](t, must(ir.RelatedJSON(i, af.Descendants))(t))
		var wantUp, wantDown []int
		for k := 0; k < n; k++ {
			if reach[i][k] {
				wantUp = append(wantUp, k)
			}
			if reach[k][i] {
				wantDown = append(wantDown, k)
			}
		}
		if len(up.Eqns) != len(wantUp) || len(down.Eqns) != len(wantDown) {
			t.Fatalf("eqn %d: ancestors %v want %v, descendants %v want %v", i, up.Eqns, wantUp, down.Eqns, wantDown)
		}
		for k := range wantUp {
			if up.Eqns[k] != wantUp[k] {
				t.Fatalf("eqn %d: ancestors %v want %v", i, up.Eqns, wantUp)
			}
		}
		for k := range wantDown {
			if down.Eqns[k] != wantDown[k] {
				t.Fatalf("eqn %d: descendants %v want %v", i, down.Eqns, wantDown)
			}
		}
	}
	whole := decode[struct {
		Order []int `json:"topological_order"`
	}](t, must(ir.JSON())(t))
	pos := map[int]int{}
	for p, e := range whole.Order {
		pos[e] = p
	}
	for i := 0; i < n; i++ {
		for k := 0; k < n; k++ {
			if direct[i][k] && pos[k] >= pos[i] {
				t.Fatalf("order %v puts eqn %d before eqn %d, which it reads", whole.Order, i, k)
			}
		}
	}
	_, err := ir.EqnJSON(99)
	wantCode(t, err, af.CodeInvalidArgument)
}

func TestInspectSliceRunsAndCostCounts(t *testing.T) {
	ctx := newCtx(t)
	echo := must(af.NewEchoProvider(""))(t)
	defer echo.Close()
	must(0, ctx.Route("*", echo))(t)
	ir := traceChain(t, ctx)
	q := js(t, ctx, `"hi"`)
	full := must(ir.Call(ctx, q))(t)
	defer full.Close()
	// Echo's usage: words sent ("hi", then "m1|hi") and replied.
	usage := decode[struct {
		Prompt     int `json:"prompt_tokens"`
		Completion int `json:"completion_tokens"`
	}](t, must(echo.Stats())(t))
	if usage.Prompt != 2 || usage.Completion != 2 {
		t.Fatalf("usage %+v, want 2 prompt and 2 completion tokens", usage)
	}
	b := must(ir.Slice([]string{"b"}, []string{"0"}))(t)
	defer b.Close()
	if b.EqnCount() >= ir.EqnCount() {
		t.Fatalf("the slice keeps %d of %d equations", b.EqnCount(), ir.EqnCount())
	}
	got := must(b.Call(ctx, q))(t)
	defer got.Close()
	want := must(full.Key("b"))(t)
	defer want.Close()
	wantJSON(t, got, "["+must(want.JSON())(t)+"]")
	_, err := ir.Slice([]string{"b"}, []string{})
	if ae := wantCode(t, err, af.CodeInvalidArgument); !strings.Contains(ae.Error(), "not among the chosen inputs") {
		t.Fatalf("message: %v", ae)
	}
	_, err = ir.Sub(0, "body")
	wantCode(t, err, af.CodeNotFound)
	cost := must(ir.CostJSON(3))(t)
	if cost != `{"batch":3,"total":{"calls":6,"models":{"m1":3,"m2":3}},"critical_path":{"calls":2,"models":{"m1":1,"m2":1}}}` {
		t.Fatalf("cost %s", cost)
	}
}

// named(q) = lm(q, m1) inside the name scopes triage, ask.
func traceNamed(t *testing.T, ctx *af.Context) *af.IR {
	t.Helper()
	fn := func(ctx *af.Context, in []*af.Value) (out *af.Value, err error) {
		err = ctx.WithName("triage", func() error {
			return ctx.WithName("ask", func() (err error) {
				out, err = ask(ctx, in[0], "m1")
				return err
			})
		})
		return out, err
	}
	x := must(ctx.Str("q"))(t)
	defer x.Close()
	ir := must(af.Trace(ctx, fn, x))(t)
	t.Cleanup(ir.Close)
	return ir
}

func TestNamePathsAreRecordedShownAndNameErrors(t *testing.T) {
	ctx := newCtx(t)
	ir := traceNamed(t, ctx)
	if text := must(ir.Text())(t); !strings.Contains(text, `@name="triage/ask"`) {
		t.Fatalf("text without the name path:\n%s", text)
	}
	eqn := decode[struct {
		NamePath []string `json:"name_path"`
	}](t, must(ir.EqnJSON(0))(t))
	if strings.Join(eqn.NamePath, "/") != "triage/ask" {
		t.Fatalf("name_path %v", eqn.NamePath)
	}
	// No route for m1: the failing call names its path.
	_, err := ir.Call(ctx, js(t, ctx, `"hi"`))
	if ae := wantCode(t, err, af.CodeNotFound); !strings.Contains(ae.Error(), "in triage/ask: ") {
		t.Fatalf("message: %v", ae)
	}
	wantCode(t, ctx.PushName("x"), af.CodeInvalidArgument) // outside a trace
	bad := func(ctx *af.Context, in []*af.Value) (*af.Value, error) {
		return nil, ctx.WithName("a/b", func() error { return nil })
	}
	_, err = af.Trace(ctx, bad, js(t, ctx, `"q"`))
	wantCode(t, err, af.CodeInvalidArgument)
}

// Echo counts words: "hi there" in (2), "m1|hi there" out (2).
func checkSummary(t *testing.T, summary string) {
	t.Helper()
	type counts struct {
		Calls, Failed, Retries int
		Prompt                 int `json:"prompt_tokens"`
		Completion             int `json:"completion_tokens"`
	}
	s := decode[struct {
		WallMs float64 `json:"wall_ms"`
		Total  counts
		Models map[string]counts
	}](t, summary)
	want := counts{Calls: 1, Prompt: 2, Completion: 2}
	if s.Total != want || s.Models["m1"] != want || len(s.Models) != 1 || s.WallMs < 0 {
		t.Fatalf("summary %s", summary)
	}
}

func TestRunSummariesAddUpEchoUsage(t *testing.T) {
	ctx := newCtx(t)
	echo := must(af.NewEchoProvider(""))(t)
	defer echo.Close()
	must(0, ctx.Route("*", echo))(t)
	p := must(af.Compile(ctx, traceNamed(t, ctx)))(t)
	defer p.Close()
	hi := js(t, ctx, `"hi there"`)
	out, summary, err := p.CallWithSummary(ctx, nil, hi)
	wantJSON(t, must(out, err)(t), `"m1|hi there"`)
	checkSummary(t, summary)
	f := must(p.CallAsync(ctx, &af.RunOptions{Summary: true}, hi))(t)
	defer f.Close()
	must(f.Wait())(t)
	checkSummary(t, must(f.Summary())(t))
	usage := decode[struct {
		Prompt int `json:"prompt_tokens"`
	}](t, must(echo.Stats())(t))
	if usage.Prompt != 4 {
		t.Fatalf("the provider counted %d prompt tokens, want 4", usage.Prompt)
	}
	// Misuse: the async option on a blocking call; no summary recorded.
	_, err = p.CallWith(ctx, &af.RunOptions{Summary: true}, hi)
	wantCode(t, err, af.CodeInvalidArgument)
	plain := must(p.CallAsync(ctx, nil, hi))(t)
	defer plain.Close()
	_, err = plain.Summary()
	wantCode(t, err, af.CodeInvalidArgument)
	// A failed run has a summary too; nothing ran, none.
	bare := newCtx(t)
	_, summary, err = p.CallWithSummary(bare, nil, hi)
	wantCode(t, err, af.CodeNotFound)
	if !strings.Contains(summary, `"calls":0`) {
		t.Fatalf("failed run's summary %q", summary)
	}
	_, summary, err = p.CallWithSummary(ctx, nil)
	wantCode(t, err, af.CodeInvalidArgument)
	if summary != "" {
		t.Fatalf("summary %q of a call that did not run", summary)
	}
}

// RelatedJSONWith bounds a Deep query's answer: at exactly the default
// answer's length it returns that answer, one byte less (or 1) is
// CodeInvalidArgument "over the limit of N"; a shallow query is not bounded.
func TestRelatedJSONWithBoundsDeepAnswers(t *testing.T) {
	ctx := newCtx(t)
	br := branchIRs(t, ctx)
	// f(k, x) = concat(s, s) where s = switch(format("{}", k), {a, b}, x)
	ir := must(af.Trace(ctx, func(ctx *af.Context, in []*af.Value) (*af.Value, error) {
		key, err := ctx.Format("{}", in[0])
		if err != nil {
			return nil, err
		}
		defer key.Close()
		s, err := ctx.Switch(key, br, in[1])
		if err != nil {
			return nil, err
		}
		defer s.Close()
		return ctx.Concat(s, s)
	}, js(t, ctx, `"k"`), js(t, ctx, `"x"`)))(t)
	defer ir.Close()
	if ir.EqnCount() != 3 || ir.EqnPrim(1) != "switch" || ir.EqnPrim(2) != "concat" {
		t.Fatalf("ir: %s", ir)
	}
	deep := must(ir.RelatedJSON(2, af.Ancestors|af.Deep))(t)
	doc := decode[struct {
		Eqns   []int    `json:"eqns"`
		Nested []string `json:"nested"`
	}](t, deep)
	if len(doc.Eqns) != 2 || len(doc.Nested) != 2 || doc.Nested[0] != "1/branches/a/0" {
		t.Fatalf("deep ancestors of the concat: %s", deep)
	}
	// 0 is the default limit.
	if got := must(ir.RelatedJSONWith(2, af.Ancestors|af.Deep, 0))(t); got != deep {
		t.Fatalf("max 0: %s, want %s", got, deep)
	}
	n := uint64(len(deep))
	if got := must(ir.RelatedJSONWith(2, af.Ancestors|af.Deep, n))(t); got != deep {
		t.Fatalf("max %d: %s, want %s", n, got, deep)
	}
	for _, limit := range []uint64{1, n - 1} {
		_, err := ir.RelatedJSONWith(2, af.Ancestors|af.Deep, limit)
		ae := wantCode(t, err, af.CodeInvalidArgument)
		if !strings.Contains(ae.Message, fmt.Sprintf("over the limit of %d", limit)) {
			t.Fatalf("max %d: message %q", limit, ae.Message)
		}
		// The hint names this package's method, not the C function.
		if strings.Contains(ae.Message, "af_ir_related_json") || !strings.Contains(ae.Message, "(*IR).RelatedJSONWith") {
			t.Fatalf("max %d: message %q", limit, ae.Message)
		}
	}
	// Descendants too; a shallow query is not bounded.
	down := must(ir.RelatedJSON(0, af.Descendants|af.Deep))(t)
	_, err := ir.RelatedJSONWith(0, af.Descendants|af.Deep, uint64(len(down))-1)
	wantCode(t, err, af.CodeInvalidArgument)
	if got := must(ir.RelatedJSONWith(0, af.Descendants|af.Deep, uint64(len(down))))(t); got != down {
		t.Fatalf("descendants: %s, want %s", got, down)
	}
	if got := must(ir.RelatedJSONWith(2, af.Ancestors, 1))(t); got != `{"eqns":[0,1]}` {
		t.Fatalf("shallow query with max 1: %s", got)
	}
	_, err = ir.RelatedJSONWith(99, af.Deep, 0)
	wantCode(t, err, af.CodeInvalidArgument)
	ir.Close()
	_, err = ir.RelatedJSONWith(2, af.Deep, 0)
	wantCode(t, err, af.CodeInvalidArgument) // closed
}
