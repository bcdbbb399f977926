//! `libaf::Context`, the operations recorded inside a trace, tag/fold scopes
//! and `Context::trace` (control flow, host functions, scopes and LM calls
//! are in their own modules).

use std::any::Any;
use std::os::raw::c_void;
use std::panic::{self, AssertUnwindSafe};
use std::ptr::{self, NonNull};
use std::sync::Arc;

use crate::error::{check, Error, ErrorCode, Result};
use crate::ir::Ir;
use crate::program::CancelToken;
use crate::sys;
use crate::value::{borrowed_values, make_value, value_ptrs, KeepAlive, Value};

/// What a program needs at run time: host functions, provider routes,
/// run-time scopes (collect, inject, memoize) and the scheduler. Not `Clone`
/// (the C API has no context reference counting): share it with `&Context`
/// or `Arc<Context>`.
///
/// A pending promise of a lazy context (a [`Value`] an operation returned,
/// not yet evaluated) keeps the context alive: dropping the `Context` frees
/// the native context only once the last such promise is dropped too, so a
/// promise read later still evaluates. (Do not drop that last promise inside
/// a libaf callback, where the context cannot be freed.)
pub struct Context {
    raw: NonNull<sys::af_context_t>,
    /// Frees the native context when its last holder goes: this `Context`
    /// and the pending promises recorded on it (see `Value`). `None` for a
    /// context libaf lends to a callback.
    owner: Option<Arc<ContextOwner>>,
}

// The header: handles may move between threads; an af_context_t serializes
// its own mutations internally.
unsafe impl Send for Context {}
unsafe impl Sync for Context {}

/// The one owned reference to a native context. af.h ("Lifetimes"): a
/// promise holds what it needs to be evaluated but not its context, and
/// bindings make a promise keep its context alive; this is what they share.
pub(crate) struct ContextOwner(NonNull<sys::af_context_t>);

unsafe impl Send for ContextOwner {}
unsafe impl Sync for ContextOwner {}

impl Drop for ContextOwner {
    fn drop(&mut self) {
        unsafe { sys::af_context_free(self.0.as_ptr()) }
    }
}

impl Context {
    /// A new context.
    pub fn new() -> Result<Context> {
        let mut out: *mut sys::af_context_t = ptr::null_mut();
        check(unsafe { sys::af_context_new(&mut out) })?;
        unsafe { Context::from_raw(out) }.ok_or_else(|| {
            Error::new(
                ErrorCode::Internal,
                "af_context_new returned success without a context",
            )
        })
    }

    /// The borrowed handle.
    pub fn as_ptr(&self) -> *mut sys::af_context_t {
        self.raw.as_ptr()
    }

    /// Takes ownership of an `af_context_t*` (None if NULL).
    ///
    /// # Safety
    /// `raw` must be NULL or an owned, valid context.
    pub unsafe fn from_raw(raw: *mut sys::af_context_t) -> Option<Context> {
        NonNull::new(raw).map(|raw| Context {
            raw,
            owner: Some(Arc::new(ContextOwner(raw))),
        })
    }

    /// Gives up ownership: the caller must `af_context_free` the result.
    ///
    /// # Panics
    /// If a pending promise of this context is still alive: it holds the
    /// context too, so ownership cannot be given away (drop it first).
    pub fn into_raw(self) -> *mut sys::af_context_t {
        let p = self.as_ptr();
        if let Some(owner) = self.owner {
            match Arc::try_unwrap(owner) {
                Ok(owner) => std::mem::forget(owner),
                Err(_) => panic!(
                    "Context::into_raw: pending promises of this context still hold it; drop them first"
                ),
            }
        }
        p
    }

    /// `make_value` for an operation on this context: a pending promise
    /// (what an operation on a lazy context returns outside a trace) keeps
    /// the context alive; a concrete or evaluated value needs nothing.
    pub(crate) fn op_value(
        &self,
        f: impl FnOnce(*mut *mut sys::af_value_t) -> *mut sys::af_error_t,
    ) -> Result<Value> {
        let v = make_value(f)?;
        match &self.owner {
            Some(owner) if unsafe { sys::af_value_ready(v.as_ptr()) } == 0 => {
                let keep: KeepAlive = owner.clone();
                Ok(v.keeping(Some(keep)))
            }
            _ => Ok(v),
        }
    }

