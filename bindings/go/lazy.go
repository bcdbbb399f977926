package af

/*
#include "af/af.h"
*/
import "C"

import (
	"context"
	"runtime"
	"slices"
)

// NewEngineWith makes an engine with options, a JSON object as for
// af_context_new_with:
//
//	{"lazy": true, "plan_cache": {"max_entries": 1024, "max_bytes": 268435456, "dir": "..."},
//	 "host_threads": 8, "eval_timeout_ms": 0}
//
// On a lazy engine every operation made outside a trace records a promise:
// a Value whose kind and structure are known at once and whose content is
// computed when it is read (JSON, AsString, ...) or when Eval evaluates
// several promises as one run, so their independent LM calls are in flight
// together. A promise closed before it ran never runs. "eval_timeout_ms"
// (0 = none) is the deadline of every evaluation a read or Eval starts: past
// it the evaluation fails with CodeTimeout (EvalWith sets its own).
//
// A promise keeps its engine from the garbage collector (so do the values
// made from it: a List holding it, its Clone, ...): dropping every other
// reference to the Engine never frees it under a promise still to be read.
// An explicit Close does free it: see Engine.Close.
func NewEngineWith(optionsJSON string) (*Engine, error) {
	p, n := cstr(optionsJSON)
	var cp *C.af_context_t
	e := C.af_context_new_with(p, n, &cp)
	runtime.KeepAlive(optionsJSON)
	if err := takeError(e); err != nil {
		return nil, err
	}
	return wrapEngine(cp), nil
}

// NewLazyEngine makes a lazy engine with the default plan cache.
func NewLazyEngine() (*Engine, error) { return NewEngineWith(`{"lazy": true}`) }

// NewContextWith is NewEngineWith.
//
// Deprecated: use NewEngineWith.
func NewContextWith(optionsJSON string) (*Engine, error) { return NewEngineWith(optionsJSON) }

// NewLazyContext is NewLazyEngine.
//
// Deprecated: use NewLazyEngine.
func NewLazyContext() (*Engine, error) { return NewLazyEngine() }

// Eval evaluates the promises among values (deep) and the engine's pending
// observable operations (checkpoints, depends, host calls) as one run. A
// failed operation does not fail Eval: reading its promises returns its
// error. With no values it runs just the pending observable operations.
// The engine's "eval_timeout_ms" bounds it: past it, it returns CodeTimeout
// and the promises it was evaluating hold that error.
func (eng *Engine) Eval(values ...*Value) error {
	return eng.eval(nil, values)
}

// EvalWith is Eval with run options for this one evaluation, ended by ctx
// as Engine.CallWith's runs are: a cancellation stops it with CodeCancelled
// (errors.Is(err, context.Canceled) holds), a deadline with CodeTimeout
// (errors.Is(err, context.DeadlineExceeded) holds), and in-flight LM
// requests are aborted; a ctx already done evaluates nothing. The timeout
// is the earlier of opts.Timeout and ctx's deadline; with neither, the
// engine's "eval_timeout_ms". opts.Cancel may stop it instead of ctx, but
// not with it (CodeInvalidArgument). KeepGoing is always on (a failed
// operation fails only its own promises); RunOptions.Summary is
// CodeInvalidArgument (an evaluation has no Future to read it from).
//
// When the timeout or the cancel stops the evaluation, EvalWith returns
// CodeTimeout or CodeCancelled and the promises of the operations it was
// running hold that error: reading them returns it, later too.
func (eng *Engine) EvalWith(ctx context.Context, opts *RunOptions, values ...*Value) error {
	if opts != nil && opts.Summary {
		return NewError(CodeInvalidArgument, "Engine.EvalWith: RunOptions.Summary records an "+
			"asynchronous run's summary (Future.Summary); an evaluation has none")
	}
	return runContext(ctx, "Engine.EvalWith", opts, true, func(o *RunOptions) error {
		return eng.eval(o, values)
	})
}

// eval is af_eval (opts nil) or af_eval_with.
func (eng *Engine) eval(opts *RunOptions, values []*Value) error {
	cp, err := eng.acquire()
	if err != nil {
		return err
	}
	defer eng.release()
	ps, held, err := acquireValues(values)
	if err != nil {
		return err
	}
	defer releaseValues(held)
	var e *C.af_error_t
	if opts == nil {
		e = C.af_eval(cp, cArray(ps), C.size_t(len(ps)))
	} else {
		co, free := opts.cOptions()
		defer free()
		e = C.af_eval_with(cp, cArray(ps), C.size_t(len(ps)), co)
	}
	return takeError(e)
}

// takeResult is takeValue for the result of an operation on eng. On a lazy
// engine that is a promise: libaf's promise does not keep its context
// alive, yet cannot be evaluated once the context is freed (af.h,
// "Lifetimes"), so the Value keeps eng reachable, and with it from the
// garbage collector. ins are inputs a call may pass through to its output
// (promises of other engines included): their engines are kept too. A
// concrete result (eager engines) keeps nothing.
func (eng *Engine) takeResult(e *C.af_error_t, out *C.af_value_t, ins []*Value) (*Value, error) {
	v, err := takeValue(e, out)
	if err == nil && C.af_value_ready(out) == 0 {
		v.engines = enginesOf(eng, ins)
	}
	return v, err
}

// enginesOf is the set of eng (if not nil) and the engines vs keep alive;
// nil for none.
func enginesOf(eng *Engine, vs []*Value) []*Engine {
	var engines []*Engine
	add := func(e *Engine) {
		if e != nil && !slices.Contains(engines, e) {
			engines = append(engines, e)
		}
	}
	add(eng)
	for _, v := range vs {
		if v != nil {
			for _, e := range v.engines {
				add(e)
			}
		}
	}
	return engines
}

// Stats returns the engine's counters as JSON: {"programs": {"compiles"}, "plan_cache": {"hits",
// "misses", "disk_hits", "evictions", "entries", "bytes", "not_kept",
// "disk_files", "disk_bytes", "disk_evictions"}, "lazy": {"recorded",
// "evaluated", "dropped", "pending", "evaluations", "timed_out",
// "cancelled"}} (af_context_stats).
func (eng *Engine) Stats() (string, error) {
	cp, err := eng.acquire()
	if err != nil {
		return "", err
	}
	defer eng.release()
	var b C.af_bytes_t
	e := C.af_context_stats(cp, &b)
	if err := takeError(e); err != nil {
		return "", err
	}
	return takeBytes(&b), nil
}

// Ready reports whether reading v runs nothing: v is concrete, or every
// promise in it has been evaluated (with a result or an error). False for a
// closed Value.
func (v *Value) Ready() bool {
	p, err := v.acquire()
	if err != nil {
		return false
	}
	defer v.release()
	r := C.af_value_ready(p) != 0
	return r
}
