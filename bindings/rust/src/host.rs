//! Host functions (closures registered by name and called from programs)
//! and the run-time scopes of a context (collect, inject, memoize).

use std::os::raw::c_void;
use std::panic::{self, AssertUnwindSafe};
use std::ptr::{self, NonNull};

use crate::context::{panic_message, Context};
use crate::error::{check, Error, Result};
use crate::sys;
use crate::util::drop_boxed;
use crate::value::{borrowed_values, make_value, value_ptrs, Value};

type HostFn = dyn Fn(&[Value]) -> Result<Value> + Send + Sync + 'static;
type AsyncHostFn = dyn Fn(&[Value], HostRequest) + Send + Sync + 'static;

/// What calls a registered closure: exactly one of the two kinds.
enum Trampoline {
    Sync(sys::af_host_fn),
    Async(sys::af_host_async_fn),
}

/// How a host function is registered ([`Context::register_function_with`],
/// [`Context::register_function_async_with`]). `Default` is what
/// [`register_function`](Context::register_function) uses: effectful,
/// called on a scheduler thread.
///
/// A host function is effectful unless `pure`: each call of an effectful
/// function runs exactly once per run, compiled or lazy, even when nothing
/// reads its result (it is never dropped by dce, merged by cse nor answered
/// by a memoize scope). A pure function (same arguments, same result, no
/// effects) lets libaf drop a call whose result is unused, merge equal calls
/// and answer one from a memoize scope. Effectful is the default because its
/// mistake is cheaper: a pure function taken for effectful costs a call that
/// was not needed, an effectful one taken for pure silently loses what it
/// does. The flag is recorded in each call's equation when it is traced or
/// recorded (and kept in saved graphs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct FunctionOptions {
    /// No effects (`AF_FUNCTION_PURE`): calls may be dropped, merged,
    /// memoized.
    pub pure: bool,
    /// Each call runs on the context's host pool (`AF_FUNCTION_BLOCKING`, as
    /// [`register_function_blocking`](Context::register_function_blocking)).
    /// Sync functions only: with
    /// [`register_function_async_with`](Context::register_function_async_with)
    /// it is `InvalidArgument`.
    pub blocking: bool,
}

impl FunctionOptions {
    /// The `AF_FUNCTION_*` flags these options stand for.
    pub fn flags(&self) -> u32 {
        let mut flags = 0;
        if self.pure {
            flags |= sys::AF_FUNCTION_PURE;
        }
        if self.blocking {
            flags |= sys::AF_FUNCTION_BLOCKING;
        }
        flags
    }
}

/// One call of an async host function ([`Context::register_function_async`]).
/// Finish it once with [`complete`](Self::complete) or [`fail`](Self::fail),
/// from any thread, now or later; a second finish is an `InvalidArgument`
/// error and changes nothing. Dropping it unfinished fails the call with
/// `Callback`, so a lost request never hangs a run.
pub struct HostRequest {
    raw: NonNull<sys::af_host_request_t>,
}

// The header: a request may be finished from any thread.
unsafe impl Send for HostRequest {}
unsafe impl Sync for HostRequest {}

impl HostRequest {
    /// True once the run no longer wants the result (cancelled, timed out,
    /// failed elsewhere): stop working; finishing it is then ignored.
    pub fn cancelled(&self) -> bool {
        unsafe { sys::af_host_request_cancelled(self.raw.as_ptr()) != 0 }
    }

    /// Finishes the call with `result`. `InvalidArgument` naming the
    /// function when it does not match the declared kinds (the call fails
    /// with the same error).
    pub fn complete(&self, result: &Value) -> Result<()> {
        check(unsafe { sys::af_host_request_complete(self.raw.as_ptr(), result.as_ptr()) })
    }

    /// Fails the call: `err` becomes the cause of a `Callback` error.
    pub fn fail(&self, err: Error) -> Result<()> {
        check(unsafe { sys::af_host_request_fail(self.raw.as_ptr(), err.into_raw()) })
    }
}

impl Drop for HostRequest {
    fn drop(&mut self) {
        unsafe { sys::af_host_request_free(self.raw.as_ptr()) }
    }
}

impl std::fmt::Debug for HostRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HostRequest({:p})", self.raw)
    }
}

impl Context {
    /// Registers `f` as host function `name` (replacing an earlier one), an
    /// effectful function ([`FunctionOptions`]; for a pure one use
    /// [`register_function_with`](Self::register_function_with)).
    /// `result_kinds`: the result's structure with kind names as leaves
    /// (`"str"`, `{"n": "int"}`, ...). `f` may be called from any thread; an
    /// error it returns becomes the cause of a `Callback` error, and a panic
    /// is caught and reported the same way (it never unwinds into libaf).
    /// The closure is dropped exactly once: when replaced, when the context
    /// is dropped, or here if registration fails.
    pub fn register_function<F>(&self, name: &str, result_kinds: &Value, f: F) -> Result<()>
    where
        F: Fn(&[Value]) -> Result<Value> + Send + Sync + 'static,
    {
        self.register_function_with(name, result_kinds, &FunctionOptions::default(), f)
    }

