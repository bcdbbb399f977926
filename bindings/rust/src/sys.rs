//! Raw FFI declarations of `af.h`, one for one (names, types and constants
//! as in the header). Everything here is `unsafe`; the safe API is in the
//! crate root.

#![allow(non_camel_case_types)]

use std::marker::{PhantomData, PhantomPinned};
use std::os::raw::{c_char, c_void};

// ---------------------------------------------------------------- versioning

pub const AF_VERSION_MAJOR: u32 = 0;
pub const AF_VERSION_MINOR: u32 = 1;
pub const AF_VERSION_PATCH: u32 = 0;
pub const AF_VERSION_STRING: &str = "0.1.0";
pub const AF_ABI_VERSION: u32 = 1;

// -------------------------------------------------------------------- errors

pub const AF_ERR_INVALID_ARGUMENT: i32 = 1;
pub const AF_ERR_NOT_FOUND: i32 = 2;
pub const AF_ERR_SCHEMA: i32 = 3;
pub const AF_ERR_FORMAT: i32 = 4;
pub const AF_ERR_VERSION: i32 = 5;
pub const AF_ERR_PROVIDER: i32 = 6;
pub const AF_ERR_TIMEOUT: i32 = 7;
pub const AF_ERR_CANCELLED: i32 = 8;
pub const AF_ERR_CALLBACK: i32 = 9;
pub const AF_ERR_IO: i32 = 10;
pub const AF_ERR_OUT_OF_MEMORY: i32 = 11;
pub const AF_ERR_INTERNAL: i32 = 12;

// -------------------------------------------------------------------- values

pub const AF_KIND_NULL: i32 = 0;
pub const AF_KIND_BOOL: i32 = 1;
pub const AF_KIND_INT: i32 = 2;
pub const AF_KIND_FLOAT: i32 = 3;
pub const AF_KIND_STR: i32 = 4;
pub const AF_KIND_LIST: i32 = 5;
pub const AF_KIND_DICT: i32 = 6;
pub const AF_KIND_PLACEHOLDER: i32 = 7;

// ---------------------------------------------------------------------- walk

pub const AF_WALK_DONE: usize = usize::MAX;

// ------------------------------------------------------------ opaque handles

macro_rules! opaque {
    ($($name:ident),* $(,)?) => {$(
        #[repr(C)]
        pub struct $name {
            _data: [u8; 0],
            _marker: PhantomData<(*mut u8, PhantomPinned)>,
        }
    )*};
}
opaque!(af_error, af_context, af_value, af_ir, af_walk);

pub type af_error_t = af_error;
pub type af_context_t = af_context;
pub type af_value_t = af_value;
pub type af_ir_t = af_ir;
pub type af_walk_t = af_walk;

/// An owned byte buffer returned by libaf (free with [`af_bytes_free`]).
#[repr(C)]
#[derive(Debug)]
pub struct af_bytes {
    pub data: *mut u8,
    pub len: usize,
}
pub type af_bytes_t = af_bytes;

impl Default for af_bytes {
    fn default() -> Self {
        af_bytes {
            data: std::ptr::null_mut(),
            len: 0,
        }
    }
}

/// The function being traced (see `af_trace`).
pub type af_trace_fn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        ctx: *mut af_context_t,
        inputs: *const *const af_value_t,
        n_inputs: usize,
        out: *mut *mut af_value_t,
    ) -> *mut af_error_t,
>;

