using System;
using System.Runtime.InteropServices;

namespace Af
{
    /// <summary>The AF_ERR_* codes of af.h.</summary>
    public enum ErrorCode
    {
        /// <summary>Bad input, structure, kind or template.</summary>
        InvalidArgument = Native.AF_ERR_INVALID_ARGUMENT,
        /// <summary>Switch key, host function, provider or route not found.</summary>
        NotFound = Native.AF_ERR_NOT_FOUND,
        /// <summary>Structured output did not validate.</summary>
        Schema = Native.AF_ERR_SCHEMA,
        /// <summary>Corrupt or unverifiable graph bytes.</summary>
        Format = Native.AF_ERR_FORMAT,
        /// <summary>The graph needs a newer library.</summary>
        Version = Native.AF_ERR_VERSION,
        /// <summary>LM or host call failed after retries.</summary>
        Provider = Native.AF_ERR_PROVIDER,
        Timeout = Native.AF_ERR_TIMEOUT,
        Cancelled = Native.AF_ERR_CANCELLED,
        /// <summary>A host callback failed (see InnerException).</summary>
        Callback = Native.AF_ERR_CALLBACK,
        IO = Native.AF_ERR_IO,
        OutOfMemory = Native.AF_ERR_OUT_OF_MEMORY,
        Internal = Native.AF_ERR_INTERNAL,
    }

    /// <summary>An error reported by libaf (or raised by a host callback to
    /// be reported through libaf). The af_error_cause chain becomes the
    /// InnerException chain. Errors libaf reports are the subclass of their
    /// code (AfNotFoundException, ...; see ErrorTypes.cs). The exception a
    /// host function or host provider threw comes back as itself (same
    /// object, type and stack) at the end of the chain.</summary>
    public partial class AfException : Exception
    {
        public ErrorCode Code { get; }

        public AfException(ErrorCode code, string message) : base(message)
        {
            Code = code;
        }

        public AfException(ErrorCode code, string message, Exception inner) : base(message, inner)
        {
            Code = code;
        }

        public override string ToString()
        {
            return "AfException(" + Code + "): " + base.ToString();
        }

        /// <summary>The code's name as libaf spells it ("NOT_FOUND";
        /// "UNKNOWN" for a code libaf does not define): the name error values
        /// carry ({"error": {"name"}}) and the database hosts print.</summary>
        public string CodeName => NameOf(Code);

        /// <summary>The name of any code, from libaf's one table
        /// (af_error_code_name).</summary>
        public static string NameOf(ErrorCode code)
        {
            return Marshal.PtrToStringAnsi(Native.af_error_code_name((int)code));
        }

        /// <summary>Builds an AfException from an af_error_t* (and its causes)
        /// WITHOUT freeing it. Returns null for IntPtr.Zero.</summary>
        public static AfException FromNativeBorrowed(IntPtr error)
        {
            if (error == IntPtr.Zero) return null;
            Exception e = Convert(error);
            return e as AfException ?? Create((ErrorCode)Native.af_error_code(error), e.Message, e);
        }

        // One link of the chain. A node carrying what a callback of this
        // binding threw (its af_error_new_with payload, see CallbackErrors)
        // is that exception itself (any type), so it is the InnerException of
        // the error libaf wrapped it in.
        private static Exception Convert(IntPtr error)
        {
            Exception thrown = CallbackErrors.Own(error);
            if (thrown != null) return thrown;
            var code = (ErrorCode)Native.af_error_code(error);
            string msg = Utf8.FromNulTerminated(Native.af_error_message(error)) ?? "";
            IntPtr causePtr = Native.af_error_cause(error);
            if (causePtr == IntPtr.Zero) return Create(code, BindingNames(msg));
            return Create(code, BindingNames(msg), Convert(causePtr));
        }

        /// <summary>msg with the C functions libaf's hints name replaced by
        /// this binding's methods.</summary>
        private static string BindingNames(string msg)
        {
            return msg.Replace("af_register_function_with", "Context.RegisterFunction")
                      .Replace("AF_FUNCTION_BLOCKING", "FunctionFlags.Blocking")
                      .Replace("AF_FUNCTION_PURE", "FunctionFlags.Pure")
                      .Replace("af_register_function_blocking", "Context.RegisterFunctionBlocking")
                      .Replace("af_register_function_async", "Context.RegisterFunctionAsync")
                      .Replace("af_register_function", "Context.RegisterFunction")
                      .Replace("af_context_route", "Context.Route");
        }

        /// <summary>Builds an AfException from an owned af_error_t* and frees
        /// it. Returns null for IntPtr.Zero.</summary>
        public static AfException FromNative(IntPtr error)
        {
            if (error == IntPtr.Zero) return null;
            try
            {
                return FromNativeBorrowed(error);
            }
            finally
            {
                Native.af_error_free(error);
            }
        }

        /// <summary>Throws (and frees) error if it is not IntPtr.Zero.</summary>
        internal static void Check(IntPtr error)
        {
            if (error != IntPtr.Zero) throw FromNative(error);
        }

        /// <summary>A new owned af_error_t* carrying code and message (for
        /// callbacks). Never throws; IntPtr.Zero only if libaf is out of
        /// memory.</summary>
        internal static IntPtr ToNative(ErrorCode code, string message)
        {
            try
            {
                byte[] b = Utf8.EncodeLossy(message ?? "");
                return Native.af_error_new((int)code, b, (UIntPtr)(ulong)b.Length);
            }
            catch (Exception)
            {
                try
                {
                    return Native.af_error_new((int)code, new byte[0], UIntPtr.Zero);
                }
                catch (Exception)
                {
                    return IntPtr.Zero;
                }
            }
        }
    }
}
