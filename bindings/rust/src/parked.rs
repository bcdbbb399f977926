//! The errors host closures and host providers return, until they come back
//! to the caller.
//!
//! An error crosses libaf as a code and a message only (libaf rebuilds the
//! chain on its side), so the [`Error`] value a closure returned, with its
//! causes and the foreign error it may wrap, would be lost. The callback
//! parks it here under the (code, message) it sent; converting libaf's error
//! claims it when a leaf with that code and message comes back, and the leaf
//! becomes that very value. Claims are first in, first out. An error a run
//! never reports (keep-going turns failures into values) stays behind, so at
//! most `MAX_PARKED` are kept, dropping the oldest. Two callbacks failing at
//! once with the same code and text may each get the other's (equal) error.

use crate::error::{Error, ErrorCode};
use std::collections::VecDeque;
use std::sync::Mutex;

const MAX_PARKED: usize = 256;

static PARKED: Mutex<VecDeque<(ErrorCode, String, Error)>> = Mutex::new(VecDeque::new());

pub(crate) fn park(code: ErrorCode, message: String, err: Error) {
    let mut q = PARKED.lock().unwrap_or_else(|p| p.into_inner());
    q.push_back((code, message, err));
    if q.len() > MAX_PARKED {
        q.pop_front();
    }
}

pub(crate) fn claim(code: ErrorCode, message: &str) -> Option<Error> {
    let mut q = PARKED.lock().unwrap_or_else(|p| p.into_inner());
    let i = q.iter().position(|(c, m, _)| *c == code && m == message)?;
    q.remove(i).map(|(_, _, e)| e)
}
