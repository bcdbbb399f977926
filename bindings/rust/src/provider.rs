//! LM providers (echo, openai, replay, host), host-answered requests,
//! routing, and the LM calls.

use std::os::raw::c_void;
use std::panic::{self, AssertUnwindSafe};
use std::ptr::{self, NonNull};

use crate::context::Context;
use crate::error::{check, Error, ErrorCode, Result};
use crate::sys;
use crate::util::{bytes_to_string, drop_boxed};
use crate::value::Value;

/// Where LM requests go. `Clone` adds a reference; a provider may be routed
/// in several contexts and its limit is shared by all of them.
pub struct Provider {
    raw: NonNull<sys::af_provider_t>,
}

// The header: handles may move between threads; providers are shared by
// contexts running on libaf threads.
unsafe impl Send for Provider {}
unsafe impl Sync for Provider {}

type SubmitFn = dyn Fn(LmRequest) + Send + Sync + 'static;

fn make_provider(
    f: impl FnOnce(*mut *mut sys::af_provider_t) -> *mut sys::af_error_t,
) -> Result<Provider> {
    let mut out: *mut sys::af_provider_t = ptr::null_mut();
    check(f(&mut out))?;
    NonNull::new(out)
        .map(|raw| Provider { raw })
        .ok_or_else(|| {
            Error::new(
                ErrorCode::Internal,
                "libaf returned success without a provider",
            )
        })
}

impl Provider {
    /// Any built-in type from a spec naming it: `{"type": "anthropic", ...options}`
    /// (echo, openai, anthropic, ollama or replay; `af_provider_new`), so a
    /// whole provider can come from a config file.
    pub fn from_spec(spec_json: &str) -> Result<Provider> {
        make_provider(|out| unsafe { sys::af_provider_new(spec_json.as_ptr().cast(), spec_json.len(), out) })
    }

    /// Deterministic and offline: answers `"<model>|<content of the last
    /// message>"`. `options_json`: a JSON object ("" = defaults);
    /// [`Provider::echo_with`] takes typed [`EchoOptions`](crate::EchoOptions).
    pub fn echo(options_json: &str) -> Result<Provider> {
        make_provider(|out| unsafe {
            sys::af_provider_echo_new(options_json.as_ptr().cast(), options_json.len(), out)
        })
    }

    /// Any OpenAI-compatible chat-completions endpoint (`base_url` required);
    /// [`Provider::openai_with`] takes typed
    /// [`OpenAiOptions`](crate::OpenAiOptions).
    pub fn openai(options_json: &str) -> Result<Provider> {
        make_provider(|out| unsafe {
            sys::af_provider_openai_new(options_json.as_ptr().cast(), options_json.len(), out)
        })
    }

    /// Answers from (or records to) a JSON Lines file (`path` required);
    /// [`Provider::replay_with`] takes typed
    /// [`ReplayOptions`](crate::ReplayOptions).
    pub fn replay(options_json: &str) -> Result<Provider> {
        make_provider(|out| unsafe {
            sys::af_provider_replay_new(options_json.as_ptr().cast(), options_json.len(), out)
        })
    }