    // ---------------------------------------------------------------- tracing

    /// Traces `f` once on placeholders shaped like `examples` into an [`Ir`].
    ///
    /// `f` gets the context to record operations with and the inputs
    /// (placeholders, or the example values themselves for static leaves).
    /// `static_mask`: a bool tree that is a prefix of the list of inputs
    /// (true = static); `None` = all dynamic.
    ///
    /// Errors (the C API's rule): an error `f` got from libaf and returned
    /// (e.g. with `?`) comes back unchanged; an error `f` made itself ([`Error::new`]) comes back as
    /// a `Callback` error whose cause carries its code and message; libaf's
    /// own trace errors (bad mask, output not built from the inputs, ...)
    /// as they are. If `f` panics, the panic resumes here once libaf has
    /// returned (it never unwinds through C).
    pub fn trace<F>(&self, f: F, examples: &[Value], static_mask: Option<&Value>) -> Result<Ir>
    where
        F: FnMut(&Context, &[Value]) -> Result<Value>,
    {
        self.trace_raw(f, "af_trace", |fn_, user_data, out| unsafe {
            sys::af_trace(
                self.as_ptr(),
                fn_,
                user_data,
                value_ptrs(examples).as_ptr(),
                examples.len(),
                static_mask.map_or(ptr::null(), Value::as_ptr),
                out,
            )
        })
    }

