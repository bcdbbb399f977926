//! `libaf::Ir`: a traced program, immutable once built.

use std::ffi::CStr;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ptr::NonNull;

use crate::context::Context;
use crate::error::{check, Result};
use crate::sys;
use crate::util::bytes_to_string;
use crate::value::{value_ptrs, Value};
use crate::walk::Walk;

/// A traced program of primitives (from [`Context::trace`]).
///
/// `Clone` adds a reference; `==` is structural equality (`af_ir_equal`) and
/// `Hash` uses the structural hash, so equal IRs hash equal whatever their
/// origin. `Display` prints the text form.
pub struct Ir {
    raw: NonNull<sys::af_ir_t>,
}

// The header: handles may move between threads; a const handle (IR) may be
// used from several threads at once.
unsafe impl Send for Ir {}
unsafe impl Sync for Ir {}

impl Ir {
    /// Takes ownership of an owned `af_ir_t*` (None if NULL).
    ///
    /// # Safety
    /// `raw` must be NULL or an owned reference to a valid IR.
    pub unsafe fn from_raw(raw: *mut sys::af_ir_t) -> Option<Ir> {
        NonNull::new(raw).map(|raw| Ir { raw })
    }

    /// The borrowed handle.
    pub fn as_ptr(&self) -> *const sys::af_ir_t {
        self.raw.as_ptr()
    }

    /// Gives up ownership: the caller must `af_ir_free` the result.
    pub fn into_raw(self) -> *mut sys::af_ir_t {
        let p = self.raw.as_ptr();
        std::mem::forget(self);
        p
    }

    /// Runs the program on `inputs` (one per positional input, each matching
    /// the traced structure and leaf kinds; `InvalidArgument` naming the
    /// input path otherwise). Inside a trace the IR is inlined instead.
    pub fn call(&self, ctx: &Context, inputs: &[Value]) -> Result<Value> {
        ctx.op_value(|out| unsafe {
            sys::af_ir_call(
                ctx.as_ptr(),
                self.as_ptr(),
                value_ptrs(inputs).as_ptr(),
                inputs.len(),
                out,
            )
        })
    }

    /// Starts a [`Walk`] over the program (inputs checked as in `call`).
    pub fn walk<'c>(&self, ctx: &'c Context, inputs: &[Value]) -> Result<Walk<'c>> {
        Walk::new(ctx, self, inputs)
    }

    /// The text form (docs/IR_TEXT.md).
    pub fn to_text(&self) -> Result<String> {
        let mut b = sys::af_bytes_t::default();
        check(unsafe { sys::af_ir_to_text(self.as_ptr(), &mut b) })?;
        Ok(unsafe { bytes_to_string(&mut b) })
    }

    /// Graphviz DOT.
    pub fn to_dot(&self) -> Result<String> {
        let mut b = sys::af_bytes_t::default();
        check(unsafe { sys::af_ir_to_dot(self.as_ptr(), &mut b) })?;
        Ok(unsafe { bytes_to_string(&mut b) })
    }

    /// Number of equations.
    pub fn eqn_count(&self) -> usize {
        unsafe { sys::af_ir_eqn_count(self.as_ptr()) }
    }

    /// Primitive name of equation `i` (None if out of range).
    pub fn eqn_prim(&self, i: usize) -> Option<&'static str> {
        let p = unsafe { sys::af_ir_eqn_prim(self.as_ptr(), i) };
        if p.is_null() {
            None
        } else {
            // Static storage in libaf.
            unsafe { CStr::from_ptr(p) }.to_str().ok()
        }
    }

    /// Primitive names of all equations, in order.
    pub fn eqn_prims(&self) -> Vec<&'static str> {
        (0..self.eqn_count())
            .filter_map(|i| self.eqn_prim(i))
            .collect()
    }

    /// Number of positional inputs.
    pub fn input_count(&self) -> usize {
        unsafe { sys::af_ir_input_count(self.as_ptr()) }
    }

    /// Structural hash (equal IRs hash equal).
    pub fn hash(&self) -> u64 {
        unsafe { sys::af_ir_hash(self.as_ptr()) }
    }
}

impl Clone for Ir {
    fn clone(&self) -> Ir {
        let p = unsafe { sys::af_ir_clone(self.as_ptr()) };
        Ir {
            raw: NonNull::new(p).expect("af_ir_clone returned NULL"),
        }
    }
}

impl Drop for Ir {
    fn drop(&mut self) {
        unsafe { sys::af_ir_free(self.raw.as_ptr()) }
    }
}

impl PartialEq for Ir {
    fn eq(&self, other: &Ir) -> bool {
        unsafe { sys::af_ir_equal(self.as_ptr(), other.as_ptr()) != 0 }
    }
}
impl Eq for Ir {}

impl Hash for Ir {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(Ir::hash(self));
    }
}

impl fmt::Display for Ir {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.to_text() {
            Ok(t) => f.write_str(&t),
            Err(e) => write!(f, "<IR: {e}>"),
        }
    }
}

impl fmt::Debug for Ir {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ir")
            .field("inputs", &self.input_count())
            .field("eqns", &self.eqn_prims())
            .field("hash", &format_args!("{:#018x}", Ir::hash(self)))
            .finish()
    }
}
