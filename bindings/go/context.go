package af

/*
#include "af/af.h"
*/
import "C"

import (
	"runtime"
)

// Engine is libaf's context (af_context_t): it owns what a program needs at
// run time — host functions, provider routes, run-time scopes (collect,
// inject, memoize), the scheduler and the plan cache. Values and IRs are
// not tied to one engine (a lazy engine's promises are: see NewEngineWith).
// An Engine may be used from several goroutines; it serializes its own
// mutations.
//
// It is called Engine in Go so that "ctx" stays the context.Context that
// blocking calls take first (see Engine.Call).
type Engine struct {
	ptr cPtr[*C.af_context_t] // guarded: freed once closed and no use is in progress
}

// Context is the former name of Engine.
//
// Deprecated: use Engine (the same type: code written with Context keeps
// compiling and interoperates with code written with Engine).
type Context = Engine

// NewEngine makes a new engine. Close it when done (a finalizer frees a
// forgotten one).
func NewEngine() (*Engine, error) {
	var p *C.af_context_t
	if err := takeError(C.af_context_new(&p)); err != nil {
		return nil, err
	}
	return wrapEngine(p), nil
}

// NewContext is NewEngine.
//
// Deprecated: use NewEngine.
func NewContext() (*Engine, error) { return NewEngine() }

// wrapEngine owns a new af_context_t* (closed by Close or the finalizer).
func wrapEngine(p *C.af_context_t) *Engine {
	eng := &Engine{}
	eng.ptr.init(p)
	runtime.SetFinalizer(eng, (*Engine).Close)
	return eng
}

// Close frees the engine. It is idempotent. Values, IRs and walks made
// with the engine stay valid (they are not tied to it; a Walk's Eval runs
// on it, though, and returns the closed-handle error once it is closed). A
// call that uses the engine (Trace, Call, Eval, EvalWith, a Walk step) and
// is running when Close is called keeps it until it returns: the engine is
// freed then (new calls fail with the closed-handle error at once).
//
// A lazy engine's promises are tied to it, and Close means what
// af_context_free means for them, however many promises are live (they
// keep the engine from the garbage collector, not from Close): a promise
// not yet evaluated can no longer be (reading it is CodeInvalidArgument),
// pending observable operations do not run (Eval first), and a read of a
// promise evaluating on another goroutine ends with CodeCancelled.
// Evaluated promises stay readable.
func (eng *Engine) Close() {
	if eng == nil {
		return
	}
	// Frees once however many goroutines close at once, and only after the
	// uses in progress (see cPtr).
	if eng.ptr.Close(freeEngine) {
		runtime.SetFinalizer(eng, nil)
	}
}

func freeEngine(p *C.af_context_t) { C.af_context_free(p) }

// freeEngineLater frees an engine closed while calls used it, when the last
// of them returns. That call may run in a callback libaf is waiting for (a
// host function calling eng.Str during a CallAsync run), and
// af_context_free cancels the engine's runs and joins its threads, that
// callback's thread among them: never from a libaf callback, af.h says. So
// the last releaser hands the free to a goroutine of its own, which waits
// for nobody the callback waits for.
func freeEngineLater(p *C.af_context_t) { go freeEngine(p) }

// acquire holds eng open for a C call (see cPtr): its C handle, or the
// closed-handle error for a nil or closed Engine. Release it with release.
func (eng *Engine) acquire() (*C.af_context_t, error) {
	if eng != nil {
		if p, ok := eng.ptr.Acquire(); ok {
			return p, nil
		}
	}
	return nil, errClosed("engine")
}

// release ends a use begun by a successful acquire.
func (eng *Engine) release() { eng.ptr.Release(freeEngineLater) }