    /// The host answers: `f` receives each request and must finish it with
    /// [`LmRequest::complete`] or [`LmRequest::fail`], from any thread, now
    /// or later (a request dropped unfinished fails with `Provider`). `f`
    /// runs on a libaf thread and must not block for long; a panic in it
    /// fails that request. `f` is dropped once, when the provider is freed.
    pub fn host<F: Fn(LmRequest) + Send + Sync + 'static>(f: F) -> Result<Provider> {
        let boxed: Box<Box<SubmitFn>> = Box::new(Box::new(f));
        let user_data = Box::into_raw(boxed).cast::<c_void>();
        make_provider(|out| unsafe {
            sys::af_provider_host_new(
                Some(submit_trampoline),
                user_data,
                Some(drop_boxed::<Box<SubmitFn>>),
                out,
            )
        })
    }

    /// The borrowed handle.
    pub fn as_ptr(&self) -> *mut sys::af_provider_t {
        self.raw.as_ptr()
    }

    /// Changes the limit of requests in flight (0 = unlimited).
    pub fn set_max_in_flight(&self, max_in_flight: u32) -> Result<()> {
        check(unsafe { sys::af_provider_set_max_in_flight(self.as_ptr(), max_in_flight) })
    }

    /// Changes the options every provider takes (`max_in_flight`,
    /// `requests_per_minute`, `tokens_per_minute`, `schema_retries`), e.g.
    /// `{"requests_per_minute": 500}`; keys not given keep their values.
    pub fn set_options(&self, options_json: &str) -> Result<()> {
        check(unsafe {
            sys::af_provider_set_options(
                self.as_ptr(),
                options_json.as_ptr().cast(),
                options_json.len(),
            )
        })
    }

    /// Counters as a JSON value: submitted, started, finished, in_flight,
    /// queued, peak_in_flight, max_in_flight, prompt_tokens,
    /// completion_tokens (usage of completed requests; echo counts words),
    /// requests_per_minute, tokens_per_minute, rate_waits, schema_retries.
    pub fn stats(&self) -> Result<Value> {
        let mut b = sys::af_bytes_t::default();
        check(unsafe { sys::af_provider_stats(self.as_ptr(), &mut b) })?;
        Value::from_json(&unsafe { bytes_to_string(&mut b) })
    }
}

impl Clone for Provider {
    fn clone(&self) -> Provider {
        let p = unsafe { sys::af_provider_clone(self.as_ptr()) };
        Provider {
            raw: NonNull::new(p).expect("af_provider_clone returned NULL"),
        }
    }
}

impl Drop for Provider {
    fn drop(&mut self) {
        unsafe { sys::af_provider_free(self.raw.as_ptr()) }
    }
}

/// One LM request handed to a host provider. Finish it exactly once with
/// [`complete`](Self::complete) or [`fail`](Self::fail) (both consume it);
/// dropping it unfinished fails it with `Provider`.
pub struct LmRequest {
    raw: NonNull<sys::af_lm_request_t>,
}

// The header: a request may be finished from any thread.
unsafe impl Send for LmRequest {}
unsafe impl Sync for LmRequest {}

impl LmRequest {
    /// The request as JSON: `{"model", "messages": [{"role", "content"}...]}`
    /// plus `"schema"`/`"json_schema"` for schema calls and `"tags"`.
    pub fn json(&self) -> Result<Value> {
        let mut b = sys::af_bytes_t::default();
        check(unsafe { sys::af_lm_request_json(self.raw.as_ptr(), &mut b) })?;
        Value::from_json(&unsafe { bytes_to_string(&mut b) })
    }

    /// Streams a piece of the reply before [`complete`](Self::complete)
    /// (the run streams when [`json`](Self::json) has `"stream": true`;
    /// ignored otherwise).
    pub fn stream(&self, text: &str) -> Result<()> {
        check(unsafe {
            sys::af_lm_request_stream(self.raw.as_ptr(), text.as_ptr().cast(), text.len())
        })
    }

    /// What was streamed so far does not count: the reply starts over.
    pub fn restart_stream(&self) -> Result<()> {
        check(unsafe { sys::af_lm_request_stream(self.raw.as_ptr(), ptr::null(), 0) })
    }

    /// True if the run no longer wants the answer (it must still be finished).
    pub fn cancelled(&self) -> bool {
        unsafe { sys::af_lm_request_cancelled(self.raw.as_ptr()) != 0 }
    }

    /// Answers with the reply text (for schema calls: the JSON the schema
    /// describes).
    pub fn complete(self, content: &str) -> Result<()> {
        let raw = self.into_raw();
        check(unsafe { sys::af_lm_request_complete(raw, content.as_ptr().cast(), content.len()) })
    }

    /// Fails the request with `err` (its code is kept; use `Provider` for a
    /// failed call).
    pub fn fail(self, err: Error) -> Result<()> {
        let raw = self.into_raw();
        check(unsafe { sys::af_lm_request_fail(raw, err.into_raw()) })
    }

