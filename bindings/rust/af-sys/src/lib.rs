//! Raw FFI declarations of libaf's C API (`af.h`), one for one, and the
//! discovery of the library at build time (see `build.rs`): `AF_LIB_DIR`,
//! the `bundled` feature, or pkg-config (`af.pc`). The safe API is the `af`
//! crate, which re-exports this one as `af::sys`.
//!
//! The declarations live in `../src/sys.rs` (beside the safe crate, where
//! they have always been edited), compiled here as this crate's module.

#[path = "../../src/sys.rs"]
mod ffi;
pub use ffi::*;

/// The directory libaf was linked from (what the build found).
pub const LIB_DIR: &str = env!("AF_SYS_LIB_DIR");
