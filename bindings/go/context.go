package af

/*
#include "af/af.h"
*/
import "C"

import (
	"runtime"
)

// Context owns what a program needs at run time: host functions, provider
// routes, run-time scopes (collect, inject, memoize) and the scheduler.
// Values and IRs are not tied to one context. A Context may be used from
// several goroutines; it serializes its own mutations.
type Context struct {
	ptr cPtr[*C.af_context_t] // nil once closed; swapped so Close frees once
}

// NewContext makes a new context. Close it when done (a finalizer frees a
// forgotten one).
func NewContext() (*Context, error) {
	var p *C.af_context_t
	if err := takeError(C.af_context_new(&p)); err != nil {
		return nil, err
	}
	return wrapContext(p), nil
}

// wrapContext owns a new af_context_t* (closed by Close or the finalizer).
func wrapContext(p *C.af_context_t) *Context {
	c := &Context{}
	c.ptr.Store(p)
	runtime.SetFinalizer(c, (*Context).Close)
	return c
}

// Close frees the context. It is idempotent. Values, IRs and walks made
// with the context stay valid (they are not tied to it), but do not Close a
// context while a call that uses it (Trace, Call, a Walk step) is running.
func (c *Context) Close() {
	if c == nil {
		return
	}
	// Swap, not load-then-store: two goroutines closing at once must not
	// both free the pointer.
	if p, ok := c.ptr.Take(); ok {
		C.af_context_free(p)
		runtime.SetFinalizer(c, nil)
	}
}

func (c *Context) handle() (*C.af_context_t, error) {
	if c == nil {
		return nil, errClosed("context")
	}
	if p, ok := c.ptr.Get(); ok {
		return p, nil
	}
	return nil, errClosed("context")
}