    fn into_raw(self) -> *mut sys::af_lm_request_t {
        let p = self.raw.as_ptr();
        std::mem::forget(self);
        p
    }
}

impl Drop for LmRequest {
    fn drop(&mut self) {
        let msg = "the host provider dropped the request without answering it";
        unsafe {
            let e = sys::af_error_new(sys::AF_ERR_PROVIDER, msg.as_ptr().cast(), msg.len());
            let r = sys::af_lm_request_fail(self.raw.as_ptr(), e);
            if !r.is_null() {
                sys::af_error_free(r);
            }
        }
    }
}

unsafe extern "C" fn submit_trampoline(user_data: *mut c_void, req: *mut sys::af_lm_request_t) {
    let Some(req) = NonNull::new(req).map(|raw| LmRequest { raw }) else {
        return;
    };
    let Some(f) = user_data.cast::<Box<SubmitFn>>().as_ref() else {
        return;
    };
    // On a panic the closure's LmRequest is dropped while unwinding, which
    // fails the request; the panic itself must not reach libaf.
    let _ = panic::catch_unwind(AssertUnwindSafe(|| f(req)));
}

impl Context {
    /// Routes models matching `model_pattern` (`*`, `?` wildcards) to
    /// `provider` (the context keeps a reference).
    pub fn route(&self, model_pattern: &str, provider: &Provider) -> Result<()> {
        check(unsafe {
            sys::af_context_route(
                self.as_ptr(),
                model_pattern.as_ptr().cast(),
                model_pattern.len(),
                provider.as_ptr(),
            )
        })
    }

    /// Routes models matching `model_pattern` to `providers` in order: the
    /// next one is asked after a `Provider` or `Timeout` error.
    pub fn route_fallback(&self, model_pattern: &str, providers: &[&Provider]) -> Result<()> {
        let raw: Vec<*mut sys::af_provider_t> = providers.iter().map(|p| p.as_ptr()).collect();
        check(unsafe {
            sys::af_context_route_fallback(
                self.as_ptr(),
                model_pattern.as_ptr().cast(),
                model_pattern.len(),
                raw.as_ptr(),
                raw.len(),
            )
        })
    }

    /// [`lm_call`](Self::lm_call) with sampling params: a dict of
    /// `temperature`, `top_p`, `max_tokens`, `seed`, `stop` (part of the
    /// recorded equation).
    pub fn lm_call_with(
        &self,
        messages: impl Into<Value>,
        model: impl Into<Value>,
        params: impl Into<Value>,
    ) -> Result<Value> {
        let (messages, model, params) = (messages.into(), model.into(), params.into());
        self.op_value(|out| unsafe {
            sys::af_lm_call_ex(
                self.as_ptr(),
                messages.as_ptr(),
                model.as_ptr(),
                params.as_ptr(),
                out,
            )
        })
    }

    /// [`lm_schema_call`](Self::lm_schema_call) with sampling params.
    pub fn lm_schema_call_with(
        &self,
        messages: impl Into<Value>,
        model: impl Into<Value>,
        schema: impl Into<Value>,
        params: impl Into<Value>,
    ) -> Result<Value> {
        let (messages, model, schema, params) =
            (messages.into(), model.into(), schema.into(), params.into());
        self.op_value(|out| unsafe {
            sys::af_lm_schema_call_ex(
                self.as_ptr(),
                messages.as_ptr(),
                model.as_ptr(),
                schema.as_ptr(),
                params.as_ptr(),
                out,
            )
        })
    }

    /// An LM call: `messages` is a list of `{"role", "content"}`, `model` a
    /// str. Recorded inside a trace, a blocking request outside. Returns the
    /// reply text.
    pub fn lm_call(&self, messages: impl Into<Value>, model: impl Into<Value>) -> Result<Value> {
        let (messages, model) = (messages.into(), model.into());
        self.op_value(|out| unsafe {
            sys::af_lm_call(self.as_ptr(), messages.as_ptr(), model.as_ptr(), out)
        })
    }

