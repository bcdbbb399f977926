//! Lazy contexts and the plan cache: [`Context::with_options`],
//! [`Context::new_lazy`], [`Context::eval`], [`Context::eval_with`],
//! [`Value::is_ready`], [`Context::stats`].
//!
//! On a lazy context every operation made outside a trace records a promise:
//! a [`Value`] whose kind and structure are known at once and whose content
//! is computed when it is read (`as_str`, `to_json`, ...) or when
//! [`Context::eval`] evaluates several promises as one run, so their
//! independent LM calls are in flight together. A promise dropped before it
//! ran never runs; a pending promise keeps its context alive. See af.h,
//! "Lazy evaluation and the plan cache".

use std::ptr;

use crate::error::{check, Error, ErrorCode, Result};
use crate::program::{blocking_options, with_summary, RunOptions};
use crate::sys;
use crate::util::bytes_to_string;
use crate::value::{value_ptrs, Value};
use crate::Context;

impl Context {
    /// A context with options (JSON, as `af_context_new_with`):
    /// `{"lazy": bool, "plan_cache": {"max_entries", "max_bytes", "dir",
    /// "max_disk_bytes"}, "host_threads": int, "eager_timeout_ms": int,
    /// "host_wait_ms": int, "eval_timeout_ms": int}`. `"eval_timeout_ms"`
    /// (lazy contexts; 0 = none) is the deadline of every evaluation a read
    /// or [`eval`](Self::eval) starts: past it the evaluation fails with
    /// `Timeout` ([`eval_with`](Self::eval_with) sets its own).
    /// `InvalidArgument` for unknown keys or wrong kinds; `Io` when the cache
    /// directory cannot be created or written.
    pub fn with_options(options_json: &str) -> Result<Context> {
        let mut out: *mut sys::af_context_t = ptr::null_mut();
        check(unsafe {
            sys::af_context_new_with(options_json.as_ptr().cast(), options_json.len(), &mut out)
        })?;
        unsafe { Context::from_raw(out) }.ok_or_else(|| {
            Error::new(
                ErrorCode::Internal,
                "af_context_new_with returned success without a context",
            )
        })
    }

    /// A lazy context with the default plan cache.
    pub fn new_lazy() -> Result<Context> {
        Context::with_options(r#"{"lazy": true}"#)
    }

    /// Evaluates the promises among `values` (deep) and the context's pending
    /// observable operations as one run. A failed operation does not fail
    /// `eval`: reading its promises returns its error. An empty slice runs
    /// just the pending observable operations. The context's
    /// `"eval_timeout_ms"` bounds it (`Timeout`).
    pub fn eval(&self, values: &[Value]) -> Result<()> {
        check(unsafe {
            sys::af_eval(self.as_ptr(), value_ptrs(values).as_ptr().cast(), values.len())
        })
    }

    /// [`eval`](Self::eval) with a run's options for this one evaluation
    /// (`af_eval_with`): `timeout` (`None` = the context's
    /// `"eval_timeout_ms"`), `cancel`, `item_errors`, `profile` /
    /// `profile_path`, `progress`, `stream` / `stream_tag` and
    /// `max_value_bytes` as for [`Program::call_with`](crate::Program::call_with)
    /// (`keep_going` is always on). `Timeout` or `Cancelled` when the deadline
    /// or the cancel stopped the evaluation: the promises it was evaluating
    /// then hold that error (reading them returns it, later too).
    /// `RunOptions::summary` is `InvalidArgument`: use
    /// [`eval_with_summary`](Self::eval_with_summary). So is
    /// `RunOptions::journal_path` (journals record program runs only).
    pub fn eval_with(&self, values: &[Value], options: &RunOptions) -> Result<()> {
        let (raw, _paths) = blocking_options(options, "Context::eval_with_summary")?;
        self.eval_raw(values, &raw)
    }

    /// [`eval_with`](Self::eval_with), returning the run summary of the
    /// evaluation beside its result (JSON, af.h "Run summaries"; `None` when
    /// nothing ran).
    pub fn eval_with_summary(
        &self,
        values: &[Value],
        options: &RunOptions,
    ) -> (Result<()>, Option<String>) {
        with_summary(options, |raw| self.eval_raw(values, raw))
    }

    /// af_eval_with.
    fn eval_raw(&self, values: &[Value], raw: &sys::af_run_options_t) -> Result<()> {
        check(unsafe {
            sys::af_eval_with(
                self.as_ptr(),
                value_ptrs(values).as_ptr().cast(),
                values.len(),
                raw,
            )
        })
    }

    /// The context's counters:
    /// `{"programs": {"compiles"}, "plan_cache": {"hits", "misses", "disk_hits", "evictions", "entries",
    /// "bytes", "not_kept", "disk_files", "disk_bytes", "disk_evictions"},
    /// "lazy": {"recorded", "evaluated", "dropped", "pending", "evaluations",
    /// "timed_out", "cancelled"}}` (af.h, `af_context_stats`).
    pub fn stats(&self) -> Result<Value> {
        let mut b = sys::af_bytes_t::default();
        check(unsafe { sys::af_context_stats(self.as_ptr(), &mut b) })?;
        Value::from_json(&unsafe { bytes_to_string(&mut b) })
    }
}

impl Value {
    /// True when reading this value runs nothing: it is concrete, or every
    /// promise in it has been evaluated (with a result or an error).
    pub fn is_ready(&self) -> bool {
        unsafe { sys::af_value_ready(self.as_ptr()) != 0 }
    }
}
