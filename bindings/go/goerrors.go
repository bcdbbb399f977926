package af

/*
#include <stdint.h>
#include "af/af.h"

af_error_t* afgo_error_new(int32_t code, const char* msg, size_t len, uintptr_t handle);
uintptr_t afgo_error_handle(const af_error_t* e);
*/
import "C"

import (
	"errors"
	"runtime"
	"runtime/cgo"
)

// The Go errors that host functions, host providers and trace functions
// return cross libaf as error payloads (af_error_new_with): the af_error_t
// the callback hands libaf carries a small C struct holding a magic number
// and the cgo.Handle of the Go error (see trampoline.c). libaf keeps the
// payload on that node through every wrapping, across threads and runs, and
// releases it exactly once (the destroy callback deletes the handle), also
// when the error never comes back (KeepGoing turns it into a value).
// Converting libaf's error back (convertError) finds the node by its
// payload and gives the caller the callback's very error value: no lookup
// by code or message, so callbacks failing at once with the same text each
// get their own error back.

// newCError makes an owned af_error_t* for a Go error returned by a
// callback: an *Error (or an error wrapping one) keeps its code, any other
// error gets CodeCallback. The error carries err as its payload.
func newCError(err error) *C.af_error_t {
	code, msg := CodeCallback, err.Error()
	var ae *Error
	if errors.As(err, &ae) {
		code = ae.code
		if ae == err {
			msg = ae.Message
		}
	}
	return newCErrorWith(code, msg, err)
}

// newCErrorWith makes an owned af_error_t* with code and msg carrying
// goErr as its payload.
func newCErrorWith(code Code, msg string, goErr error) *C.af_error_t {
	p, n := cstr(msg)
	// afgo_error_new owns the handle from here: libaf (or afgo_error_new
	// itself, out of memory) deletes it through afgoHandleDelete.
	e := C.afgo_error_new(C.int32_t(code), p, n, C.uintptr_t(cgo.NewHandle(goErr)))
	runtime.KeepAlive(msg)
	return e
}

// payloadError is the Go error the node e itself carries as this binding's
// payload, or nil. e must stay alive meanwhile (it holds the handle).
func payloadError(e *C.af_error_t) error {
	h := C.afgo_error_handle(e)
	if h == 0 {
		return nil
	}
	err, _ := cgo.Handle(h).Value().(error)
	return err
}
