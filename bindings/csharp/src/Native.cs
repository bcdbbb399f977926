// Native.cs — raw P/Invoke declarations for every function of af.h.
//
// One declaration per C function, with the exact C signature:
//   - handles and pointers are IntPtr (owned/borrowed as af.h says);
//   - size_t is UIntPtr, int32_t int, uint32_t uint, int64_t long,
//     uint64_t ulong;
//   - strings in are UTF-8 byte[] plus an explicit length (never string);
//   - library-owned `const char*` returns are IntPtr (never string: the
//     marshaller would free memory it does not own).
// The idiomatic API (Context, Value, Ir, Walk, AfException) is built on top;
// use this class directly only for what the wrappers do not cover.
using System;
using System.Runtime.InteropServices;

namespace Af
{
    /// <summary>af_bytes_t: an owned byte buffer, released with af_bytes_free.</summary>
    [StructLayout(LayoutKind.Sequential)]
    public struct AfBytes
    {
        public IntPtr Data;
        public UIntPtr Len;
    }

    public static class Native
    {
        public const string Lib = "af";

        // --- Versioning --------------------------------------------------
        public const int AF_VERSION_MAJOR = 0;
        public const int AF_VERSION_MINOR = 1;
        public const int AF_VERSION_PATCH = 0;
        public const string AF_VERSION_STRING = "0.1.0";
        public const uint AF_ABI_VERSION = 1;

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_version();

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern uint af_abi_version();

        // --- Errors ------------------------------------------------------
        public const int AF_ERR_INVALID_ARGUMENT = 1;
        public const int AF_ERR_NOT_FOUND = 2;
        public const int AF_ERR_SCHEMA = 3;
        public const int AF_ERR_FORMAT = 4;
        public const int AF_ERR_VERSION = 5;
        public const int AF_ERR_PROVIDER = 6;
        public const int AF_ERR_TIMEOUT = 7;
        public const int AF_ERR_CANCELLED = 8;
        public const int AF_ERR_CALLBACK = 9;
        public const int AF_ERR_IO = 10;
        public const int AF_ERR_OUT_OF_MEMORY = 11;
        public const int AF_ERR_INTERNAL = 12;

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int af_error_code(IntPtr e);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_error_code_name(int code); // static, never freed

        /// <summary>NUL-terminated UTF-8, owned by e.</summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_error_message(IntPtr e);

        /// <summary>Borrowed from e; IntPtr.Zero if none.</summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_error_cause(IntPtr e);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_error_new(int code, byte[] msg, UIntPtr len);

        /// <summary>af_error_new carrying payload, kept opaque by libaf on
        /// this error node through every wrapping; destroy(payload) runs
        /// exactly once, on whatever thread frees the last error holding it
        /// (also when this returns IntPtr.Zero). destroy must stay alive
        /// (rooted) until then.</summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_error_new_with(int code, byte[] msg, UIntPtr len, IntPtr payload, DestroyFn destroy);

        /// <summary>The payload e itself carries (borrowed, valid while e
        /// is), or IntPtr.Zero. Walk af_error_cause for the rest.</summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_error_payload(IntPtr e);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern void af_error_free(IntPtr e);

        // --- Bytes -------------------------------------------------------
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern void af_bytes_free(ref AfBytes b);

        // --- Context -----------------------------------------------------
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_context_new(out IntPtr ctx);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern void af_context_free(IntPtr ctx);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_context_new_with(byte[] optionsJson, UIntPtr len, out IntPtr ctx);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_context_stats(IntPtr ctx, out AfBytes output);

        // --- Lazy evaluation -----------------------------------------------
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_eval(IntPtr ctx, IntPtr[] values, UIntPtr n);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_eval_with(IntPtr ctx, IntPtr[] values, UIntPtr n, ref AfRunOptions options);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int af_value_ready(IntPtr v);

        // --- Values ------------------------------------------------------
        public const int AF_KIND_NULL = 0;
        public const int AF_KIND_BOOL = 1;
        public const int AF_KIND_INT = 2;
        public const int AF_KIND_FLOAT = 3;
        public const int AF_KIND_STR = 4;
        public const int AF_KIND_LIST = 5;
        public const int AF_KIND_DICT = 6;
        public const int AF_KIND_PLACEHOLDER = 7;

