// Interop.cs — UTF-8 conversion and handle borrowing helpers.
using System;
using System.Collections.Generic;
using System.Runtime.InteropServices;
using System.Text;

namespace Af
{
    internal static class Utf8
    {
        // Strict both ways: a C# string with a lone surrogate is an
        // ArgumentException rather than silently becoming U+FFFD.
        private static readonly UTF8Encoding Strict = new UTF8Encoding(false, true);
        private static readonly UTF8Encoding Lossy = new UTF8Encoding(false, false);

        public static byte[] Encode(string s, string paramName)
        {
            if (s == null) throw new ArgumentNullException(paramName);
            try
            {
                return Strict.GetBytes(s);
            }
            catch (EncoderFallbackException ex)
            {
                throw new ArgumentException("string is not valid UTF-16 (lone surrogate)", paramName, ex);
            }
        }

        public static byte[] EncodeLossy(string s)
        {
            return Lossy.GetBytes(s);
        }

        public static UIntPtr Len(byte[] b)
        {
            return (UIntPtr)(ulong)b.Length;
        }

        /// <summary>Decodes len bytes at p (p may be IntPtr.Zero when len is 0).</summary>
        public static string FromPtr(IntPtr p, UIntPtr len)
        {
            ulong n = (ulong)len;
            if (n == 0) return "";
            if (p == IntPtr.Zero) throw AfException.Create(ErrorCode.Internal, "libaf returned a null string pointer");
            if (n > int.MaxValue) throw AfException.Create(ErrorCode.OutOfMemory, "string too large for .NET");
            var buf = new byte[(int)n];
            Marshal.Copy(p, buf, 0, (int)n);
            return Lossy.GetString(buf);
        }

        /// <summary>Decodes a NUL-terminated UTF-8 string; null for IntPtr.Zero.</summary>
        public static string FromNulTerminated(IntPtr p)
        {
            if (p == IntPtr.Zero) return null;
            int n = 0;
            while (Marshal.ReadByte(p, n) != 0) n++;
            var buf = new byte[n];
            if (n > 0) Marshal.Copy(p, buf, 0, n);
            return Lossy.GetString(buf);
        }

        /// <summary>Decodes and frees an owned af_bytes_t.</summary>
        public static string TakeBytes(ref AfBytes b)
        {
            try
            {
                return FromPtr(b.Data, b.Len);
            }
            finally
            {
                Native.af_bytes_free(ref b);
            }
        }
    }

    /// <summary>Keeps SafeHandles alive (DangerousAddRef) for the duration of
    /// one native call, so a concurrent Dispose or the finalizer cannot free
    /// a handle that C is using. Use in a using block.</summary>
    internal sealed class Borrow : IDisposable
    {
        private readonly List<SafeHandle> _held = new List<SafeHandle>(4);

        /// <summary>The raw pointer of h (IntPtr.Zero for null).</summary>
        public IntPtr Add(SafeHandle h)
        {
            if (h == null) return IntPtr.Zero;
            bool added = false;
            h.DangerousAddRef(ref added); // ObjectDisposedException if closed
            if (added) _held.Add(h);
            return h.DangerousGetHandle();
        }

        public IntPtr Add(Value v)
        {
            return v == null ? IntPtr.Zero : Add(v.Handle);
        }

        /// <summary>Pointers of every value (none may be null).</summary>
        public IntPtr[] AddAll(Value[] values, string paramName)
        {
            if (values == null) throw new ArgumentNullException(paramName);
            var ptrs = new IntPtr[values.Length];
            for (int i = 0; i < values.Length; i++)
            {
                if (values[i] == null)
                    throw new ArgumentNullException(paramName, paramName + "[" + i + "] is null");
                ptrs[i] = Add(values[i].Handle);
            }
            return ptrs;
        }

        public void Dispose()
        {
            for (int i = _held.Count - 1; i >= 0; i--) _held[i].DangerousRelease();
            _held.Clear();
        }

        /// <summary>For references held longer than one call (a walk, a run
        /// in flight): DangerousAddRef on each handle, all or none (throws
        /// ObjectDisposedException, holding none, if one is closed). Returns
        /// the handles to give to Unpin exactly once.</summary>
        public static SafeHandle[] Pin(params SafeHandle[] handles)
        {
            var added = new List<SafeHandle>(handles.Length);
            try
            {
                foreach (var h in handles)
                {
                    bool ok = false;
                    h.DangerousAddRef(ref ok); // ObjectDisposedException if closed
                    if (ok) added.Add(h);
                }
            }
            catch
            {
                Unpin(added.ToArray());
                throw;
            }
            return added.ToArray();
        }

        /// <summary>Releases what Pin returned (null: nothing).</summary>
        public static void Unpin(SafeHandle[] pinned)
        {
            if (pinned == null) return;
            for (int i = pinned.Length - 1; i >= 0; i--) pinned[i].DangerousRelease();
        }
    }
}
