package af

/*
#include <stdint.h>
#include <stdlib.h>
#include "af/af.h"

af_error_t* afgo_register_function(af_context_t* ctx, const char* name, size_t name_len,
                                   uintptr_t handle, const af_value_t* result_kinds);
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// Branch is one named branch of Switch.
type Branch struct {
	Name string
	IR   *IR
}

// Switch runs the branch named by key (a str) on the operands. Every branch
// takes the operands' structure and kinds; all return one structure.
// Recorded inside a trace, evaluated outside. CodeNotFound (when it runs)
// for a key no branch has.
func (eng *Engine) Switch(key *Value, branches []Branch, operands ...*Value) (*Value, error) {
	cp, err := eng.handle()
	if err != nil {
		return nil, err
	}
	kp, err := key.handle()
	if err != nil {
		return nil, err
	}
	ops, err := cValues(operands)
	if err != nil {
		return nil, err
	}
	// The arrays live in C memory: an array of pointers into Go strings
	// would be Go memory holding Go pointers, which cgo forbids.
	n := len(branches)
	names, namesMem := cSlice[*C.char](n)
	defer C.free(namesMem)
	lens, lensMem := cSlice[C.size_t](n)
	defer C.free(lensMem)
	irs, irsMem := cSlice[*C.af_ir_t](n)
	defer C.free(irsMem)
	defer func() {
		for _, p := range names {
			C.free(unsafe.Pointer(p)) // NULL for names never set
		}
	}()
	for i, b := range branches {
		if irs[i], err = b.IR.handle(); err != nil {
			return nil, err
		}
		names[i] = C.CString(b.Name)
		lens[i] = C.size_t(len(b.Name))
	}
	var np **C.char
	var lp *C.size_t
	var ip **C.af_ir_t
	if n > 0 {
		np, lp, ip = &names[0], &lens[0], &irs[0]
	}
	var out *C.af_value_t
	e := C.af_switch(cp, kp, np, lp, ip, C.size_t(n), cArray(ops), C.size_t(len(ops)), &out)
	runtime.KeepAlive(eng)
	runtime.KeepAlive(key)
	runtime.KeepAlive(branches)
	runtime.KeepAlive(operands)
	return takeValue(e, out)
}

// WhileLoop: state = init; while cond(state) is true and fewer than
// maxIters iterations ran, state = body(state); returns the state.
func (eng *Engine) WhileLoop(cond, body *IR, init *Value, maxIters uint64) (*Value, error) {
	cp, err := eng.handle()
	if err != nil {
		return nil, err
	}
	condp, err := cond.handle()
	if err != nil {
		return nil, err
	}
	bodyp, err := body.handle()
	if err != nil {
		return nil, err
	}
	ip, err := init.handle()
	if err != nil {
		return nil, err
	}
	var out *C.af_value_t
	e := C.af_while_loop(cp, condp, bodyp, ip, C.uint64_t(maxIters), &out)
	runtime.KeepAlive(eng)
	runtime.KeepAlive(cond)
	runtime.KeepAlive(body)
	runtime.KeepAlive(init)
	return takeValue(e, out)
}

// cSlice allocates n zeroed T in C memory (free the pointer with C.free;
// nil for n == 0).
func cSlice[T any](n int) ([]T, unsafe.Pointer) {
	if n == 0 {
		return nil, nil
	}
	var zero T
	p := C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof(zero)))
	return unsafe.Slice((*T)(p), n), p
}

// HostFunc is a host function: it receives the positional argument trees
// (borrowed for the call: Clone one to keep it; a zero arrives as null) and
// returns its result. It may be called from any goroutine or libaf thread,
// concurrently. A returned error becomes the cause of a CodeCallback error
// (an *Error keeps its code); a panic is recovered and reported the same way.
type HostFunc func(args []*Value) (*Value, error)

// RegisterFunction registers fn as host function name on eng (replacing an
// earlier function of that name). resultKinds: the result's structure with
// kind names as leaves ("str", {"n": "int"}, ...). libaf releases fn exactly
// once: when it is replaced, when eng is closed, or at once if registration
// fails.
func (eng *Engine) RegisterFunction(name string, resultKinds *Value, fn HostFunc) error {
	if fn == nil {
		return &Error{Message: "RegisterFunction: fn is nil", code: CodeInvalidArgument}
	}
	return eng.registerHost(name, resultKinds, fn, func(cp *C.af_context_t, p *C.char, n C.size_t, h C.uintptr_t, kp *C.af_value_t) *C.af_error_t {
		return C.afgo_register_function(cp, p, n, h, kp)
	})
}

// HostCall calls host function name on args: recorded inside a trace,
// called at once outside. CodeNotFound if name is not registered,
// CodeCallback if the function failed.
func (eng *Engine) HostCall(name string, args ...*Value) (*Value, error) {
	cp, err := eng.handle()
	if err != nil {
		return nil, err
	}
	ps, err := cValues(args)
	if err != nil {
		return nil, err
	}
	p, n := cstr(name)
	var out *C.af_value_t
	e := C.af_host_call(cp, p, n, cArray(ps), C.size_t(len(ps)), &out)
	runtime.KeepAlive(eng)
	runtime.KeepAlive(args)
	runtime.KeepAlive(name)
	return takeValue(e, out)
}

// --- run-time scopes ----------------------------------------------------------
//
// libaf scopes belong to the OS thread that pushed them (a run uses the scopes
// of the thread that starts it). A successful Push locks the calling goroutine
// to its thread until the matching Pop, so the calls in between see the scope
// however the Go scheduler moves goroutines; push and pop on one goroutine.

// scoped runs push with the goroutine locked to its thread, keeping the lock
// only when the push succeeded.
func scoped(push func() error) error {
	runtime.LockOSThread()
	if err := push(); err != nil {
		runtime.UnlockOSThread()
		return err
	}
	return nil
}

// unscoped runs pop and releases the lock its push took, only when the pop
// succeeded (a pop without a push took no lock).
func unscoped(pop func() error) error {
	if err := pop(); err != nil {
		return err
	}
	runtime.UnlockOSThread()
	return nil
}

// PushCollect opens a collect scope: every checkpoint of collection that
// runs appends its value under its key.
func (eng *Engine) PushCollect(collection string) error {
	cp, err := eng.handle()
	if err != nil {
		return err
	}
	return scoped(func() error {
		p, n := cstr(collection)
		e := C.af_collect_push(cp, p, n)
		runtime.KeepAlive(eng)
		runtime.KeepAlive(collection)
		return takeError(e)
	})
}

// PopCollect closes the innermost collect scope and returns
// {key: [values in execution order]}.
func (eng *Engine) PopCollect() (*Value, error) {
	cp, err := eng.handle()
	if err != nil {
		return nil, err
	}
	var v *Value
	err = unscoped(func() error {
		var out *C.af_value_t
		e := C.af_collect_pop(cp, &out)
		runtime.KeepAlive(eng)
		var perr error
		v, perr = takeValue(e, out)
		return perr
	})
	return v, err
}

// PushInject opens an inject scope: values is {key: [values...]}; a
// checkpoint of collection with a queued value yields it instead.
func (eng *Engine) PushInject(collection string, values *Value) error {
	cp, err := eng.handle()
	if err != nil {
		return err
	}
	vp, err := values.handle()
	if err != nil {
		return err
	}
	return scoped(func() error {
		p, n := cstr(collection)
		e := C.af_inject_push(cp, p, n, vp)
		runtime.KeepAlive(eng)
		runtime.KeepAlive(values)
		runtime.KeepAlive(collection)
		return takeError(e)
	})
}

// PopInject closes the innermost inject scope.
func (eng *Engine) PopInject() error {
	cp, err := eng.handle()
	if err != nil {
		return err
	}
	return unscoped(func() error {
		e := C.af_inject_pop(cp)
		runtime.KeepAlive(eng)
		return takeError(e)
	})
}

// PushMemoize opens a memoize scope: identical calls run once.
func (eng *Engine) PushMemoize() error {
	cp, err := eng.handle()
	if err != nil {
		return err
	}
	return scoped(func() error {
		e := C.af_memoize_push(cp)
		runtime.KeepAlive(eng)
		return takeError(e)
	})
}

// PopMemoize closes the innermost memoize scope.
func (eng *Engine) PopMemoize() error {
	cp, err := eng.handle()
	if err != nil {
		return err
	}
	return unscoped(func() error {
		e := C.af_memoize_pop(cp)
		runtime.KeepAlive(eng)
		return takeError(e)
	})
}
