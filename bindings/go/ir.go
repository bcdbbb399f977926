package af

/*
#include "af/af.h"
*/
import "C"

import (
	"runtime"
)

// IR is a traced program of primitives, immutable once built. Its inputs
// are a list of positional trees; its output is one tree. An IR may be
// used from several goroutines at once. Close it when done (a finalizer
// frees a forgotten one).
type IR struct {
	ptr cPtr[*C.af_ir_t] // guarded: freed once closed and no use is in progress
}

func newIR(p *C.af_ir_t) *IR {
	ir := &IR{}
	ir.ptr.init(p)
	runtime.SetFinalizer(ir, (*IR).Close)
	return ir
}

func freeIR(p *C.af_ir_t) { C.af_ir_free(p) }

// Close releases the IR's reference. Idempotent.
func (ir *IR) Close() {
	if ir == nil {
		return
	}
	// Frees once however many goroutines close at once, and only after the
	// uses in progress (see cPtr).
	if ir.ptr.Close(freeIR) {
		runtime.SetFinalizer(ir, nil)
	}
}

// Clone returns a new handle to the same IR.
func (ir *IR) Clone() (*IR, error) {
	p, err := ir.acquire()
	if err != nil {
		return nil, err
	}
	defer ir.release()
	out := newIR(C.af_ir_clone(p))
	return out, nil
}

// acquire holds ir open for a C call (see cPtr): its C handle, or the
// closed-handle error for a nil or closed IR. Release it with release.
func (ir *IR) acquire() (*C.af_ir_t, error) {
	if ir != nil {
		if p, ok := ir.ptr.Acquire(); ok {
			return p, nil
		}
	}
	return nil, errClosed("IR")
}

// release ends a use begun by a successful acquire.
func (ir *IR) release() { ir.ptr.Release(freeIR) }

// Call runs the IR on inputs (one per positional input; each must match
// the traced structure and leaf kinds, static leaves must be equal).
// Called from a trace function, the IR's equations are inlined into the
// trace instead. CodeInvalidArgument names the input path, the expected
// and the found kind.
func (ir *IR) Call(eng *Engine, inputs ...*Value) (*Value, error) {
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
	var out *C.af_value_t
	e := C.af_ir_call(cp, p, cArray(ps), C.size_t(len(ps)), &out)
	return eng.takeResult(e, out, held)
}

// Text is the IR's text form (documented in docs/IR_TEXT.md, stable across
// versions).
func (ir *IR) Text() (string, error) {
	p, err := ir.acquire()
	if err != nil {
		return "", err
	}
	defer ir.release()
	var b C.af_bytes_t
	e := C.af_ir_to_text(p, &b)
	if err := takeError(e); err != nil {
		return "", err
	}
	return takeBytes(&b), nil
}

// String is the text form, for fmt.
func (ir *IR) String() string {
	s, err := ir.Text()
	if err != nil {
		return "<af.IR: " + err.Error() + ">"
	}
	return s
}

// DOT is the IR as a Graphviz graph: inputs as boxes, outputs as double
// octagons, one edge per dependency.
func (ir *IR) DOT() (string, error) {
	p, err := ir.acquire()
	if err != nil {
		return "", err
	}
	defer ir.release()
	var b C.af_bytes_t
	e := C.af_ir_to_dot(p, &b)
	if err := takeError(e); err != nil {
		return "", err
	}
	return takeBytes(&b), nil
}

// EqnCount is the number of equations (0 for a closed IR).
func (ir *IR) EqnCount() int {
	p, err := ir.acquire()
	if err != nil {
		return 0
	}
	defer ir.release()
	n := C.af_ir_eqn_count(p)
	return int(n)
}

// EqnPrim is the primitive name of equation i ("format", "concat", ...);
// "" if i is out of range.
func (ir *IR) EqnPrim(i int) string {
	if i < 0 {
		return ""
	}
	p, err := ir.acquire()
	if err != nil {
		return ""
	}
	defer ir.release()
	s := C.af_ir_eqn_prim(p, C.size_t(i))
	if s == nil {
		return ""
	}
	return C.GoString(s) // static storage
}

// InputCount is the number of positional inputs (0 for a closed IR).
func (ir *IR) InputCount() int {
	p, err := ir.acquire()
	if err != nil {
		return 0
	}
	defer ir.release()
	n := C.af_ir_input_count(p)
	return int(n)
}

// Hash is a structural hash: equal IRs (same equations, params, literals,
// structure, kinds, tags) hash equal whatever their origin.
func (ir *IR) Hash() uint64 {
	p, err := ir.acquire()
	if err != nil {
		return 0
	}
	defer ir.release()
	h := C.af_ir_hash(p)
	return uint64(h)
}

// Equal reports whether ir and other are structurally equal (false if
// either is nil or closed).
func (ir *IR) Equal(other *IR) bool {
	p, err := ir.acquire()
	if err != nil {
		return false
	}
	defer ir.release()
	q, err := other.acquire()
	if err != nil {
		return false
	}
	defer other.release()
	eq := C.af_ir_equal(p, q)
	return eq != 0
}
