//! Borrowing iterators over lists and dicts: no `Vec` is built, and dict
//! keys are `&str` borrowed from the dict (libaf keeps them alive with it).

use crate::error::{Error, ErrorCode, Result};
use crate::value::{Kind, Value};

/// The items of a list (or the values of a dict), in order.
pub struct Items<'a> {
    value: &'a Value,
    next: usize,
    len: usize,
}

/// The `(key, value)` entries of a dict, in insertion order.
pub struct Entries<'a> {
    value: &'a Value,
    next: usize,
    len: usize,
}

impl Value {
    /// Iterates a list's items (a dict's values). `InvalidArgument` for
    /// other kinds.
    pub fn iter(&self) -> Result<Items<'_>> {
        Ok(Items { value: self, next: 0, len: self.len()? })
    }

    /// Iterates a dict's entries, keys borrowed from `self`.
    /// `InvalidArgument` for other kinds.
    pub fn iter_entries(&self) -> Result<Entries<'_>> {
        if self.kind() != Kind::Dict {
            return Err(Error::new(
                ErrorCode::InvalidArgument,
                format!("iter_entries: expected a dict, found {:?}", self.kind()),
            ));
        }
        Ok(Entries { value: self, next: 0, len: self.len()? })
    }
}

impl Iterator for Items<'_> {
    type Item = Value;
    fn next(&mut self) -> Option<Value> {
        if self.next == self.len {
            return None;
        }
        self.next += 1;
        // In range of an immutable value: cannot fail.
        self.value.index(self.next - 1).ok()
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.len - self.next, Some(self.len - self.next))
    }
}
impl ExactSizeIterator for Items<'_> {}

impl<'a> Iterator for Entries<'a> {
    type Item = (&'a str, Value);
    fn next(&mut self) -> Option<(&'a str, Value)> {
        if self.next == self.len {
            return None;
        }
        self.next += 1;
        let i = self.next - 1;
        Some((self.value.key_at(i).ok()?, self.value.index(i).ok()?))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.len - self.next, Some(self.len - self.next))
    }
}
impl ExactSizeIterator for Entries<'_> {}
