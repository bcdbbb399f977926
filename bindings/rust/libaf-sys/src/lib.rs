//! Raw FFI declarations of libaf's C API (`af.h`), one for one, and the
//! discovery of the library at build time (see `build.rs`): `AF_LIB_DIR`,
//! the `vendored` feature (builds libaf from its sources, packaged with this
//! crate), or pkg-config (`af.pc`). The safe API is the `libaf` crate, which
//! re-exports this one as `libaf::sys`.

mod sys;
pub use sys::*;

/// The directory libaf was linked from (what the build found).
pub const LIB_DIR: &str = env!("AF_SYS_LIB_DIR");
