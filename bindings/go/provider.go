package af

/*
#include <stdint.h>
#include "af/af.h"

af_error_t* afgo_provider_host_new(uintptr_t handle, af_provider_t** out);
*/
import "C"

import (
	"runtime"
	"runtime/cgo"
	"sync"
)

// Provider is where LM requests go. It may be routed in several engines;
// its limit (max in flight) is shared by all of them. Close it when done
// (a finalizer frees a forgotten one); a routed provider stays alive in its
// engines.
type Provider struct {
	ptr cPtr[*C.af_provider_t] // guarded: freed once closed and no use is in progress
}

func newProvider(e *C.af_error_t, p *C.af_provider_t) (*Provider, error) {
	if err := takeError(e); err != nil {
		return nil, err
	}
	return wrapProvider(p), nil
}

// wrapProvider owns a new af_provider_t* (closed by Close or the finalizer).
func wrapProvider(p *C.af_provider_t) *Provider {
	prov := &Provider{}
	prov.ptr.init(p)
	runtime.SetFinalizer(prov, (*Provider).Close)
	return prov
}

func freeProvider(p *C.af_provider_t) { C.af_provider_free(p) }

// NewProvider makes a provider of any built-in type from a spec naming it:
// {"type": "anthropic", ...options} (echo, openai, anthropic, ollama or
// replay), so a whole provider can come from a config file.
func NewProvider(specJSON string) (*Provider, error) {
	p, n := cstr(specJSON)
	var out *C.af_provider_t
	e := C.af_provider_new(p, n, &out)
	runtime.KeepAlive(specJSON)
	return newProvider(e, out)
}

// NewEchoProvider is deterministic and offline: lm_call answers
// "<model>|<content of the last message>". optionsJSON: a JSON object
// ("" = defaults), e.g. {"latency_ms": 50}.
func NewEchoProvider(optionsJSON string) (*Provider, error) {
	p, n := cstr(optionsJSON)
	var out *C.af_provider_t
	e := C.af_provider_echo_new(p, n, &out)
	runtime.KeepAlive(optionsJSON)
	return newProvider(e, out)
}

// NewOpenAIProvider talks to an OpenAI-compatible chat-completions endpoint
// ("base_url" required).
func NewOpenAIProvider(optionsJSON string) (*Provider, error) {
	p, n := cstr(optionsJSON)
	var out *C.af_provider_t
	e := C.af_provider_openai_new(p, n, &out)
	runtime.KeepAlive(optionsJSON)
	return newProvider(e, out)
}

// NewReplayProvider answers from (or records to) a JSON Lines file ("path"
// required).
func NewReplayProvider(optionsJSON string) (*Provider, error) {
	p, n := cstr(optionsJSON)
	var out *C.af_provider_t
	e := C.af_provider_replay_new(p, n, &out)
	runtime.KeepAlive(optionsJSON)
	return newProvider(e, out)
}

// NewHostProvider makes a provider the host answers: fn receives each
// request and must finish it exactly once (Complete or Fail) from any
// goroutine, now or later. fn runs on a libaf thread and must not block for
// long; a panic in it fails the request.
func NewHostProvider(fn func(req *LMRequest)) (*Provider, error) {
	if fn == nil {
		return nil, &Error{Message: "NewHostProvider: fn is nil", code: CodeInvalidArgument}
	}
	var out *C.af_provider_t
	// Deleted by libaf's destroy callback (also on error).
	e := C.afgo_provider_host_new(C.uintptr_t(cgo.NewHandle(fn)), &out)
	return newProvider(e, out)
}

// Close drops the provider's reference. Idempotent.
func (p *Provider) Close() {
	if p == nil {
		return
	}
	// Frees once however many goroutines close at once, and only after the
	// uses in progress (see cPtr).
	if p.ptr.Close(freeProvider) {
		runtime.SetFinalizer(p, nil)
	}
}

// Clone returns a new handle (a new reference) to the same provider.
func (p *Provider) Clone() (*Provider, error) {
	pp, err := p.acquire()
	if err != nil {
		return nil, err
	}
	defer p.release()
	return wrapProvider(C.af_provider_clone(pp)), nil
}

// acquire holds p open for a C call (see cPtr): its C handle, or the
// closed-handle error for a nil or closed Provider. Release it with
// release.
func (p *Provider) acquire() (*C.af_provider_t, error) {
	if p != nil {
		if pp, ok := p.ptr.Acquire(); ok {
			return pp, nil
		}
	}
	return nil, errClosed("provider")
}

// release ends a use begun by a successful acquire.
func (p *Provider) release() { p.ptr.Release(freeProvider) }