    /// Like [`register_function`](Self::register_function), but each call
    /// runs on the context's host pool (at most `host_threads` at once, a
    /// context option, default 8), never on a scheduler thread: for slow
    /// tools that block.
    pub fn register_function_blocking<F>(
        &self,
        name: &str,
        result_kinds: &Value,
        f: F,
    ) -> Result<()>
    where
        F: Fn(&[Value]) -> Result<Value> + Send + Sync + 'static,
    {
        let options = FunctionOptions {
            blocking: true,
            ..FunctionOptions::default()
        };
        self.register_function_with(name, result_kinds, &options, f)
    }

    /// [`register_function`](Self::register_function) with options
    /// (`af_register_function_with`): `pure` (its calls may be dropped when
    /// unused, merged when equal, answered by a memoize scope) and
    /// `blocking` (as
    /// [`register_function_blocking`](Self::register_function_blocking)).
    ///
    /// ```
    /// use libaf::{Context, FunctionOptions, Value};
    ///
    /// let ctx = Context::new()?;
    /// let pure = FunctionOptions { pure: true, ..Default::default() };
    /// ctx.register_function_with("upper", &Value::from("str"), &pure, |args| {
    ///     Ok(Value::from(args[0].as_str()?.to_uppercase()))
    /// })?;
    /// assert_eq!(ctx.host_call("upper", &[Value::from("a")])?, "A");
    /// # Ok::<(), libaf::Error>(())
    /// ```
    pub fn register_function_with<F>(
        &self,
        name: &str,
        result_kinds: &Value,
        options: &FunctionOptions,
        f: F,
    ) -> Result<()>
    where
        F: Fn(&[Value]) -> Result<Value> + Send + Sync + 'static,
    {
        let f: Box<HostFn> = Box::new(f);
        let trampoline = Trampoline::Sync(Some(host_trampoline));
        self.register(name, result_kinds, options, f, trampoline)
    }

    /// Registers an async host function (effectful; see
    /// [`register_function_async_with`](Self::register_function_async_with)):
    /// `f` receives the arguments and a [`HostRequest`], starts the work (a
    /// thread, an async runtime) and returns; the work finishes the request
    /// later and no libaf thread waits meanwhile. A panic in `f` fails the
    /// call. Outside a trace, [`host_call`](Self::host_call) waits for the
    /// request.
    pub fn register_function_async<F>(&self, name: &str, result_kinds: &Value, f: F) -> Result<()>
    where
        F: Fn(&[Value], HostRequest) + Send + Sync + 'static,
    {
        self.register_function_async_with(name, result_kinds, &FunctionOptions::default(), f)
    }

    /// [`register_function_async`](Self::register_function_async) with
    /// options: `pure` as for
    /// [`register_function_with`](Self::register_function_with); `blocking`
    /// is `InvalidArgument` (an async function never blocks a thread).
    pub fn register_function_async_with<F>(
        &self,
        name: &str,
        result_kinds: &Value,
        options: &FunctionOptions,
        f: F,
    ) -> Result<()>
    where
        F: Fn(&[Value], HostRequest) + Send + Sync + 'static,
    {
        let f: Box<AsyncHostFn> = Box::new(f);
        let trampoline = Trampoline::Async(Some(async_host_trampoline));
        self.register(name, result_kinds, options, f, trampoline)
    }

    /// The one registration path (`af_register_function_with`): `closure`
    /// goes to libaf boxed behind `user_data`, with `trampoline` to call it
    /// and `drop_boxed` to free it. libaf runs the destroy callback before
    /// returning an error (the options struct is always complete), so the
    /// box is never freed twice nor leaked.
    fn register<C>(
        &self,
        name: &str,
        result_kinds: &Value,
        options: &FunctionOptions,
        closure: C,
        trampoline: Trampoline,
    ) -> Result<()> {
        let user_data = Box::into_raw(Box::new(closure)).cast::<c_void>();
        let (fn_, async_fn) = match trampoline {
            Trampoline::Sync(f) => (f, None),
            Trampoline::Async(f) => (None, f),
        };
        let raw = sys::af_function_options_t {
            struct_size: std::mem::size_of::<sys::af_function_options_t>() as u32,
            flags: options.flags(),
            fn_,
            async_fn,
            user_data,
            destroy: Some(drop_boxed::<C>),
            result_kinds: result_kinds.as_ptr(),
        };
        check(unsafe {
            sys::af_register_function_with(self.as_ptr(), name.as_ptr().cast(), name.len(), &raw)
        })
    }

    /// Calls host function `name`: recorded inside a trace, called at once
    /// outside. `NotFound` if it is not registered, `Callback` if it failed.
    pub fn host_call(&self, name: &str, args: &[Value]) -> Result<Value> {
        self.op_value(|out| unsafe {
            sys::af_host_call(
                self.as_ptr(),
                name.as_ptr().cast(),
                name.len(),
                value_ptrs(args).as_ptr(),
                args.len(),
                out,
            )
        })
    }

    // ------------------------------------------------------------ run scopes
    //
    // A scope belongs to the thread that pushed it: it applies to the runs
    // that thread starts, never to other threads' runs. Push and pop on one
    // thread (not across an `.await` that may resume elsewhere).