    /// [`trace`](Self::trace) with [`TraceOptions`]: a static mask and a
    /// list mask whose `true` leaves mark example lists traced as lists of
    /// any length (one placeholder each, an input of kind `list<T>`: what a
    /// batched IR takes; calls pass lists of any length). Errors as `trace`,
    /// and `InvalidArgument` naming the input path for a list mask that is
    /// not a prefix of the inputs or marks something other than a non-empty
    /// list of one leaf kind.
    pub fn trace_with<F>(&self, f: F, examples: &[Value], options: &TraceOptions<'_>) -> Result<Ir>
    where
        F: FnMut(&Context, &[Value]) -> Result<Value>,
    {
        let raw = sys::af_trace_options_t {
            struct_size: std::mem::size_of::<sys::af_trace_options_t>() as u32,
            static_mask: options.static_mask.map_or(ptr::null(), Value::as_ptr),
            list_mask: options.list_mask.map_or(ptr::null(), Value::as_ptr),
        };
        self.trace_raw(f, "af_trace_with", |fn_, user_data, out| unsafe {
            sys::af_trace_with(
                self.as_ptr(),
                fn_,
                user_data,
                value_ptrs(examples).as_ptr(),
                examples.len(),
                &raw,
                out,
            )
        })
    }

    /// Runs `call` (af_trace or af_trace_with) with `f` behind the
    /// trampoline; resumes a panic of `f` and hands back an error `f` got
    /// from libaf unchanged.
    fn trace_raw<F>(
        &self,
        f: F,
        name: &str,
        call: impl FnOnce(sys::af_trace_fn, *mut c_void, *mut *mut sys::af_ir_t) -> *mut sys::af_error_t,
    ) -> Result<Ir>
    where
        F: FnMut(&Context, &[Value]) -> Result<Value>,
    {
        let mut state = TraceState {
            f,
            panic: None,
            library_error: None,
        };
        let mut out: *mut sys::af_ir_t = ptr::null_mut();
        let err = call(
            Some(trace_trampoline::<F>),
            (&mut state as *mut TraceState<F>).cast::<c_void>(),
            &mut out,
        );
        let result = check(err).and_then(|()| {
            unsafe { Ir::from_raw(out) }.ok_or_else(|| {
                Error::new(
                    ErrorCode::Internal,
                    format!("{name} returned success without an IR"),
                )
            })
        });
        if let Some(payload) = state.panic.take() {
            drop(result);
            panic::resume_unwind(payload);
        }
        match (result, state.library_error.take()) {
            (Err(_), Some(original)) => Err(original),
            (r, _) => r,
        }
    }

    /// Pushes a tag scope: every equation recorded by the innermost trace of
    /// this thread carries `tag` until the matching [`tag_pop`](Self::tag_pop).
    /// `InvalidArgument` outside a trace.
    pub fn tag_push(&self, tag: &str) -> Result<()> {
        check(unsafe { sys::af_tag_push(self.as_ptr(), tag.as_ptr().cast(), tag.len()) })
    }

    /// Pops the innermost tag scope (`InvalidArgument` without a push).
    pub fn tag_pop(&self) -> Result<()> {
        check(unsafe { sys::af_tag_pop(self.as_ptr()) })
    }

    /// Pushes a name scope: what the innermost trace of this thread records
    /// (or, outside a trace, a lazy context) carries `name` in its name path
    /// ("triage/classify") until the matching [`name_pop`](Self::name_pop).
    /// `InvalidArgument` outside a trace on an eager context, for an empty
    /// name or one holding '/'.
    pub fn name_push(&self, name: &str) -> Result<()> {
        check(unsafe { sys::af_name_push(self.as_ptr(), name.as_ptr().cast(), name.len()) })
    }

    /// Pops the innermost name scope (`InvalidArgument` without a push).
    pub fn name_pop(&self) -> Result<()> {
        check(unsafe { sys::af_name_pop(self.as_ptr()) })
    }

    /// Runs `f` inside a name scope (popped even if `f` fails or panics).
    pub fn with_name<R>(&self, name: &str, f: impl FnOnce() -> Result<R>) -> Result<R> {
        self.name_push(name)?;
        let guard = ScopeGuard {
            ctx: self,
            pop: Context::name_pop,
        };
        guard.finish(f())
    }

    /// Starts folding: operations run at trace time and become literals.
    pub fn fold_push(&self) -> Result<()> {
        check(unsafe { sys::af_fold_push(self.as_ptr()) })
    }

    /// Ends the innermost fold scope.
    pub fn fold_pop(&self) -> Result<()> {
        check(unsafe { sys::af_fold_pop(self.as_ptr()) })
    }

    /// Runs `f` inside a tag scope (popped even if `f` fails or panics).
    pub fn with_tag<R>(&self, tag: &str, f: impl FnOnce() -> Result<R>) -> Result<R> {
        self.tag_push(tag)?;
        let guard = ScopeGuard {
            ctx: self,
            pop: Context::tag_pop,
        };
        guard.finish(f())
    }

    /// Runs `f` inside a fold scope (popped even if `f` fails or panics).
    pub fn with_fold<R>(&self, f: impl FnOnce() -> Result<R>) -> Result<R> {
        self.fold_push()?;
        let guard = ScopeGuard {
            ctx: self,
            pop: Context::fold_pop,
        };
        guard.finish(f())
    }

    /// Runs `f` inside a cancel scope of `token` (`af_cancel_scope_push` /
    /// `af_cancel_scope_pop`): until `f` returns, what this thread runs on
    /// this context ends with [`ErrorCode::Cancelled`] once `token` is
    /// triggered, from any thread (noticed within 20 ms):
    ///
    /// - eager LM calls ([`lm_call`](Self::lm_call),
    ///   [`lm_schema_call`](Self::lm_schema_call),
    ///   [`lm_tool_call`](Self::lm_tool_call)), whose requests are aborted;
    /// - [`host_call`](Self::host_call) of a blocking or async host function
    ///   (an async one sees [`HostRequest::cancelled`]; a late answer is
    ///   ignored);
    /// - runs this thread starts ([`Ir::call`], [`Program::call`],
    ///   [`Program::call_async`], ...) whose [`RunOptions`] give no `cancel`
    ///   token of their own (a run with its own token keeps it).
    ///
    /// A plain host function runs on this thread and is not interrupted; a
    /// lazy evaluation takes its token from [`eval_with`](Self::eval_with).
    /// A triggered token stays triggered: later calls in the scope end at
    /// once. This is how a Ctrl-C handler stops what the main thread waits
    /// for: trigger the token from the handler.
    ///
    /// The scope belongs to the calling thread: other threads using this
    /// context (threads `f` spawns too) are not in it. Scopes nest, and the
    /// token of every open scope stops what runs inside it: an inner scope
    /// never shields from an outer one (a Ctrl-C scope inside a caller's
    /// scope leaves the caller's token working), and a triggered token ends
    /// nothing outside its own scope. The scope holds its own reference to
    /// the token. It is closed when `f` returns, fails or panics, so pushes and
    /// pops pair up in order on this thread by construction: a pop without a
    /// push (`InvalidArgument` in the C API) cannot happen, and the scope
    /// cannot be held across an `.await` (`f` is not async).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::{thread, time::Duration};
    /// use libaf::{CancelToken, Context, ErrorCode, Provider, Value};
    ///
    /// let ctx = Context::new()?;
    /// ctx.route("*", &Provider::echo(r#"{"latency_ms": 5000}"#)?)?;
    /// let token = Arc::new(CancelToken::new()?);
    /// let stop = Arc::clone(&token);
    /// let stopper = thread::spawn(move || {
    ///     thread::sleep(Duration::from_millis(50)); // a Ctrl-C handler, say
    ///     stop.trigger();
    /// });
    /// let msgs = Value::from_json(r#"[{"role": "user", "content": "hi"}]"#)?;
    /// let err = ctx.with_cancel_scope(&token, || ctx.lm_call(&msgs, "m")).unwrap_err();
    /// assert_eq!(err.code, ErrorCode::Cancelled); // after ~50 ms, not 5 s
    /// stopper.join().unwrap();
    /// # Ok::<(), libaf::Error>(())
    /// ```
    ///
    /// [`HostRequest::cancelled`]: crate::HostRequest::cancelled
    /// [`Program::call`]: crate::Program::call
    /// [`Program::call_async`]: crate::Program::call_async
    /// [`RunOptions`]: crate::RunOptions
    pub fn with_cancel_scope<R>(
        &self,
        token: &CancelToken,
        f: impl FnOnce() -> Result<R>,
    ) -> Result<R> {
        check(unsafe { sys::af_cancel_scope_push(self.as_ptr(), token.as_ptr()) })?;
        let guard = ScopeGuard {
            ctx: self,
            pop: Context::cancel_scope_pop,
        };
        guard.finish(f())
    }

    /// Closes the innermost cancel scope of this thread (private: only
    /// [`with_cancel_scope`](Self::with_cancel_scope) pops, after its push).
    fn cancel_scope_pop(&self) -> Result<()> {
        check(unsafe { sys::af_cancel_scope_pop(self.as_ptr()) })
    }

    // ------------------------------------------------------------- operations

    /// Python-style template: `{}` automatic, `{0}` positional, `{name}`
    /// named (from the `named` dict), `{{`/`}}` escapes. Non-string arguments
    /// are stringified as JSON. `InvalidArgument` for unbalanced braces,
    /// mixed numbering, missing arguments.
    pub fn format(&self, tmpl: &str, args: &[Value], named: Option<&Value>) -> Result<Value> {
        self.op_value(|out| unsafe {
            sys::af_format(
                self.as_ptr(),
                tmpl.as_ptr().cast(),
                tmpl.len(),
                value_ptrs(args).as_ptr(),
                args.len(),
                named.map_or(ptr::null(), Value::as_ptr),
                out,
            )
        })
    }

    /// Concatenation of strings (every argument must be a str).
    pub fn concat(&self, args: &[Value]) -> Result<Value> {
        self.op_value(|out| unsafe {
            sys::af_concat(self.as_ptr(), value_ptrs(args).as_ptr(), args.len(), out)
        })
    }

    /// String equality: a bool value.
    pub fn match_(&self, a: impl Into<Value>, b: impl Into<Value>) -> Result<Value> {
        let (a, b) = (a.into(), b.into());
        self.op_value(|out| unsafe { sys::af_match(self.as_ptr(), a.as_ptr(), b.as_ptr(), out) })
    }

    /// Identity on a tree; tangents and cotangents through it are zero.
    pub fn stop_gradient(&self, v: impl Into<Value>) -> Result<Value> {
        let v = v.into();
        self.op_value(|out| unsafe { sys::af_stop_gradient(self.as_ptr(), v.as_ptr(), out) })
    }

    /// `value`, produced only after every dep exists (keeps deps alive in DCE).
    pub fn depends(&self, value: &Value, deps: &[Value]) -> Result<Value> {
        self.op_value(|out| unsafe {
            sys::af_depends(
                self.as_ptr(),
                value.as_ptr(),
                value_ptrs(deps).as_ptr(),
                deps.len(),
                out,
            )
        })
    }

    /// Identity that marks `v` as checkpoint `key` of `collection`.
    pub fn checkpoint(&self, v: &Value, key: &str, collection: &str) -> Result<Value> {
        self.op_value(|out| unsafe {
            sys::af_checkpoint(
                self.as_ptr(),
                v.as_ptr(),
                key.as_ptr().cast(),
                key.len(),
                collection.as_ptr().cast(),
                collection.len(),
                out,
            )
        })
    }
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Context({:p})", self.raw)
    }
}

