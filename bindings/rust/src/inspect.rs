//! Inspection and graph queries on [`Ir`]: JSON documents (format in
//! docs/INSPECT.md), sub-IRs, reachability, slices and the dry-run cost.

use std::os::raw::c_char;
use std::ptr;

use crate::error::{check, Error, ErrorCode, Result};
use crate::ir::Ir;
use crate::sys;
use crate::transform::make_ir;
use crate::util::bytes_to_string;

/// Which way [`Ir::related_json`] walks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// What the equation transitively reads.
    Ancestors,
    /// What transitively reads the equation.
    Descendants,
}

fn related_flags(dir: Direction, deep: bool) -> u32 {
    let flags = match dir {
        Direction::Ancestors => sys::AF_IR_ANCESTORS,
        Direction::Descendants => sys::AF_IR_DESCENDANTS,
    };
    if deep {
        flags | sys::AF_IR_DEEP
    } else {
        flags
    }
}

fn json_of(f: impl FnOnce(*mut sys::af_bytes_t) -> *mut sys::af_error_t) -> Result<String> {
    let mut b = sys::af_bytes_t::default();
    check(f(&mut b))?;
    Ok(unsafe { bytes_to_string(&mut b) })
}

impl Ir {
    /// The whole IR: inputs, outputs, topological order, variables
    /// (producer, consumers) and equations.
    pub fn json(&self) -> Result<String> {
        json_of(|b| unsafe { sys::af_ir_json(self.as_ptr(), b) })
    }

    /// Equation `i`: prim, inputs (vars or literals with kinds), outputs,
    /// deps, params, sub-IR paths, tags.
    pub fn eqn_json(&self, i: usize) -> Result<String> {
        json_of(|b| unsafe { sys::af_ir_eqn_json(self.as_ptr(), i, b) })
    }

    /// Variable `var`: kind, producer (null for an input), consumers.
    pub fn var_json(&self, var: u32) -> Result<String> {
        json_of(|b| unsafe { sys::af_ir_var_json(self.as_ptr(), var, b) })
    }

    /// The sub-IR at `path` of equation `i` ("body", "branches/billing").
    pub fn sub(&self, i: usize, path: &str) -> Result<Ir> {
        make_ir(|out| unsafe {
            sys::af_ir_sub(
                self.as_ptr(),
                i,
                path.as_ptr() as *const c_char,
                path.len(),
                out,
            )
        })
    }

    /// Ancestors or descendants of equation `i`: `{"eqns": [...]}`, and with
    /// `deep` also `"nested"`, the paths of the equations in their sub-IRs.
    /// Without `deep` the query stops at sub-IR boundaries; a deep
    /// answer of more than 64 MiB is `InvalidArgument` (see
    /// [`related_json_with`](Self::related_json_with)).
    pub fn related_json(&self, i: usize, dir: Direction, deep: bool) -> Result<String> {
        let flags = related_flags(dir, deep);
        json_of(|b| unsafe { sys::af_ir_related_json(self.as_ptr(), i, flags, b) })
    }

    /// [`related_json`](Self::related_json) accepting an answer of at most
    /// `max_bytes` bytes (UTF-8) instead of the default 64 MiB: a larger one
    /// (a deep query through shared sub-IRs can be huge) is
    /// `InvalidArgument` naming its size, found before it is built.
    /// `max_bytes` 0 is `InvalidArgument` (0 means the default in C; use
    /// `related_json` for that).
    pub fn related_json_with(
        &self,
        i: usize,
        dir: Direction,
        deep: bool,
        max_bytes: u64,
    ) -> Result<String> {
        if max_bytes == 0 {
            return Err(Error::new(
                ErrorCode::InvalidArgument,
                "Ir::related_json_with: max_bytes must be positive (Ir::related_json uses the default, 64 MiB)",
            ));
        }
        let flags = related_flags(dir, deep);
        json_of(|b| unsafe { sys::af_ir_related_json_with(self.as_ptr(), i, flags, max_bytes, b) })
    }

    /// The slice computing the outputs at `outputs` (paths) from the inputs
    /// at `inputs`, or from the IR's own inputs when `inputs` is None.
    pub fn slice(&self, outputs: &[&str], inputs: Option<&[&str]>) -> Result<Ir> {
        let optr: Vec<*const c_char> = outputs
            .iter()
            .map(|s| s.as_ptr() as *const c_char)
            .collect();
        let olen: Vec<usize> = outputs.iter().map(|s| s.len()).collect();
        let ins = inputs.unwrap_or(&[]);
        let iptr: Vec<*const c_char> = ins.iter().map(|s| s.as_ptr() as *const c_char).collect();
        let ilen: Vec<usize> = ins.iter().map(|s| s.len()).collect();
        // A non-NULL (possibly empty) input list means "these inputs only".
        let (ip, il) = match inputs {
            None => (ptr::null(), ptr::null()),
            Some(_) => (iptr.as_ptr(), ilen.as_ptr()),
        };
        make_ir(|out| unsafe {
            sys::af_ir_slice(
                self.as_ptr(),
                optr.as_ptr(),
                olen.as_ptr(),
                optr.len(),
                ip,
                il,
                iptr.len(),
                out,
            )
        })
    }

    /// Dry-run LM cost for `batch` examples: calls per model in total and
    /// on the critical path.
    pub fn cost_json(&self, batch: i64) -> Result<String> {
        json_of(|b| unsafe { sys::af_ir_cost_json(self.as_ptr(), batch, b) })
    }
}
