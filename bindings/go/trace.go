package af

/*
#include <stdint.h>
#include "af/af.h"

// Defined in trampoline.c.
af_error_t* afgo_trace(af_context_t* ctx, uintptr_t handle, const af_value_t* const* examples,
                       size_t n_examples, const af_value_t* static_mask, af_ir_t** out);
af_error_t* afgo_trace_with(af_context_t* ctx, uintptr_t handle, const af_value_t* const* examples,
                            size_t n_examples, const af_value_t* static_mask,
                            const af_value_t* list_mask, af_ir_t** out);
*/
import "C"

import (
	"fmt"
	"runtime"
	"runtime/cgo"
	"unsafe"
)

// TraceFunc is a function to trace. It receives the Engine that called
// Trace and one input per example: placeholders shaped like the examples
// (static leaves are the example values themselves). It builds its output
// with the Engine's operations (Format, Concat, ...) and returns it.
//
// Ownership:
//   - inputs are BORROWED from libaf: do not Close them (Close is a no-op
//     on them) and do not use them after fn returns (they are invalidated
//     then, and any call on them fails with CodeInvalidArgument). Clone an
//     input to keep it.
//   - the returned *Value must be open when fn returns (so do not defer its
//     Close inside fn). The binding hands libaf a reference of its own, so
//     the Go handle stays owned by the caller of Trace's fn: Close it later
//     or leave it to the finalizer.
//
// Errors and panics:
//   - a returned error fails the trace. An error libaf itself returned (say
//     from Format) is returned by Trace unchanged, as af_trace does. Any
//     other error makes Trace return a CodeCallback error whose cause is
//     fn's error: an *Error made with NewError (or an error wrapping a libaf
//     *Error) keeps its code, any other error is sent with CodeCallback, and
//     the original Go error is reachable through Unwrap (errors.Is and
//     errors.As find it).
//   - a panic is recovered, reported to libaf as an error (so libaf unwinds
//     its trace state cleanly) and re-raised with the same value by Trace
//     once libaf has returned.
//   - runtime.Goexit in fn (t.FailNow, t.Fatal) ends the calling goroutine
//     as Goexit always does: Trace never returns. libaf's trace state lives
//     on the goroutine's locked OS thread, which Go ends with it, so the
//     engine stays usable (tested); prefer returning an error.
//
// fn runs on the goroutine (and OS thread) that called Trace. Operations
// made from other goroutines are not recorded into this trace.
type TraceFunc func(eng *Engine, inputs []*Value) (*Value, error)

type traceState struct {
	eng *Engine
	fn  TraceFunc

	// The error fn returned (libaf's error carries it back as a payload).
	goErr error

	panicked bool
	panicVal any
}

// Trace traces fn once on placeholders shaped like examples (only their
// structure and leaf kinds matter) and returns the IR. All inputs are
// dynamic; see TraceStatic for static inputs.
//
// Errors: CodeInvalidArgument (unsupported leaf kind, output not built from
// the inputs), CodeCallback (fn failed; its error is the cause) and the
// error of an operation fn called and returned (see TraceFunc).
func Trace(eng *Engine, fn TraceFunc, examples ...*Value) (*IR, error) {
	return TraceStatic(eng, fn, nil, examples...)
}

// TraceStatic is Trace with a static mask: a bool tree that is a prefix of
// the list of inputs (true = static: the leaf becomes a literal and calls
// must pass an equal value). A nil mask means all dynamic.
func TraceStatic(eng *Engine, fn TraceFunc, staticMask *Value, examples ...*Value) (*IR, error) {
	return trace(eng, fn, staticMask, nil, false, examples)
}

// TraceOptions are the options of TraceWith.
type TraceOptions struct {
	// StaticMask: a bool tree that is a prefix of the list of inputs (true
	// = static). nil = all dynamic.
	StaticMask *Value
	// ListMask: a bool tree that is a prefix of the list of inputs whose
	// true leaves mark example lists (of leaves of one kind, or nested lists
	// of them) traced as lists of any length: one placeholder each, an input
	// of kind list<T> — what a batched IR (Batch) takes. Calls pass lists of
	// any length; an item of another kind is CodeInvalidArgument naming its
	// path. nil = none.
	ListMask *Value
}

