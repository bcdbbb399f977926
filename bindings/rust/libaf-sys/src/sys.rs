//! Raw FFI declarations of `af.h`, one for one (names, types and constants
//! as in the header). Everything here is `unsafe`; the safe API is the
//! `libaf` crate.

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
opaque!(
    af_error,
    af_context,
    af_value,
    af_ir,
    af_walk,
    af_program,
    af_future,
    af_provider,
    af_lm_request,
    af_host_request,
    af_cancel
);

pub type af_error_t = af_error;
pub type af_context_t = af_context;
pub type af_value_t = af_value;
pub type af_ir_t = af_ir;
pub type af_walk_t = af_walk;
pub type af_program_t = af_program;
pub type af_future_t = af_future;
pub type af_provider_t = af_provider;
pub type af_lm_request_t = af_lm_request;
pub type af_host_request_t = af_host_request;
pub type af_cancel_t = af_cancel;

// ------------------------------------------------------------ run options

pub const AF_RUN_KEEP_GOING: u32 = 1;
pub const AF_RUN_PROFILE: u32 = 2;
pub const AF_RUN_ITEM_ERRORS: u32 = 4;
pub const AF_RUN_SUMMARY: u32 = 8;
pub const AF_IR_ANCESTORS: u32 = 0;
pub const AF_IR_DESCENDANTS: u32 = 1;
pub const AF_IR_DEEP: u32 = 2;

/// Progress of a run: done and total equations.
pub type af_progress_fn =
    Option<unsafe extern "C" fn(user_data: *mut c_void, done: u64, total: u64)>;
/// A destroy callback for user data.
pub type af_destroy_fn = Option<unsafe extern "C" fn(user_data: *mut c_void)>;
/// A piece of an LM reply (`text` NULL: what that equation and item
/// streamed so far does not count).
pub type af_stream_fn = Option<
    unsafe extern "C" fn(user_data: *mut c_void, eqn: u32, item: u64, text: *const c_char, len: usize),
>;

/// Options of a run (zero it, set `struct_size`, then the fields needed).
#[repr(C)]
#[derive(Debug)]
pub struct af_run_options {
    pub struct_size: u32,
    pub flags: u32,
    pub timeout_ms: u64,
    pub progress: af_progress_fn,
    pub progress_user_data: *mut c_void,
    pub progress_destroy: af_destroy_fn,
    pub profile_path: *const c_char,
    pub profile_path_len: usize,
    pub cancel: *mut af_cancel_t,
    pub summary: *mut af_bytes_t,
    pub stream: af_stream_fn,
    pub stream_user_data: *mut c_void,
    pub stream_destroy: af_destroy_fn,
    pub stream_tag: *const c_char,
    pub stream_tag_len: usize,
    /// The largest value one equation may build, in bytes (0 = the default,
    /// 1 GiB); past it the equation fails with OUT_OF_MEMORY.
    pub max_value_bytes: u64,
    /// NULL/0 = none. A run journal: a SQLite file (created 0600) recording
    /// each LM call the run completes; a rerun of the same program on the
    /// same inputs answers recorded calls from it (af.h "Run journals").
    pub journal_path: *const c_char,
    pub journal_path_len: usize,
}
pub type af_run_options_t = af_run_options;

/// Options of `af_cse_ex`.
#[repr(C)]
#[derive(Debug, Default)]
pub struct af_cse_options {
    pub struct_size: u32,
    pub merge_nondeterministic: u32,
}
pub type af_cse_options_t = af_cse_options;

/// Options of `af_trace_with`.
#[repr(C)]
#[derive(Debug)]
pub struct af_trace_options {
    pub struct_size: u32,
    pub static_mask: *const af_value_t,
    pub list_mask: *const af_value_t,
}
pub type af_trace_options_t = af_trace_options;

/// A host function (see `af_register_function`).
pub type af_host_fn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        args: *const *const af_value_t,
        n: usize,
        out: *mut *mut af_value_t,
    ) -> *mut af_error_t,
>;

/// An async host function (see `af_register_function_async`).
pub type af_host_async_fn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        args: *const *const af_value_t,
        n: usize,
        req: *mut af_host_request_t,
    ),
>;

