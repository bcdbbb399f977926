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
	ptr cPtr[*C.af_walk_t] // guarded: freed once closed and no use is in progress
	// Keep the Go handles the walk was made from reachable for its
	// lifetime, so their finalizers cannot run while it may use them.
	eng *Engine
	ir  *IR
}

// Walk starts a walk of ir on inputs (checked as in Call).
func (ir *IR) Walk(eng *Engine, inputs ...*Value) (*Walk, error) {
	p, err := ir.acquire()
	if err != nil {
		return nil, err
	}
	defer ir.release()
	cp, err := eng.acquire()
	if err != nil {
		return nil, err
	}
	defer eng.release()
	ps, held, err := acquireValues(inputs)
	if err != nil {
		return nil, err
	}
	defer releaseValues(held)
	var out *C.af_walk_t
	e := C.af_walk_new(cp, p, cArray(ps), C.size_t(len(ps)), &out)
	if err := takeError(e); err != nil {
		return nil, err
	}
	w := &Walk{eng: eng, ir: ir}
	w.ptr.init(out)
	runtime.SetFinalizer(w, (*Walk).Close)
	return w, nil
}

// Close frees the walk. Idempotent.
func (w *Walk) Close() {
	if w == nil {
		return
	}
	// Frees once however many goroutines close at once, and only after the
	// uses in progress (see cPtr).
	if w.ptr.Close(freeWalk) {
		runtime.SetFinalizer(w, nil)
	}
}

func freeWalk(p *C.af_walk_t) { C.af_walk_free(p) }

// acquire holds w open for a C call (see cPtr): its C handle, or the
// closed-handle error for a nil or closed Walk. Release it with release.
func (w *Walk) acquire() (*C.af_walk_t, error) {
	if w != nil {
		if p, ok := w.ptr.Acquire(); ok {
			return p, nil
		}
	}
	return nil, errClosed("walk")
}

// release ends a use begun by a successful acquire.
func (w *Walk) release() { w.ptr.Release(freeWalk) }

// Next returns the index of the next equation (use IR.EqnPrim for its
// primitive) and its input tree with values, or WalkDone and a nil Value
// when finished. Calling it again before Eval or Send returns the same
// equation.
func (w *Walk) Next() (eqn int, inputs *Value, err error) {
	p, err := w.acquire()
	if err != nil {
		return 0, nil, err
	}
	defer w.release()
	var idx C.size_t
	var in *C.af_value_t
	e := C.af_walk_next(p, &idx, &in)
	if err := takeError(e); err != nil {
		return 0, nil, err
	}
	if idx == C.AF_WALK_DONE {
		C.af_value_free(in) // NULL when finished; freed in case it is not
		return WalkDone, nil, nil
	}
	return int(idx), newValue(in), nil
}

// Eval evaluates the current equation with libaf's implementation, with
// the engine the walk was made with (held open for the step: a closed
// engine is the closed-handle error).
func (w *Walk) Eval() error {
	p, err := w.acquire()
	if err != nil {
		return err
	}
	defer w.release()
	// The walk runs the equation on its engine's run-time state: hold it.
	if _, err := w.eng.acquire(); err != nil {
		return err
	}
	defer w.eng.release()
	e := C.af_walk_eval(p)
	return takeError(e)
}

// Send supplies the current equation's outputs: its output tree with
// concrete leaves of the declared kinds (CodeInvalidArgument otherwise).
func (w *Walk) Send(outputs *Value) error {
	p, err := w.acquire()
	if err != nil {
		return err
	}
	defer w.release()
	op, err := outputs.acquire()
	if err != nil {
		return err
	}
	defer outputs.release()
	e := C.af_walk_send(p, op)
	return takeError(e)
}

// Outputs is the program's output tree; CodeInvalidArgument if equations
// remain.
func (w *Walk) Outputs() (*Value, error) {
	p, err := w.acquire()
	if err != nil {
		return nil, err
	}
	defer w.release()
	var out *C.af_value_t
	e := C.af_walk_outputs(p, &out)
	return takeValue(e, out)
}