/// True if the calling thread is inside a trace callback.
pub fn is_tracing() -> bool {
    unsafe { sys::af_is_tracing() != 0 }
}

/// Pops a tag/name/fold/cancel scope when dropped (also while unwinding).
struct ScopeGuard<'a> {
    ctx: &'a Context,
    pop: fn(&Context) -> Result<()>,
}

impl ScopeGuard<'_> {
    fn finish<R>(self, r: Result<R>) -> Result<R> {
        let popped = (self.pop)(self.ctx);
        std::mem::forget(self);
        let v = r?;
        popped?;
        Ok(v)
    }
}

impl Drop for ScopeGuard<'_> {
    fn drop(&mut self) {
        let _ = (self.pop)(self.ctx);
    }
}

/// Options of [`Context::trace_with`] (`af_trace_options_t`).
#[derive(Clone, Copy, Debug, Default)]
pub struct TraceOptions<'a> {
    /// A bool tree prefix of the list of inputs: true = static (a literal
    /// of the IR). `None` = every leaf dynamic.
    pub static_mask: Option<&'a Value>,
    /// A bool tree prefix of the list of inputs: true marks the example list
    /// at its place (of leaves of one kind, or nested lists of them) as a
    /// list of any length. `None` = none.
    pub list_mask: Option<&'a Value>,
}

