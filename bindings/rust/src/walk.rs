//! `libaf::Walk`: stepping through an IR one equation at a time.

use std::marker::PhantomData;
use std::ptr::{self, NonNull};

use crate::context::Context;
use crate::error::{check, Error, ErrorCode, Result};
use crate::ir::Ir;
use crate::sys;
use crate::value::{make_value, value_ptrs, Value};

/// The next equation of a [`Walk`].
#[derive(Clone, Debug)]
pub struct Step {
    /// Index of the equation in the IR.
    pub eqn_index: usize,
    /// Its primitive name (e.g. "format").
    pub prim: Option<&'static str>,
    /// Its input tree, with values.
    pub inputs: Value,
}

/// A stepper over an IR: ask for the next equation ([`next_eqn`](Self::next_eqn)),
/// then either let libaf evaluate it ([`eval`](Self::eval)) or supply its
/// outputs ([`send`](Self::send)); when done, [`outputs`](Self::outputs)
/// gives the program's outputs. Borrows the context it runs in.
pub struct Walk<'c> {
    raw: NonNull<sys::af_walk_t>,
    ir: Ir,
    _ctx: PhantomData<&'c Context>,
}

// The header: handles may move between threads. Every method takes &mut self.
unsafe impl Send for Walk<'_> {}
unsafe impl Sync for Walk<'_> {}

impl<'c> Walk<'c> {
    /// Starts a walk of `ir` on `inputs` (checked as in [`Ir::call`]).
    pub fn new(ctx: &'c Context, ir: &Ir, inputs: &[Value]) -> Result<Walk<'c>> {
        let mut out: *mut sys::af_walk_t = ptr::null_mut();
        check(unsafe {
            sys::af_walk_new(
                ctx.as_ptr(),
                ir.as_ptr(),
                value_ptrs(inputs).as_ptr(),
                inputs.len(),
                &mut out,
            )
        })?;
        let raw = NonNull::new(out).ok_or_else(|| {
            Error::new(
                ErrorCode::Internal,
                "af_walk_new returned success without a walk",
            )
        })?;
        Ok(Walk {
            raw,
            ir: ir.clone(),
            _ctx: PhantomData,
        })
    }

    /// The IR being walked.
    pub fn ir(&self) -> &Ir {
        &self.ir
    }

    /// The next equation, or None when every equation has run. Calling it
    /// again before `eval`/`send` returns the same equation.
    pub fn next_eqn(&mut self) -> Result<Option<Step>> {
        let mut index = 0usize;
        let mut inputs: *mut sys::af_value_t = ptr::null_mut();
        check(unsafe { sys::af_walk_next(self.raw.as_ptr(), &mut index, &mut inputs) })?;
        let inputs = unsafe { Value::from_raw(inputs) };
        if index == sys::AF_WALK_DONE {
            return Ok(None);
        }
        let inputs = inputs.ok_or_else(|| {
            Error::new(
                ErrorCode::Internal,
                format!("af_walk_next gave equation {index} without inputs"),
            )
        })?;
        Ok(Some(Step {
            eqn_index: index,
            prim: self.ir.eqn_prim(index),
            inputs,
        }))
    }

    /// Evaluates the current equation with libaf's implementation.
    pub fn eval(&mut self) -> Result<()> {
        check(unsafe { sys::af_walk_eval(self.raw.as_ptr()) })
    }

    /// Supplies the current equation's outputs (its output tree with
    /// concrete leaves of the declared kinds).
    pub fn send(&mut self, outputs: &Value) -> Result<()> {
        check(unsafe { sys::af_walk_send(self.raw.as_ptr(), outputs.as_ptr()) })
    }

    /// The program's outputs (`InvalidArgument` if equations remain).
    pub fn outputs(&mut self) -> Result<Value> {
        make_value(|out| unsafe { sys::af_walk_outputs(self.raw.as_ptr(), out) })
    }

    /// Evaluates every remaining equation with libaf and returns the outputs.
    pub fn run_to_end(&mut self) -> Result<Value> {
        while self.next_eqn()?.is_some() {
            self.eval()?;
        }
        self.outputs()
    }
}

impl Drop for Walk<'_> {
    fn drop(&mut self) {
        unsafe { sys::af_walk_free(self.raw.as_ptr()) }
    }
}

impl std::fmt::Debug for Walk<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Walk")
            .field("ir", &self.ir)
            .finish_non_exhaustive()
    }
}
