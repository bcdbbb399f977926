//! `libaf::Value`: an immutable, reference-counted tree (null, bool, int, float,
//! str, list, dict; placeholders inside a trace).

use std::fmt;
use std::ptr::{self, NonNull};
use std::sync::Arc;

use crate::error::{check, Error, ErrorCode, Result};
use crate::sys;
use crate::util::{borrowed_str, bytes_to_string};

/// The kind of a [`Value`] (`AF_KIND_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    Null,
    Bool,
    Int,
    Float,
    Str,
    List,
    Dict,
    /// A traced leaf whose content is known only when the program runs.
    Placeholder,
    /// A kind this binding does not know (a newer library).
    Other(i32),
}

impl Kind {
    /// The kind from its `AF_KIND_*` number.
    pub fn from_i32(k: i32) -> Kind {
        match k {
            sys::AF_KIND_NULL => Kind::Null,
            sys::AF_KIND_BOOL => Kind::Bool,
            sys::AF_KIND_INT => Kind::Int,
            sys::AF_KIND_FLOAT => Kind::Float,
            sys::AF_KIND_STR => Kind::Str,
            sys::AF_KIND_LIST => Kind::List,
            sys::AF_KIND_DICT => Kind::Dict,
            sys::AF_KIND_PLACEHOLDER => Kind::Placeholder,
            other => Kind::Other(other),
        }
    }

    /// The `AF_KIND_*` number.
    pub fn as_i32(self) -> i32 {
        match self {
            Kind::Null => sys::AF_KIND_NULL,
            Kind::Bool => sys::AF_KIND_BOOL,
            Kind::Int => sys::AF_KIND_INT,
            Kind::Float => sys::AF_KIND_FLOAT,
            Kind::Str => sys::AF_KIND_STR,
            Kind::List => sys::AF_KIND_LIST,
            Kind::Dict => sys::AF_KIND_DICT,
            Kind::Placeholder => sys::AF_KIND_PLACEHOLDER,
            Kind::Other(n) => n,
        }
    }
}

/// An immutable, reference-counted value tree owned by libaf.
///
/// `Clone` adds a reference (no copy), `Drop` releases it. Values are not
/// tied to a [`Context`](crate::Context) and may be shared between threads;
/// a pending promise of a lazy context (and a clone, item, list or dict made
/// from it) keeps that context alive until it is dropped.
///
/// The leaf constructors (`null`, `bool`, `int`, `float`, `str`, `list`)
/// cannot fail except when libaf is out of memory (or, for `list`, beyond
/// 512 levels of nesting), in which case they panic like a Rust allocation
/// would; `from_json` and `dict` return a `Result`.
pub struct Value {
    raw: NonNull<sys::af_value_t>,
    /// The lazy context(s) this value's pending promises were recorded on:
    /// libaf's promise does not hold its context (af.h, "Lifetimes"), yet
    /// cannot be evaluated once it is freed. `None` for most values.
    keep: Option<KeepAlive>,
}

/// What a value keeps alive: one context's owner, or a `Vec` of them.
pub(crate) type KeepAlive = Arc<dyn Send + Sync>;

/// Everything `values` keep alive, each once (`None` for nothing).
fn keep_all(values: &[Value]) -> Option<KeepAlive> {
    let mut all: Vec<KeepAlive> = Vec::new();
    for k in values.iter().filter_map(|v| v.keep.as_ref()) {
        if !all.iter().any(|a| Arc::as_ptr(a).cast::<()>() == Arc::as_ptr(k).cast::<()>()) {
            all.push(k.clone());
        }
    }
    match all.len() {
        0 => None,
        1 => all.pop(),
        _ => Some(Arc::new(all)),
    }
}

// The header: handles may move between threads; a const handle (value) may
// be used from several threads at once.
unsafe impl Send for Value {}
unsafe impl Sync for Value {}

/// Runs `f` with an out-pointer and wraps the value it wrote.
pub(crate) fn make_value(
    f: impl FnOnce(*mut *mut sys::af_value_t) -> *mut sys::af_error_t,
) -> Result<Value> {
    let mut out: *mut sys::af_value_t = ptr::null_mut();
    check(f(&mut out))?;
    NonNull::new(out).map(|raw| Value { raw, keep: None }).ok_or_else(|| {
        Error::new(
            ErrorCode::Internal,
            "libaf returned success without a value",
        )
    })
}

