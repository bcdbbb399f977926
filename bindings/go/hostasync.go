package af

/*
#include <stdint.h>
#include "af/af.h"

af_error_t* afgo_register_function_with(af_context_t* ctx, const char* name, size_t name_len,
                                        uint32_t flags, int async, uintptr_t handle,
                                        const af_value_t* result_kinds);
*/
import "C"

import (
	"context"
	"fmt"
	"runtime"
	"runtime/cgo"
	"strings"
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
// scheduler thread. It is RegisterFunctionWith with FunctionOptions{Blocking:
// true}: an effectful function.
func (eng *Engine) RegisterFunctionBlocking(name string, resultKinds *Value, fn HostFunc) error {
	return eng.registerHost("RegisterFunctionBlocking", name, resultKinds, &FunctionOptions{Blocking: true}, false, fn)
}

// RegisterFunctionAsync registers fn as async host function name on eng (see
// RegisterFunction for resultKinds and the function's lifetime). Outside a
// trace, HostCall waits for it. The function is effectful (see
// RegisterFunctionAsyncWith for a pure one).
func (eng *Engine) RegisterFunctionAsync(name string, resultKinds *Value, fn AsyncHostFunc) error {
	return eng.registerHost("RegisterFunctionAsync", name, resultKinds, nil, true, fn)
}

// RegisterFunctionAsyncWith is RegisterFunctionAsync with opts (nil: the
// defaults): FunctionOptions.Pure as for RegisterFunctionWith.
// FunctionOptions.Blocking is CodeInvalidArgument (an async function never
// blocks a thread).
func (eng *Engine) RegisterFunctionAsyncWith(name string, resultKinds *Value, opts *FunctionOptions, fn AsyncHostFunc) error {
	return eng.registerHost("RegisterFunctionAsyncWith", name, resultKinds, opts, true, fn)
}

// registerHost is every registration: one af_register_function_with call
// (through afgo_register_function_with, trampoline.c) with the flags of
// opts, fn held by a cgo.Handle that libaf's destroy callback deletes
// exactly once, also on error. method names the exported method for
// messages; fn is a HostFunc (async false) or an AsyncHostFunc (async true).
func (eng *Engine) registerHost(method, name string, resultKinds *Value, opts *FunctionOptions, async bool, fn any) error {
	switch f := fn.(type) {
	case HostFunc:
		if f == nil {
			return &Error{Message: method + ": fn is nil", code: CodeInvalidArgument}
		}
	case AsyncHostFunc:
		if f == nil {
			return &Error{Message: method + ": fn is nil", code: CodeInvalidArgument}
		}
	}
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
	var isAsync C.int
	if async {
		isAsync = 1
	}
	h := cgo.NewHandle(fn)
	p, n := cstr(name)
	e := C.afgo_register_function_with(cp, p, n, opts.flags(), isAsync, C.uintptr_t(h), kp)
	runtime.KeepAlive(name)
	err = takeError(e)
	if ae, ok := err.(*Error); ok && ae.fromLib {
		// libaf names af_register_function_with (bindingNames made it
		// RegisterFunctionWith): name the method the caller called.
		ae.Message = strings.Replace(ae.Message, "(*Engine).RegisterFunctionWith", "(*Engine)."+method, 1)
	}
	return err
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
