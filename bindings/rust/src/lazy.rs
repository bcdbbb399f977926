//! Lazy contexts and the plan cache: [`Context::with_options`],
//! [`Context::new_lazy`], [`Context::eval`], [`Value::is_ready`],
//! [`Context::stats`].
//!
//! On a lazy context every operation made outside a trace records a promise:
//! a [`Value`] whose kind and structure are known at once and whose content
//! is computed when it is read (`as_str`, `to_json`, ...) or when
//! [`Context::eval`] evaluates several promises as one run, so their
//! independent LM calls are in flight together. A promise dropped before it
//! ran never runs. See af.h, "Lazy evaluation and the plan cache".

use std::ptr;

use crate::error::{check, Error, ErrorCode, Result};
use crate::sys;
use crate::util::bytes_to_string;
use crate::value::{value_ptrs, Value};
use crate::Context;

impl Context {
    /// A context with options (JSON, as `af_context_new_with`):
    /// `{"lazy": bool, "plan_cache": {"max_entries", "max_bytes", "dir"},
    /// "host_threads": int}` (how many blocking host functions run at once).
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
    /// just the pending observable operations.
    pub fn eval(&self, values: &[Value]) -> Result<()> {
        check(unsafe {
            sys::af_eval(self.as_ptr(), value_ptrs(values).cast(), values.len())
        })
    }

    /// The context's counters:
    /// `{"plan_cache": {"hits", "misses", "disk_hits", "evictions", "entries",
    /// "bytes"}, "lazy": {"recorded", "evaluated", "dropped", "pending"}}`.
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
