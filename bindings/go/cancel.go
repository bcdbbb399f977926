package af

/*
#include "af/af.h"
*/
import "C"

import "runtime"

// CancelToken cancels every run given it in its RunOptions (running now or
// started later) with one Trigger, from any goroutine; the way to stop a
// blocking CallWith. Close it when done (runs already started keep their own
// reference); a finalizer frees a forgotten one.
type CancelToken struct {
	ptr *C.af_cancel_t
}

// NewCancelToken makes an untriggered token.
func NewCancelToken() (*CancelToken, error) {
	var p *C.af_cancel_t
	if err := takeError(C.af_cancel_new(&p)); err != nil {
		return nil, err
	}
	t := &CancelToken{ptr: p}
	runtime.SetFinalizer(t, (*CancelToken).Close)
	return t, nil
}

// Trigger cancels the token's runs; later runs with it end at once.
// Idempotent.
func (t *CancelToken) Trigger() {
	if t == nil || t.ptr == nil {
		return
	}
	C.af_cancel_trigger(t.ptr)
	runtime.KeepAlive(t)
}

// Triggered reports whether Trigger was called.
func (t *CancelToken) Triggered() bool {
	if t == nil || t.ptr == nil {
		return false
	}
	r := C.af_cancel_triggered(t.ptr) != 0
	runtime.KeepAlive(t)
	return r
}

// Close frees the handle. Idempotent; must not race with Trigger.
func (t *CancelToken) Close() {
	if t == nil || t.ptr == nil {
		return
	}
	C.af_cancel_free(t.ptr)
	t.ptr = nil
	runtime.SetFinalizer(t, nil)
}