fn infallible(r: Result<Value>) -> Value {
    r.unwrap_or_else(|e| panic!("libaf could not build a value: {e}"))
}

/// The handles of `values`, for the `const af_value_t* const*` arrays libaf
/// takes: `value_ptrs(values).as_ptr()` inside the call's expression (the
/// array lives until the call returns).
pub(crate) fn value_ptrs(values: &[Value]) -> ValuePtrs {
    if values.len() <= INLINE_PTRS {
        // Most operations take a few arguments: no allocation for them.
        let mut inline = [ptr::null(); INLINE_PTRS];
        for (slot, v) in inline.iter_mut().zip(values) {
            *slot = v.as_ptr();
        }
        ValuePtrs::Inline(inline, values.len())
    } else {
        ValuePtrs::Heap(values.iter().map(Value::as_ptr).collect())
    }
}

const INLINE_PTRS: usize = 4;

/// See [`value_ptrs`].
pub(crate) enum ValuePtrs {
    Inline([*const sys::af_value_t; INLINE_PTRS], usize),
    Heap(Vec<*const sys::af_value_t>),
}

impl ValuePtrs {
    /// The array (NULL when empty).
    pub(crate) fn as_ptr(&self) -> *const *const sys::af_value_t {
        match self {
            ValuePtrs::Inline(_, 0) => ptr::null(),
            ValuePtrs::Inline(a, _) => a.as_ptr(),
            ValuePtrs::Heap(v) => v.as_ptr(),
        }
    }
}

/// New references to the `n` borrowed handles at `ptrs` (the arguments of a
/// callback). `what` names them in the `Internal` error for a NULL entry,
/// which only a libaf bug could pass (a Zero arrives as a null value).
///
/// # Safety
/// `ptrs` must be NULL (with `n == 0`) or point to `n` handles.
pub(crate) unsafe fn borrowed_values(
    ptrs: *const *const sys::af_value_t,
    n: usize,
    what: &str,
) -> Result<Vec<Value>> {
    (0..n)
        .map(|i| {
            let p = if ptrs.is_null() {
                ptr::null()
            } else {
                *ptrs.add(i)
            };
            Value::clone_from_ptr(p)
                .ok_or_else(|| Error::new(ErrorCode::Internal, format!("{what} {i} is NULL")))
        })
        .collect()
}

/// A list of the items, or libaf's error (`InvalidArgument` beyond 512
/// levels of nesting).
pub(crate) fn list_checked(items: &[Value]) -> Result<Value> {
    let list = make_value(|out| unsafe {
        sys::af_value_list_new(value_ptrs(items).as_ptr(), items.len(), out)
    })?;
    Ok(list.keeping(keep_all(items)))
}

impl Value {
    // ------------------------------------------------------------ raw handles

    /// Takes ownership of an owned `af_value_t*` (None if NULL).
    ///
    /// # Safety
    /// `raw` must be NULL or an owned reference to a valid value.
    pub unsafe fn from_raw(raw: *mut sys::af_value_t) -> Option<Value> {
        NonNull::new(raw).map(|raw| Value { raw, keep: None })
    }

    /// A new reference to a borrowed `af_value_t*` (None if NULL).
    ///
    /// # Safety
    /// `raw` must be NULL or point to a valid value.
    pub unsafe fn clone_from_ptr(raw: *const sys::af_value_t) -> Option<Value> {
        Value::from_raw(sys::af_value_clone(raw))
    }

    /// The borrowed handle (valid while `self` lives).
    pub fn as_ptr(&self) -> *const sys::af_value_t {
        self.raw.as_ptr()
    }

    /// Gives up ownership: the caller must `af_value_free` the result. A
    /// pending promise given away no longer keeps its context alive.
    pub fn into_raw(mut self) -> *mut sys::af_value_t {
        drop(self.keep.take());
        let p = self.raw.as_ptr();
        std::mem::forget(self);
        p
    }

    /// `self`, keeping `keep` alive as long as it lives.
    pub(crate) fn keeping(mut self, keep: Option<KeepAlive>) -> Value {
        self.keep = keep;
        self
    }

    // ----------------------------------------------------------- constructors

    /// Parses exact JSON (integers stay int, numbers with `.`/`e` float).
    /// `InvalidArgument` for malformed JSON, duplicate keys or integers
    /// outside i64.
    pub fn from_json(json: &str) -> Result<Value> {
        make_value(|out| unsafe { sys::af_value_json_new(json.as_ptr().cast(), json.len(), out) })
    }

