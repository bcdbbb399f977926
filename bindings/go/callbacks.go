package af

/*
#include <stdint.h>
#include "af/af.h"
*/
import "C"

import (
	"fmt"
	"runtime"
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

//export afgoHostCallback
func afgoHostCallback(h C.uintptr_t, args **C.af_value_t, n C.size_t, out **C.af_value_t) (ret *C.af_error_t) {
	fn := cgo.Handle(h).Value().(HostFunc)
	ins := make([]*Value, int(n))
	if n > 0 {
		for i, p := range unsafe.Slice(args, int(n)) {
			ins[i] = borrowValue(p)
		}
	}
	defer func() {
		for _, v := range ins {
			v.ptr = nil // borrowed for the call only
		}
	}()
	defer func() {
		if r := recover(); r != nil {
			p, l := cstr(fmt.Sprint("panic in Go host function: ", r))
			ret = C.af_error_new(C.int32_t(CodeCallback), p, l)
		}
	}()
	res, err := fn(ins)
	if err == nil && res == nil {
		err = &Error{Message: "host function returned a nil *Value and a nil error", code: CodeInvalidArgument}
	}
	if err == nil {
		if _, herr := res.handle(); herr != nil {
			err = &Error{Message: "host function returned a closed *Value", code: CodeInvalidArgument}
		}
	}
	if err != nil {
		ce, _, _ := newCError(err)
		return ce
	}
	// libaf takes ownership of *out: it gets its own reference.
	*out = C.af_value_clone(res.ptr)
	runtime.KeepAlive(res)
	return nil
}

//export afgoSubmitCallback
func afgoSubmitCallback(h C.uintptr_t, req *C.af_lm_request_t) {
	fn := cgo.Handle(h).Value().(func(*LMRequest))
	r := newLMRequest(req)
	defer func() {
		if p := recover(); p != nil {
			r.Fail(NewError(CodeProvider, fmt.Sprint("panic in Go host provider: ", p)))
		}
	}()
	fn(r)
}

//export afgoProgressCallback
func afgoProgressCallback(h C.uintptr_t, done, total C.uint64_t) {
	fn := cgo.Handle(h).Value().(func(done, total uint64))
	defer func() { _ = recover() }() // progress is advisory; a panic must not reach libaf
	fn(uint64(done), uint64(total))
}

//export afgoDoneCallback
func afgoDoneCallback(h C.uintptr_t) {
	close(cgo.Handle(h).Value().(chan struct{}))
}