extern "C" {
    // Versioning
    pub fn af_version() -> *const c_char;
    pub fn af_abi_version() -> u32;

    // Errors
    pub fn af_error_code(e: *const af_error_t) -> i32;
    pub fn af_error_message(e: *const af_error_t) -> *const c_char;
    pub fn af_error_cause(e: *const af_error_t) -> *const af_error_t;
    pub fn af_error_new(code: i32, msg: *const c_char, len: usize) -> *mut af_error_t;
    pub fn af_error_free(e: *mut af_error_t);

    // Bytes
    pub fn af_bytes_free(b: *mut af_bytes_t);

    // Context
    pub fn af_context_new(out: *mut *mut af_context_t) -> *mut af_error_t;
    pub fn af_context_free(ctx: *mut af_context_t);

    // Values
    pub fn af_value_from_json(
        ctx: *mut af_context_t,
        json: *const c_char,
        len: usize,
        out: *mut *mut af_value_t,
    ) -> *mut af_error_t;
    pub fn af_value_to_json(v: *const af_value_t, out: *mut af_bytes_t) -> *mut af_error_t;

    pub fn af_value_null(ctx: *mut af_context_t, out: *mut *mut af_value_t) -> *mut af_error_t;
    pub fn af_value_bool(
        ctx: *mut af_context_t,
        b: i32,
        out: *mut *mut af_value_t,
    ) -> *mut af_error_t;
    pub fn af_value_int(
        ctx: *mut af_context_t,
        i: i64,
        out: *mut *mut af_value_t,
    ) -> *mut af_error_t;
    pub fn af_value_float(
        ctx: *mut af_context_t,
        f: f64,
        out: *mut *mut af_value_t,
    ) -> *mut af_error_t;
    pub fn af_value_str(
        ctx: *mut af_context_t,
        s: *const c_char,
        len: usize,
        out: *mut *mut af_value_t,
    ) -> *mut af_error_t;
    pub fn af_value_list(
        ctx: *mut af_context_t,
        items: *const *const af_value_t,
        n: usize,
        out: *mut *mut af_value_t,
    ) -> *mut af_error_t;
    pub fn af_value_dict(
        ctx: *mut af_context_t,
        keys: *const *const c_char,
        key_lens: *const usize,
        values: *const *const af_value_t,
        n: usize,
        out: *mut *mut af_value_t,
    ) -> *mut af_error_t;

    pub fn af_value_kind(v: *const af_value_t) -> i32;
    pub fn af_value_len(v: *const af_value_t, out: *mut usize) -> *mut af_error_t;
    pub fn af_value_index(
        v: *const af_value_t,
        i: usize,
        out: *mut *mut af_value_t,
    ) -> *mut af_error_t;
    pub fn af_value_key(
        v: *const af_value_t,
        key: *const c_char,
        len: usize,
        out: *mut *mut af_value_t,
    ) -> *mut af_error_t;
    pub fn af_value_key_at(
        v: *const af_value_t,
        i: usize,
        key: *mut *const c_char,
        len: *mut usize,
    ) -> *mut af_error_t;
    pub fn af_value_get_str(
        v: *const af_value_t,
        s: *mut *const c_char,
        len: *mut usize,
    ) -> *mut af_error_t;
    pub fn af_value_get_int(v: *const af_value_t, out: *mut i64) -> *mut af_error_t;
    pub fn af_value_get_float(v: *const af_value_t, out: *mut f64) -> *mut af_error_t;
    pub fn af_value_get_bool(v: *const af_value_t, out: *mut i32) -> *mut af_error_t;

    pub fn af_value_clone(v: *const af_value_t) -> *mut af_value_t;
    pub fn af_value_free(v: *mut af_value_t);

    // Tracing
    pub fn af_trace(
        ctx: *mut af_context_t,
        fn_: af_trace_fn,
        user_data: *mut c_void,
        examples: *const *const af_value_t,
        n_examples: usize,
        static_mask: *const af_value_t,
        out: *mut *mut af_ir_t,
    ) -> *mut af_error_t;
    pub fn af_is_tracing() -> i32;
    pub fn af_tag_push(ctx: *mut af_context_t, tag: *const c_char, len: usize) -> *mut af_error_t;
    pub fn af_tag_pop(ctx: *mut af_context_t) -> *mut af_error_t;
    pub fn af_fold_push(ctx: *mut af_context_t) -> *mut af_error_t;
    pub fn af_fold_pop(ctx: *mut af_context_t) -> *mut af_error_t;

    // Operations
    pub fn af_format(
        ctx: *mut af_context_t,
        tmpl: *const c_char,
        tmpl_len: usize,
        args: *const *const af_value_t,
        n_args: usize,
        named: *const af_value_t,
        out: *mut *mut af_value_t,
    ) -> *mut af_error_t;
    pub fn af_concat(
        ctx: *mut af_context_t,
        args: *const *const af_value_t,
        n: usize,
        out: *mut *mut af_value_t,
    ) -> *mut af_error_t;
    pub fn af_match(
        ctx: *mut af_context_t,
        a: *const af_value_t,
        b: *const af_value_t,
        out: *mut *mut af_value_t,
    ) -> *mut af_error_t;
    pub fn af_stop_gradient(
        ctx: *mut af_context_t,
        v: *const af_value_t,
        out: *mut *mut af_value_t,
    ) -> *mut af_error_t;
    pub fn af_depends(
        ctx: *mut af_context_t,
        value: *const af_value_t,
        deps: *const *const af_value_t,
        n_deps: usize,
        out: *mut *mut af_value_t,
    ) -> *mut af_error_t;
    pub fn af_checkpoint(
        ctx: *mut af_context_t,
        v: *const af_value_t,
        key: *const c_char,
        key_len: usize,
        collection: *const c_char,
        collection_len: usize,
        out: *mut *mut af_value_t,
    ) -> *mut af_error_t;

    // Calling and inspecting IRs
    pub fn af_ir_call(
        ctx: *mut af_context_t,
        ir: *const af_ir_t,
        inputs: *const *const af_value_t,
        n: usize,
        out: *mut *mut af_value_t,
    ) -> *mut af_error_t;
    pub fn af_ir_to_text(ir: *const af_ir_t, out: *mut af_bytes_t) -> *mut af_error_t;
    pub fn af_ir_to_dot(ir: *const af_ir_t, out: *mut af_bytes_t) -> *mut af_error_t;
    pub fn af_ir_eqn_count(ir: *const af_ir_t) -> usize;
    pub fn af_ir_eqn_prim(ir: *const af_ir_t, i: usize) -> *const c_char;
    pub fn af_ir_input_count(ir: *const af_ir_t) -> usize;
    pub fn af_ir_hash(ir: *const af_ir_t) -> u64;
    pub fn af_ir_equal(a: *const af_ir_t, b: *const af_ir_t) -> i32;
    pub fn af_ir_clone(ir: *const af_ir_t) -> *mut af_ir_t;
    pub fn af_ir_free(ir: *mut af_ir_t);

    // Walking
    pub fn af_walk_new(
        ctx: *mut af_context_t,
        ir: *const af_ir_t,
        inputs: *const *const af_value_t,
        n: usize,
        out: *mut *mut af_walk_t,
    ) -> *mut af_error_t;
    pub fn af_walk_next(
        w: *mut af_walk_t,
        eqn_index: *mut usize,
        inputs: *mut *mut af_value_t,
    ) -> *mut af_error_t;
    pub fn af_walk_eval(w: *mut af_walk_t) -> *mut af_error_t;
    pub fn af_walk_send(w: *mut af_walk_t, outputs: *const af_value_t) -> *mut af_error_t;
    pub fn af_walk_outputs(w: *mut af_walk_t, out: *mut *mut af_value_t) -> *mut af_error_t;
    pub fn af_walk_free(w: *mut af_walk_t);
}