        // Constructors: af_value_<kind>_new. Values belong to no context.
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_value_json_new(byte[] json, UIntPtr len, out IntPtr value);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_value_to_json(IntPtr v, out AfBytes bytes);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_value_null_new(out IntPtr value);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_value_bool_new(int b, out IntPtr value);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_value_int_new(long i, out IntPtr value);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_value_float_new(double f, out IntPtr value);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_value_str_new(byte[] s, UIntPtr len, out IntPtr value);

        /// <summary>items: const af_value_t* const* (may be null when n == 0).</summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_value_list_new(IntPtr[] items, UIntPtr n, out IntPtr value);

        /// <summary>keys: const char* const*: pointers to (pinned) UTF-8 key bytes.</summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_value_dict_new(IntPtr[] keys, UIntPtr[] keyLens,
                                                      IntPtr[] values, UIntPtr n, out IntPtr value);

        // Deprecated in af.h (the same as the _new forms; ctx is ignored).
        // Imported still, as every af.h function is; the binding does not call them.
        [Obsolete("Deprecated in af.h: use af_value_json_new (the context is ignored).")]
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_value_from_json(IntPtr ctx, byte[] json, UIntPtr len, out IntPtr value);

        [Obsolete("Deprecated in af.h: use af_value_null_new (the context is ignored).")]
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_value_null(IntPtr ctx, out IntPtr value);

        [Obsolete("Deprecated in af.h: use af_value_bool_new (the context is ignored).")]
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_value_bool(IntPtr ctx, int b, out IntPtr value);

        [Obsolete("Deprecated in af.h: use af_value_int_new (the context is ignored).")]
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_value_int(IntPtr ctx, long i, out IntPtr value);

        [Obsolete("Deprecated in af.h: use af_value_float_new (the context is ignored).")]
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_value_float(IntPtr ctx, double f, out IntPtr value);

        [Obsolete("Deprecated in af.h: use af_value_str_new (the context is ignored).")]
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_value_str(IntPtr ctx, byte[] s, UIntPtr len, out IntPtr value);

        [Obsolete("Deprecated in af.h: use af_value_list_new (the context is ignored).")]
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_value_list(IntPtr ctx, IntPtr[] items, UIntPtr n, out IntPtr value);

        [Obsolete("Deprecated in af.h: use af_value_dict_new (the context is ignored).")]
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_value_dict(IntPtr ctx, IntPtr[] keys, UIntPtr[] keyLens,
                                                  IntPtr[] values, UIntPtr n, out IntPtr value);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int af_value_kind(IntPtr v);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_value_len(IntPtr v, out UIntPtr len);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_value_index(IntPtr v, UIntPtr i, out IntPtr value);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_value_key(IntPtr v, byte[] key, UIntPtr len, out IntPtr value);

        /// <summary>key: Borrowed from v, not NUL-terminated.</summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_value_key_at(IntPtr v, UIntPtr i, out IntPtr key, out UIntPtr len);

        /// <summary>s: Borrowed from v, not NUL-terminated.</summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_value_get_str(IntPtr v, out IntPtr s, out UIntPtr len);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_value_get_int(IntPtr v, out long value);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_value_get_float(IntPtr v, out double value);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_value_get_bool(IntPtr v, out int value);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_value_clone(IntPtr v);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern void af_value_free(IntPtr v);

        // --- Tracing -----------------------------------------------------

        /// <summary>af_trace_fn. inputs: const af_value_t* const* (borrowed);
        /// output: af_value_t** receiving an owned value. Must not throw.</summary>
        [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
        public delegate IntPtr TraceFn(IntPtr userData, IntPtr ctx, IntPtr inputs, UIntPtr nInputs, IntPtr output);

        /// <summary>staticMask: IntPtr.Zero = all dynamic.</summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_trace(IntPtr ctx, TraceFn fn, IntPtr userData, IntPtr[] examples,
                                             UIntPtr nExamples, IntPtr staticMask, out IntPtr ir);

