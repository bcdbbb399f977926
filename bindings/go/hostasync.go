package af

/*
#include <stdint.h>
#include "af/af.h"

af_error_t* afgo_register_function_blocking(af_context_t* ctx, const char* name, size_t name_len,
                                            uintptr_t handle, const af_value_t* result_kinds);
af_error_t* afgo_register_function_async(af_context_t* ctx, const char* name, size_t name_len,
                                         uintptr_t handle, const af_value_t* result_kinds);
*/
import "C"

import (
	"context"
	"fmt"
	"runtime"
	"runtime/cgo"
	"time"
	"unsafe"
)

// AsyncHostFunc is an async host function: it runs on a goroutine of its
// own, so no libaf thread waits for it. ctx is cancelled when the run no
// longer wants the result (cancelled, timed out, failed elsewhere); return
// then (what it returns is ignored). args are owned by the call. Errors and
// panics are reported as for HostFunc.
type AsyncHostFunc func(ctx context.Context, args []*Value) (*Value, error)

// cancelPoll is how often a running AsyncHostFunc's request is checked for
// cancellation.
const cancelPoll = 10 * time.Millisecond

// RegisterFunctionBlocking is RegisterFunction for functions that block
// (network, disk, subprocesses): each call runs on the engine's host pool,
// at most "host_threads" at once (an engine option, default 8), never on a
// scheduler thread.
func (eng *Engine) RegisterFunctionBlocking(name string, resultKinds *Value, fn HostFunc) error {
	if fn == nil {
		return &Error{Message: "RegisterFunctionBlocking: fn is nil", code: CodeInvalidArgument}
	}
	return eng.registerHost(name, resultKinds, fn, func(cp *C.af_context_t, p *C.char, n C.size_t, h C.uintptr_t, kp *C.af_value_t) *C.af_error_t {
		return C.afgo_register_function_blocking(cp, p, n, h, kp)
	})
}

// RegisterFunctionAsync registers fn as async host function name on eng (see
// RegisterFunction for resultKinds and the function's lifetime). Outside a
// trace, HostCall waits for it.
func (eng *Engine) RegisterFunctionAsync(name string, resultKinds *Value, fn AsyncHostFunc) error {
	if fn == nil {
		return &Error{Message: "RegisterFunctionAsync: fn is nil", code: CodeInvalidArgument}
	}
	return eng.registerHost(name, resultKinds, fn, func(cp *C.af_context_t, p *C.char, n C.size_t, h C.uintptr_t, kp *C.af_value_t) *C.af_error_t {
		return C.afgo_register_function_async(cp, p, n, h, kp)
	})
}

// registerHost is the part the registrations share: handles, a cgo.Handle
// for fn (deleted by libaf's destroy callback, also on error).
func (eng *Engine) registerHost(name string, resultKinds *Value, fn any,
	register func(*C.af_context_t, *C.char, C.size_t, C.uintptr_t, *C.af_value_t) *C.af_error_t) error {
	cp, err := eng.acquire()
	if err != nil {
		return err
	}
	defer eng.release()
	kp, err := resultKinds.acquire()
	if err != nil {
		return err
	}
	defer resultKinds.release()
	h := cgo.NewHandle(fn)
	p, n := cstr(name)
	e := register(cp, p, n, C.uintptr_t(h), kp)
	runtime.KeepAlive(name)
	return takeError(e)
}

//export afgoAsyncHostCallback
func afgoAsyncHostCallback(h C.uintptr_t, args **C.af_value_t, n C.size_t, req *C.af_host_request_t) {
	fn := cgo.Handle(h).Value().(AsyncHostFunc)
	ins := make([]*Value, int(n))
	if n > 0 {
		for i, p := range unsafe.Slice(args, int(n)) {
			ins[i] = newValue(C.af_value_clone(p)) // kept past this callback
		}
	}
	go runAsyncHost(fn, ins, req)
}

// runAsyncHost runs one call and finishes its request.
func runAsyncHost(fn AsyncHostFunc, args []*Value, req *C.af_host_request_t) {
	ctx, cancel := context.WithCancel(context.Background())
	watching := make(chan struct{})
	defer func() {
		cancel()
		<-watching // the watcher reads req: free it only after the watcher ends
		C.af_host_request_free(req)
	}()
	go func() {
		defer close(watching)
		t := time.NewTicker(cancelPoll)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if C.af_host_request_cancelled(req) != 0 {
					cancel()
					return
				}
			}
		}
	}()
	var res *Value
	var err error
	panicked, panicVal, goexited := runGuarded(func() { res, err = fn(ctx, args) })
	switch {
	case panicked:
		err = NewError(CodeCallback, fmt.Sprint("panic in Go host function: ", panicVal))
	case goexited:
		err = NewError(CodeCallback, goexitMessage("Go host function"))
	case err == nil && res == nil:
		err = &Error{Message: "host function returned a nil *Value and a nil error", code: CodeInvalidArgument}
	}
	if err == nil {
		p, herr := res.acquire()
		if herr == nil {
			// A refusal (wrong kinds) already failed the call with the same error.
			C.af_error_free(C.af_host_request_complete(req, p))
			res.release()
			return
		}
		err = &Error{Message: "host function returned a closed *Value", code: CodeInvalidArgument}
	}
	C.af_error_free(C.af_host_request_fail(req, newCError(err)))
}
