//! Control flow recorded inside a trace: switch, while_loop and scan.

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

    /// `carry = init; for item in xs { [carry, y] = body(carry, item) }`;
    /// returns `[carry, ys]`: the last carry and, for each leaf of `y`, the
    /// list of its values by item index (items go last to first when
    /// `reverse`, and the ys stay at their items' indices). With no items it
    /// returns `[init, ys of empty lists]` and runs nothing.
    ///
    /// `xs` is a list, or a tree whose leaves are lists of one length (the
    /// item is the tree of their i-th items); inside a trace it is usually a
    /// list input of any length ([`TraceOptions::list_mask`]). `body` (an
    /// [`Ir`] traced on a carry and an item) takes `(carry, item)` and
    /// returns `[next carry, y]` keeping the carry's structure and kinds.
    /// Inside a trace it records one equation that every transform handles
    /// (batch maps it over the items, push and pull thread tangents and
    /// feedback through the carry); outside it runs at once; on a lazy
    /// context it is a promise.
    ///
    /// `InvalidArgument`: `body` does not take `(init, an item of xs)`, does
    /// not return `[carry, y]`, changes the carry's structure or a kind, a
    /// leaf of `xs` is not a list; when it runs, lists of `xs` of different
    /// lengths.
    ///
    /// [`TraceOptions::list_mask`]: crate::TraceOptions::list_mask
    pub fn scan(&self, body: &Ir, init: &Value, xs: &Value, reverse: bool) -> Result<Value> {
        self.op_value(|out| unsafe {
            sys::af_scan(
                self.as_ptr(),
                body.as_ptr(),
                init.as_ptr(),
                xs.as_ptr(),
                i32::from(reverse),
                out,
            )
        })
    }
}
