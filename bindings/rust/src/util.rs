//! Small helpers for strings and byte buffers coming out of libaf, and the
//! destroy callback of boxed closures.

use std::os::raw::{c_char, c_void};
use std::panic::{self, AssertUnwindSafe};
use std::path::Path;

use crate::error::{Error, ErrorCode, Result};
use crate::sys;

/// The UTF-8 bytes of `path` for libaf (which takes paths as UTF-8);
/// `InvalidArgument` naming `what` if it is not UTF-8.
pub(crate) fn path_bytes(path: &Path, what: &str) -> Result<Vec<u8>> {
    path.to_str().map(|s| s.as_bytes().to_vec()).ok_or_else(|| {
        Error::new(
            ErrorCode::InvalidArgument,
            format!("{what} {path:?} is not UTF-8"),
        )
    })
}

/// Copies an owned `af_bytes_t` into a `Vec<u8>` and frees it.
///
/// # Safety
/// `b` must be zeroed or hold a buffer libaf returned.
pub(crate) unsafe fn take_bytes(b: &mut sys::af_bytes_t) -> Vec<u8> {
    let v = if b.data.is_null() || b.len == 0 {
        Vec::new()
    } else {
        std::slice::from_raw_parts(b.data, b.len).to_vec()
    };
    sys::af_bytes_free(b);
    v
}

/// Copies an owned UTF-8 `af_bytes_t` into a `String` and frees it.
///
/// # Safety
/// As [`take_bytes`].
pub(crate) unsafe fn bytes_to_string(b: &mut sys::af_bytes_t) -> String {
    match String::from_utf8(take_bytes(b)) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    }
}

/// A borrowed (pointer, length) string from libaf as `&str`.
///
/// # Safety
/// `s` must be valid for `n` bytes for the lifetime `'a`.
pub(crate) unsafe fn borrowed_str<'a>(s: *const c_char, n: usize) -> Result<&'a str> {
    if n == 0 {
        return Ok("");
    }
    if s.is_null() {
        return Err(Error::new(
            ErrorCode::Internal,
            "libaf returned a NULL string",
        ));
    }
    std::str::from_utf8(std::slice::from_raw_parts(s.cast::<u8>(), n)).map_err(|e| {
        Error::new(
            ErrorCode::Internal,
            format!("libaf returned invalid UTF-8: {e}"),
        )
    })
}

/// The destroy callback of every closure handed to libaf as `user_data`: it
/// drops the `Box<T>` made with `Box::into_raw`, exactly once (libaf
/// guarantees that). A panic in the closure's destructor must not unwind
/// into libaf, so it is caught and dropped.
///
/// # Safety
/// `user_data` must be NULL or come from `Box::<T>::into_raw`.
pub(crate) unsafe extern "C" fn drop_boxed<T>(user_data: *mut c_void) {
    if !user_data.is_null() {
        let _ = panic::catch_unwind(AssertUnwindSafe(|| {
            drop(Box::from_raw(user_data.cast::<T>()))
        }));
    }
}
