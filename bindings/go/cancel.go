package af

/*
#include "af/af.h"
*/
import "C"

import (
	"runtime"
)

// CancelToken cancels every run given it in its RunOptions (running now or
// started later) with one Trigger, from any goroutine; the way to stop a
// blocking CallWith. Close it when done (runs already started keep their own
// reference); a finalizer frees a forgotten one.
type CancelToken struct {
	ptr cPtr[*C.af_cancel_t] // nil once closed; swapped so Close frees once
}

// NewCancelToken makes an untriggered token.
func NewCancelToken() (*CancelToken, error) {
	var p *C.af_cancel_t
	if err := takeError(C.af_cancel_new(&p)); err != nil {
		return nil, err
	}
	t := &CancelToken{}
	t.ptr.Store(p)
	runtime.SetFinalizer(t, (*CancelToken).Close)
	return t, nil
}

// Trigger cancels the token's runs; later runs with it end at once.
// Idempotent.
func (t *CancelToken) Trigger() {
	p := t.load()
	if p == nil {
		return
	}
	C.af_cancel_trigger(p)
	runtime.KeepAlive(t)
}

// Triggered reports whether Trigger was called.
func (t *CancelToken) Triggered() bool {
	p := t.load()
	if p == nil {
		return false
	}
	r := C.af_cancel_triggered(p) != 0
	runtime.KeepAlive(t)
	return r
}

// Close frees the handle. Idempotent, also from several goroutines at
// once; must not race with Trigger.
func (t *CancelToken) Close() {
	if t == nil {
		return
	}
	// Swap, not load-then-store: two goroutines closing at once must not
	// both free the pointer.
	if p, ok := t.ptr.Take(); ok {
		C.af_cancel_free(p)
		runtime.SetFinalizer(t, nil)
	}
}

// load is the token's C handle, nil for a nil or closed token.
func (t *CancelToken) load() *C.af_cancel_t {
	if t == nil {
		return nil
	}
	p, _ := t.ptr.Get()
	return p
}
