//! IR -> IR transforms (batch, pushforward, pullback, dce, cse, sched) and
//! validation, as methods of [`Ir`].

use std::ptr;

use crate::context::Context;
use crate::error::{check, Error, ErrorCode, Result};
use crate::ir::Ir;
use crate::sys;
use crate::value::Value;

/// Runs `f` with an out-pointer and wraps the IR it wrote.
pub(crate) fn make_ir(
    f: impl FnOnce(*mut *mut sys::af_ir_t) -> *mut sys::af_error_t,
) -> Result<Ir> {
    let mut out: *mut sys::af_ir_t = ptr::null_mut();
    check(f(&mut out))?;
    unsafe { Ir::from_raw(out) }
        .ok_or_else(|| Error::new(ErrorCode::Internal, "libaf returned success without an IR"))
}

fn opt_ptr(v: Option<&Value>) -> *const sys::af_value_t {
    v.map_or(ptr::null(), Value::as_ptr)
}

impl Ir {
    /// batch (vmap). `in_axes`: a bool tree prefix of the list of inputs
    /// (true = batched); `None` = every input. Batched leaves arrive as lists
    /// and every output leaf comes back as a list.
    pub fn batch(&self, ctx: &Context, in_axes: Option<&Value>) -> Result<Ir> {
        make_ir(|out| unsafe { sys::af_batch(ctx.as_ptr(), self.as_ptr(), opt_ptr(in_axes), out) })
    }

    /// pushforward (jvp): the result takes `(primals, tangents)` and returns
    /// `[outputs, output_tangents]` (null where a tangent is zero).
    pub fn pushforward(&self, ctx: &Context) -> Result<Ir> {
        make_ir(|out| unsafe { sys::af_pushforward(ctx.as_ptr(), self.as_ptr(), out) })
    }

    /// pullback (vjp): the result takes `(primals, output_cotangent)` and
    /// returns `[outputs, input_cotangents]` (null where nothing flows).
    pub fn pullback(&self, ctx: &Context) -> Result<Ir> {
        make_ir(|out| unsafe { sys::af_pullback(ctx.as_ptr(), self.as_ptr(), out) })
    }

    /// Dead code elimination. `out_used`: a bool tree prefix of the output
    /// (`None` = every output); outputs marked false become null.
    pub fn dce(&self, ctx: &Context, out_used: Option<&Value>) -> Result<Ir> {
        make_ir(|out| unsafe { sys::af_dce(ctx.as_ptr(), self.as_ptr(), opt_ptr(out_used), out) })
    }

    /// Common subexpression elimination of pure equations.
    pub fn cse(&self, ctx: &Context) -> Result<Ir> {
        make_ir(|out| unsafe { sys::af_cse(ctx.as_ptr(), self.as_ptr(), out) })
    }

    /// CSE that also merges identical LM calls when `merge_nondeterministic`
    /// is true (`af_cse_with`; effectful host calls are never merged).
    pub fn cse_with(&self, ctx: &Context, merge_nondeterministic: bool) -> Result<Ir> {
        let opts = format!("{{\"merge_nondeterministic\": {merge_nondeterministic}}}");
        make_ir(|out| unsafe {
            sys::af_cse_with(ctx.as_ptr(), self.as_ptr(), opts.as_ptr().cast(), opts.len(), out)
        })
    }

    /// Annotates every equation with its dependency level and priority.
    pub fn sched(&self, ctx: &Context) -> Result<Ir> {
        make_ir(|out| unsafe { sys::af_sched(ctx.as_ptr(), self.as_ptr(), out) })
    }

    /// `(level, priority)` of equation `i` of a scheduled IR (`NotFound` if
    /// the IR was not scheduled, `InvalidArgument` if `i` is out of range).
    pub fn eqn_sched(&self, i: usize) -> Result<(u32, f64)> {
        let (mut level, mut priority) = (0u32, 0f64);
        check(unsafe { sys::af_ir_eqn_sched(self.as_ptr(), i, &mut level, &mut priority) })?;
        Ok((level, priority))
    }

    /// Checks SSA, arity and kinds (`InvalidArgument` naming the first problem).
    pub fn validate(&self) -> Result<()> {
        check(unsafe { sys::af_ir_validate(self.as_ptr()) })
    }
}
