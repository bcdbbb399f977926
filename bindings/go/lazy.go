package af

/*
#include "af/af.h"
*/
import "C"

import "runtime"

// NewEngineWith makes an engine with options, a JSON object as for
// af_context_new_with:
//
//	{"lazy": true, "plan_cache": {"max_entries": 1024, "max_bytes": 268435456, "dir": "..."}, "host_threads": 8}
//
// On a lazy engine every operation made outside a trace records a promise:
// a Value whose kind and structure are known at once and whose content is
// computed when it is read (Str, JSON, ...) or when Eval evaluates several
// promises as one run, so their independent LM calls are in flight together.
// A promise closed before it ran never runs.
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
func (eng *Engine) Eval(values ...*Value) error {
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
	e := C.af_eval(cp, cArray(ps), C.size_t(len(ps)))
	return takeError(e)
}

// Stats returns the engine's counters as JSON: {"plan_cache": {"hits",
// "misses", "disk_hits", "evictions", "entries", "bytes"}, "lazy":
// {"recorded", "evaluated", "dropped", "pending"}}.
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
