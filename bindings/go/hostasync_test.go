package af_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	af "github.com/libaf/libaf/bindings/go"
)

// fanOut compiles a program of eight independent calls of tool name.
func fanOut(t *testing.T, ctx *af.Context, name string) *af.Program {
	t.Helper()
	ir := must(af.Trace(ctx, func(c *af.Context, in []*af.Value) (*af.Value, error) {
		outs := make([]*af.Value, 0, 8)
		for i := int64(0); i < 8; i++ {
			arg, err := c.Int(i)
			if err != nil {
				return nil, err
			}
			r, err := c.HostCall(name, arg)
			if err != nil {
				return nil, err
			}
			outs = append(outs, r)
		}
		return c.List(outs...)
	}, js(t, ctx, `"x"`)))(t)
	return must(af.Compile(ctx, ir))(t)
}

func TestAsyncHostFunctionsOverlap(t *testing.T) {
	ctx := newCtx(t)
	must(0, ctx.RegisterFunctionAsync("slow", js(t, ctx, `"str"`), func(_ context.Context, args []*af.Value) (*af.Value, error) {
		i, err := args[0].AsInt()
		if err != nil {
			return nil, err
		}
		time.Sleep(200 * time.Millisecond)
		return ctx.Str(fmt.Sprintf("done:%d", i))
	}))(t)
	p := fanOut(t, ctx, "slow")
	t0 := time.Now()
	out := must(p.Call(ctx, js(t, ctx, `"x"`)))(t)
	elapsed := time.Since(t0)
	t.Logf("8 async 200 ms tools: %v", elapsed)
	if elapsed > 800*time.Millisecond {
		t.Fatalf("took %v", elapsed)
	}
	if s := must(out.JSON())(t); !strings.Contains(s, `"done:7"`) {
		t.Fatalf("got %s", s)
	}
}

func TestBlockingHostFunctionsRunOnTheHostPool(t *testing.T) {
	ctx := must(af.NewContextWith(`{"host_threads": 8}`))(t)
	defer ctx.Close()
	must(0, ctx.RegisterFunctionBlocking("slow", js(t, ctx, `"str"`), func(args []*af.Value) (*af.Value, error) {
		time.Sleep(200 * time.Millisecond)
		return ctx.Str("done")
	}))(t)
	t0 := time.Now()
	must(fanOut(t, ctx, "slow").Call(ctx, js(t, ctx, `"x"`)))(t)
	elapsed := time.Since(t0)
	t.Logf("8 blocking 200 ms tools, pool of 8: %v", elapsed)
	if elapsed > 800*time.Millisecond {
		t.Fatalf("took %v", elapsed)
	}
}

func TestCancellationReachesAnAsyncHostFunction(t *testing.T) {
	ctx := newCtx(t)
	var sawCancel atomic.Int32
	must(0, ctx.RegisterFunctionAsync("waits", js(t, ctx, `"str"`), func(c context.Context, _ []*af.Value) (*af.Value, error) {
		select {
		case <-c.Done():
			sawCancel.Add(1)
			return nil, c.Err()
		case <-time.After(5 * time.Second):
			return ctx.Str("late")
		}
	}))(t)
	t0 := time.Now()
	_, err := fanOut(t, ctx, "waits").CallWith(ctx, &af.RunOptions{Timeout: 100 * time.Millisecond}, js(t, ctx, `"x"`))
	wantCode(t, err, af.CodeTimeout)
	if time.Since(t0) > 2*time.Second {
		t.Fatalf("the run waited for its tools: %v", time.Since(t0))
	}
	deadline := time.Now().Add(2 * time.Second)
	for sawCancel.Load() < 8 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := sawCancel.Load(); n != 8 {
		t.Fatalf("%d of 8 tools saw the cancellation", n)
	}
}

func TestAsyncHostFunctionErrors(t *testing.T) {
	ctx := newCtx(t)
	must(0, ctx.RegisterFunctionAsync("wrong", js(t, ctx, `"str"`), func(context.Context, []*af.Value) (*af.Value, error) {
		return ctx.Int(1)
	}))(t)
	_, err := ctx.HostCall("wrong")
	if e := wantCode(t, err, af.CodeInvalidArgument); !strings.Contains(e.Error(), `"wrong"`) {
		t.Fatalf("does not name the function: %v", e)
	}
	must(0, ctx.RegisterFunctionAsync("panics", js(t, ctx, `"str"`), func(context.Context, []*af.Value) (*af.Value, error) {
		panic("tool down")
	}))(t)
	_, err = ctx.HostCall("panics")
	wantCode(t, err, af.CodeCallback)
	wantCode(t, ctx.RegisterFunctionAsync("nil", js(t, ctx, `"str"`), nil), af.CodeInvalidArgument)
	wantCode(t, ctx.RegisterFunctionBlocking("nil", js(t, ctx, `"str"`), nil), af.CodeInvalidArgument)
}