struct TraceState<F> {
    f: F,
    /// A panic of `f`, resumed after af_trace returns.
    panic: Option<Box<dyn Any + Send + 'static>>,
    /// A libaf error `f` returned: handed back unchanged by `trace`.
    library_error: Option<Error>,
}

pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> &str {
    if let Some(s) = payload.downcast_ref::<&'static str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s
    } else {
        "<non-string panic payload>"
    }
}

unsafe extern "C" fn trace_trampoline<F>(
    user_data: *mut c_void,
    ctx: *mut sys::af_context_t,
    inputs: *const *const sys::af_value_t,
    n_inputs: usize,
    out: *mut *mut sys::af_value_t,
) -> *mut sys::af_error_t
where
    F: FnMut(&Context, &[Value]) -> Result<Value>,
{
    if !out.is_null() {
        *out = ptr::null_mut();
    }
    if user_data.is_null() || ctx.is_null() || out.is_null() {
        let msg = "af trace trampoline called with NULL user_data, ctx or out";
        return sys::af_error_new(sys::AF_ERR_INTERNAL, msg.as_ptr().cast(), msg.len());
    }
    let state = &mut *user_data.cast::<TraceState<F>>();
    if state.panic.is_some() {
        let msg = "the Rust trace closure panicked earlier";
        return sys::af_error_new(sys::AF_ERR_INTERNAL, msg.as_ptr().cast(), msg.len());
    }
    let result = panic::catch_unwind(AssertUnwindSafe(|| {
        // The context libaf passes, borrowed (no owner: never freed here).
        let borrowed = Context {
            raw: NonNull::new_unchecked(ctx),
            owner: None,
        };
        let values = borrowed_values(inputs, n_inputs, "trace input")?;
        (state.f)(&borrowed, &values)
    }));
    match result {
        Ok(Ok(v)) => {
            *out = v.into_raw();
            ptr::null_mut()
        }
        Ok(Err(e)) => {
            if e.from_library {
                state.library_error = Some(e.clone());
            }
            e.into_raw()
        }
        Err(payload) => {
            let msg = format!(
                "the Rust trace closure panicked: {}",
                panic_message(&*payload)
            );
            state.panic = Some(payload);
            sys::af_error_new(sys::AF_ERR_INTERNAL, msg.as_ptr().cast(), msg.len())
        }
    }
}
