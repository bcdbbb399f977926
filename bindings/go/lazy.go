package af

/*
#include "af/af.h"
*/
import "C"

import "runtime"

// NewContextWith makes a context with options, a JSON object as for
// af_context_new_with:
//
//	{"lazy": true, "plan_cache": {"max_entries": 1024, "max_bytes": 268435456, "dir": "..."}}
//
// On a lazy context every operation made outside a trace records a promise:
// a Value whose kind and structure are known at once and whose content is
// computed when it is read (Str, JSON, ...) or when Eval evaluates several
// promises as one run, so their independent LM calls are in flight together.
// A promise closed before it ran never runs.
func NewContextWith(optionsJSON string) (*Context, error) {
	p, n := cstr(optionsJSON)
	var ctx *C.af_context_t
	e := C.af_context_new_with(p, n, &ctx)
	runtime.KeepAlive(optionsJSON)
	if err := takeError(e); err != nil {
		return nil, err
	}
	return wrapContext(ctx), nil
}

// NewLazyContext makes a lazy context with the default plan cache.
func NewLazyContext() (*Context, error) { return NewContextWith(`{"lazy": true}`) }

// Eval evaluates the promises among values (deep) and the context's pending
// observable operations (checkpoints, depends, host calls) as one run. A
// failed operation does not fail Eval: reading its promises returns its
// error. With no values it runs just the pending observable operations.
func (c *Context) Eval(values ...*Value) error {
	cp, err := c.handle()
	if err != nil {
		return err
	}
	ps, err := cValues(values)
	if err != nil {
		return err
	}
	e := C.af_eval(cp, cArray(ps), C.size_t(len(ps)))
	runtime.KeepAlive(c)
	runtime.KeepAlive(values)
	return takeError(e)
}

// Stats returns the context's counters as JSON: {"plan_cache": {"hits",
// "misses", "disk_hits", "evictions", "entries", "bytes"}, "lazy":
// {"recorded", "evaluated", "dropped", "pending"}}.
func (c *Context) Stats() (string, error) {
	cp, err := c.handle()
	if err != nil {
		return "", err
	}
	var b C.af_bytes_t
	e := C.af_context_stats(cp, &b)
	runtime.KeepAlive(c)
	if err := takeError(e); err != nil {
		return "", err
	}
	return takeBytes(&b), nil
}

// Ready reports whether reading v runs nothing: v is concrete, or every
// promise in it has been evaluated (with a result or an error). False for a
// closed Value.
func (v *Value) Ready() bool {
	p, err := v.handle()
	if err != nil {
		return false
	}
	r := C.af_value_ready(p) != 0
	runtime.KeepAlive(v)
	return r
}
