package af

/*
#include "af/af.h"
*/
import "C"

import "runtime"

// What a production LM user configures: per-call sampling params, fallback
// routes, the options every provider takes, and streamed host replies.

// LMCallWith is LMCall with sampling params: a dict of "temperature",
// "top_p", "max_tokens", "seed", "stop" (part of the recorded equation;
// nil = none).
func (eng *Engine) LMCallWith(messages, model, params *Value) (*Value, error) {
	return eng.LMSchemaCallWith(messages, model, nil, params)
}

// LMSchemaCallWith is LMSchemaCall with sampling params (a nil schema is a
// plain LMCallWith).
func (eng *Engine) LMSchemaCallWith(messages, model, schema, params *Value) (*Value, error) {
	return eng.lmCall(messages, model, schema, params)
}

// lmCall makes every LM call: af_lm_call / af_lm_schema_call without params,
// their _ex forms with them (a nil schema is a plain call).
func (eng *Engine) lmCall(messages, model, schema, params *Value) (*Value, error) {
	cp, err := eng.handle()
	if err != nil {
		return nil, err
	}
	mp, err := messages.handle()
	if err != nil {
		return nil, err
	}
	modp, err := model.handle()
	if err != nil {
		return nil, err
	}
	var pp, sp *C.af_value_t
	if params != nil {
		if pp, err = params.handle(); err != nil {
			return nil, err
		}
	}
	if schema != nil {
		if sp, err = schema.handle(); err != nil {
			return nil, err
		}
	}
	var out *C.af_value_t
	var e *C.af_error_t
	switch {
	case schema == nil && params == nil:
		e = C.af_lm_call(cp, mp, modp, &out)
	case schema == nil:
		e = C.af_lm_call_ex(cp, mp, modp, pp, &out)
	case params == nil:
		e = C.af_lm_schema_call(cp, mp, modp, sp, &out)
	default:
		e = C.af_lm_schema_call_ex(cp, mp, modp, sp, pp, &out)
	}
	runtime.KeepAlive(eng)
	runtime.KeepAlive(messages)
	runtime.KeepAlive(model)
	runtime.KeepAlive(schema)
	runtime.KeepAlive(params)
	return takeValue(e, out)
}

// RouteFallback routes models matching pattern to providers in order: a
// request that fails with CodeProvider or CodeTimeout (after a provider's
// own retries) is sent to the next one. The engine keeps a reference to
// each.
func (eng *Engine) RouteFallback(pattern string, providers ...*Provider) error {
	cp, err := eng.handle()
	if err != nil {
		return err
	}
	// C pointers in Go memory: allowed to cross (no Go pointer inside).
	list := make([]*C.af_provider_t, len(providers))
	for i, p := range providers {
		if list[i], err = p.handle(); err != nil {
			return err
		}
	}
	var first **C.af_provider_t
	if len(list) > 0 {
		first = &list[0]
	}
	p, n := cstr(pattern)
	e := C.af_context_route_fallback(cp, p, n, first, C.size_t(len(providers)))
	runtime.KeepAlive(eng)
	runtime.KeepAlive(providers)
	runtime.KeepAlive(pattern)
	return takeError(e)
}

// SetOptions changes the options every provider takes ("max_in_flight",
// "requests_per_minute", "tokens_per_minute", "schema_retries"), e.g.
// {"requests_per_minute": 500}; keys not given keep their values.
func (p *Provider) SetOptions(optionsJSON string) error {
	pp, err := p.handle()
	if err != nil {
		return err
	}
	s, n := cstr(optionsJSON)
	e := C.af_provider_set_options(pp, s, n)
	runtime.KeepAlive(p)
	runtime.KeepAlive(optionsJSON)
	return takeError(e)
}

// Stream sends a piece of the reply before Complete (the run streams when
// JSON has "stream": true; ignored otherwise).
func (r *LMRequest) Stream(text string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ptr == nil {
		return NewError(CodeInvalidArgument, "the LM request was already completed or failed")
	}
	s, n := cstr(text) // never NULL, which would mean restart
	e := C.af_lm_request_stream(r.ptr, s, n)
	runtime.KeepAlive(text)
	return takeError(e)
}

// RestartStream: what was streamed so far does not count; the reply starts
// over.
func (r *LMRequest) RestartStream() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ptr == nil {
		return NewError(CodeInvalidArgument, "the LM request was already completed or failed")
	}
	return takeError(C.af_lm_request_stream(r.ptr, nil, 0))
}
