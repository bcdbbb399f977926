package af

/*
#include <stdint.h>
#include "af/af.h"
*/
import "C"

import (
	"fmt"
	"runtime/cgo"
	"unsafe"
)

// Exported trampolines of the callbacks libaf calls from its own threads
// (host functions, host providers, progress, completion). Each receives the
// cgo.Handle of its Go closure; afgoHandleDelete (the destroy callback)
// releases it exactly once.

//export afgoHandleDelete
func afgoHandleDelete(h C.uintptr_t) {
	cgo.Handle(h).Delete()
}

// runGuarded runs fn on a goroutine of its own and waits for it. Callbacks
// run on libaf threads with C++ frames below them: a panic would unwind
// through those frames, and runtime.Goexit (what t.Fatal and t.FailNow call)
// would end the goroutine and abandon them for good, leaving libaf's locks
// held so that a later call never returns. On its own goroutine fn may do
// either: the frames below stay intact, and the callback reports what
// happened. Reports fn's panic value, or whether fn called runtime.Goexit.
func runGuarded(fn func()) (panicked bool, panicVal any, goexited bool) {
	return runGuardedServing(fn, nil)
}

// runGuardedServing is runGuarded that, while it waits, records on the
// calling (libaf) thread the ProfileEvents fn's goroutine sends to events
// (see ProfileEvent; nil = none).
func runGuardedServing(fn func(), events chan profileEvent) (panicked bool, panicVal any, goexited bool) {
	done := make(chan struct{})
	go func() {
		returned := false
		var id uint64
		if events != nil {
			id = goid()
			hostCalls.Store(id, events)
		}
		defer func() {
			if !returned {
				// recover is nil during Goexit; a panic(nil) arrives as a
				// *runtime.PanicNilError, so nil means Goexit.
				if r := recover(); r != nil {
					panicked, panicVal = true, r
				} else {
					goexited = true
				}
			}
			if events != nil {
				hostCalls.Delete(id)
			}
			close(done)
		}()
		fn()
		returned = true
	}()
	for {
		select {
		case <-done:
			return
		case ev := <-events: // never ready when events is nil
			ev.record()
		}
	}
}

// goexitMessage is the error text of a callback that called runtime.Goexit.
func goexitMessage(what string) string {
	return what + " called runtime.Goexit (t.Fatal or t.FailNow?); report a failure by returning an error instead"
}

//export afgoHostCallback
func afgoHostCallback(h C.uintptr_t, args **C.af_value_t, n C.size_t, out **C.af_value_t) *C.af_error_t {
	fn := cgo.Handle(h).Value().(HostFunc)
	ins := make([]*Value, int(n))
	if n > 0 {
		for i, p := range unsafe.Slice(args, int(n)) {
			ins[i] = borrowValue(p)
		}
	}
	var res *Value
	var err error
	var events chan profileEvent // ProfileEvent from fn, once a run may profile
	if hostProfiling.Load() {
		events = make(chan profileEvent)
	}
	panicked, panicVal, goexited := runGuardedServing(func() { res, err = fn(ins) }, events)
	for _, v := range ins {
		v.endBorrow() // borrowed for the call only
	}
	switch {
	case panicked:
		err = NewError(CodeCallback, fmt.Sprint("panic in Go host function: ", panicVal))
	case goexited:
		err = NewError(CodeCallback, goexitMessage("Go host function"))
	case err == nil && res == nil:
		err = &Error{Message: "host function returned a nil *Value and a nil error", code: CodeInvalidArgument}
	}
	var resPtr *C.af_value_t
	if err == nil {
		p, herr := res.acquire()
		if herr != nil {
			err = &Error{Message: "host function returned a closed *Value", code: CodeInvalidArgument}
		} else {
			defer res.release()
		}
		resPtr = p
	}
	if err != nil {
		return newCError(err) // carries err back to the caller (goerrors.go)
	}
	// libaf takes ownership of *out: it gets its own reference.
	*out = C.af_value_clone(resPtr)
	return nil
}

//export afgoSubmitCallback
func afgoSubmitCallback(h C.uintptr_t, req *C.af_lm_request_t) {
	fn := cgo.Handle(h).Value().(func(*LMRequest))
	r := newLMRequest(req)
	panicked, panicVal, goexited := runGuarded(func() { fn(r) })
	switch {
	case panicked:
		_ = r.Fail(NewError(CodeProvider, fmt.Sprint("panic in Go host provider: ", panicVal)))
	case goexited:
		_ = r.Fail(NewError(CodeProvider, goexitMessage("Go host provider")))
	}
}

//export afgoProgressCallback
func afgoProgressCallback(h C.uintptr_t, done, total C.uint64_t) {
	fn := cgo.Handle(h).Value().(func(done, total uint64))
	// Progress is advisory: a panic or Goexit in it is dropped.
	runGuarded(func() { fn(uint64(done), uint64(total)) })
}

//export afgoStreamCallback
func afgoStreamCallback(h C.uintptr_t, eqn C.uint32_t, item C.uint64_t, text *C.char, n C.size_t) {
	fn := cgo.Handle(h).Value().(func(eqn uint32, item uint64, text string, restart bool))
	piece := ""
	if text != nil {
		piece = C.GoStringN(text, C.int(n))
	}
	// Like progress: a panic or Goexit in it is dropped.
	runGuarded(func() { fn(uint32(eqn), uint64(item), piece, text == nil) })
}

//export afgoDoneCallback
func afgoDoneCallback(h C.uintptr_t) {
	close(cgo.Handle(h).Value().(*runPins).done)
}
