package af

/*
#include "af/af.h"
*/
import "C"

import (
	"context"
	"runtime"
)

// CancelToken cancels every run given it in its RunOptions (running now or
// started later) with one Trigger, from any goroutine; the way to stop a
// blocking CallWith. Close it when done (runs already started keep their own
// reference); a finalizer frees a forgotten one.
type CancelToken struct {
	ptr cPtr[*C.af_cancel_t] // guarded: freed once closed and no use is in progress
}

// NewCancelToken makes an untriggered token.
func NewCancelToken() (*CancelToken, error) {
	var p *C.af_cancel_t
	if err := takeError(C.af_cancel_new(&p)); err != nil {
		return nil, err
	}
	t := &CancelToken{}
	t.ptr.init(p)
	runtime.SetFinalizer(t, (*CancelToken).Close)
	return t, nil
}

// Trigger cancels the token's runs; later runs with it end at once.
// Idempotent; a no-op on a closed token.
func (t *CancelToken) Trigger() {
	p, err := t.acquire()
	if err != nil {
		return
	}
	defer t.release()
	C.af_cancel_trigger(p)
}

// Triggered reports whether Trigger was called (false for a closed token).
func (t *CancelToken) Triggered() bool {
	p, err := t.acquire()
	if err != nil {
		return false
	}
	defer t.release()
	return C.af_cancel_triggered(p) != 0
}

// Close frees the handle. Idempotent, also from several goroutines at
// once; a Trigger racing it either triggers or is a no-op.
func (t *CancelToken) Close() {
	if t == nil {
		return
	}
	// Frees once however many goroutines close at once, and only after the
	// uses in progress (see cPtr).
	if t.ptr.Close(freeCancel) {
		runtime.SetFinalizer(t, nil)
	}
}

func freeCancel(p *C.af_cancel_t) { C.af_cancel_free(p) }

// acquire holds t open for a C call (see cPtr): its C handle, or the
// closed-handle error for a nil or closed token. Release it with release.
func (t *CancelToken) acquire() (*C.af_cancel_t, error) {
	if t != nil {
		if p, ok := t.ptr.Acquire(); ok {
			return p, nil
		}
	}
	return nil, errClosed("cancel token")
}

// release ends a use begun by a successful acquire.
func (t *CancelToken) release() { t.ptr.Release(freeCancel) }

// --- cancel scopes ------------------------------------------------------------

// WithCancelScope runs fn inside a cancel scope of token on eng: once token
// is triggered (from any goroutine), what fn runs on eng ends with
// CodeCancelled, noticed within about 20 ms — an eager LM call
// (LMCall, LMSchemaCall, LMToolCall and their With forms; the request is
// aborted), a HostCall of an async or blocking host function (the function's
// ctx is cancelled; its late answer is ignored), and a Call or CallWith of a
// *Program or *IR whose options give no cancel token of their own (a ctx
// that can end, or RunOptions.Cancel, brings its own token, which wins).
// A host function registered plain (neither async nor blocking) runs on
// the calling thread and is not interrupted; a lazy engine's evaluation takes
// its token from EvalWith, not from the scope. Under a token already
// triggered a call that waits ends at its first check, within 20 ms (an
// answer ready before that is still returned). WithCancelScope returns fn's error, or the
// error of opening or closing the scope (a nil or closed token or engine is
// CodeInvalidArgument, and fn does not run).
//
// libaf keeps cancel scopes per OS thread: fn runs on the calling goroutine,
// locked to its OS thread until the scope is closed, so the calls fn makes
// on that goroutine are in the scope however the Go scheduler runs them.
// Goroutines fn starts are not (they run on other threads). Scopes nest
// (also with WithCancelContext), and the token of every open scope stops
// what runs inside it: an inner scope never shields fn's calls from an
// enclosing scope's token, and a triggered token ends nothing outside its
// own scope (after WithCancelScope returns, calls run). The scope holds
// its own reference to token (closing the token inside fn is fine) and
// holds eng until fn returns. The scope is closed however fn returns, also
// when it panics.
//
// This is how to stop eager work that has no ctx parameter, for instance on
// Ctrl-C:
//
//	token, _ := af.NewCancelToken()
//	defer token.Close()
//	stop := make(chan os.Signal, 1)
//	signal.Notify(stop, os.Interrupt)
//	go func() { <-stop; token.Trigger() }()
//	err := eng.WithCancelScope(token, func() error {
//		reply, err := eng.LMCall(messages, model) // CodeCancelled on Ctrl-C
//		...
//	})
func (eng *Engine) WithCancelScope(token *CancelToken, fn func() error) (err error) {
	if fn == nil {
		return &Error{Message: "Engine.WithCancelScope: fn is nil", code: CodeInvalidArgument}
	}
	if token == nil {
		return &Error{Message: "Engine.WithCancelScope: token is nil (make one with NewCancelToken)", code: CodeInvalidArgument}
	}
	cp, err := eng.acquire()
	if err != nil {
		return err
	}
	// Held until the scope is popped: a Close of eng inside fn frees the
	// context only after that.
	defer eng.release()
	tp, err := token.acquire()
	if err != nil {
		return err
	}
	// The scope keeps a reference of its own: the token need only be held
	// for the push.
	runtime.LockOSThread()
	perr := takeError(C.af_cancel_scope_push(cp, tp))
	token.release()
	if perr != nil {
		runtime.UnlockOSThread()
		return perr
	}
	defer func() {
		// On the thread that pushed (still locked, also while a panic
		// unwinds); fn's error comes first.
		if perr := takeError(C.af_cancel_scope_pop(cp)); err == nil {
			err = perr
		}
		runtime.UnlockOSThread()
	}()
	return fn()
}

// WithCancelContext is WithCancelScope with a token triggered when ctx is
// done: what fn runs on eng (see WithCancelScope) ends with CodeCancelled
// once ctx is cancelled or its deadline passes — a deadline too ends those
// calls with CodeCancelled (errors.Is(err, context.Canceled) holds; ctx.Err()
// tells which). A ctx already done fails at once with CodeCancelled (caused
// by ctx.Err()) and fn does not run. A ctx that can never end (its Done
// is nil, as for context.Background() or context.TODO()) opens no scope:
// fn is simply called, on the calling goroutine, as if directly — a scope
// that can never fire would change nothing, since scopes nest without
// shielding (the scopes already open around the call still stop what fn
// runs).
//
//	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
//	defer stop()
//	err := eng.WithCancelContext(ctx, func() error {
//		_, err := eng.LMCall(messages, model) // CodeCancelled on Ctrl-C
//		return err
//	})
func (eng *Engine) WithCancelContext(ctx context.Context, fn func() error) error {
	if ctx == nil {
		return &Error{Message: "Engine.WithCancelContext: ctx is nil (pass context.Background())", code: CodeInvalidArgument}
	}
	if fn == nil {
		return &Error{Message: "Engine.WithCancelContext: fn is nil", code: CodeInvalidArgument}
	}
	if err := ctx.Err(); err != nil {
		return notStarted(err, false)
	}
	if ctx.Done() == nil {
		// Nothing can fire a scope of ctx, and a scope never shields from
		// an enclosing one: a scope would change nothing.
		return fn()
	}
	token, err := NewCancelToken()
	if err != nil {
		return err
	}
	defer token.Close()
	ended := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(ended)
		token.Trigger()
	})
	// The token is closed only once the callback cannot use it any more:
	// stopped before it started, or finished.
	defer func() {
		if !stop() {
			<-ended
		}
	}()
	return eng.WithCancelScope(token, fn)
}
