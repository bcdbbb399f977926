//! Compiled programs (`libaf::Program`), run options and runs in flight
//! (`libaf::Future`).

use std::marker::PhantomData;
use std::os::raw::c_void;
use std::panic::{self, AssertUnwindSafe};
use std::path::PathBuf;
use std::ptr::{self, NonNull};
use std::sync::{Arc, Mutex};
use std::task::{Context as TaskContext, Poll, Waker};
use std::time::Duration;

use crate::context::Context;
use crate::error::{check, Error, ErrorCode, Result};
use crate::ir::Ir;
use crate::sys;
use crate::util::{bytes_to_string, drop_boxed, path_bytes};
use crate::value::{make_value, value_ptrs, Value};

/// A compiled program for the dataflow executor (from [`Program::compile`]).
/// `Clone` adds a reference.
pub struct Program {
    raw: NonNull<sys::af_program_t>,
}

// The header: handles may move between threads; a compiled program is
// immutable.
unsafe impl Send for Program {}
unsafe impl Sync for Program {}

/// Progress callback of a run: `(done, total)` equations.
pub type ProgressFn = dyn Fn(u64, u64) + Send + Sync + 'static;

/// Stream callback of a run: `(equation index, batch item, piece)`, the
/// piece `None` when what that equation and item streamed so far does not
/// count (a retry, re-ask or fallback starts the reply over).
pub type StreamFn = dyn Fn(u32, u64, Option<&str>) + Send + Sync + 'static;

/// Options of a run. `Default` is what a run without options does.
#[derive(Clone, Default)]
pub struct RunOptions {
    /// A failure does not cancel the rest; each failed output leaf becomes
    /// `{"error": {"code", "name", "message"}}`.
    pub keep_going: bool,
    /// Record a profile (see [`Future::profile`]).
    pub profile: bool,
    /// In a batched program, an item that fails becomes its error value in
    /// every output list; the other items complete (their LM calls are not
    /// cancelled).
    pub item_errors: bool,
    /// The run fails with `Timeout` after this long.
    pub timeout: Option<Duration>,
    /// Where to write the profile as Chrome trace JSON.
    pub profile_path: Option<PathBuf>,
    /// Called from libaf threads after each equation; must be quick.
    pub progress: Option<Arc<ProgressFn>>,
    /// Triggering this token ends the run with `Cancelled` (also a blocking
    /// [`Program::call_with`], from another thread).
    pub cancel: Option<Arc<CancelToken>>,
    /// Record the run summary of an asynchronous run for
    /// [`Future::summary`]; a blocking call returns it from
    /// [`Program::call_with_summary`] instead.
    pub summary: bool,
    /// LM replies as they arrive, from libaf threads, one call at a time per
    /// run; must be quick. The run's result is the same as without it.
    pub stream: Option<Arc<StreamFn>>,
    /// Only LM equations carrying this tag stream (`None`: every one).
    pub stream_tag: Option<String>,
    /// The largest value one equation may build, in bytes (a format or
    /// concat result, ...; `None`: the default, 1 GiB). Past it the run
    /// fails with `OutOfMemory` naming the primitive and the size. `Some(0)`
    /// is `InvalidArgument` (0 means the default in C).
    pub max_value_bytes: Option<u64>,
    /// A run journal ([`crate::journal_summary_json`] says what one is):
    /// each LM call the run completes is recorded in this SQLite file before
    /// its result is used, and a call an earlier run of the same program on
    /// the same inputs recorded there is answered from it without reaching
    /// its provider, so a run that was stopped resumes where it stopped.
    /// Created (mode 0600: it holds LM replies in clear) when
    /// missing, with missing parent directories. Program runs only
    /// ([`Context::eval_with`] refuses it). The run fails at its start with
    /// `InvalidArgument` for a journal of another program or other inputs,
    /// `Format` for a file that is not a journal, `Io` when it cannot be
    /// created or opened; a later write that fails fails its call with `Io`.
    pub journal_path: Option<PathBuf>,
}

/// A cancel token: one [`trigger`](Self::trigger) cancels every run given it
/// in its [`RunOptions`] (running now or started later), and what a thread
/// runs inside a [`Context::with_cancel_scope`] of it. Thread-safe; share it
/// with `Arc`.
pub struct CancelToken {
    raw: NonNull<sys::af_cancel_t>,
}

