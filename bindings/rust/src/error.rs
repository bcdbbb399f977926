//! `libaf::Error`: a libaf error (code, message, cause chain) as a Rust value.

use std::ffi::CStr;
use std::fmt;
use std::sync::Arc;

use crate::payload;
use crate::sys;

/// The `AF_ERR_*` codes of `af.h`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// Bad input, structure, kind or template (`AF_ERR_INVALID_ARGUMENT`, 1).
    InvalidArgument,
    /// Switch key, host function, provider or route not found (2).
    NotFound,
    /// Structured output did not validate (3).
    Schema,
    /// Corrupt or unverifiable graph bytes (4).
    Format,
    /// The graph needs a newer library (5).
    Version,
    /// An LM or host call failed after retries (6).
    Provider,
    /// 7.
    Timeout,
    /// 8.
    Cancelled,
    /// A host callback returned an error; see [`Error::cause`] (9).
    Callback,
    /// 10.
    Io,
    /// 11.
    OutOfMemory,
    /// 12.
    Internal,
    /// A code this binding does not know (a newer library).
    Other(i32),
}

impl ErrorCode {
    /// The code from its `AF_ERR_*` number.
    pub fn from_i32(code: i32) -> ErrorCode {
        match code {
            sys::AF_ERR_INVALID_ARGUMENT => ErrorCode::InvalidArgument,
            sys::AF_ERR_NOT_FOUND => ErrorCode::NotFound,
            sys::AF_ERR_SCHEMA => ErrorCode::Schema,
            sys::AF_ERR_FORMAT => ErrorCode::Format,
            sys::AF_ERR_VERSION => ErrorCode::Version,
            sys::AF_ERR_PROVIDER => ErrorCode::Provider,
            sys::AF_ERR_TIMEOUT => ErrorCode::Timeout,
            sys::AF_ERR_CANCELLED => ErrorCode::Cancelled,
            sys::AF_ERR_CALLBACK => ErrorCode::Callback,
            sys::AF_ERR_IO => ErrorCode::Io,
            sys::AF_ERR_OUT_OF_MEMORY => ErrorCode::OutOfMemory,
            sys::AF_ERR_INTERNAL => ErrorCode::Internal,
            other => ErrorCode::Other(other),
        }
    }

    /// The `AF_ERR_*` number.
    pub fn as_i32(self) -> i32 {
        match self {
            ErrorCode::InvalidArgument => sys::AF_ERR_INVALID_ARGUMENT,
            ErrorCode::NotFound => sys::AF_ERR_NOT_FOUND,
            ErrorCode::Schema => sys::AF_ERR_SCHEMA,
            ErrorCode::Format => sys::AF_ERR_FORMAT,
            ErrorCode::Version => sys::AF_ERR_VERSION,
            ErrorCode::Provider => sys::AF_ERR_PROVIDER,
            ErrorCode::Timeout => sys::AF_ERR_TIMEOUT,
            ErrorCode::Cancelled => sys::AF_ERR_CANCELLED,
            ErrorCode::Callback => sys::AF_ERR_CALLBACK,
            ErrorCode::Io => sys::AF_ERR_IO,
            ErrorCode::OutOfMemory => sys::AF_ERR_OUT_OF_MEMORY,
            ErrorCode::Internal => sys::AF_ERR_INTERNAL,
            ErrorCode::Other(n) => n,
        }
    }

    /// The name of the code without the `AF_ERR_` prefix ("INVALID_ARGUMENT";
    /// "UNKNOWN" for a code libaf does not define), from libaf's one table.
    pub fn name(self) -> &'static str {
        // SAFETY: af_error_code_name returns a static NUL-terminated ASCII
        // string for any code, never NULL.
        unsafe { std::ffi::CStr::from_ptr(sys::af_error_code_name(self.as_i32())) }
            .to_str()
            .unwrap_or("UNKNOWN")
    }
}

impl From<ErrorCode> for i32 {
    fn from(c: ErrorCode) -> i32 {
        c.as_i32()
    }
}

impl From<i32> for ErrorCode {
    fn from(c: i32) -> ErrorCode {
        ErrorCode::from_i32(c)
    }
}

impl PartialEq<i32> for ErrorCode {
    fn eq(&self, other: &i32) -> bool {
        self.as_i32() == *other
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorCode::Other(n) => write!(f, "error code {n}"),
            c => f.write_str(c.name()),
        }
    }
}

/// An error of libaf (or one a trace closure reports back to it).
///
/// `Display` prints `CODE: message`; with `{:#}` it also prints the causes.
/// [`std::error::Error::source`] returns the cause.
#[derive(Clone, Debug)]
pub struct Error {
    /// What kind of failure.
    pub code: ErrorCode,
    /// The message (from libaf: names what was wrong and how to fix it).
    pub message: String,
    /// The error that caused this one (e.g. the closure's error under a
    /// `Callback` error).
    pub cause: Option<Box<Error>>,
    /// True when the error was made by libaf (not by `Error::new`): a trace
    /// closure that returns such an error gets it back unchanged from
    /// `Context::trace`, as if it had propagated.
    pub(crate) from_library: bool,
    /// An error of another type this one stands for (see [`Error::wrap`]):
    /// the end of the [`source`](std::error::Error::source) chain.
    pub(crate) external: Option<Arc<dyn std::error::Error + Send + Sync + 'static>>,
}

