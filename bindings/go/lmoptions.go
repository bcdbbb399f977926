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
	cp, err := eng.acquire()
	if err != nil {
		return nil, err
	}
	defer eng.release()
	mp, err := messages.acquire()
	if err != nil {
		return nil, err
	}
	defer messages.release()
	modp, err := model.acquire()
	if err != nil {
		return nil, err
	}
	defer model.release()
	var pp, sp *C.af_value_t
	if params != nil {
		if pp, err = params.acquire(); err != nil {
			return nil, err
		}
		defer params.release()
	}
	if schema != nil {
		if sp, err = schema.acquire(); err != nil {
			return nil, err
		}
		defer schema.release()
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
	return eng.takeResult(e, out, nil)
}

// RouteFallback routes models matching pattern to providers in order: a
// request that fails with CodeProvider or CodeTimeout (after a provider's
// own retries) is sent to the next one. The engine keeps a reference to
// each.
func (eng *Engine) RouteFallback(pattern string, providers ...*Provider) error {
	cp, err := eng.acquire()
	if err != nil {
		return err
	}
	defer eng.release()
	// C pointers in Go memory: allowed to cross (no Go pointer inside).
	// Each provider is held open for the call; the ones held are kept apart,
	// so that the ones released are the ones acquired.
	list := make([]*C.af_provider_t, len(providers))
	held := make([]*Provider, 0, len(providers))
	defer func() {
		for _, p := range held {
			p.release()
		}
	}()
	for i, p := range providers {
		if list[i], err = p.acquire(); err != nil {
			return err
		}
		held = append(held, p)
	}
	var first **C.af_provider_t
	if len(list) > 0 {
		first = &list[0]
	}
	p, n := cstr(pattern)
	e := C.af_context_route_fallback(cp, p, n, first, C.size_t(len(list)))
	runtime.KeepAlive(pattern)
	return takeError(e)
}

// SetOptions changes the options every provider takes ("max_in_flight",
// "requests_per_minute", "tokens_per_minute", "schema_retries"), e.g.
// {"requests_per_minute": 500}; keys not given keep their values.
func (p *Provider) SetOptions(optionsJSON string) error {
	pp, err := p.acquire()
	if err != nil {
		return err
	}
	defer p.release()
	s, n := cstr(optionsJSON)
	e := C.af_provider_set_options(pp, s, n)
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
