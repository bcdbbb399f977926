package af_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	af "github.com/libaf/libaf/bindings/go"
)

// A callback's Go error crosses libaf as the payload of the C error, so
// callbacks failing at the same moment with the same message each give
// their own caller back their own error value.

// taggedError is a callback's error whose text is the same for every caller:
// only id (not in the message) tells them apart.
type taggedError struct{ id int }

func (*taggedError) Error() string { return "backend unavailable" }

// sameMomentIters is how many times each concurrent case is run.
const sameMomentIters = 200

// barrier lets n callbacks wait (a little) for each other, so that they
// fail at the same moment; a callback that waits in vain (libaf ran the
// calls one after the other) goes on after a short while.
type barrier struct {
	left atomic.Int32
	all  chan struct{}
}

func newBarrier(n int) *barrier {
	b := &barrier{all: make(chan struct{})}
	b.left.Store(int32(n))
	return b
}

func (b *barrier) arrive() {
	if b.left.Add(-1) == 0 {
		close(b.all)
	}
	select {
	case <-b.all:
	case <-time.After(200 * time.Millisecond):
	}
}

// concurrently runs call(id) for id 0..n-1 on n goroutines, sameMomentIters
// times, each time with a fresh barrier and a fresh table sent[id] of the
// errors the callbacks returned; call must return its caller's error.
// Reports every caller that did not get exactly its own error back.
func concurrently(t *testing.T, n int, setup func(b *barrier, sent []*taggedError), call func(id int) error) {
	t.Helper()
	for iter := 0; iter < sameMomentIters && !t.Failed(); iter++ {
		sent := make([]*taggedError, n)
		setup(newBarrier(n), sent)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for id := 0; id < n; id++ {
			wg.Add(1)
			go func(id int) {
				defer wg.Done()
				errs[id] = call(id)
			}(id)
		}
		wg.Wait()
		for id, err := range errs {
			var got *taggedError
			switch {
			case err == nil:
				t.Errorf("iteration %d, caller %d: no error", iter, id)
			case !errors.As(err, &got):
				t.Errorf("iteration %d, caller %d: no *taggedError in %v", iter, id, err)
			case got.id != id || got != sent[id]:
				t.Errorf("iteration %d, caller %d got caller %d's error", iter, id, got.id)
			case !errors.Is(err, sent[id]):
				t.Errorf("iteration %d, caller %d: errors.Is misses its own error in %v", iter, id, err)
			}
		}
	}
}

// failingHost is a host function that fails for argument "<id>" with a
// fresh *taggedError{id}, recorded in *sent, once every caller is in.
func failingHost(cur *struct {
	b    *barrier
	sent []*taggedError
}, mu *sync.Mutex) af.HostFunc {
	return func(args []*af.Value) (*af.Value, error) {
		s, err := args[0].AsString()
		if err != nil {
			return nil, err
		}
		var id int
		fmt.Sscan(s, &id)
		mu.Lock()
		b, sent := cur.b, cur.sent
		mu.Unlock()
		e := &taggedError{id: id}
		sent[id] = e
		b.arrive()
		return nil, e
	}
}