// The header: thread-safe.
unsafe impl Send for CancelToken {}
unsafe impl Sync for CancelToken {}

impl CancelToken {
    /// A new, untriggered token.
    pub fn new() -> Result<CancelToken> {
        let mut out: *mut sys::af_cancel_t = ptr::null_mut();
        check(unsafe { sys::af_cancel_new(&mut out) })?;
        NonNull::new(out)
            .map(|raw| CancelToken { raw })
            .ok_or_else(|| {
                Error::new(
                    ErrorCode::Internal,
                    "af_cancel_new returned success without a token",
                )
            })
    }

    /// Cancels the token's runs; later runs with it end at once. Idempotent.
    pub fn trigger(&self) {
        unsafe { sys::af_cancel_trigger(self.raw.as_ptr()) }
    }

    /// True once triggered.
    pub fn is_triggered(&self) -> bool {
        unsafe { sys::af_cancel_triggered(self.raw.as_ptr()) != 0 }
    }

    /// The raw handle, for calls through [`sys`](crate::sys); valid while
    /// this token lives.
    pub fn as_ptr(&self) -> *mut sys::af_cancel_t {
        self.raw.as_ptr()
    }
}

impl Drop for CancelToken {
    fn drop(&mut self) {
        // Runs already started keep their own reference.
        unsafe { sys::af_cancel_free(self.raw.as_ptr()) }
    }
}

impl std::fmt::Debug for CancelToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CancelToken")
            .field("triggered", &self.is_triggered())
            .finish()
    }
}

/// The UTF-8 bytes the path fields of a C `af_run_options_t` point into
/// (the profile and the journal path): must outlive the call.
pub(crate) struct PathBytes {
    profile: Vec<u8>,
    journal: Vec<u8>,
}

/// A C (pointer, length) string for `b`: NULL when empty (libaf's "none").
fn c_str_or_null(b: &[u8]) -> *const std::os::raw::c_char {
    if b.is_empty() {
        ptr::null()
    } else {
        b.as_ptr().cast()
    }
}

/// The C struct for `opts`; the progress and stream closures are moved into
/// their user_data (freed by libaf through `drop_boxed`, exactly once). The
/// returned path bytes back `profile_path` and `journal_path` and must
/// outlive the call (as must `opts`, which holds the cancel token and the
/// stream tag).
fn raw_options(opts: &RunOptions) -> Result<(sys::af_run_options_t, PathBytes)> {
    let paths = PathBytes {
        profile: match &opts.profile_path {
            Some(p) => path_bytes(p, "profile path")?,
            None => Vec::new(),
        },
        journal: match &opts.journal_path {
            Some(p) => path_bytes(p, "journal path")?,
            None => Vec::new(),
        },
    };
    let mut flags = 0;
    if opts.keep_going {
        flags |= sys::AF_RUN_KEEP_GOING;
    }
    if opts.profile {
        flags |= sys::AF_RUN_PROFILE;
    }
    if opts.item_errors {
        flags |= sys::AF_RUN_ITEM_ERRORS;
    }
    if opts.summary {
        flags |= sys::AF_RUN_SUMMARY;
    }
    let timeout_ms = opts.timeout.map_or(0, |d| {
        u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
    });
    let max_value_bytes = match opts.max_value_bytes {
        None => 0,
        Some(0) => {
            return Err(Error::new(
                ErrorCode::InvalidArgument,
                "RunOptions::max_value_bytes must be positive (None = the default, 1 GiB)",
            ))
        }
        Some(n) => n,
    };
    let (progress, user_data, destroy): (sys::af_progress_fn, *mut c_void, sys::af_destroy_fn) =
        match &opts.progress {
            Some(f) => (
                Some(progress_trampoline),
                Box::into_raw(Box::new(Arc::clone(f))).cast(),
                Some(drop_boxed::<Arc<ProgressFn>>),
            ),
            None => (None, ptr::null_mut(), None),
        };
    let (stream, stream_data, stream_destroy): (
        sys::af_stream_fn,
        *mut c_void,
        sys::af_destroy_fn,
    ) = match &opts.stream {
        Some(f) => (
            Some(stream_trampoline),
            Box::into_raw(Box::new(Arc::clone(f))).cast(),
            Some(drop_boxed::<Arc<StreamFn>>),
        ),
        None => (None, ptr::null_mut(), None),
    };
    let tag = opts.stream_tag.as_deref().unwrap_or("");
    let raw = sys::af_run_options {
        struct_size: std::mem::size_of::<sys::af_run_options_t>() as u32,
        flags,
        timeout_ms,
        progress,
        progress_user_data: user_data,
        progress_destroy: destroy,
        profile_path: c_str_or_null(&paths.profile),
        profile_path_len: paths.profile.len(),
        cancel: opts
            .cancel
            .as_ref()
            .map_or(ptr::null_mut(), |c| c.raw.as_ptr()),
        summary: ptr::null_mut(),
        stream,
        stream_user_data: stream_data,
        stream_destroy,
        stream_tag: if tag.is_empty() {
            ptr::null()
        } else {
            tag.as_ptr().cast()
        },
        stream_tag_len: tag.len(),
        max_value_bytes,
        journal_path: c_str_or_null(&paths.journal),
        journal_path_len: paths.journal.len(),
    };
    Ok((raw, paths))
}