/// Flags of [`af_function_options`]: a pure host function has no effects
/// (its calls may be dropped when unused, merged when equal, answered by a
/// memoize scope); without it a function is effectful.
pub const AF_FUNCTION_PURE: u32 = 1;
/// `fn_` runs on the context's host pool (as `af_register_function_blocking`).
pub const AF_FUNCTION_BLOCKING: u32 = 2;

/// Options of `af_register_function_with` (zero it, set `struct_size`, then
/// the fields needed). Exactly one of `fn_` (sync, or blocking with
/// `AF_FUNCTION_BLOCKING`) and `async_fn`.
#[repr(C)]
#[derive(Debug)]
pub struct af_function_options {
    pub struct_size: u32,
    /// `AF_FUNCTION_*`.
    pub flags: u32,
    /// `fn` in af.h.
    pub fn_: af_host_fn,
    pub async_fn: af_host_async_fn,
    pub user_data: *mut c_void,
    /// Runs exactly once, as for `af_register_function`.
    pub destroy: af_destroy_fn,
    /// Borrowed.
    pub result_kinds: *const af_value_t,
}
pub type af_function_options_t = af_function_options;

/// The submit callback of a host provider.
pub type af_provider_submit_fn =
    Option<unsafe extern "C" fn(user_data: *mut c_void, req: *mut af_lm_request_t)>;

