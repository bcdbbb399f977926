// CallbackErrors.cs — gives a caller back the exception its host function or
// host provider threw. The exception crosses libaf as a code and a message
// only (libaf rebuilds the error chain on its side), so the callback parks it
// here under the (code, message) it sent, and the conversion of libaf's error
// claims it when a leaf with that code and message comes back; it then
// becomes the InnerException (type and stack kept). Entries are claimed
// first in, first out; one a run never reports (KeepGoing turns failures into
// values) stays behind, so at most MaxParked are kept, dropping the oldest.
// Two callbacks failing at once with the same code and text may each get the
// other's (equal-looking) exception.
using System;
using System.Collections.Generic;

namespace Af
{
    internal static class CallbackErrors
    {
        private const int MaxParked = 256;
        private static readonly object s_lock = new object();
        private static readonly LinkedList<KeyValuePair<string, Exception>> s_parked =
            new LinkedList<KeyValuePair<string, Exception>>();

        private static string Key(ErrorCode code, string message) => (int)code + ":" + message;

        /// <summary>The af_error_t* a callback returns for ex, with ex parked
        /// for the caller. Never throws.</summary>
        internal static IntPtr Send(Exception ex, ErrorCode codeForOthers, string prefix)
        {
            var ae = ex as AfException;
            ErrorCode code = ae != null ? ae.Code : codeForOthers;
            string msg;
            try { msg = ae != null ? ae.Message : prefix + ex.GetType().Name + ": " + ex.Message; }
            catch (Exception) { msg = prefix + "exception in callback"; }
            try
            {
                lock (s_lock)
                {
                    s_parked.AddLast(new KeyValuePair<string, Exception>(Key(code, msg), ex));
                    if (s_parked.Count > MaxParked) s_parked.RemoveFirst();
                }
            }
            catch (Exception)
            {
                // Out of memory: the caller gets code and message only.
            }
            return AfException.ToNative(code, msg);
        }

        /// <summary>The oldest exception parked under (code, message), or null.</summary>
        internal static Exception Claim(ErrorCode code, string message)
        {
            string key = Key(code, message);
            lock (s_lock)
            {
                for (var n = s_parked.First; n != null; n = n.Next)
                {
                    if (n.Value.Key != key) continue;
                    s_parked.Remove(n);
                    return n.Value.Value;
                }
            }
            return null;
        }
    }
}
