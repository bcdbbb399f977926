package af_test

import (
	"encoding/json"
	"sync"
	"testing"

	af "github.com/libaf/libaf/bindings/go"
)

// firstModel runs [lm(q, "first"), lm(q, "second")] with one request in
// flight, the first call tagged "urgent" when urgent, and returns the model
// whose request started first.
func firstModel(t *testing.T, urgent bool) string {
	ctx := newCtx(t)
	var mu sync.Mutex
	var order []string
	host := must(af.NewHostProvider(func(req *af.LMRequest) {
		var r struct {
			Model string `json:"model"`
		}
		if s, err := req.JSON(); err == nil {
			_ = json.Unmarshal([]byte(s), &r)
		}
		mu.Lock()
		order = append(order, r.Model)
		mu.Unlock()
		_ = req.Complete("ok")
	}))(t)
	defer host.Close()
	must(0, host.SetMaxInFlight(1))(t)
	must(0, ctx.Route("*", host))(t)
	call := func(ctx *af.Context, msgs *af.Value, model string) (*af.Value, error) {
		m, err := ctx.Str(model)
		if err != nil {
			return nil, err
		}
		defer m.Close()
		return ctx.LMCall(msgs, m)
	}
	fn := func(ctx *af.Context, in []*af.Value) (*af.Value, error) {
		msgs, err := ctx.FromJSON(`[{"role":"user","content":"q"}]`)
		if err != nil {
			return nil, err
		}
		defer msgs.Close()
		if urgent {
			if err := ctx.PushTag("urgent"); err != nil {
				return nil, err
			}
		}
		first, err := call(ctx, msgs, "first")
		if err != nil {
			return nil, err
		}
		defer first.Close()
		if urgent {
			if err := ctx.PopTag(); err != nil {
				return nil, err
			}
		}
		second, err := call(ctx, msgs, "second")
		if err != nil {
			return nil, err
		}
		defer second.Close()
		return ctx.List(first, second)
	}
	q := js(t, ctx, `"q"`)
	ir := must(af.Trace(ctx, fn, q))(t)
	defer ir.Close()
	out := must(ir.Call(ctx, q))(t)
	out.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(order) != 2 {
		t.Fatalf("requests %v", order)
	}
	return order[0]
}

func TestUrgentTagStartsFirst(t *testing.T) {
	// Untagged, the later of two equal roots starts first; the hint turns it round.
	if got := firstModel(t, false); got != "second" {
		t.Fatalf("untagged: %s started first", got)
	}
	if got := firstModel(t, true); got != "first" {
		t.Fatalf("urgent: %s started first", got)
	}
}