func TestSameMessageHostErrorsGoToTheirOwnCaller(t *testing.T) {
	ctx := newCtx(t)
	var mu sync.Mutex
	var cur struct {
		b    *barrier
		sent []*taggedError
	}
	setup := func(b *barrier, sent []*taggedError) {
		mu.Lock()
		cur.b, cur.sent = b, sent
		mu.Unlock()
	}
	must(0, ctx.RegisterFunction("fail", js(t, ctx, `"str"`), failingHost(&cur, &mu)))(t)
	must(0, ctx.RegisterFunctionBlocking("failBlocking", js(t, ctx, `"str"`), failingHost(&cur, &mu)))(t)
	async := failingHost(&cur, &mu)
	must(0, ctx.RegisterFunctionAsync("failAsync", js(t, ctx, `"str"`), func(_ context.Context, args []*af.Value) (*af.Value, error) {
		return async(args)
	}))(t)

	arg := func(id int) (*af.Value, error) { return ctx.Str(fmt.Sprint(id)) }
	hostCall := func(name string) func(id int) error {
		return func(id int) error {
			a, err := arg(id)
			if err != nil {
				return err
			}
			defer a.Close()
			v, err := ctx.HostCall(name, a)
			if v != nil {
				v.Close()
			}
			return err
		}
	}
	programCall := func(name string) func(id int) error {
		ir := must(af.Trace(ctx, func(ctx *af.Context, in []*af.Value) (*af.Value, error) {
			return ctx.HostCall(name, in[0])
		}, js(t, ctx, `"x"`)))(t)
		defer ir.Close()
		p := must(af.Compile(ctx, ir))(t)
		t.Cleanup(p.Close)
		return func(id int) error {
			a, err := arg(id)
			if err != nil {
				return err
			}
			defer a.Close()
			v, err := p.Call(ctx, a)
			if v != nil {
				v.Close()
			}
			return err
		}
	}
	for name, call := range map[string]func(int) error{
		"HostCall":         hostCall("fail"),
		"HostCallBlocking": hostCall("failBlocking"),
		"HostCallAsync":    hostCall("failAsync"),
		"Call":             programCall("fail"),
		"CallBlocking":     programCall("failBlocking"),
		"CallAsync":        programCall("failAsync"),
	} {
		t.Run(name, func(t *testing.T) {
			concurrently(t, 2, setup, call)
			concurrently(t, 4, setup, call)
		})
	}
}

// The same through a host provider: LMRequest.Fail with the same message.
func TestSameMessageProviderErrorsGoToTheirOwnCaller(t *testing.T) {
	ctx := newCtx(t)
	var mu sync.Mutex
	var b *barrier
	var sent []*taggedError
	host := must(af.NewHostProvider(func(req *af.LMRequest) {
		go func() {
			j, err := req.JSON()
			if err != nil {
				req.Fail(err)
				return
			}
			var r struct{ Messages []struct{ Content string } }
			if err := json.Unmarshal([]byte(j), &r); err != nil {
				req.Fail(err)
				return
			}
			var id int
			fmt.Sscanf(r.Messages[len(r.Messages)-1].Content, "Q:%d", &id)
			mu.Lock()
			bb, s := b, sent
			mu.Unlock()
			e := &taggedError{id: id}
			s[id] = e
			bb.arrive()
			req.Fail(e)
		}()
	}))(t)
	defer host.Close()
	must(0, ctx.Route("*", host))(t)
	p := must(af.Compile(ctx, askIR(t, ctx)))(t)
	defer p.Close()
	model := js(t, ctx, `"m"`)
	concurrently(t, 3, func(nb *barrier, ns []*taggedError) {
		mu.Lock()
		b, sent = nb, ns
		mu.Unlock()
	}, func(id int) error {
		q, err := ctx.Str(fmt.Sprint(id))
		if err != nil {
			return err
		}
		defer q.Close()
		v, err := p.Call(ctx, q, model)
		if v != nil {
			v.Close()
		}
		if err != nil && !errors.Is(err, af.ErrProvider) {
			return fmt.Errorf("not a provider error: %w", err)
		}
		return err
	})
}

// Traces on several goroutines failing at once with the same message.
func TestSameMessageTraceErrorsGoToTheirOwnCaller(t *testing.T) {
	ctx := newCtx(t)
	var mu sync.Mutex
	var b *barrier
	var sent []*taggedError
	x := js(t, ctx, `"x"`)
	concurrently(t, 3, func(nb *barrier, ns []*taggedError) {
		mu.Lock()
		b, sent = nb, ns
		mu.Unlock()
	}, func(id int) error {
		mu.Lock()
		bb, s := b, sent
		mu.Unlock()
		ir, err := af.Trace(ctx, func(*af.Context, []*af.Value) (*af.Value, error) {
			e := &taggedError{id: id}
			s[id] = e
			bb.arrive()
			return nil, fmt.Errorf("step %d: %w", 1, e) // same text for all
		}, x)
		if ir != nil {
			ir.Close()
		}
		if err != nil && !errors.Is(err, af.ErrCallback) {
			return fmt.Errorf("not a callback error: %w", err)
		}
		return err
	})
}

