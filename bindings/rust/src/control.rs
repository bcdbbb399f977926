//! Control flow recorded inside a trace: switch and while_loop.

use crate::context::Context;
use crate::error::Result;
use crate::ir::Ir;
use crate::sys;
use crate::value::{value_ptrs, Value};

impl Context {
    /// Runs the branch named by `key` (a str) on `operands`. Every branch
    /// takes the operands and all return one structure. `NotFound` (when it
    /// runs) for a key no branch has.
    pub fn switch(
        &self,
        key: &Value,
        branches: &[(&str, &Ir)],
        operands: &[Value],
    ) -> Result<Value> {
        let names: Vec<*const std::os::raw::c_char> =
            branches.iter().map(|(n, _)| n.as_ptr().cast()).collect();
        let lens: Vec<usize> = branches.iter().map(|(n, _)| n.len()).collect();
        let irs: Vec<*const sys::af_ir_t> = branches.iter().map(|(_, ir)| ir.as_ptr()).collect();
        self.op_value(|out| unsafe {
            sys::af_switch(
                self.as_ptr(),
                key.as_ptr(),
                names.as_ptr(),
                lens.as_ptr(),
                irs.as_ptr(),
                branches.len(),
                value_ptrs(operands).as_ptr(),
                operands.len(),
                out,
            )
        })
    }

    /// `state = init; while cond(state) && iterations < max_iters { state =
    /// body(state) }`; returns the state.
    pub fn while_loop(&self, cond: &Ir, body: &Ir, init: &Value, max_iters: u64) -> Result<Value> {
        self.op_value(|out| unsafe {
            sys::af_while_loop(
                self.as_ptr(),
                cond.as_ptr(),
                body.as_ptr(),
                init.as_ptr(),
                max_iters,
                out,
            )
        })
    }
}