        /// <summary>af_trace_options_t.</summary>
        [StructLayout(LayoutKind.Sequential)]
        public struct AfTraceOptions
        {
            public uint StructSize;
            public IntPtr StaticMask;
            public IntPtr ListMask;
        }

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_trace_with(IntPtr ctx, TraceFn fn, IntPtr userData, IntPtr[] examples,
                                                  UIntPtr nExamples, ref AfTraceOptions options, out IntPtr ir);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int af_is_tracing();

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_tag_push(IntPtr ctx, byte[] tag, UIntPtr len);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_tag_pop(IntPtr ctx);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_name_push(IntPtr ctx, byte[] name, UIntPtr len);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_name_pop(IntPtr ctx);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_fold_push(IntPtr ctx);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_fold_pop(IntPtr ctx);

        // --- Operations --------------------------------------------------

        /// <summary>named: A dict of named arguments, or IntPtr.Zero.</summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_format(IntPtr ctx, byte[] tmpl, UIntPtr tmplLen, IntPtr[] args,
                                              UIntPtr nArgs, IntPtr named, out IntPtr value);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_concat(IntPtr ctx, IntPtr[] args, UIntPtr n, out IntPtr value);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_match(IntPtr ctx, IntPtr a, IntPtr b, out IntPtr value);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_stop_gradient(IntPtr ctx, IntPtr v, out IntPtr value);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_depends(IntPtr ctx, IntPtr value, IntPtr[] deps, UIntPtr nDeps,
                                               out IntPtr output);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_checkpoint(IntPtr ctx, IntPtr v, byte[] key, UIntPtr keyLen,
                                                  byte[] collection, UIntPtr collectionLen, out IntPtr value);

        // --- Calling and inspecting IRs ----------------------------------
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_ir_call(IntPtr ctx, IntPtr ir, IntPtr[] inputs, UIntPtr n, out IntPtr value);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_ir_to_text(IntPtr ir, out AfBytes bytes);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_ir_to_dot(IntPtr ir, out AfBytes bytes);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern UIntPtr af_ir_eqn_count(IntPtr ir);

        /// <summary>Static storage, NUL-terminated; IntPtr.Zero if out of range.</summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_ir_eqn_prim(IntPtr ir, UIntPtr i);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern UIntPtr af_ir_input_count(IntPtr ir);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern ulong af_ir_hash(IntPtr ir);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int af_ir_equal(IntPtr a, IntPtr b);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_ir_clone(IntPtr ir);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern void af_ir_free(IntPtr ir);

        // --- Walking -----------------------------------------------------

        /// <summary>AF_WALK_DONE (SIZE_MAX) as a UIntPtr.</summary>
        public static readonly UIntPtr AF_WALK_DONE =
            UIntPtr.Size == 8 ? new UIntPtr(ulong.MaxValue) : new UIntPtr(uint.MaxValue);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_walk_new(IntPtr ctx, IntPtr ir, IntPtr[] inputs, UIntPtr n, out IntPtr walk);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_walk_next(IntPtr w, out UIntPtr eqnIndex, out IntPtr inputs);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_walk_eval(IntPtr w);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_walk_send(IntPtr w, IntPtr outputs);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_walk_outputs(IntPtr w, out IntPtr value);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern void af_walk_free(IntPtr w);
            // --- Transforms ----------------------------------------------------

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_batch(IntPtr ctx, IntPtr ir, IntPtr inAxes, out IntPtr output);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_pushforward(IntPtr ctx, IntPtr ir, out IntPtr output);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_pullback(IntPtr ctx, IntPtr ir, out IntPtr output);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_dce(IntPtr ctx, IntPtr ir, IntPtr outUsed, out IntPtr output);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_cse(IntPtr ctx, IntPtr ir, out IntPtr output);

        /// <summary>af_cse_options_t.</summary>
        [StructLayout(LayoutKind.Sequential)]
        public struct AfCseOptions
        {
            public uint StructSize;
            public uint MergeNondeterministic;
        }

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_cse_ex(IntPtr ctx, IntPtr ir, ref AfCseOptions options, out IntPtr output);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_sched(IntPtr ctx, IntPtr ir, out IntPtr output);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_ir_eqn_sched(IntPtr ir, UIntPtr i, out uint level, out double priority);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_ir_validate(IntPtr ir);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_ir_json(IntPtr ir, out AfBytes bytes);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_ir_eqn_json(IntPtr ir, UIntPtr i, out AfBytes bytes);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_ir_var_json(IntPtr ir, uint var, out AfBytes bytes);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_ir_sub(IntPtr ir, UIntPtr i, byte[] path, UIntPtr pathLen, out IntPtr output);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_ir_related_json(IntPtr ir, UIntPtr i, uint flags, out AfBytes bytes);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_ir_related_json_with(IntPtr ir, UIntPtr i, uint flags, ulong maxBytes,
                                                            out AfBytes bytes);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_ir_slice(IntPtr ir, IntPtr[] outputs, UIntPtr[] outputLens, UIntPtr nOutputs,
                                                IntPtr[] inputs, UIntPtr[] inputLens, UIntPtr nInputs, out IntPtr output);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_ir_cost_json(IntPtr ir, long batch, out AfBytes bytes);

        // --- Control flow and host functions -------------------------------

        /// <summary>names: pointers to UTF-8 bytes (name_lens[i] long).</summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_switch(IntPtr ctx, IntPtr key, IntPtr[] names, UIntPtr[] nameLens,
                                              IntPtr[] branches, UIntPtr nBranches, IntPtr[] operands,
                                              UIntPtr nOperands, out IntPtr output);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_while_loop(IntPtr ctx, IntPtr cond, IntPtr body, IntPtr init, ulong maxIters,
                                                  out IntPtr output);

        /// <summary>reverse: nonzero = last item first (int32_t).</summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_scan(IntPtr ctx, IntPtr body, IntPtr init, IntPtr xs, int reverse,
                                            out IntPtr output);

        /// <summary>af_host_fn. args: const af_value_t* const* (borrowed);
        /// output: af_value_t** receiving an owned value. Must not throw.</summary>
        [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
        public delegate IntPtr HostFn(IntPtr userData, IntPtr args, UIntPtr n, IntPtr output);

        /// <summary>A destroy(user_data) callback. Must not throw.</summary>
        [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
        public delegate void DestroyFn(IntPtr userData);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_register_function(IntPtr ctx, byte[] name, UIntPtr nameLen, HostFn fn,
                                                         IntPtr userData, DestroyFn destroy, IntPtr resultKinds);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_register_function_blocking(IntPtr ctx, byte[] name, UIntPtr nameLen, HostFn fn,
                                                                  IntPtr userData, DestroyFn destroy, IntPtr resultKinds);

        /// <summary>af_host_async_fn. args borrowed for the call; req owned
        /// (finish it, then af_host_request_free). Must not throw.</summary>
        [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
        public delegate void AsyncHostFn(IntPtr userData, IntPtr args, UIntPtr n, IntPtr req);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_register_function_async(IntPtr ctx, byte[] name, UIntPtr nameLen, AsyncHostFn fn,
                                                               IntPtr userData, DestroyFn destroy, IntPtr resultKinds);

        /// <summary>No effects: calls may be dropped, merged, memoized.</summary>
        public const uint AF_FUNCTION_PURE = 1;
        /// <summary>fn runs on the host pool (as af_register_function_blocking).</summary>
        public const uint AF_FUNCTION_BLOCKING = 2;

        /// <summary>af_function_options_t. StructSize =
        /// Marshal.SizeOf(typeof(AfFunctionOptions)) (48 on 64-bit); exactly
        /// one of Fn (an HostFn) and AsyncFn (an AsyncHostFn). Function
        /// pointers are IntPtr (Marshal.GetFunctionPointerForDelegate of a
        /// rooted delegate); ResultKinds is borrowed.</summary>
        [StructLayout(LayoutKind.Sequential)]
        public struct AfFunctionOptions
        {
            public uint StructSize;
            public uint Flags; // AF_FUNCTION_*
            public IntPtr Fn;
            public IntPtr AsyncFn;
            public IntPtr UserData;
            public IntPtr Destroy;
            public IntPtr ResultKinds;
        }

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_register_function_with(IntPtr ctx, byte[] name, UIntPtr nameLen,
                                                              ref AfFunctionOptions options);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int af_host_request_cancelled(IntPtr req);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_host_request_complete(IntPtr req, IntPtr result);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_host_request_fail(IntPtr req, IntPtr err);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern void af_host_request_free(IntPtr req);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_host_call(IntPtr ctx, byte[] name, UIntPtr nameLen, IntPtr[] args, UIntPtr n,
                                                 out IntPtr output);

        // --- Run-time scopes -----------------------------------------------

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_collect_push(IntPtr ctx, byte[] collection, UIntPtr len);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_collect_pop(IntPtr ctx, out IntPtr collected);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_inject_push(IntPtr ctx, byte[] collection, UIntPtr len, IntPtr values);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_inject_pop(IntPtr ctx);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_memoize_push(IntPtr ctx);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_memoize_pop(IntPtr ctx);

        // --- Programs ------------------------------------------------------

        public const uint AF_RUN_KEEP_GOING = 1;
        public const uint AF_RUN_PROFILE = 2;
        public const uint AF_RUN_ITEM_ERRORS = 4;
        public const uint AF_RUN_SUMMARY = 8;

        /// <summary>af_progress_fn. Must not throw.</summary>
        [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
        public delegate void ProgressFn(IntPtr userData, ulong done, ulong total);

        /// <summary>af_stream_fn (text NULL: start over). Must not throw.</summary>
        [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
        public delegate void StreamFn(IntPtr userData, uint eqn, ulong item, IntPtr text, UIntPtr len);

        /// <summary>af_run_options_t. Function pointers are IntPtr
        /// (Marshal.GetFunctionPointerForDelegate of a rooted delegate).</summary>
        [StructLayout(LayoutKind.Sequential)]
        public struct AfRunOptions
        {
            public uint StructSize;
            public uint Flags;
            public ulong TimeoutMs;
            public IntPtr Progress;
            public IntPtr ProgressUserData;
            public IntPtr ProgressDestroy;
            public IntPtr ProfilePath;
            public UIntPtr ProfilePathLen;
            public IntPtr Cancel;
            public IntPtr Summary; // af_bytes_t* in unmanaged memory
            public IntPtr Stream;
            public IntPtr StreamUserData;
            public IntPtr StreamDestroy;
            public IntPtr StreamTag;
            public UIntPtr StreamTagLen;
            public ulong MaxValueBytes; // 0 = the default, 1 GiB
            public IntPtr JournalPath; // UTF-8, NULL/0 = no journal
            public UIntPtr JournalPathLen;
        }

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_compile(IntPtr ctx, IntPtr ir, out IntPtr program);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_program_clone(IntPtr p);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern void af_program_free(IntPtr p);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_cancel_new(out IntPtr cancel);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern void af_cancel_trigger(IntPtr c);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int af_cancel_triggered(IntPtr c);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern void af_cancel_free(IntPtr c);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_cancel_scope_push(IntPtr ctx, IntPtr token);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_cancel_scope_pop(IntPtr ctx);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_program_call(IntPtr ctx, IntPtr p, IntPtr[] inputs, UIntPtr n, out IntPtr output);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_program_call_with(IntPtr ctx, IntPtr p, IntPtr[] inputs, UIntPtr n,
                                                         ref AfRunOptions options, out IntPtr output);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_program_call_async(IntPtr ctx, IntPtr p, IntPtr[] inputs, UIntPtr n,
                                                          out IntPtr future);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_program_call_async_with(IntPtr ctx, IntPtr p, IntPtr[] inputs, UIntPtr n,
                                                               ref AfRunOptions options, out IntPtr future);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_future_wait(IntPtr f, out IntPtr output);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int af_future_ready(IntPtr f);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern void af_future_cancel(IntPtr f);

        /// <summary>A callback with only user_data (af_future_on_done's fn). Must not throw.</summary>
        [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
        public delegate void DoneFn(IntPtr userData);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_future_on_done(IntPtr f, DoneFn fn, IntPtr userData, DestroyFn destroy);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_future_profile(IntPtr f, out AfBytes output);

        /// <summary>argsJson may be null (with argsLen 0): no args.</summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_profile_event(byte[] name, UIntPtr nameLen, byte[] argsJson, UIntPtr argsLen);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_future_summary_json(IntPtr f, out AfBytes output);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern void af_future_free(IntPtr f);

        // --- Run journals ----------------------------------------------------

        /// <summary>output: the journal's contents as JSON (owned bytes).</summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_journal_summary_json(byte[] path, UIntPtr pathLen, out AfBytes output);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_journal_compact(byte[] path, UIntPtr pathLen);

        // --- LM calls and providers ----------------------------------------

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_lm_call(IntPtr ctx, IntPtr messages, IntPtr model, out IntPtr output);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_lm_schema_call(IntPtr ctx, IntPtr messages, IntPtr model, IntPtr schema,
                                                      out IntPtr output);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_provider_echo_new(byte[] optionsJson, UIntPtr len, out IntPtr provider);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_provider_openai_new(byte[] optionsJson, UIntPtr len, out IntPtr provider);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_provider_new(byte[] specJson, UIntPtr len, out IntPtr provider);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_provider_replay_new(byte[] optionsJson, UIntPtr len, out IntPtr provider);

        /// <summary>af_provider_submit_fn: req is owned by the callee. Must not throw.</summary>
        [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
        public delegate void SubmitFn(IntPtr userData, IntPtr req);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_provider_host_new(SubmitFn fn, IntPtr userData, DestroyFn destroy,
                                                         out IntPtr provider);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_lm_request_json(IntPtr req, out AfBytes output);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int af_lm_request_cancelled(IntPtr req);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_lm_request_complete(IntPtr req, byte[] content, UIntPtr len);

        /// <summary>Consumes req and err.</summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_lm_request_fail(IntPtr req, IntPtr err);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_context_route(IntPtr ctx, byte[] modelPattern, UIntPtr len, IntPtr provider);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_provider_set_max_in_flight(IntPtr p, uint maxInFlight);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_lm_call_ex(IntPtr ctx, IntPtr messages, IntPtr model, IntPtr parameters,
                                                  out IntPtr output);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_lm_schema_call_ex(IntPtr ctx, IntPtr messages, IntPtr model, IntPtr schema,
                                                         IntPtr parameters, out IntPtr output);

        /// <summary>parameters may be IntPtr.Zero (no sampling params).</summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_lm_tool_call(IntPtr ctx, IntPtr messages, IntPtr history, IntPtr model,
                                                    IntPtr tools, IntPtr parameters, out IntPtr output);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_tool_results(IntPtr ctx, IntPtr history, IntPtr turn, IntPtr results,
                                                    out IntPtr output);

        /// <summary>text NULL with len 0: the reply starts over.</summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_lm_request_stream(IntPtr req, byte[] text, UIntPtr len);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_context_route_fallback(IntPtr ctx, byte[] modelPattern, UIntPtr len,
                                                              IntPtr[] providers, UIntPtr n);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_provider_set_options(IntPtr p, byte[] optionsJson, UIntPtr len);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_provider_stats(IntPtr p, out AfBytes output);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_provider_clone(IntPtr p);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern void af_provider_free(IntPtr p);

        // --- Saved graphs --------------------------------------------------

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_ir_save(IntPtr ir, byte[] path, UIntPtr pathLen);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_ir_load(IntPtr ctx, byte[] path, UIntPtr pathLen, out IntPtr ir);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_program_save(IntPtr p, byte[] path, UIntPtr pathLen);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_program_load(IntPtr ctx, byte[] path, UIntPtr pathLen, out IntPtr program);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_ir_to_bytes(IntPtr ir, out AfBytes output);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_ir_from_bytes(IntPtr ctx, byte[] data, UIntPtr len, out IntPtr ir);

        /// <summary>summary: the one-line JSON summary (owned bytes).</summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_graph_verify(IntPtr ctx, byte[] data, UIntPtr len, out AfBytes summary);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_graph_to_json(IntPtr ctx, byte[] data, UIntPtr len, out AfBytes output);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr af_graph_from_json(IntPtr ctx, byte[] json, UIntPtr len, out AfBytes output);
    }
}