// SetMaxInFlight changes the provider's limit (0 = unlimited).
func (p *Provider) SetMaxInFlight(n uint32) error {
	pp, err := p.acquire()
	if err != nil {
		return err
	}
	defer p.release()
	e := C.af_provider_set_max_in_flight(pp, C.uint32_t(n))
	return takeError(e)
}

// Stats are the provider's counters as JSON: submitted, started, finished,
// in_flight, queued, peak_in_flight, max_in_flight, prompt_tokens,
// completion_tokens (usage of completed requests; echo counts words).
func (p *Provider) Stats() (string, error) {
	pp, err := p.acquire()
	if err != nil {
		return "", err
	}
	defer p.release()
	var b C.af_bytes_t
	e := C.af_provider_stats(pp, &b)
	if err := takeError(e); err != nil {
		return "", err
	}
	return takeBytes(&b), nil
}

// LMRequest is one request handed to a host provider. Finish it exactly once
// with Complete or Fail, from any goroutine; a request that is garbage
// collected unfinished is failed with CodeProvider.
type LMRequest struct {
	mu  sync.Mutex
	ptr *C.af_lm_request_t // nil once finished; guarded by mu
}

func newLMRequest(p *C.af_lm_request_t) *LMRequest {
	r := &LMRequest{ptr: p}
	runtime.SetFinalizer(r, func(r *LMRequest) {
		_ = r.Fail(NewError(CodeProvider, "the host provider dropped the request without answering it"))
	})
	return r
}

// take hands the request to the caller once: later calls get an error.
func (r *LMRequest) take() (*C.af_lm_request_t, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ptr == nil {
		return nil, &Error{Message: "the LM request was already completed or failed", code: CodeInvalidArgument}
	}
	p := r.ptr
	r.ptr = nil
	runtime.SetFinalizer(r, nil)
	return p, nil
}

// JSON is the request: {"model", "messages": [{"role", "content"}...]} plus
// "schema" and "json_schema" for schema calls and "tags" when present.
func (r *LMRequest) JSON() (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ptr == nil {
		return "", &Error{Message: "the LM request was already completed or failed", code: CodeInvalidArgument}
	}
	var b C.af_bytes_t
	if err := takeError(C.af_lm_request_json(r.ptr, &b)); err != nil {
		return "", err
	}
	return takeBytes(&b), nil
}

// Cancelled reports whether the run no longer wants the answer (the request
// must still be finished).
func (r *LMRequest) Cancelled() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ptr != nil && C.af_lm_request_cancelled(r.ptr) != 0
}

// Complete answers the request with the reply text (for schema calls: the
// JSON the schema describes).
func (r *LMRequest) Complete(content string) error {
	p, err := r.take()
	if err != nil {
		return err
	}
	cp, n := cstr(content)
	e := C.af_lm_request_complete(p, cp, n)
	runtime.KeepAlive(content)
	return takeError(e)
}

// Fail fails the request with err (an *Error keeps its code; any other
// error is sent as CodeProvider).
func (r *LMRequest) Fail(err error) error {
	p, terr := r.take()
	if terr != nil {
		return terr
	}
	var ce *C.af_error_t
	if err != nil {
		if ae, ok := err.(*Error); ok {
			ce = newCErrorWith(ae.code, ae.Message, err)
		} else {
			ce = newCErrorWith(CodeProvider, err.Error(), err)
		}
	}
	return takeError(C.af_lm_request_fail(p, ce))
}

// Route routes models matching pattern ('*' any run, '?' one character) to
// provider; the engine keeps a reference.
func (eng *Engine) Route(pattern string, provider *Provider) error {
	cp, err := eng.acquire()
	if err != nil {
		return err
	}
	defer eng.release()
	pp, err := provider.acquire()
	if err != nil {
		return err
	}
	defer provider.release()
	p, n := cstr(pattern)
	e := C.af_context_route(cp, p, n, pp)
	runtime.KeepAlive(pattern)
	return takeError(e)
}

// LMCall asks model (a str) for a reply to messages (a list of {"role",
// "content"}). Recorded inside a trace, one blocking request outside.
func (eng *Engine) LMCall(messages, model *Value) (*Value, error) {
	return eng.LMSchemaCall(messages, model, nil)
}

// LMSchemaCall is a structured LM call: the reply is validated against
// schema (a tree of node descriptions) and has its structure. A nil schema
// is a plain LMCall.
func (eng *Engine) LMSchemaCall(messages, model, schema *Value) (*Value, error) {
	return eng.lmCall(messages, model, schema, nil)
}
