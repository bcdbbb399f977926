//! Saved graphs (.afg): IRs and compiled programs to and from files, IRs
//! to and from bytes, verification and
//! the readable JSON form.

use std::path::Path;

use crate::context::Context;
use crate::error::{check, Error, ErrorCode, Result};
use crate::ir::Ir;
use crate::program::Program;
use crate::sys;
use crate::transform::make_ir;
use crate::util::{bytes_to_string, take_bytes};

fn path_str(path: &Path) -> Result<&str> {
    path.to_str().ok_or_else(|| {
        Error::new(
            ErrorCode::InvalidArgument,
            format!("path {path:?} is not UTF-8"),
        )
    })
}

impl Ir {
    /// Writes the IR to `path` as a saved graph (atomically: temp file +
    /// rename). `Io` on failure.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        let p = path_str(path.as_ref())?;
        check(unsafe { sys::af_ir_save(self.as_ptr(), p.as_ptr().cast(), p.len()) })
    }

    /// Reads and checks the saved graph at `path` (`Format`, `Version`, `Io`).
    pub fn load(ctx: &Context, path: impl AsRef<Path>) -> Result<Ir> {
        let p = path_str(path.as_ref())?;
        make_ir(|out| unsafe { sys::af_ir_load(ctx.as_ptr(), p.as_ptr().cast(), p.len(), out) })
    }

    /// The .afg bytes (deterministic: the same IR gives the same bytes).
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut b = sys::af_bytes_t::default();
        check(unsafe { sys::af_ir_to_bytes(self.as_ptr(), &mut b) })?;
        Ok(unsafe { take_bytes(&mut b) })
    }

    /// An IR from .afg bytes, after every check.
    pub fn from_bytes(ctx: &Context, data: &[u8]) -> Result<Ir> {
        make_ir(|out| unsafe {
            sys::af_ir_from_bytes(ctx.as_ptr(), data.as_ptr(), data.len(), out)
        })
    }
}

impl Program {
    /// Writes the compiled program (its IR and its plan) to `path`, so
    /// [`Program::load`] runs it without compiling again. The file also
    /// loads with [`Ir::load`].
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        let p = path_str(path.as_ref())?;
        check(unsafe { sys::af_program_save(self.as_ptr(), p.as_ptr().cast(), p.len()) })
    }

    /// Reads a program saved by [`Program::save`] (its plan is checked
    /// against the IR; a graph saved from an IR is compiled here).
    pub fn load(ctx: &Context, path: impl AsRef<Path>) -> Result<Program> {
        let p = path_str(path.as_ref())?;
        let mut out: *mut sys::af_program_t = std::ptr::null_mut();
        check(unsafe { sys::af_program_load(ctx.as_ptr(), p.as_ptr().cast(), p.len(), &mut out) })?;
        unsafe { Program::from_raw(out) }.ok_or_else(|| {
            Error::new(
                ErrorCode::Internal,
                "af_program_load returned success without a program",
            )
        })
    }
}

/// Runs every load check on .afg bytes; returns a one-line JSON summary.
pub fn graph_verify(ctx: &Context, data: &[u8]) -> Result<String> {
    let mut b = sys::af_bytes_t::default();
    check(unsafe { sys::af_graph_verify(ctx.as_ptr(), data.as_ptr(), data.len(), &mut b) })?;
    Ok(unsafe { bytes_to_string(&mut b) })
}

/// The readable JSON form of .afg bytes (round trip exact).
pub fn graph_to_json(ctx: &Context, data: &[u8]) -> Result<String> {
    let mut b = sys::af_bytes_t::default();
    check(unsafe { sys::af_graph_to_json(ctx.as_ptr(), data.as_ptr(), data.len(), &mut b) })?;
    Ok(unsafe { bytes_to_string(&mut b) })
}

/// .afg bytes from the JSON form (checked as bytes are).
pub fn graph_from_json(ctx: &Context, json: &str) -> Result<Vec<u8>> {
    let mut b = sys::af_bytes_t::default();
    check(unsafe {
        sys::af_graph_from_json(ctx.as_ptr(), json.as_ptr().cast(), json.len(), &mut b)
    })?;
    Ok(unsafe { take_bytes(&mut b) })
}