// An error crossing libaf twice keeps its identity: a host function fails
// a run of an inner program, made by the host function of an outer program
// (or by a trace function) that passes the error on, wrapped, with a
// message that is the same for every caller.
func TestNestedCallbackErrorsKeepTheirIdentity(t *testing.T) {
	ctx := newCtx(t)
	var mu sync.Mutex
	var cur struct {
		b    *barrier
		sent []*taggedError
	}
	setup := func(b *barrier, sent []*taggedError) {
		mu.Lock()
		cur.b, cur.sent = b, sent
		mu.Unlock()
	}
	must(0, ctx.RegisterFunction("inner", js(t, ctx, `"str"`), failingHost(&cur, &mu)))(t)
	innerIR := must(af.Trace(ctx, func(ctx *af.Context, in []*af.Value) (*af.Value, error) {
		return ctx.HostCall("inner", in[0])
	}, js(t, ctx, `"x"`)))(t)
	defer innerIR.Close()
	inner := must(af.Compile(ctx, innerIR))(t)
	defer inner.Close()
	// outer runs inner and passes its error on, wrapped, with a message
	// that is the same for every caller.
	must(0, ctx.RegisterFunctionBlocking("outer", js(t, ctx, `"str"`), func(args []*af.Value) (*af.Value, error) {
		v, err := inner.Call(ctx, args[0])
		if err != nil {
			var ae *af.Error
			if !errors.As(err, &ae) || ae.Code() != af.CodeCallback {
				return nil, fmt.Errorf("inner run: not a callback error: %v", err)
			}
			return nil, fmt.Errorf("inner run: %w", err)
		}
		return v, nil
	}))(t)
	outerIR := must(af.Trace(ctx, func(ctx *af.Context, in []*af.Value) (*af.Value, error) {
		return ctx.HostCall("outer", in[0])
	}, js(t, ctx, `"x"`)))(t)
	defer outerIR.Close()
	outer := must(af.Compile(ctx, outerIR))(t)
	defer outer.Close()

	concurrently(t, 2, setup, func(id int) error {
		a, err := ctx.Str(fmt.Sprint(id))
		if err != nil {
			return err
		}
		defer a.Close()
		v, err := outer.Call(ctx, a)
		if v != nil {
			v.Close()
		}
		if err == nil {
			return nil
		}
		// outer's error is a CALLBACK error whose cause is outer's own
		// wrapper, whose chain holds inner's CALLBACK error, whose cause
		// is the tagged error.
		ae := (*af.Error)(nil)
		if !errors.As(err, &ae) || ae.Code() != af.CodeCallback || !strings.Contains(err.Error(), "inner run: ") {
			return fmt.Errorf("outer error: %v", err)
		}
		return err
	})

	// A trace function that passes a run's host function error on fails
	// the trace with it, identity kept through both crossings.
	t.Run("trace", func(t *testing.T) {
		x := js(t, ctx, `"x"`)
		concurrently(t, 2, setup, func(id int) error {
			a, err := ctx.Str(fmt.Sprint(id))
			if err != nil {
				return err
			}
			defer a.Close()
			ir, err := af.Trace(ctx, func(*af.Context, []*af.Value) (*af.Value, error) {
				// Called here, inner would be recorded into the trace;
				// run it now, on a goroutine of its own.
				var v *af.Value
				var err error
				done := make(chan struct{})
				go func() {
					defer close(done)
					v, err = inner.Call(ctx, a)
				}()
				<-done
				if err != nil {
					return nil, fmt.Errorf("traced: %w", err)
				}
				return v, nil
			}, x)
			if ir != nil {
				ir.Close()
			}
			if err != nil && !errors.Is(err, af.ErrCallback) {
				return fmt.Errorf("not a callback error: %w", err)
			}
			return err
		})
	})
}
