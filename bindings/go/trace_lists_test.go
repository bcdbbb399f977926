package af_test

import (
	"strings"
	"testing"

	af "github.com/libaf/libaf/bindings/go"
)

// A traced list of any length (TraceWith's ListMask) calls a batched IR
// once; the program runs on lists of other lengths and names the path of an
// item of the wrong kind.
func TestTraceWithListOfAnyLength(t *testing.T) {
	ctx := newCtx(t)
	one := must(af.Trace(ctx, func(ctx *af.Context, in []*af.Value) (*af.Value, error) {
		return ctx.Format("Triage: {}", in[0])
	}, js(t, ctx, `"t"`)))(t)
	defer one.Close()
	each := must(one.Batch(ctx, nil))(t)
	defer each.Close()
	all := must(af.TraceWith(ctx, func(ctx *af.Context, in []*af.Value) (*af.Value, error) {
		return each.Call(ctx, in...)
	}, af.TraceOptions{ListMask: js(t, ctx, `[true]`)}, js(t, ctx, `["an example"]`)))(t)
	defer all.Close()
	// The batched equations are recorded once: the program is the batched IR.
	if !all.Equal(each) {
		t.Fatalf("the traced program is not the batched IR")
	}
	for in, want := range map[string]string{
		`["a"]`:         `["Triage: a"]`,
		`["a","b","c"]`: `["Triage: a","Triage: b","Triage: c"]`,
	} {
		out := must(all.Call(ctx, js(t, ctx, in)))(t)
		wantJSON(t, out, want)
		out.Close()
	}
	_, err := all.Call(ctx, js(t, ctx, `["a",2]`))
	if e := wantCode(t, err, af.CodeInvalidArgument); !strings.Contains(e.Message, "input[0][1]") {
		t.Fatalf("message lacks the path: %v", e)
	}
	_, err = af.TraceWith(ctx, func(ctx *af.Context, in []*af.Value) (*af.Value, error) {
		return in[0].Clone()
	}, af.TraceOptions{ListMask: js(t, ctx, `[true]`)}, js(t, ctx, `"not a list"`))
	if e := wantCode(t, err, af.CodeInvalidArgument); !strings.Contains(e.Message, "only a list") {
		t.Fatalf("unexpected message: %v", e)
	}
}
