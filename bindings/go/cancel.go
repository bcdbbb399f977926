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