/// `Result<T, libaf::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A new error, e.g. for a trace closure to return.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Error {
        Error {
            code,
            message: message.into(),
            cause: None,
            from_library: false,
            external: None,
        }
    }

    /// An error with `code` standing for `err` (a host closure's own error):
    /// the message is `err`'s text, and `err` itself is the end of the
    /// [`source`](std::error::Error::source) chain, also after the error
    /// went through libaf (`downcast_ref` finds it).
    pub fn wrap<E: std::error::Error + Send + Sync + 'static>(code: ErrorCode, err: E) -> Error {
        let mut e = Error::new(code, err.to_string());
        e.external = Some(Arc::new(err));
        e
    }

    /// The same error with `cause` attached.
    pub fn with_cause(mut self, cause: Error) -> Error {
        self.cause = Some(Box::new(cause));
        self
    }

    /// The code as its `AF_ERR_*` number.
    pub fn code_i32(&self) -> i32 {
        self.code.as_i32()
    }

    /// The cause, if any.
    pub fn cause(&self) -> Option<&Error> {
        self.cause.as_deref()
    }

    /// This error and its causes, outermost first.
    pub fn chain(&self) -> impl Iterator<Item = &Error> {
        std::iter::successors(Some(self), |e| e.cause.as_deref())
    }

    /// Copies a borrowed libaf error (and its causes).
    ///
    /// # Safety
    /// `e` must be a valid `af_error_t*` (non-null).
    pub(crate) unsafe fn copy_from_raw(e: *const sys::af_error_t) -> Error {
        // The node a Rust callback's error became: give back that very error
        // (with its causes and the foreign error it may wrap).
        if let Some(orig) = payload::carried(e) {
            return orig.clone();
        }
        let code = ErrorCode::from_i32(sys::af_error_code(e));
        let msg = sys::af_error_message(e);
        let message = if msg.is_null() {
            String::new()
        } else {
            CStr::from_ptr(msg).to_string_lossy().into_owned()
        };
        let c = sys::af_error_cause(e);
        let message = binding_names(&message);
        let cause = if c.is_null() {
            None
        } else {
            Some(Box::new(Error::copy_from_raw(c)))
        };
        Error {
            code,
            message,
            cause,
            from_library: true,
            external: None,
        }
    }

    /// Takes an owned libaf error: copies it, then frees it.
    ///
    /// # Safety
    /// `e` must be an owned, valid `af_error_t*` (non-null); it is freed.
    pub unsafe fn from_raw(e: *mut sys::af_error_t) -> Error {
        let err = Error::copy_from_raw(e);
        sys::af_error_free(e);
        err
    }

    /// An owned `af_error_t*` with this code and message (causes are
    /// appended to the message: the C API has no way to build a chain) that
    /// carries this very error as its payload (`af_error_new_with`): when
    /// libaf hands it back, e.g. as the cause of the `Callback` error a
    /// callback's failure becomes, [`from_raw`](Self::from_raw) gives back
    /// this error (its causes, the error it [wraps](Self::wrap)) at that
    /// place in the chain. libaf drops it with the last error holding it.
    /// NULL only if libaf is out of memory.
    pub fn into_raw(self) -> *mut sys::af_error_t {
        let msg = self.flat_message();
        payload::new_error(self, &msg)
    }

    fn flat_message(&self) -> String {
        let mut msg = self.message.clone();
        let mut cause = self.cause.as_deref();
        while let Some(c) = cause {
            msg.push_str(": ");
            msg.push_str(&c.message);
            cause = c.cause.as_deref();
        }
        msg
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)?;
        if f.alternate() {
            let mut c = self.cause.as_deref();
            while let Some(e) = c {
                write!(f, "\n  caused by {}: {}", e.code, e.message)?;
                c = e.cause.as_deref();
            }
        }
        Ok(())
    }
}

/// Equal code, message and causes (where the error was made is ignored).
impl PartialEq for Error {
    fn eq(&self, other: &Error) -> bool {
        self.code == other.code && self.message == other.message && self.cause == other.cause
    }
}
impl Eq for Error {}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match (&self.cause, &self.external) {
            (Some(c), _) => Some(c.as_ref() as &(dyn std::error::Error + 'static)),
            (None, Some(x)) => Some(x.as_ref() as &(dyn std::error::Error + 'static)),
            (None, None) => None,
        }
    }
}

/// `msg` with the C functions libaf's hints name replaced by this crate's
/// methods.
fn binding_names(msg: &str) -> String {
    msg.replace("af_register_function", "Context::register_function")
        .replace("af_context_route", "Context::route")
}

/// NULL -> Ok, else the owned error as Err.
#[inline]
pub(crate) fn check(e: *mut sys::af_error_t) -> Result<()> {
    if e.is_null() {
        Ok(())
    } else {
        Err(unsafe { Error::from_raw(e) })
    }
}