/// The C options of a blocking call (af_program_call_with, af_eval_with):
/// it returns its run summary from `summary_method` beside its result, not
/// through `RunOptions::summary` (that is for asynchronous runs).
pub(crate) fn blocking_options(
    opts: &RunOptions,
    summary_method: &str,
) -> Result<(sys::af_run_options_t, PathBytes)> {
    if opts.summary {
        return Err(Error::new(
            ErrorCode::InvalidArgument,
            format!(
                "RunOptions::summary records an asynchronous run's summary (Future::summary); \
                 a blocking call returns it from {summary_method}"
            ),
        ));
    }
    raw_options(opts)
}

/// Runs a blocking `call` with the C options of `opts` and a buffer for the
/// run summary: its result, and the summary libaf wrote (`None` when nothing
/// ran). `opts.summary` is not needed.
pub(crate) fn with_summary<T>(
    opts: &RunOptions,
    call: impl FnOnce(&sys::af_run_options_t) -> Result<T>,
) -> (Result<T>, Option<String>) {
    let opts = RunOptions {
        summary: false,
        ..opts.clone()
    };
    let (mut raw, _paths) = match raw_options(&opts) {
        Ok(r) => r,
        Err(e) => return (Err(e), None),
    };
    let mut summary = sys::af_bytes_t::default();
    raw.summary = &mut summary;
    let result = call(&raw);
    let summary = (!summary.data.is_null()).then(|| unsafe { bytes_to_string(&mut summary) });
    (result, summary)
}

unsafe extern "C" fn progress_trampoline(user_data: *mut c_void, done: u64, total: u64) {
    if let Some(f) = user_data.cast::<Arc<ProgressFn>>().as_ref() {
        // A panic must not unwind into libaf; progress is advisory.
        let _ = panic::catch_unwind(AssertUnwindSafe(|| f(done, total)));
    }
}

unsafe extern "C" fn stream_trampoline(
    user_data: *mut c_void,
    eqn: u32,
    item: u64,
    text: *const std::os::raw::c_char,
    len: usize,
) {
    if let Some(f) = user_data.cast::<Arc<StreamFn>>().as_ref() {
        let piece = (!text.is_null())
            .then(|| String::from_utf8_lossy(std::slice::from_raw_parts(text.cast::<u8>(), len)));
        // A panic must not unwind into libaf.
        let _ = panic::catch_unwind(AssertUnwindSafe(|| f(eqn, item, piece.as_deref())));
    }
}

impl Program {
    /// Compiles `ir` (validate, DCE, CSE, plan). `InvalidArgument` if the IR
    /// does not validate.
    pub fn compile(ctx: &Context, ir: &Ir) -> Result<Program> {
        let mut out: *mut sys::af_program_t = ptr::null_mut();
        check(unsafe { sys::af_compile(ctx.as_ptr(), ir.as_ptr(), &mut out) })?;
        unsafe { Program::from_raw(out) }.ok_or_else(|| {
            Error::new(
                ErrorCode::Internal,
                "af_compile returned success without a program",
            )
        })
    }

