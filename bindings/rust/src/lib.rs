//! Rust binding of libaf: trace LM programs (string formatting,
//! concatenation, ... later LM calls) into an IR that can be printed,
//! transformed and called from any language.
//!
//! ```
//! use libaf::{Context, Value};
//!
//! let ctx = Context::new()?;
//! let hello = ctx.trace(
//!     |ctx, inputs| {
//!         let greeting = ctx.format("Hello, {}!", &inputs[..1], None)?;
//!         ctx.concat(&[greeting, Value::from("?")])
//!     },
//!     &[Value::from("x")],
//!     None,
//! )?;
//! let out = hello.call(&ctx, &[Value::from("World")])?;
//! assert_eq!(out.as_str()?, "Hello, World!?");
//! # Ok::<(), libaf::Error>(())
//! ```
//!
//! Beyond tracing: transforms ([`Ir::pullback`], [`Ir::batch`], ...),
//! control flow ([`Context::switch`], [`Context::while_loop`],
//! [`Context::scan`]), host
//! functions ([`Context::register_function`]), compiled programs run sync or
//! async ([`Program`], [`Future`]), LM providers ([`Provider`]), run
//! journals that let a stopped run resume without asking again the LM calls
//! it made ([`RunOptions::journal_path`], [`journal_summary_json`]) and saved
//! graphs ([`Ir::save`], [`Ir::load`]).
//!
//! Every fallible call returns `Result<T, libaf::Error>`. Handles (`Context`,
//! `Value`, `Ir`, `Walk`, `Program`, `Future`, `Provider`) free themselves on drop; `Value` and `Ir` clone by
//! reference counting. The raw C API is in [`sys`].
//!
//! Features: `serde` makes [`Value`] `Serialize` and `Deserialize` (with
//! libaf's JSON conventions: ints stay ints, floats floats, dict order
//! kept); `vendored` and `static` choose how libaf is found and linked.

/// The raw C API (the `libaf-sys` crate).
pub use libaf_sys as sys;

mod context;
mod control;
mod convert;
mod error;
mod graph;
mod host;
mod inspect;
mod ir;
mod iter;
mod journal;
mod lazy;
mod payload;
mod program;
mod provider;
mod provider_options;
mod transform;
mod util;
mod value;
#[cfg(feature = "serde")]
mod value_serde;
mod walk;

pub use context::{is_tracing, Context, TraceOptions};
pub use error::{Error, ErrorCode, Result};
pub use graph::{graph_from_json, graph_to_json, graph_verify};
pub use host::{profile_event, FunctionOptions, HostRequest};
pub use inspect::Direction;
pub use ir::Ir;
pub use iter::{Entries, Items};
pub use journal::{journal_compact, journal_summary_json};
pub use program::{CancelToken, Future, Program, ProgressFn, RunOptions, StreamFn};
pub use provider::{LmRequest, Provider};
pub use provider_options::{EchoOptions, OpenAiOptions, ReplayOptions, StructuredOutput, Upstream};
pub use value::{Kind, Value};
pub use walk::{Step, Walk};

/// "MAJOR.MINOR.PATCH" of the loaded libaf.
pub fn version() -> &'static str {
    let p = unsafe { sys::af_version() };
    if p.is_null() {
        return "";
    }
    // Static storage in libaf.
    unsafe { std::ffi::CStr::from_ptr(p) }
        .to_str()
        .unwrap_or("")
}

/// `AF_ABI_VERSION` of the loaded libaf.
pub fn abi_version() -> u32 {
    unsafe { sys::af_abi_version() }
}

/// Every option libaf reads from JSON options, as JSON (`af_options_json`):
/// `{"af_context_new_with": [key...], "af_provider_new": {"echo": [key...],
/// ...}, "af_provider_set_options": [key...]}`, each key `{"key", "kind",
/// "default", "min", "max", "doc", "keys"}`. The typed options
/// ([`EchoOptions`], [`OpenAiOptions`], [`ReplayOptions`]) are tested against it.
pub fn options_json() -> Result<String> {
    let mut b = sys::af_bytes_t::default();
    // SAFETY: b is zeroed; libaf fills it on success.
    unsafe {
        error::check(sys::af_options_json(&mut b))?;
        Ok(util::bytes_to_string(&mut b))
    }
}

/// The `AF_ABI_VERSION` this binding was written against.
pub const ABI_VERSION: u32 = sys::AF_ABI_VERSION;

/// The README's code blocks, compiled and run as doctests (the cookbook).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
