package af

/*
#include <stdint.h>
#include <stdlib.h>
#include "af/af.h"
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
	cp, err := eng.acquire()
	if err != nil {
		return nil, err
	}
	defer eng.release()
	kp, err := key.acquire()
	if err != nil {
		return nil, err
	}
	defer key.release()
	ops, held, err := acquireValues(operands)
	if err != nil {
		return nil, err
	}
	defer releaseValues(held)
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
	// Each branch's IR is held open for the call; the IRs held are kept
	// apart, so that the ones released are the ones acquired.
	heldIRs := make([]*IR, 0, n)
	defer func() {
		for _, ir := range heldIRs {
			ir.release()
		}
	}()
	for i, b := range branches {
		if irs[i], err = b.IR.acquire(); err != nil {
			return nil, err
		}
		heldIRs = append(heldIRs, b.IR)
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
	return eng.takeResult(e, out, nil)
}

// WhileLoop: state = init; while cond(state) is true and fewer than
// maxIters iterations ran, state = body(state); returns the state.
func (eng *Engine) WhileLoop(cond, body *IR, init *Value, maxIters uint64) (*Value, error) {
	cp, err := eng.acquire()
	if err != nil {
		return nil, err
	}
	defer eng.release()
	condp, err := cond.acquire()
	if err != nil {
		return nil, err
	}
	defer cond.release()
	bodyp, err := body.acquire()
	if err != nil {
		return nil, err
	}
	defer body.release()
	ip, err := init.acquire()
	if err != nil {
		return nil, err
	}
	defer init.release()
	var out *C.af_value_t
	e := C.af_while_loop(cp, condp, bodyp, ip, C.uint64_t(maxIters), &out)
	return eng.takeResult(e, out, nil)
}

// Scan threads a carry through the items of xs: carry = init; for each item
// in order (last to first when reverse), [carry, y] = body(carry, item). It
// returns [carry, ys]: the last carry and, for each leaf of y, the list of
// its values by item index (ys keep their items' indices when reverse) — a
// rolling summary over a document's chunks, a draft refined against a list
// of critiques.
//
// xs is a list, or a tree whose leaves are lists of one length (the item is
// the tree of their i-th items); inside a trace it is usually a list input
// of any length (TraceOptions.ListMask). body is a traced IR taking two
// positional inputs, the carry and an item, and returning [next carry, y]
// with the carry's structure and kinds. Recorded inside a trace (one scan
// equation, with every transform: Batch maps it over items, Pushforward and
// Pullback thread tangents and feedback through the carry), run at once
// outside, a promise on a lazy engine. No items: [init, ys of empty lists],
// and body never runs.
//
// CodeInvalidArgument: body does not take (init, an item of xs), does not
// return [carry, y] or changes the carry's structure or a kind; a leaf of xs
// is not a list; when it runs: the lists of xs differ in length.
func (eng *Engine) Scan(body *IR, init, xs *Value, reverse bool) (*Value, error) {
	cp, err := eng.acquire()
	if err != nil {
		return nil, err
	}
	defer eng.release()
	bodyp, err := body.acquire()
	if err != nil {
		return nil, err
	}
	defer body.release()
	ip, err := init.acquire()
	if err != nil {
		return nil, err
	}
	defer init.release()
	xp, err := xs.acquire()
	if err != nil {
		return nil, err
	}
	defer xs.release()
	var rev C.int32_t
	if reverse {
		rev = 1
	}
	var out *C.af_value_t
	e := C.af_scan(cp, bodyp, ip, xp, rev, &out)
	return eng.takeResult(e, out, nil)
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
// fails. The function is effectful: every call runs (see FunctionOptions.Pure
// and RegisterFunctionWith to register a pure one).
func (eng *Engine) RegisterFunction(name string, resultKinds *Value, fn HostFunc) error {
	return eng.registerHost("RegisterFunction", name, resultKinds, nil, false, fn)
}

// FunctionOptions are the options of a host function's registration
// (RegisterFunctionWith, RegisterFunctionAsyncWith); the zero value (or
// nil) registers what RegisterFunction does: an effectful function called
// on a scheduler thread.
type FunctionOptions struct {
	// Pure declares that the function has no effects: the same arguments
	// give the same result, and nothing else happens. libaf may then drop a
	// call whose result is unused (on a lazy engine: a promise never read),
	// merge equal calls (CSE, which Compile does) and answer a call from a
	// memoize scope (PushMemoize).
	//
	// Without it the function is effectful (it sends, writes, charges, reads
	// a clock): each call runs exactly once per run, compiled or lazy, even
	// when nothing reads its result: DCE keeps it, CSE never merges it,
	// memoize never answers it, and a lazy engine runs it at the next Eval
	// or evaluation even when its promise was closed unread. Effectful is
	// the default because its mistake is cheaper: a pure function taken for
	// effectful costs a call that was not needed, an effectful one taken
	// for pure silently loses what it does.
	//
	// The flag is recorded in each call's equation when it is traced or
	// recorded (IR.EqnJSON: "pure": true among its params, "effects":
	// false) and kept in saved graphs: a loaded graph runs by the flags it
	// was traced with, whatever is registered under that name when it runs.
	Pure bool
	// Blocking runs each call on the engine's host pool instead of a
	// scheduler thread, as RegisterFunctionBlocking does. For a HostFunc
	// only: RegisterFunctionAsyncWith refuses it (CodeInvalidArgument).
	Blocking bool
}

// flags is opts as AF_FUNCTION_* bits (nil: none).
func (opts *FunctionOptions) flags() C.uint32_t {
	var f C.uint32_t
	if opts == nil {
		return f
	}
	if opts.Pure {
		f |= C.AF_FUNCTION_PURE
	}
	if opts.Blocking {
		f |= C.AF_FUNCTION_BLOCKING
	}
	return f
}

// RegisterFunctionWith registers fn as host function name on eng with opts
// (nil: the defaults, as RegisterFunction): Pure lets libaf drop, merge and
// memoize its calls, Blocking runs them on the host pool. See
// RegisterFunction for resultKinds and fn's lifetime.
func (eng *Engine) RegisterFunctionWith(name string, resultKinds *Value, opts *FunctionOptions, fn HostFunc) error {
	return eng.registerHost("RegisterFunctionWith", name, resultKinds, opts, false, fn)
}

// HostCall calls host function name on args: recorded inside a trace,
// called at once outside. CodeNotFound if name is not registered,
// CodeCallback if the function failed.
func (eng *Engine) HostCall(name string, args ...*Value) (*Value, error) {
	cp, err := eng.acquire()
	if err != nil {
		return nil, err
	}
	defer eng.release()
	ps, held, err := acquireValues(args)
	if err != nil {
		return nil, err
	}
	defer releaseValues(held)
	p, n := cstr(name)
	var out *C.af_value_t
	e := C.af_host_call(cp, p, n, cArray(ps), C.size_t(len(ps)), &out)
	runtime.KeepAlive(name)
	return eng.takeResult(e, out, nil)
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
	cp, err := eng.acquire()
	if err != nil {
		return err
	}
	defer eng.release()
	return scoped(func() error {
		p, n := cstr(collection)
		e := C.af_collect_push(cp, p, n)
		runtime.KeepAlive(collection)
		return takeError(e)
	})
}

// PopCollect closes the innermost collect scope and returns
// {key: [values in program order]} (docs/SEMANTICS.md §4), however the run
// was scheduled.
func (eng *Engine) PopCollect() (*Value, error) {
	cp, err := eng.acquire()
	if err != nil {
		return nil, err
	}
	defer eng.release()
	var v *Value
	err = unscoped(func() error {
		var out *C.af_value_t
		e := C.af_collect_pop(cp, &out)
		var perr error
		v, perr = takeValue(e, out)
		return perr
	})
	return v, err
}

// PushInject opens an inject scope: values is {key: [values...]}; a
// checkpoint of collection with a queued value yields it instead, the queued
// values going to the hits in program order.
func (eng *Engine) PushInject(collection string, values *Value) error {
	cp, err := eng.acquire()
	if err != nil {
		return err
	}
	defer eng.release()
	vp, err := values.acquire()
	if err != nil {
		return err
	}
	defer values.release()
	return scoped(func() error {
		p, n := cstr(collection)
		e := C.af_inject_push(cp, p, n, vp)
		runtime.KeepAlive(collection)
		return takeError(e)
	})
}

// PopInject closes the innermost inject scope.
func (eng *Engine) PopInject() error {
	cp, err := eng.acquire()
	if err != nil {
		return err
	}
	defer eng.release()
	return unscoped(func() error {
		e := C.af_inject_pop(cp)
		return takeError(e)
	})
}

// PushMemoize opens a memoize scope: identical calls run once.
func (eng *Engine) PushMemoize() error {
	cp, err := eng.acquire()
	if err != nil {
		return err
	}
	defer eng.release()
	return scoped(func() error {
		e := C.af_memoize_push(cp)
		return takeError(e)
	})
}

// PopMemoize closes the innermost memoize scope.
func (eng *Engine) PopMemoize() error {
	cp, err := eng.acquire()
	if err != nil {
		return err
	}
	defer eng.release()
	return unscoped(func() error {
		e := C.af_memoize_pop(cp)
		return takeError(e)
	})
}
