package af

/*
#include "af/af.h"
*/
import "C"

import (
	"runtime"
)

// WalkDone is the equation index Walk.Next returns when no equation is
// left.
const WalkDone = -1

// Walk steps through an IR one equation at a time: Next gives the next
// equation and its input values, then Eval lets libaf evaluate it or Send
// supplies its outputs; when Next returns WalkDone, Outputs gives the
// program's outputs. For debuggers and hosts that run some equations
// themselves. A Walk is not safe for concurrent use. Close it when done (a
// finalizer frees a forgotten one).
type Walk struct {
	ptr cPtr[*C.af_walk_t] // nil once closed; swapped so Close frees once
	// Keep the Go handles the walk was made from reachable for its
	// lifetime, so their finalizers cannot run while it may use them.
	eng *Engine
	ir  *IR
}

// Walk starts a walk of ir on inputs (checked as in Call).
func (ir *IR) Walk(eng *Engine, inputs ...*Value) (*Walk, error) {
	p, err := ir.handle()
	if err != nil {
		return nil, err
	}
	cp, err := eng.handle()
	if err != nil {
		return nil, err
	}
	ps, err := cValues(inputs)
	if err != nil {
		return nil, err
	}
	var out *C.af_walk_t
	e := C.af_walk_new(cp, p, cArray(ps), C.size_t(len(ps)), &out)
	runtime.KeepAlive(ir)
	runtime.KeepAlive(eng)
	runtime.KeepAlive(inputs)
	if err := takeError(e); err != nil {
		return nil, err
	}
	w := &Walk{eng: eng, ir: ir}
	w.ptr.Store(out)
	runtime.SetFinalizer(w, (*Walk).Close)
	return w, nil
}

// Close frees the walk. Idempotent.
func (w *Walk) Close() {
	if w == nil {
		return
	}
	// Swap, not load-then-store: two goroutines closing at once must not
	// both free the pointer.
	if p, ok := w.ptr.Take(); ok {
		C.af_walk_free(p)
		runtime.SetFinalizer(w, nil)
	}
}

func (w *Walk) handle() (*C.af_walk_t, error) {
	if w == nil {
		return nil, errClosed("walk")
	}
	if p, ok := w.ptr.Get(); ok {
		return p, nil
	}
	return nil, errClosed("walk")
}

// Next returns the index of the next equation (use IR.EqnPrim for its
// primitive) and its input tree with values, or WalkDone and a nil Value
// when finished. Calling it again before Eval or Send returns the same
// equation.
func (w *Walk) Next() (eqn int, inputs *Value, err error) {
	p, err := w.handle()
	if err != nil {
		return 0, nil, err
	}
	var idx C.size_t
	var in *C.af_value_t
	e := C.af_walk_next(p, &idx, &in)
	runtime.KeepAlive(w)
	if err := takeError(e); err != nil {
		return 0, nil, err
	}
	if idx == C.AF_WALK_DONE {
		C.af_value_free(in) // NULL when finished; freed in case it is not
		return WalkDone, nil, nil
	}
	return int(idx), newValue(in), nil
}

// Eval evaluates the current equation with libaf's implementation.
func (w *Walk) Eval() error {
	p, err := w.handle()
	if err != nil {
		return err
	}
	e := C.af_walk_eval(p)
	runtime.KeepAlive(w)
	return takeError(e)
}

// Send supplies the current equation's outputs: its output tree with
// concrete leaves of the declared kinds (CodeInvalidArgument otherwise).
func (w *Walk) Send(outputs *Value) error {
	p, err := w.handle()
	if err != nil {
		return err
	}
	op, err := outputs.handle()
	if err != nil {
		return err
	}
	e := C.af_walk_send(p, op)
	runtime.KeepAlive(w)
	runtime.KeepAlive(outputs)
	return takeError(e)
}

// Outputs is the program's output tree; CodeInvalidArgument if equations
// remain.
func (w *Walk) Outputs() (*Value, error) {
	p, err := w.handle()
	if err != nil {
		return nil, err
	}
	var out *C.af_value_t
	e := C.af_walk_outputs(p, &out)
	runtime.KeepAlive(w)
	return takeValue(e, out)
}
