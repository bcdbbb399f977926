package af

/*
#include "af/af.h"
*/
import "C"

import (
	"runtime"
)

// Engine is libaf's context (af_context_t): it owns what a program needs at
// run time — host functions, provider routes, run-time scopes (collect,
// inject, memoize), the scheduler and the plan cache. Values and IRs are
// not tied to one engine. An Engine may be used from several goroutines; it
// serializes its own mutations.
//
// It is called Engine in Go so that "ctx" stays the context.Context that
// blocking calls take first (see Engine.Call).
type Engine struct {
	ptr cPtr[*C.af_context_t] // nil once closed; swapped so Close frees once
}

// Context is the former name of Engine.
//
// Deprecated: use Engine (the same type: code written with Context keeps
// compiling and interoperates with code written with Engine).
type Context = Engine

// NewEngine makes a new engine. Close it when done (a finalizer frees a
// forgotten one).
func NewEngine() (*Engine, error) {
	var p *C.af_context_t
	if err := takeError(C.af_context_new(&p)); err != nil {
		return nil, err
	}
	return wrapEngine(p), nil
}

// NewContext is NewEngine.
//
// Deprecated: use NewEngine.
func NewContext() (*Engine, error) { return NewEngine() }

// wrapEngine owns a new af_context_t* (closed by Close or the finalizer).
func wrapEngine(p *C.af_context_t) *Engine {
	eng := &Engine{}
	eng.ptr.Store(p)
	runtime.SetFinalizer(eng, (*Engine).Close)
	return eng
}

// Close frees the engine. It is idempotent. Values, IRs and walks made
// with the engine stay valid (they are not tied to it), but do not Close an
// engine while a call that uses it (Trace, Call, a Walk step) is running.
func (eng *Engine) Close() {
	if eng == nil {
		return
	}
	// Swap, not load-then-store: two goroutines closing at once must not
	// both free the pointer.
	if p, ok := eng.ptr.Take(); ok {
		C.af_context_free(p)
		runtime.SetFinalizer(eng, nil)
	}
}

func (eng *Engine) handle() (*C.af_context_t, error) {
	if eng == nil {
		return nil, errClosed("engine")
	}
	if p, ok := eng.ptr.Get(); ok {
		return p, nil
	}
	return nil, errClosed("engine")
}