/// A callback run when a future finishes.
pub type af_done_fn = Option<unsafe extern "C" fn(user_data: *mut c_void)>;

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
    pub fn af_error_code_name(code: i32) -> *const c_char;
    pub fn af_error_message(e: *const af_error_t) -> *const c_char;
    pub fn af_error_cause(e: *const af_error_t) -> *const af_error_t;
    pub fn af_error_new(code: i32, msg: *const c_char, len: usize) -> *mut af_error_t;
    pub fn af_error_new_with(
        code: i32,
        msg: *const c_char,
        len: usize,
        payload: *mut c_void,
        destroy: af_destroy_fn,
    ) -> *mut af_error_t;
    pub fn af_error_payload(e: *const af_error_t) -> *mut c_void;
    pub fn af_error_free(e: *mut af_error_t);

    // Bytes
    pub fn af_bytes_free(b: *mut af_bytes_t);

    // Context
    pub fn af_context_new(out: *mut *mut af_context_t) -> *mut af_error_t;
    pub fn af_context_new_with(
        options_json: *const c_char,
        len: usize,
        out: *mut *mut af_context_t,
    ) -> *mut af_error_t;
    pub fn af_context_free(ctx: *mut af_context_t);
    pub fn af_context_stats(ctx: *const af_context_t, out: *mut af_bytes_t) -> *mut af_error_t;

    // Lazy evaluation
    pub fn af_eval(ctx: *mut af_context_t, values: *const *mut af_value_t, n: usize)
        -> *mut af_error_t;
    pub fn af_eval_with(
        ctx: *mut af_context_t,
        values: *const *mut af_value_t,
        n: usize,
        options: *const af_run_options_t,
    ) -> *mut af_error_t;
    pub fn af_value_ready(v: *const af_value_t) -> i32;

    // Values (context-free constructors)
    pub fn af_value_json_new(
        json: *const c_char,
        len: usize,
        out: *mut *mut af_value_t,
    ) -> *mut af_error_t;
    pub fn af_value_to_json(v: *const af_value_t, out: *mut af_bytes_t) -> *mut af_error_t;

    pub fn af_value_null_new(out: *mut *mut af_value_t) -> *mut af_error_t;
    pub fn af_value_bool_new(b: i32, out: *mut *mut af_value_t) -> *mut af_error_t;
    pub fn af_value_int_new(i: i64, out: *mut *mut af_value_t) -> *mut af_error_t;
    pub fn af_value_float_new(f: f64, out: *mut *mut af_value_t) -> *mut af_error_t;
    pub fn af_value_str_new(
        s: *const c_char,
        len: usize,
        out: *mut *mut af_value_t,
    ) -> *mut af_error_t;
    pub fn af_value_list_new(
        items: *const *const af_value_t,
        n: usize,
        out: *mut *mut af_value_t,
    ) -> *mut af_error_t;
    pub fn af_value_dict_new(
        keys: *const *const c_char,
        key_lens: *const usize,
        values: *const *const af_value_t,
        n: usize,
        out: *mut *mut af_value_t,
    ) -> *mut af_error_t;

    // Deprecated in af.h: the same as the _new forms above (ctx is ignored
    // and may be NULL). Declared for programs that still call them.
    pub fn af_value_from_json(
        ctx: *mut af_context_t,
        json: *const c_char,
        len: usize,
        out: *mut *mut af_value_t,
    ) -> *mut af_error_t;
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
    pub fn af_trace_with(
        ctx: *mut af_context_t,
        fn_: af_trace_fn,
        user_data: *mut c_void,
        examples: *const *const af_value_t,
        n_examples: usize,
        options: *const af_trace_options_t,
        out: *mut *mut af_ir_t,
    ) -> *mut af_error_t;
    pub fn af_is_tracing() -> i32;
    pub fn af_tag_push(ctx: *mut af_context_t, tag: *const c_char, len: usize) -> *mut af_error_t;
    pub fn af_tag_pop(ctx: *mut af_context_t) -> *mut af_error_t;
    pub fn af_name_push(ctx: *mut af_context_t, name: *const c_char, len: usize) -> *mut af_error_t;
    pub fn af_name_pop(ctx: *mut af_context_t) -> *mut af_error_t;
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
    pub fn af_ir_json(ir: *const af_ir_t, out: *mut af_bytes_t) -> *mut af_error_t;
    pub fn af_ir_eqn_json(ir: *const af_ir_t, i: usize, out: *mut af_bytes_t) -> *mut af_error_t;
    pub fn af_ir_var_json(ir: *const af_ir_t, var: u32, out: *mut af_bytes_t) -> *mut af_error_t;
    pub fn af_ir_sub(
        ir: *const af_ir_t,
        i: usize,
        path: *const c_char,
        path_len: usize,
        out: *mut *mut af_ir_t,
    ) -> *mut af_error_t;
    pub fn af_ir_related_json(
        ir: *const af_ir_t,
        i: usize,
        flags: u32,
        out: *mut af_bytes_t,
    ) -> *mut af_error_t;
    pub fn af_ir_related_json_with(
        ir: *const af_ir_t,
        i: usize,
        flags: u32,
        max_bytes: u64,
        out: *mut af_bytes_t,
    ) -> *mut af_error_t;
    pub fn af_ir_slice(
        ir: *const af_ir_t,
        outputs: *const *const c_char,
        output_lens: *const usize,
        n_outputs: usize,
        inputs: *const *const c_char,
        input_lens: *const usize,
        n_inputs: usize,
        out: *mut *mut af_ir_t,
    ) -> *mut af_error_t;
    pub fn af_ir_cost_json(ir: *const af_ir_t, batch: i64, out: *mut af_bytes_t) -> *mut af_error_t;
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

    // Transforms
    pub fn af_batch(
        ctx: *mut af_context_t,
        ir: *const af_ir_t,
        in_axes: *const af_value_t,
        out: *mut *mut af_ir_t,
    ) -> *mut af_error_t;
    pub fn af_pushforward(
        ctx: *mut af_context_t,
        ir: *const af_ir_t,
        out: *mut *mut af_ir_t,
    ) -> *mut af_error_t;
    pub fn af_pullback(
        ctx: *mut af_context_t,
        ir: *const af_ir_t,
        out: *mut *mut af_ir_t,
    ) -> *mut af_error_t;
    pub fn af_dce(
        ctx: *mut af_context_t,
        ir: *const af_ir_t,
        out_used: *const af_value_t,
        out: *mut *mut af_ir_t,
    ) -> *mut af_error_t;
    pub fn af_cse(
        ctx: *mut af_context_t,
        ir: *const af_ir_t,
        out: *mut *mut af_ir_t,
    ) -> *mut af_error_t;
    pub fn af_cse_ex(
        ctx: *mut af_context_t,
        ir: *const af_ir_t,
        options: *const af_cse_options_t,
        out: *mut *mut af_ir_t,
    ) -> *mut af_error_t;
    pub fn af_sched(
        ctx: *mut af_context_t,
        ir: *const af_ir_t,
        out: *mut *mut af_ir_t,
    ) -> *mut af_error_t;
    pub fn af_ir_eqn_sched(
        ir: *const af_ir_t,
        i: usize,
        level: *mut u32,
        priority: *mut f64,
    ) -> *mut af_error_t;
    pub fn af_ir_validate(ir: *const af_ir_t) -> *mut af_error_t;

    // Control flow
    pub fn af_switch(
        ctx: *mut af_context_t,
        key: *const af_value_t,
        names: *const *const c_char,
        name_lens: *const usize,
        branches: *const *const af_ir_t,
        n_branches: usize,
        operands: *const *const af_value_t,
        n_operands: usize,
        out: *mut *mut af_value_t,
    ) -> *mut af_error_t;
    pub fn af_while_loop(
        ctx: *mut af_context_t,
        cond: *const af_ir_t,
        body: *const af_ir_t,
        init: *const af_value_t,
        max_iters: u64,
        out: *mut *mut af_value_t,
    ) -> *mut af_error_t;
    pub fn af_scan(
        ctx: *mut af_context_t,
        body: *const af_ir_t,
        init: *const af_value_t,
        xs: *const af_value_t,
        reverse: i32,
        out: *mut *mut af_value_t,
    ) -> *mut af_error_t;

    // Host functions
    pub fn af_register_function(
        ctx: *mut af_context_t,
        name: *const c_char,
        name_len: usize,
        fn_: af_host_fn,
        user_data: *mut c_void,
        destroy: af_destroy_fn,
        result_kinds: *const af_value_t,
    ) -> *mut af_error_t;
    pub fn af_register_function_blocking(
        ctx: *mut af_context_t,
        name: *const c_char,
        name_len: usize,
        fn_: af_host_fn,
        user_data: *mut c_void,
        destroy: af_destroy_fn,
        result_kinds: *const af_value_t,
    ) -> *mut af_error_t;
    pub fn af_register_function_async(
        ctx: *mut af_context_t,
        name: *const c_char,
        name_len: usize,
        fn_: af_host_async_fn,
        user_data: *mut c_void,
        destroy: af_destroy_fn,
        result_kinds: *const af_value_t,
    ) -> *mut af_error_t;
    pub fn af_register_function_with(
        ctx: *mut af_context_t,
        name: *const c_char,
        name_len: usize,
        options: *const af_function_options_t,
    ) -> *mut af_error_t;
    pub fn af_host_request_cancelled(req: *const af_host_request_t) -> i32;
    pub fn af_host_request_complete(
        req: *mut af_host_request_t,
        result: *const af_value_t,
    ) -> *mut af_error_t;
    pub fn af_host_request_fail(req: *mut af_host_request_t, err: *mut af_error_t)
        -> *mut af_error_t;
    pub fn af_host_request_free(req: *mut af_host_request_t);
    pub fn af_host_call(
        ctx: *mut af_context_t,
        name: *const c_char,
        name_len: usize,
        args: *const *const af_value_t,
        n: usize,
        out: *mut *mut af_value_t,
    ) -> *mut af_error_t;

    // Run-time scopes
    pub fn af_collect_push(
        ctx: *mut af_context_t,
        collection: *const c_char,
        len: usize,
    ) -> *mut af_error_t;
    pub fn af_collect_pop(
        ctx: *mut af_context_t,
        collected: *mut *mut af_value_t,
    ) -> *mut af_error_t;
    pub fn af_inject_push(
        ctx: *mut af_context_t,
        collection: *const c_char,
        len: usize,
        values: *const af_value_t,
    ) -> *mut af_error_t;
    pub fn af_inject_pop(ctx: *mut af_context_t) -> *mut af_error_t;
    pub fn af_memoize_push(ctx: *mut af_context_t) -> *mut af_error_t;
    pub fn af_memoize_pop(ctx: *mut af_context_t) -> *mut af_error_t;

    // Programs
    pub fn af_compile(
        ctx: *mut af_context_t,
        ir: *const af_ir_t,
        out: *mut *mut af_program_t,
    ) -> *mut af_error_t;
    pub fn af_program_clone(p: *const af_program_t) -> *mut af_program_t;
    pub fn af_program_free(p: *mut af_program_t);
    pub fn af_cancel_new(out: *mut *mut af_cancel_t) -> *mut af_error_t;
    pub fn af_cancel_trigger(c: *mut af_cancel_t);
    pub fn af_cancel_triggered(c: *const af_cancel_t) -> i32;
    pub fn af_cancel_free(c: *mut af_cancel_t);
    pub fn af_cancel_scope_push(
        ctx: *mut af_context_t,
        token: *const af_cancel_t,
    ) -> *mut af_error_t;
    pub fn af_cancel_scope_pop(ctx: *mut af_context_t) -> *mut af_error_t;
    pub fn af_program_call(
        ctx: *mut af_context_t,
        p: *const af_program_t,
        inputs: *const *const af_value_t,
        n: usize,
        out: *mut *mut af_value_t,
    ) -> *mut af_error_t;
    pub fn af_program_call_with(
        ctx: *mut af_context_t,
        p: *const af_program_t,
        inputs: *const *const af_value_t,
        n: usize,
        options: *const af_run_options_t,
        out: *mut *mut af_value_t,
    ) -> *mut af_error_t;
    pub fn af_program_call_async(
        ctx: *mut af_context_t,
        p: *const af_program_t,
        inputs: *const *const af_value_t,
        n: usize,
        out: *mut *mut af_future_t,
    ) -> *mut af_error_t;
    pub fn af_program_call_async_with(
        ctx: *mut af_context_t,
        p: *const af_program_t,
        inputs: *const *const af_value_t,
        n: usize,
        options: *const af_run_options_t,
        out: *mut *mut af_future_t,
    ) -> *mut af_error_t;
    pub fn af_future_wait(f: *mut af_future_t, out: *mut *mut af_value_t) -> *mut af_error_t;
    pub fn af_future_ready(f: *const af_future_t) -> i32;
    pub fn af_future_cancel(f: *mut af_future_t);
    pub fn af_future_on_done(
        f: *mut af_future_t,
        fn_: af_done_fn,
        user_data: *mut c_void,
        destroy: af_destroy_fn,
    ) -> *mut af_error_t;
    pub fn af_future_profile(f: *const af_future_t, out: *mut af_bytes_t) -> *mut af_error_t;
    pub fn af_profile_event(
        name: *const c_char,
        name_len: usize,
        args_json: *const c_char,
        args_len: usize,
    ) -> *mut af_error_t;
    pub fn af_future_summary_json(f: *const af_future_t, out: *mut af_bytes_t) -> *mut af_error_t;
    pub fn af_future_free(f: *mut af_future_t);

    // Run journals
    pub fn af_journal_summary_json(
        path: *const c_char,
        path_len: usize,
        out: *mut af_bytes_t,
    ) -> *mut af_error_t;
    pub fn af_journal_compact(path: *const c_char, path_len: usize) -> *mut af_error_t;

    // LM calls
    pub fn af_lm_call(
        ctx: *mut af_context_t,
        messages: *const af_value_t,
        model: *const af_value_t,
        out: *mut *mut af_value_t,
    ) -> *mut af_error_t;
    pub fn af_lm_schema_call(
        ctx: *mut af_context_t,
        messages: *const af_value_t,
        model: *const af_value_t,
        schema: *const af_value_t,
        out: *mut *mut af_value_t,
    ) -> *mut af_error_t;
    pub fn af_lm_call_ex(
        ctx: *mut af_context_t,
        messages: *const af_value_t,
        model: *const af_value_t,
        params: *const af_value_t,
        out: *mut *mut af_value_t,
    ) -> *mut af_error_t;
    pub fn af_lm_schema_call_ex(
        ctx: *mut af_context_t,
        messages: *const af_value_t,
        model: *const af_value_t,
        schema: *const af_value_t,
        params: *const af_value_t,
        out: *mut *mut af_value_t,
    ) -> *mut af_error_t;
    pub fn af_lm_tool_call(
        ctx: *mut af_context_t,
        messages: *const af_value_t,
        history: *const af_value_t,
        model: *const af_value_t,
        tools: *const af_value_t,
        params: *const af_value_t,
        out: *mut *mut af_value_t,
    ) -> *mut af_error_t;
    pub fn af_tool_results(
        ctx: *mut af_context_t,
        history: *const af_value_t,
        turn: *const af_value_t,
        results: *const af_value_t,
        out: *mut *mut af_value_t,
    ) -> *mut af_error_t;
    pub fn af_lm_request_stream(
        req: *mut af_lm_request_t,
        text: *const c_char,
        len: usize,
    ) -> *mut af_error_t;
    pub fn af_context_route_fallback(
        ctx: *mut af_context_t,
        model_pattern: *const c_char,
        len: usize,
        providers: *const *mut af_provider_t,
        n: usize,
    ) -> *mut af_error_t;
    pub fn af_provider_set_options(
        p: *mut af_provider_t,
        options_json: *const c_char,
        len: usize,
    ) -> *mut af_error_t;

    // Providers
    pub fn af_provider_new(
        spec_json: *const c_char,
        len: usize,
        out: *mut *mut af_provider_t,
    ) -> *mut af_error_t;
    pub fn af_provider_echo_new(
        options_json: *const c_char,
        len: usize,
        out: *mut *mut af_provider_t,
    ) -> *mut af_error_t;
    pub fn af_provider_openai_new(
        options_json: *const c_char,
        len: usize,
        out: *mut *mut af_provider_t,
    ) -> *mut af_error_t;
    pub fn af_provider_replay_new(
        options_json: *const c_char,
        len: usize,
        out: *mut *mut af_provider_t,
    ) -> *mut af_error_t;
    pub fn af_provider_host_new(
        fn_: af_provider_submit_fn,
        user_data: *mut c_void,
        destroy: af_destroy_fn,
        out: *mut *mut af_provider_t,
    ) -> *mut af_error_t;
    pub fn af_lm_request_json(req: *const af_lm_request_t, out: *mut af_bytes_t)
        -> *mut af_error_t;
    pub fn af_lm_request_cancelled(req: *const af_lm_request_t) -> i32;
    pub fn af_lm_request_complete(
        req: *mut af_lm_request_t,
        content: *const c_char,
        len: usize,
    ) -> *mut af_error_t;
    pub fn af_lm_request_fail(req: *mut af_lm_request_t, err: *mut af_error_t) -> *mut af_error_t;
    pub fn af_context_route(
        ctx: *mut af_context_t,
        model_pattern: *const c_char,
        len: usize,
        provider: *mut af_provider_t,
    ) -> *mut af_error_t;
    pub fn af_provider_set_max_in_flight(
        p: *mut af_provider_t,
        max_in_flight: u32,
    ) -> *mut af_error_t;
    pub fn af_provider_stats(p: *const af_provider_t, out: *mut af_bytes_t) -> *mut af_error_t;
    pub fn af_provider_clone(p: *const af_provider_t) -> *mut af_provider_t;
    pub fn af_provider_free(p: *mut af_provider_t);

    // Saved graphs
    pub fn af_ir_save(ir: *const af_ir_t, path: *const c_char, path_len: usize) -> *mut af_error_t;
    pub fn af_ir_load(
        ctx: *mut af_context_t,
        path: *const c_char,
        path_len: usize,
        out: *mut *mut af_ir_t,
    ) -> *mut af_error_t;
    pub fn af_ir_to_bytes(ir: *const af_ir_t, out: *mut af_bytes_t) -> *mut af_error_t;
    pub fn af_ir_from_bytes(
        ctx: *mut af_context_t,
        data: *const u8,
        len: usize,
        out: *mut *mut af_ir_t,
    ) -> *mut af_error_t;
    pub fn af_program_save(
        p: *const af_program_t,
        path: *const c_char,
        path_len: usize,
    ) -> *mut af_error_t;
    pub fn af_program_load(
        ctx: *mut af_context_t,
        path: *const c_char,
        path_len: usize,
        out: *mut *mut af_program_t,
    ) -> *mut af_error_t;
    pub fn af_graph_verify(
        ctx: *mut af_context_t,
        data: *const u8,
        len: usize,
        summary: *mut af_bytes_t,
    ) -> *mut af_error_t;
    pub fn af_graph_to_json(
        ctx: *mut af_context_t,
        data: *const u8,
        len: usize,
        out: *mut af_bytes_t,
    ) -> *mut af_error_t;
    pub fn af_graph_from_json(
        ctx: *mut af_context_t,
        json: *const c_char,
        len: usize,
        out: *mut af_bytes_t,
    ) -> *mut af_error_t;
}