    /// A structured LM call: the reply is validated against `schema` (a tree
    /// of node descriptions) and returned with the schema's structure.
    pub fn lm_schema_call(
        &self,
        messages: impl Into<Value>,
        model: impl Into<Value>,
        schema: impl Into<Value>,
    ) -> Result<Value> {
        let (messages, model, schema) = (messages.into(), model.into(), schema.into());
        self.op_value(|out| unsafe {
            sys::af_lm_schema_call(
                self.as_ptr(),
                messages.as_ptr(),
                model.as_ptr(),
                schema.as_ptr(),
                out,
            )
        })
    }

    /// A tool-calling LM call: the model may answer, or call some of `tools`
    /// (a list of `{"name", "description", "parameters"}`, `parameters` a
    /// schema tree as [`lm_schema_call`](Self::lm_schema_call)'s whose root
    /// is a container; static, like a schema). `history` is a str (may be
    /// traced) holding the JSON array of the turns after `messages`, as
    /// [`tool_results`](Self::tool_results) builds it (`""` or `"[]"` for
    /// none). Returns a dict: `"called"` (bool: the model called tools, the
    /// reply is not final), `"text"` (str), `"names"` (list of str, the tools
    /// called in order), `"arguments"` (list of str, each call's arguments
    /// as compact JSON), `"turn"` (str, the model's turn as a history
    /// message). Each call is checked against its tool (a failing reply is
    /// re-asked like an invalid structured reply, then `Schema`). Recorded
    /// inside a trace, a blocking request outside; not differentiable.
    pub fn lm_tool_call(
        &self,
        messages: impl Into<Value>,
        history: impl Into<Value>,
        model: impl Into<Value>,
        tools: impl Into<Value>,
    ) -> Result<Value> {
        self.tool_call(messages.into(), history.into(), model.into(), tools.into(), None)
    }

    /// [`lm_tool_call`](Self::lm_tool_call) with sampling params (as
    /// [`lm_call_with`](Self::lm_call_with)).
    pub fn lm_tool_call_with(
        &self,
        messages: impl Into<Value>,
        history: impl Into<Value>,
        model: impl Into<Value>,
        tools: impl Into<Value>,
        params: impl Into<Value>,
    ) -> Result<Value> {
        let params = params.into();
        self.tool_call(messages.into(), history.into(), model.into(), tools.into(), Some(&params))
    }

    fn tool_call(
        &self,
        messages: Value,
        history: Value,
        model: Value,
        tools: Value,
        params: Option<&Value>,
    ) -> Result<Value> {
        self.op_value(|out| unsafe {
            sys::af_lm_tool_call(
                self.as_ptr(),
                messages.as_ptr(),
                history.as_ptr(),
                model.as_ptr(),
                tools.as_ptr(),
                params.map_or(ptr::null(), Value::as_ptr),
                out,
            )
        })
    }

    /// The history after a tool-calling turn: `history` (a str, as
    /// [`lm_tool_call`](Self::lm_tool_call)'s) with `turn` (its `"turn"`)
    /// and one tool message per str of `results` (a list), answering the
    /// turn's calls in order; a final turn (no calls) with no results is
    /// appended alone. Recorded inside a trace (all three may be traced).
    /// `InvalidArgument`: not one result per call, a malformed history or
    /// turn.
    pub fn tool_results(
        &self,
        history: impl Into<Value>,
        turn: impl Into<Value>,
        results: impl Into<Value>,
    ) -> Result<Value> {
        let (history, turn, results) = (history.into(), turn.into(), results.into());
        self.op_value(|out| unsafe {
            sys::af_tool_results(
                self.as_ptr(),
                history.as_ptr(),
                turn.as_ptr(),
                results.as_ptr(),
                out,
            )
        })
    }
}

impl std::fmt::Debug for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Provider({:p})", self.raw)
    }
}

impl std::fmt::Debug for LmRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LmRequest({:p})", self.raw)
    }
}