// TraceWith is Trace with options: a static mask and a list mask (lists of
// any length). Errors as TraceStatic, and CodeInvalidArgument naming the
// input path for a list mask that is not a prefix of the inputs or that
// marks something other than a non-empty list of one leaf kind.
func TraceWith(eng *Engine, fn TraceFunc, opts TraceOptions, examples ...*Value) (*IR, error) {
	return trace(eng, fn, opts.StaticMask, opts.ListMask, true, examples)
}

// trace calls af_trace, or af_trace_with when with is set.
func trace(eng *Engine, fn TraceFunc, staticMask, listMask *Value, with bool, examples []*Value) (*IR, error) {
	if fn == nil {
		return nil, &Error{Message: "trace: fn is nil", code: CodeInvalidArgument}
	}
	cp, err := eng.acquire()
	if err != nil {
		return nil, err
	}
	defer eng.release()
	ps, held, err := acquireValues(examples)
	if err != nil {
		return nil, err
	}
	defer releaseValues(held)
	var mp, lp *C.af_value_t
	if staticMask != nil {
		if mp, err = staticMask.acquire(); err != nil {
			return nil, err
		}
		defer staticMask.release()
	}
	if listMask != nil {
		if lp, err = listMask.acquire(); err != nil {
			return nil, err
		}
		defer listMask.release()
	}

	st := &traceState{eng: eng, fn: fn}
	h := cgo.NewHandle(st)
	defer h.Delete()

	// libaf keeps trace state per OS thread and runs fn on the calling
	// thread: keep this goroutine on one thread for the whole trace.
	runtime.LockOSThread()
	var out *C.af_ir_t
	var e *C.af_error_t
	if with {
		e = C.afgo_trace_with(cp, C.uintptr_t(h), cArray(ps), C.size_t(len(ps)), mp, lp, &out)
	} else {
		e = C.afgo_trace(cp, C.uintptr_t(h), cArray(ps), C.size_t(len(ps)), mp, &out)
	}
	runtime.UnlockOSThread()

	err = takeError(e)
	if st.panicked {
		C.af_ir_free(out) // NULL after a failure; freed in case libaf succeeded anyway
		panic(st.panicVal)
	}
	if err != nil {
		if ae, ok := st.goErr.(*Error); ok && ae.fromLib {
			// af_trace returns an operation's error unchanged when the
			// callback passes it on. The binding had to hand libaf a copy
			// (newCError), which libaf wraps as CALLBACK; undo that.
			return nil, ae
		}
		return nil, err
	}
	return newIR(out), nil
}

//export afgoTraceCallback
func afgoTraceCallback(h C.uintptr_t, inputs **C.af_value_t, n C.size_t, out **C.af_value_t) (ret *C.af_error_t) {
	st := cgo.Handle(h).Value().(*traceState)

	ins := make([]*Value, int(n))
	if n > 0 {
		for i, p := range unsafe.Slice(inputs, int(n)) {
			ins[i] = borrowValue(p)
		}
	}
	// Borrowed inputs die with this call: make later use an error, not a
	// use-after-free (a use in progress on another goroutine keeps the
	// input's own reference until it ends). (Deferred first, so it runs
	// after the recover below.)
	defer func() {
		for _, v := range ins {
			v.endBorrow()
		}
	}()
	defer func() {
		if r := recover(); r != nil {
			st.panicked, st.panicVal = true, r
			msg := fmt.Sprint("panic in Go trace function: ", r)
			p, l := cstr(msg)
			ret = C.af_error_new(C.int32_t(CodeCallback), p, l)
		}
	}()

	res, err := st.fn(st.eng, ins)
	var resPtr *C.af_value_t
	if err == nil {
		if res == nil {
			err = &Error{Message: "trace function returned a nil *Value and a nil error", code: CodeInvalidArgument}
		} else if p, herr := res.acquire(); herr != nil {
			err = &Error{Message: "trace function returned a closed *Value", code: CodeInvalidArgument}
		} else {
			defer res.release()
			resPtr = p
		}
	}
	if err != nil {
		st.goErr = err
		return newCError(err)
	}
	// libaf takes ownership of *out: give it its own reference so the Go
	// handle (and its finalizer) stay valid.
	*out = C.af_value_clone(resPtr)
	return nil
}
