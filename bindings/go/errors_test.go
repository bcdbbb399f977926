package af_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	af "github.com/libaf/libaf/bindings/go"
)

func TestCodeStringAndSentinels(t *testing.T) {
	if got := af.CodeNotFound.String(); got != "not found" {
		t.Fatalf("CodeNotFound.String() = %q", got)
	}
	if got := af.Code(99).String(); got != "code 99" {
		t.Fatalf("unknown code prints %q", got)
	}
	ctx := newCtx(t)
	_, err := ctx.HostCall("nowhere", js(t, ctx, `"x"`))
	if !errors.Is(err, af.ErrNotFound) || errors.Is(err, af.ErrInvalidArgument) {
		t.Fatalf("errors.Is by code: %v", err)
	}
	// The hint names this package's method, not the C function.
	if msg := err.Error(); !strings.Contains(msg, "(*Engine).RegisterFunction") || strings.Contains(msg, "af_register_function") {
		t.Fatalf("hint: %v", err)
	}
}

func TestTimeoutAndCancelMatchTheContextErrors(t *testing.T) {
	ctx := newCtx(t)
	slow := must(af.NewEchoProvider(`{"latency_ms": 2000}`))(t)
	defer slow.Close()
	must(0, ctx.Route("*", slow))(t)
	p := must(af.Compile(ctx, askIR(t, ctx)))(t)
	defer p.Close()
	_, err := p.CallWith(ctx, &af.RunOptions{Timeout: 20 * time.Millisecond}, js(t, ctx, `"a"`), js(t, ctx, `"m"`))
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, af.ErrTimeout) || errors.Is(err, context.Canceled) {
		t.Fatalf("timeout: %v", err)
	}
	goctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = p.Run(goctx, ctx, nil, js(t, ctx, `"a"`), js(t, ctx, `"m"`))
	if !errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cancel: %v", err)
	}
}

// notFoundError is a host function's own error type.
type notFoundError struct{ query string }

func (e *notFoundError) Error() string { return "nothing found for " + e.query }

func TestHostErrorsComeBackByIdentity(t *testing.T) {
	ctx := newCtx(t)
	mine := &notFoundError{query: "cats"}
	must(0, ctx.RegisterFunction("search", js(t, ctx, `"str"`), func([]*af.Value) (*af.Value, error) {
		return nil, mine
	}))(t)
	ir := must(af.Trace(ctx, func(ctx *af.Context, in []*af.Value) (*af.Value, error) {
		return ctx.HostCall("search", in[0])
	}, js(t, ctx, `"x"`)))(t)
	defer ir.Close()
	p := must(af.Compile(ctx, ir))(t)
	defer p.Close()
	for _, call := range map[string]func() error{
		"Call": func() error { _, err := p.Call(ctx, js(t, ctx, `"q"`)); return err },
		"Wait": func() error {
			f := must(p.CallAsync(ctx, nil, js(t, ctx, `"q"`)))(t)
			defer f.Close()
			_, err := f.Wait()
			return err
		},
		"HostCall": func() error { _, err := ctx.HostCall("search", js(t, ctx, `"q"`)); return err },
	} {
		err := call()
		var got *notFoundError
		if !errors.As(err, &got) || got != mine || !errors.Is(err, mine) || !errors.Is(err, af.ErrCallback) {
			t.Fatalf("the host function's error is not in the chain: %v", err)
		}
	}

	// An *Error a host function returns comes back as that very value.
	coded := af.NewError(af.CodeProvider, "quota exceeded")
	must(0, ctx.RegisterFunction("coded", js(t, ctx, `"str"`), func([]*af.Value) (*af.Value, error) {
		return nil, coded
	}))(t)
	_, err := ctx.HostCall("coded")
	var cause *af.Error
	if !errors.As(errors.Unwrap(err), &cause) || cause != coded {
		t.Fatalf("cause of %v", err)
	}
}

func TestHostProviderErrorsComeBackByIdentity(t *testing.T) {
	ctx := newCtx(t)
	mine := &notFoundError{query: "model"}
	host := must(af.NewHostProvider(func(req *af.LMRequest) { req.Fail(mine) }))(t)
	defer host.Close()
	must(0, ctx.Route("*", host))(t)
	p := must(af.Compile(ctx, askIR(t, ctx)))(t)
	defer p.Close()
	_, err := p.Call(ctx, js(t, ctx, `"a"`), js(t, ctx, `"m"`))
	var got *notFoundError
	if !errors.As(err, &got) || got != mine || !errors.Is(err, af.ErrProvider) {
		t.Fatalf("the provider's error is not in the chain: %v", err)
	}
}

// Code names come from libaf's one table (af_error_code_name).
func TestCodeNameIsLibafs(t *testing.T) {
	for c, want := range map[af.Code]string{af.CodeNotFound: "NOT_FOUND", af.CodeOutOfMemory: "OUT_OF_MEMORY",
		af.CodeInternal: "INTERNAL", af.Code(99): "UNKNOWN"} {
		if got := c.Name(); got != want {
			t.Errorf("Code(%d).Name() = %q, want %q", int(c), got, want)
		}
	}
}
