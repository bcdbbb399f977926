// ErrorTypes.cs — one AfException subclass per ErrorCode, so callers can
// catch a kind of failure by type (catch (AfNotFoundException)) while every
// existing catch (AfException) keeps working. Code stays on the base class.
using System;

namespace Af
{    /// <summary>Bad input, structure, kind or template. (ErrorCode.InvalidArgument)</summary>
    public class AfInvalidArgumentException : AfException
    {
        public AfInvalidArgumentException(string message) : base(ErrorCode.InvalidArgument, message) { }
        public AfInvalidArgumentException(string message, Exception inner) : base(ErrorCode.InvalidArgument, message, inner) { }
    }
    /// <summary>A switch key, host function, provider or route was not found. (ErrorCode.NotFound)</summary>
    public class AfNotFoundException : AfException
    {
        public AfNotFoundException(string message) : base(ErrorCode.NotFound, message) { }
        public AfNotFoundException(string message, Exception inner) : base(ErrorCode.NotFound, message, inner) { }
    }
    /// <summary>Structured output did not validate. (ErrorCode.Schema)</summary>
    public class AfSchemaException : AfException
    {
        public AfSchemaException(string message) : base(ErrorCode.Schema, message) { }
        public AfSchemaException(string message, Exception inner) : base(ErrorCode.Schema, message, inner) { }
    }
    /// <summary>Corrupt or unverifiable graph bytes. (ErrorCode.Format)</summary>
    public class AfFormatException : AfException
    {
        public AfFormatException(string message) : base(ErrorCode.Format, message) { }
        public AfFormatException(string message, Exception inner) : base(ErrorCode.Format, message, inner) { }
    }
    /// <summary>The graph needs a newer library. (ErrorCode.Version)</summary>
    public class AfVersionException : AfException
    {
        public AfVersionException(string message) : base(ErrorCode.Version, message) { }
        public AfVersionException(string message, Exception inner) : base(ErrorCode.Version, message, inner) { }
    }
    /// <summary>An LM or host provider call failed after retries. (ErrorCode.Provider)</summary>
    public class AfProviderException : AfException
    {
        public AfProviderException(string message) : base(ErrorCode.Provider, message) { }
        public AfProviderException(string message, Exception inner) : base(ErrorCode.Provider, message, inner) { }
    }
    /// <summary>The run took longer than its timeout. (ErrorCode.Timeout)</summary>
    public class AfTimeoutException : AfException
    {
        public AfTimeoutException(string message) : base(ErrorCode.Timeout, message) { }
        public AfTimeoutException(string message, Exception inner) : base(ErrorCode.Timeout, message, inner) { }
    }
    /// <summary>The run was cancelled. (ErrorCode.Cancelled)</summary>
    public class AfCancelledException : AfException
    {
        public AfCancelledException(string message) : base(ErrorCode.Cancelled, message) { }
        public AfCancelledException(string message, Exception inner) : base(ErrorCode.Cancelled, message, inner) { }
    }
    /// <summary>A host callback failed; InnerException is what it threw. (ErrorCode.Callback)</summary>
    public class AfCallbackException : AfException
    {
        public AfCallbackException(string message) : base(ErrorCode.Callback, message) { }
        public AfCallbackException(string message, Exception inner) : base(ErrorCode.Callback, message, inner) { }
    }
    /// <summary>A file could not be read or written. (ErrorCode.IO)</summary>
    public class AfIOException : AfException
    {
        public AfIOException(string message) : base(ErrorCode.IO, message) { }
        public AfIOException(string message, Exception inner) : base(ErrorCode.IO, message, inner) { }
    }
    /// <summary>libaf ran out of memory. (ErrorCode.OutOfMemory)</summary>
    public class AfOutOfMemoryException : AfException
    {
        public AfOutOfMemoryException(string message) : base(ErrorCode.OutOfMemory, message) { }
        public AfOutOfMemoryException(string message, Exception inner) : base(ErrorCode.OutOfMemory, message, inner) { }
    }
    /// <summary>A bug in libaf. (ErrorCode.Internal)</summary>
    public class AfInternalException : AfException
    {
        public AfInternalException(string message) : base(ErrorCode.Internal, message) { }
        public AfInternalException(string message, Exception inner) : base(ErrorCode.Internal, message, inner) { }
    }
    public partial class AfException
    {
        /// <summary>The AfException subclass of code (AfNotFoundException for
        /// NotFound, ...); a plain AfException for a code this binding does
        /// not know.</summary>
        public static AfException Create(ErrorCode code, string message, Exception inner = null)
        {
            switch (code)
            {
                case ErrorCode.InvalidArgument: return new AfInvalidArgumentException(message, inner);
                case ErrorCode.NotFound: return new AfNotFoundException(message, inner);
                case ErrorCode.Schema: return new AfSchemaException(message, inner);
                case ErrorCode.Format: return new AfFormatException(message, inner);
                case ErrorCode.Version: return new AfVersionException(message, inner);
                case ErrorCode.Provider: return new AfProviderException(message, inner);
                case ErrorCode.Timeout: return new AfTimeoutException(message, inner);
                case ErrorCode.Cancelled: return new AfCancelledException(message, inner);
                case ErrorCode.Callback: return new AfCallbackException(message, inner);
                case ErrorCode.IO: return new AfIOException(message, inner);
                case ErrorCode.OutOfMemory: return new AfOutOfMemoryException(message, inner);
                case ErrorCode.Internal: return new AfInternalException(message, inner);
                default: return new AfException(code, message, inner);
            }
        }
    }
}