    /// `null`.
    pub fn null() -> Value {
        infallible(make_value(|out| unsafe { sys::af_value_null_new(out) }))
    }

    /// A bool.
    pub fn bool(b: bool) -> Value {
        infallible(make_value(|out| unsafe {
            sys::af_value_bool_new(b as i32, out)
        }))
    }

    /// An int (i64).
    pub fn int(i: i64) -> Value {
        infallible(make_value(|out| unsafe { sys::af_value_int_new(i, out) }))
    }

    /// A float (f64).
    pub fn float(f: f64) -> Value {
        infallible(make_value(|out| unsafe { sys::af_value_float_new(f, out) }))
    }

    /// A string.
    pub fn str(s: &str) -> Value {
        infallible(make_value(|out| unsafe {
            sys::af_value_str_new(s.as_ptr().cast(), s.len(), out)
        }))
    }

    /// A list of the items (each gets a new reference).
    pub fn list(items: &[Value]) -> Value {
        infallible(list_checked(items))
    }

    /// A dict from (key, value) entries, insertion order kept.
    /// `InvalidArgument` on a duplicate key.
    pub fn dict<K, V, I>(entries: I) -> Result<Value>
    where
        K: AsRef<str>,
        V: Into<Value>,
        I: IntoIterator<Item = (K, V)>,
    {
        let (keys, values): (Vec<K>, Vec<Value>) =
            entries.into_iter().map(|(k, v)| (k, v.into())).unzip();
        let key_ptrs: Vec<*const std::os::raw::c_char> =
            keys.iter().map(|k| k.as_ref().as_ptr().cast()).collect();
        let key_lens: Vec<usize> = keys.iter().map(|k| k.as_ref().len()).collect();
        make_value(|out| unsafe {
            sys::af_value_dict_new(
                if key_ptrs.is_empty() {
                    ptr::null()
                } else {
                    key_ptrs.as_ptr()
                },
                if key_lens.is_empty() {
                    ptr::null()
                } else {
                    key_lens.as_ptr()
                },
                value_ptrs(&values).as_ptr(),
                values.len(),
                out,
            )
        })
        .map(|dict| dict.keeping(keep_all(&values)))
    }

    // -------------------------------------------------------------- accessors

    /// The kind (never reads a placeholder's content).
    pub fn kind(&self) -> Kind {
        Kind::from_i32(unsafe { sys::af_value_kind(self.as_ptr()) })
    }

    /// True for a traced leaf (only seen inside a trace).
    pub fn is_placeholder(&self) -> bool {
        self.kind() == Kind::Placeholder
    }

    /// Number of items of a list or dict (`InvalidArgument` otherwise).
    pub fn len(&self) -> Result<usize> {
        let mut n = 0usize;
        check(unsafe { sys::af_value_len(self.as_ptr(), &mut n) })?;
        Ok(n)
    }

    /// True for an empty list or dict (`InvalidArgument` for other kinds).
    pub fn is_empty(&self) -> Result<bool> {
        self.len().map(|n| n == 0)
    }

    /// Item `i` of a list, or the value of the `i`-th dict entry.
    pub fn index(&self, i: usize) -> Result<Value> {
        make_value(|out| unsafe { sys::af_value_index(self.as_ptr(), i, out) })
            .map(|v| v.keeping(self.keep.clone()))
    }

    /// The value under `key` in a dict (`NotFound` naming the key if absent).
    pub fn key(&self, key: &str) -> Result<Value> {
        make_value(|out| unsafe {
            sys::af_value_key(self.as_ptr(), key.as_ptr().cast(), key.len(), out)
        })
        .map(|v| v.keeping(self.keep.clone()))
    }

    /// The `i`-th key of a dict (insertion order), borrowed from `self`.
    pub fn key_at(&self, i: usize) -> Result<&str> {
        let mut s: *const std::os::raw::c_char = ptr::null();
        let mut n = 0usize;
        check(unsafe { sys::af_value_key_at(self.as_ptr(), i, &mut s, &mut n) })?;
        unsafe { borrowed_str(s, n) }
    }

    /// The keys of a dict, in insertion order.
    pub fn keys(&self) -> Result<Vec<String>> {
        (0..self.len()?)
            .map(|i| self.key_at(i).map(str::to_owned))
            .collect()
    }

    /// The items of a list, or the values of a dict in insertion order.
    pub fn items(&self) -> Result<Vec<Value>> {
        (0..self.len()?).map(|i| self.index(i)).collect()
    }

