package af_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	af "github.com/libaf/libaf/bindings/go"
)

// failEveryThird fails "q<i>" with i%3 == 0 at once and answers the others
// "ok q<i>" 30 ms later, counting the answers libaf had cancelled.
func failEveryThird(t *testing.T, cancelled *atomic.Int32) *af.Provider {
	return must(af.NewHostProvider(func(req *af.LMRequest) {
		go func() {
			j, err := req.JSON()
			if err != nil {
				req.Fail(err)
				return
			}
			var r struct {
				Messages []struct{ Content string }
			}
			if err := json.Unmarshal([]byte(j), &r); err != nil {
				req.Fail(err)
				return
			}
			content := r.Messages[len(r.Messages)-1].Content
			var i int
			fmt.Sscanf(content, "q%d", &i)
			if i%3 == 0 {
				req.Fail(af.NewError(af.CodeProvider, "item "+content+" refused"))
				return
			}
			time.Sleep(30 * time.Millisecond)
			if req.Cancelled() {
				cancelled.Add(1)
			}
			req.Complete("ok " + content)
		}()
	}))(t)
}

func TestItemErrorsIsolateBatchItems(t *testing.T) {
	ctx := newCtx(t)
	var cancelled atomic.Int32
	host := failEveryThird(t, &cancelled)
	defer host.Close()
	must(0, ctx.Route("m", host))(t)
	one := must(af.Trace(ctx, func(ctx *af.Context, in []*af.Value) (*af.Value, error) {
		role, _ := ctx.Str("user")
		msg, err := ctx.Dict([]string{"role", "content"}, []*af.Value{role, in[0]})
		if err != nil {
			return nil, err
		}
		msgs, _ := ctx.List(msg)
		model, _ := ctx.Str("m")
		a, err := ctx.LMCall(msgs, model)
		if err != nil {
			return nil, err
		}
		bang, _ := ctx.Str("!")
		marked, err := ctx.Concat(a, bang)
		if err != nil {
			return nil, err
		}
		return ctx.List(a, marked)
	}, js(t, ctx, `"q"`)))(t)
	p := must(af.Compile(ctx, must(one.Batch(ctx, nil))(t)))(t)
	defer p.Close()
	qs := js(t, ctx, `["q0","q1","q2","q3","q4","q5","q6","q7","q8"]`)
	out := must(p.CallWith(ctx, &af.RunOptions{ItemErrors: true}, qs))(t)
	var got [2][]any
	if err := json.Unmarshal([]byte(must(out.JSON())(t)), &got); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 9; i++ {
		a, m := got[0][i], got[1][i]
		if i%3 == 0 {
			e := a.(map[string]any)["error"].(map[string]any)
			if e["code"].(float64) != 6 || e["name"] != "PROVIDER" ||
				!strings.Contains(e["message"].(string), fmt.Sprintf("item q%d refused", i)) {
				t.Fatalf("item %d: %v", i, a)
			}
			if fmt.Sprint(m) != fmt.Sprint(a) {
				t.Fatalf("item %d: later step gave %v", i, m)
			}
		} else if a != fmt.Sprintf("ok q%d", i) || m != fmt.Sprintf("ok q%d!", i) {
			t.Fatalf("item %d: %v %v", i, a, m)
		}
	}
	if cancelled.Load() != 0 {
		t.Fatalf("%d items were cancelled", cancelled.Load())
	}
	_, err := p.Call(ctx, qs)
	wantCode(t, err, af.CodeProvider)
	time.Sleep(100 * time.Millisecond) // the cancelled run's answers finish
}