    /// Opens a collect scope: every checkpoint of `collection` that runs
    /// appends its value under its key.
    pub fn collect_push(&self, collection: &str) -> Result<()> {
        check(unsafe {
            sys::af_collect_push(self.as_ptr(), collection.as_ptr().cast(), collection.len())
        })
    }

    /// Closes the innermost collect scope: `{key: [values in program order]}`
    /// (docs/SEMANTICS.md §4), however the run was scheduled.
    pub fn collect_pop(&self) -> Result<Value> {
        make_value(|out| unsafe { sys::af_collect_pop(self.as_ptr(), out) })
    }

    /// Opens an inject scope: `values` is `{key: [values...]}`; a checkpoint
    /// of `collection` with a queued value yields it instead of its input,
    /// the queued values going to the hits in program order.
    pub fn inject_push(&self, collection: &str, values: &Value) -> Result<()> {
        check(unsafe {
            sys::af_inject_push(
                self.as_ptr(),
                collection.as_ptr().cast(),
                collection.len(),
                values.as_ptr(),
            )
        })
    }

    /// Closes the innermost inject scope.
    pub fn inject_pop(&self) -> Result<()> {
        check(unsafe { sys::af_inject_pop(self.as_ptr()) })
    }

    /// Opens a memoize scope: identical calls run once.
    pub fn memoize_push(&self) -> Result<()> {
        check(unsafe { sys::af_memoize_push(self.as_ptr()) })
    }

    /// Closes the innermost memoize scope.
    pub fn memoize_pop(&self) -> Result<()> {
        check(unsafe { sys::af_memoize_pop(self.as_ptr()) })
    }
}

/// Adds an instant event (a marker such as "cache miss" or "page 3 fetched")
/// to the profile of the run calling the current host function.
/// `args_json`: a JSON object shown with the event (`None` = none).
///
/// It counts when called from a host function's body ([`register_function`],
/// [`register_function_blocking`], or an async function's closure before it
/// returns; not later, from another thread) while a run that records a
/// profile ([`RunOptions::profile`] or [`RunOptions::profile_path`]) calls
/// it: the profile then has an event `{"ph": "i", "cat": "host", "name",
/// "args": {"eqn": .., "args": args_json}}` on the calling thread's track.
/// Anywhere else (no run, an eager call, a run without a profile) it does
/// nothing and returns `Ok(())`. `InvalidArgument`: `name` empty, or
/// `args_json` malformed or not an object.
///
/// [`register_function`]: Context::register_function
/// [`register_function_blocking`]: Context::register_function_blocking
/// [`RunOptions::profile`]: crate::RunOptions::profile
/// [`RunOptions::profile_path`]: crate::RunOptions::profile_path
pub fn profile_event(name: &str, args_json: Option<&str>) -> Result<()> {
    let (args, args_len) = match args_json {
        Some(a) => (a.as_ptr().cast(), a.len()),
        None => (ptr::null(), 0),
    };
    check(unsafe { sys::af_profile_event(name.as_ptr().cast(), name.len(), args, args_len) })
}

unsafe extern "C" fn host_trampoline(
    user_data: *mut c_void,
    args: *const *const sys::af_value_t,
    n: usize,
    out: *mut *mut sys::af_value_t,
) -> *mut sys::af_error_t {
    if out.is_null() || user_data.is_null() {
        let msg = "af host trampoline called with NULL user_data or out";
        return sys::af_error_new(sys::AF_ERR_INTERNAL, msg.as_ptr().cast(), msg.len());
    }
    *out = ptr::null_mut();
    let f = &*user_data.cast::<Box<HostFn>>();
    let result = panic::catch_unwind(AssertUnwindSafe(|| {
        f(&borrowed_values(args, n, "host argument")?)
    }));
    match result {
        Ok(Ok(v)) => {
            *out = v.into_raw();
            ptr::null_mut()
        }
        Ok(Err(e)) => e.into_raw(),
        Err(payload) => {
            let msg = format!(
                "the Rust host function panicked: {}",
                panic_message(&*payload)
            );
            sys::af_error_new(sys::AF_ERR_INTERNAL, msg.as_ptr().cast(), msg.len())
        }
    }
}

unsafe extern "C" fn async_host_trampoline(
    user_data: *mut c_void,
    args: *const *const sys::af_value_t,
    n: usize,
    req: *mut sys::af_host_request_t,
) {
    let Some(req) = NonNull::new(req).map(|raw| HostRequest { raw }) else {
        return;
    };
    let Some(f) = user_data.cast::<Box<AsyncHostFn>>().as_ref() else {
        return; // dropping req fails the call
    };
    let values = match borrowed_values(args, n, "host argument") {
        Ok(v) => v,
        Err(e) => {
            let _ = req.fail(e);
            return;
        }
    };
    // On a panic the closure's HostRequest is dropped while unwinding, which
    // fails the call; the panic itself must not reach libaf.
    let _ = panic::catch_unwind(AssertUnwindSafe(|| f(&values, req)));
}