    /// The (key, value) entries of a dict, in insertion order.
    pub fn entries(&self) -> Result<Vec<(String, Value)>> {
        (0..self.len()?)
            .map(|i| Ok((self.key_at(i)?.to_owned(), self.index(i)?)))
            .collect()
    }

    /// The string of a str value, borrowed from `self`.
    pub fn as_str_ref(&self) -> Result<&str> {
        let mut s: *const std::os::raw::c_char = ptr::null();
        let mut n = 0usize;
        check(unsafe { sys::af_value_get_str(self.as_ptr(), &mut s, &mut n) })?;
        unsafe { borrowed_str(s, n) }
    }

    /// The string of a str value (`InvalidArgument` naming the kinds otherwise).
    pub fn as_str(&self) -> Result<String> {
        self.as_str_ref().map(str::to_owned)
    }

    /// The integer of an int value.
    pub fn as_int(&self) -> Result<i64> {
        let mut i = 0i64;
        check(unsafe { sys::af_value_get_int(self.as_ptr(), &mut i) })?;
        Ok(i)
    }

    /// The number of a float value.
    pub fn as_float(&self) -> Result<f64> {
        let mut f = 0f64;
        check(unsafe { sys::af_value_get_float(self.as_ptr(), &mut f) })?;
        Ok(f)
    }

    /// The bool of a bool value.
    pub fn as_bool(&self) -> Result<bool> {
        let mut b = 0i32;
        check(unsafe { sys::af_value_get_bool(self.as_ptr(), &mut b) })?;
        Ok(b != 0)
    }

    /// Compact JSON; floats shortest round-trip ("2.0"). `InvalidArgument`
    /// for NaN/infinity and for placeholders.
    pub fn to_json(&self) -> Result<String> {
        let mut b = sys::af_bytes_t::default();
        check(unsafe { sys::af_value_to_json(self.as_ptr(), &mut b) })?;
        Ok(unsafe { bytes_to_string(&mut b) })
    }
}

impl Clone for Value {
    fn clone(&self) -> Value {
        let p = unsafe { sys::af_value_clone(self.as_ptr()) };
        Value {
            raw: NonNull::new(p).expect("af_value_clone returned NULL"),
            keep: self.keep.clone(),
        }
    }
}

impl Drop for Value {
    fn drop(&mut self) {
        unsafe { sys::af_value_free(self.raw.as_ptr()) }
    }
}

/// The JSON text, or `<placeholder>` / `<kind with placeholders>` inside a trace.
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.to_json() {
            Ok(j) => f.write_str(&j),
            Err(_) => match self.kind() {
                Kind::Placeholder => f.write_str("<placeholder>"),
                k => write!(f, "<{k:?} (not JSON: holds placeholders or NaN)>"),
            },
        }
    }
}

impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Value({self})")
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::str(s)
    }
}
impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::str(&s)
    }
}
impl From<&String> for Value {
    fn from(s: &String) -> Value {
        Value::str(s)
    }
}
impl From<i64> for Value {
    fn from(i: i64) -> Value {
        Value::int(i)
    }
}
impl From<i32> for Value {
    fn from(i: i32) -> Value {
        Value::int(i64::from(i))
    }
}
impl From<u32> for Value {
    fn from(i: u32) -> Value {
        Value::int(i64::from(i))
    }
}
impl From<f64> for Value {
    fn from(f: f64) -> Value {
        Value::float(f)
    }
}
impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::bool(b)
    }
}
impl From<()> for Value {
    fn from(_: ()) -> Value {
        Value::null()
    }
}
impl From<&Value> for Value {
    fn from(v: &Value) -> Value {
        v.clone()
    }
}
impl From<Vec<Value>> for Value {
    fn from(items: Vec<Value>) -> Value {
        Value::list(&items)
    }
}
impl From<&[Value]> for Value {
    fn from(items: &[Value]) -> Value {
        Value::list(items)
    }
}
impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Value {
        v.map_or_else(Value::null, Into::into)
    }
}
impl FromIterator<Value> for Value {
    fn from_iter<I: IntoIterator<Item = Value>>(iter: I) -> Value {
        let items: Vec<Value> = iter.into_iter().collect();
        Value::list(&items)
    }
}
impl std::str::FromStr for Value {
    type Err = Error;
    fn from_str(json: &str) -> Result<Value> {
        Value::from_json(json)
    }
}