    /// Takes ownership of an owned `af_program_t*` (None if NULL).
    ///
    /// # Safety
    /// `raw` must be NULL or an owned reference to a valid program.
    pub unsafe fn from_raw(raw: *mut sys::af_program_t) -> Option<Program> {
        NonNull::new(raw).map(|raw| Program { raw })
    }

    /// The borrowed handle.
    pub fn as_ptr(&self) -> *const sys::af_program_t {
        self.raw.as_ptr()
    }

    /// Runs the program and waits.
    pub fn call(&self, ctx: &Context, inputs: &[Value]) -> Result<Value> {
        ctx.op_value(|out| unsafe {
            sys::af_program_call(
                ctx.as_ptr(),
                self.as_ptr(),
                value_ptrs(inputs).as_ptr(),
                inputs.len(),
                out,
            )
        })
    }

    /// Runs the program with options and waits.
    pub fn call_with(
        &self,
        ctx: &Context,
        inputs: &[Value],
        options: &RunOptions,
    ) -> Result<Value> {
        let (raw, _paths) = blocking_options(options, "Program::call_with_summary")?;
        self.call_raw(ctx, inputs, &raw)
    }

    /// [`call_with`](Self::call_with), returning the run summary beside the
    /// result: per model calls, tokens, retries, time queued and in flight,
    /// and the wall time, as JSON (af.h "Run summaries"). A failed run has
    /// one too; `None` when nothing ran (invalid inputs).
    pub fn call_with_summary(
        &self,
        ctx: &Context,
        inputs: &[Value],
        options: &RunOptions,
    ) -> (Result<Value>, Option<String>) {
        with_summary(options, |raw| self.call_raw(ctx, inputs, raw))
    }

    /// af_program_call_with.
    fn call_raw(
        &self,
        ctx: &Context,
        inputs: &[Value],
        raw: &sys::af_run_options_t,
    ) -> Result<Value> {
        ctx.op_value(|out| unsafe {
            sys::af_program_call_with(
                ctx.as_ptr(),
                self.as_ptr(),
                value_ptrs(inputs).as_ptr(),
                inputs.len(),
                raw,
                out,
            )
        })
    }

    /// Starts the program and returns at once (input errors are returned
    /// here, run errors by [`Future::wait`]).
    pub fn call_async<'c>(&self, ctx: &'c Context, inputs: &[Value]) -> Result<Future<'c>> {
        self.call_async_with(ctx, inputs, &RunOptions::default())
    }

    /// [`call_async`](Self::call_async) with options.
    pub fn call_async_with<'c>(
        &self,
        ctx: &'c Context,
        inputs: &[Value],
        options: &RunOptions,
    ) -> Result<Future<'c>> {
        let (raw, _paths) = raw_options(options)?;
        let mut out: *mut sys::af_future_t = ptr::null_mut();
        check(unsafe {
            sys::af_program_call_async_with(
                ctx.as_ptr(),
                self.as_ptr(),
                value_ptrs(inputs).as_ptr(),
                inputs.len(),
                &raw,
                &mut out,
            )
        })?;
        NonNull::new(out)
            .map(|raw| Future {
                raw,
                waker: Arc::new(Mutex::new(None)),
                registered: false,
                _ctx: PhantomData,
            })
            .ok_or_else(|| {
                Error::new(
                    ErrorCode::Internal,
                    "af_program_call_async returned success without a future",
                )
            })
    }
}

impl Clone for Program {
    fn clone(&self) -> Program {
        let p = unsafe { sys::af_program_clone(self.as_ptr()) };
        Program {
            raw: NonNull::new(p).expect("af_program_clone returned NULL"),
        }
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        unsafe { sys::af_program_free(self.raw.as_ptr()) }
    }
}

/// A run in flight. Dropping it cancels the run (see its `Drop`); it
/// borrows the context the run uses.
///
/// Block with [`wait`](Self::wait), or `.await` it: it is also a
/// `std::future::Future` (woken from libaf's completion callback, so any
/// executor works).
pub struct Future<'c> {
    raw: NonNull<sys::af_future_t>,
    /// The waker of the last poll, taken by the completion callback.
    waker: Arc<Mutex<Option<Waker>>>,
    /// Whether the completion callback is registered (once per future).
    registered: bool,
    _ctx: PhantomData<&'c Context>,
}

