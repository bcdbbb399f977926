//! A callback's own [`Error`], carried through libaf as its error's payload.
//!
//! A Rust callback that fails (a host function, an async host request, a
//! host provider's request, a trace closure) hands libaf an `af_error_t`
//! made with `af_error_new_with` whose payload is a [`Payload`] holding the
//! very `Error` it returned. libaf keeps the payload on that error node
//! through every wrapping (it becomes the cause of the `CALLBACK` error the
//! run reports), across threads and runs, and sharing it between the copies
//! it makes; it runs [`destroy`] once, on whatever thread frees the last
//! error holding it. Converting an error that comes back
//! ([`Error::copy_from_raw`](crate::Error)) looks at each node's payload and,
//! where one is ours, gives back (a clone of) that original error instead of
//! rebuilding it from the code and message. So each caller gets exactly its
//! own callback's error, whatever other callbacks fail at the same time with
//! the same text, and nothing is kept anywhere once libaf drops the error.
//!
//! Other bindings in the same process (the C++ header, another copy of this
//! crate) attach payloads of their own. The convention they share: a payload
//! starts with a `u64` magic number naming its maker. Ours is followed by
//! the address of a static of this very crate instance, so a payload of
//! another build of this crate (whose `Error` may be laid out differently)
//! is not taken for ours either.

use std::os::raw::c_void;
use std::panic::{self, AssertUnwindSafe};
use std::ptr;

use crate::error::Error;
use crate::sys;

/// "afrs_err": the first word of every payload this binding makes.
const MAGIC: u64 = u64::from_be_bytes(*b"afrs_err");

/// Its address tells this crate instance's payloads from another's.
static OWNER: u8 = 0;

fn owner() -> usize {
    ptr::addr_of!(OWNER) as usize
}

/// What an error of a Rust callback carries through libaf.
#[repr(C)]
struct Payload {
    /// [`MAGIC`], at offset 0 (the convention between bindings).
    magic: u64,
    /// [`owner()`] of the crate instance that made it.
    owner: usize,
    /// The callback's own error.
    error: Error,
}

// libaf destroys a payload on any thread and may read it from several at
// once (the copies of one error share it): it must be Send and Sync.
const _: fn() = || {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Payload>();
};

/// An owned `af_error_t*` with `err`'s code and `message` that carries
/// `err` itself. NULL only if libaf is out of memory (`err` is then dropped).
pub(crate) fn new_error(err: Error, message: &str) -> *mut sys::af_error_t {
    let code = err.code.as_i32();
    let payload = Box::into_raw(Box::new(Payload {
        magic: MAGIC,
        owner: owner(),
        error: err,
    }));
    // libaf owns the payload from here on, also when this returns NULL.
    unsafe {
        sys::af_error_new_with(
            code,
            message.as_ptr().cast(),
            message.len(),
            payload.cast::<c_void>(),
            Some(destroy),
        )
    }
}

/// The destroy callback of our payloads: drops the box, on whatever thread
/// libaf frees the last error holding it. A panic in a wrapped error's
/// destructor must not unwind into libaf, so it is caught and dropped.
unsafe extern "C" fn destroy(payload: *mut c_void) {
    if !payload.is_null() {
        let _ = panic::catch_unwind(AssertUnwindSafe(|| {
            drop(Box::from_raw(payload.cast::<Payload>()))
        }));
    }
}

/// The error carried by `e` itself (not its causes), if `e`'s payload is one
/// of ours. Borrowed from `e`: clone it before `e` is freed.
///
/// # Safety
/// `e` must be a valid `af_error_t*` (non-null), and every binding in the
/// process must follow the payload convention (a payload is NULL or points
/// to at least 8 readable bytes, a magic number first).
pub(crate) unsafe fn carried<'a>(e: *const sys::af_error_t) -> Option<&'a Error> {
    let p = sys::af_error_payload(e);
    if p.is_null() || p.cast::<u64>().read_unaligned() != MAGIC {
        return None;
    }
    // The magic says "this binding": the layout of `Payload` up to `owner`
    // is then fixed (repr(C)), whichever build of the crate made it.
    let p = p.cast::<Payload>();
    if ptr::addr_of!((*p).owner).read_unaligned() != owner() {
        return None;
    }
    Some(&(*p).error)
}