// The future's state is synchronized inside libaf: one thread may wait while
// another cancels.
unsafe impl Send for Future<'_> {}
unsafe impl Sync for Future<'_> {}

impl Future<'_> {
    /// Blocks until the run finishes; its output or error (`Cancelled`,
    /// `Timeout`, or the run's). May be called again with the same result.
    pub fn wait(&self) -> Result<Value> {
        make_value(|out| unsafe { sys::af_future_wait(self.raw.as_ptr(), out) })
    }

    /// True if the run has finished ([`wait`](Self::wait) will not block).
    pub fn ready(&self) -> bool {
        unsafe { sys::af_future_ready(self.raw.as_ptr()) != 0 }
    }

    /// Finishes the run with `Cancelled` and cancels its in-flight work.
    pub fn cancel(&self) {
        unsafe { sys::af_future_cancel(self.raw.as_ptr()) }
    }

    /// Runs `f` once when the run finishes (on a libaf thread, or here at
    /// once if it already has). A panic in `f` is caught and dropped.
    pub fn on_done<F: FnOnce() + Send + 'static>(&self, f: F) -> Result<()> {
        let boxed: Box<Option<F>> = Box::new(Some(f));
        check(unsafe {
            sys::af_future_on_done(
                self.raw.as_ptr(),
                Some(done_trampoline::<F>),
                Box::into_raw(boxed).cast(),
                Some(drop_boxed::<Option<F>>),
            )
        })
    }

    /// The run's profile as Chrome trace JSON (`InvalidArgument` if the run
    /// was started without `profile` or a `profile_path`).
    pub fn profile(&self) -> Result<String> {
        let mut b = sys::af_bytes_t::default();
        check(unsafe { sys::af_future_profile(self.raw.as_ptr(), &mut b) })?;
        Ok(unsafe { bytes_to_string(&mut b) })
    }

    /// The run summary as JSON (af.h "Run summaries"): complete once the
    /// run finished, so far before. `InvalidArgument` if the run was
    /// started without `summary`.
    pub fn summary(&self) -> Result<String> {
        let mut b = sys::af_bytes_t::default();
        check(unsafe { sys::af_future_summary_json(self.raw.as_ptr(), &mut b) })?;
        Ok(unsafe { bytes_to_string(&mut b) })
    }
}

impl std::future::Future for Future<'_> {
    type Output = Result<Value>;

    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Result<Value>> {
        // Store the waker before checking readiness: a run finishing in
        // between then wakes it, and a run finished before is seen below.
        *self.waker.lock().unwrap_or_else(|e| e.into_inner()) = Some(cx.waker().clone());
        if !self.registered {
            let slot = Arc::clone(&self.waker);
            self.on_done(move || {
                if let Some(w) = slot.lock().unwrap_or_else(|e| e.into_inner()).take() {
                    w.wake();
                }
            })?;
            self.registered = true;
        }
        if self.ready() {
            Poll::Ready(self.wait())
        } else {
            Poll::Pending
        }
    }
}

unsafe extern "C" fn done_trampoline<F: FnOnce() + Send + 'static>(user_data: *mut c_void) {
    if let Some(slot) = user_data.cast::<Option<F>>().as_mut() {
        if let Some(f) = slot.take() {
            let _ = panic::catch_unwind(AssertUnwindSafe(f));
        }
    }
}

/// Dropping a `Future` cancels its run, as dropping any Rust future
/// abandons its work: nobody can read the result any more, and the run
/// must not outlive the `Context` it borrows. A no-op for a finished run.
/// To let a run finish unobserved, [`wait`](Future::wait) for it on
/// another thread instead.
impl Drop for Future<'_> {
    fn drop(&mut self) {
        unsafe {
            sys::af_future_cancel(self.raw.as_ptr());
            sys::af_future_free(self.raw.as_ptr());
        }
    }
}

impl std::fmt::Debug for Program {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Program({:p})", self.raw)
    }
}

impl std::fmt::Debug for Future<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Future")
            .field("ready", &self.ready())
            .finish()
    }
}
