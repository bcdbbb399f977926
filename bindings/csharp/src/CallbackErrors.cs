// CallbackErrors.cs — gives a caller back the exception its trace function,
// host function or host provider threw, through the error itself: the
// af_error_t* a callback returns is made with af_error_new_with, carrying a
// payload that libaf keeps on that error node through every wrapping (as the
// cause of the CALLBACK or PROVIDER error it reports, across threads and
// runs). Converting libaf's error walks the chain with af_error_payload; a
// node carrying one of our payloads is that exception itself (same object,
// type and stack). Nothing is matched by code or message, so two callbacks
// failing at once with the same text each get their own exception back.
//
// A payload is a block of unmanaged memory (Marshal.AllocHGlobal):
//   offset 0: Magic (8 bytes), so a payload of another binding loaded in the
//             same process is never taken for ours;
//   offset 8: GCHandle.ToIntPtr of a normal handle to the exception.
// libaf runs s_destroy (rooted in a static field for the life of the process)
// exactly once, on whatever thread frees the last error holding the payload:
// it frees the GCHandle and the block, and never throws.
//
// Before the magic is read, the address must be one of our live blocks
// (s_live, added when the block is made, removed by s_destroy before it is
// freed): another binding's payload may be an integer handle rather than a
// readable pointer, and must not be dereferenced. s_live holds addresses
// only, never exceptions.
using System;
using System.Collections.Generic;
using System.Runtime.InteropServices;

namespace Af
{
    internal static class CallbackErrors
    {
        // "AFCSEXC1" read as a little-endian 64-bit integer.
        private const long Magic = 0x3143584553434641;
        private const int HandleOffset = 8;
        private const int BlockSize = HandleOffset + 8; // room for a 64-bit IntPtr

        // Rooted for the life of the process: libaf may free an error holding
        // a payload at any time, on any thread (even after every Context is gone).
        private static readonly Native.DestroyFn s_destroy = Destroy;

        private static readonly object s_lock = new object();
        private static readonly HashSet<IntPtr> s_live = new HashSet<IntPtr>();

        /// <summary>The af_error_t* a callback returns for ex (an AfException
        /// keeps its code and message; anything else is codeForOthers with
        /// prefix + type + message), carrying ex as its payload. Never throws;
        /// without memory for the payload the error carries code and message
        /// only.</summary>
        internal static IntPtr Send(Exception ex, ErrorCode codeForOthers, string prefix)
        {
            var ae = ex as AfException;
            ErrorCode code = ae != null ? ae.Code : codeForOthers;
            string msg;
            try { msg = ae != null ? ae.Message : prefix + ex.GetType().Name + ": " + ex.Message; }
            catch (Exception) { msg = prefix + "exception in callback"; }

            IntPtr payload = NewPayload(ex);
            if (payload == IntPtr.Zero) return AfException.ToNative(code, msg);
            byte[] b;
            try { b = Utf8.EncodeLossy(msg ?? ""); }
            catch (Exception) { b = new byte[0]; }
            try
            {
                // libaf owns payload from here on, also when this returns
                // IntPtr.Zero (out of memory: it has run s_destroy already).
                return Native.af_error_new_with((int)code, b, Utf8.Len(b), payload, s_destroy);
            }
            catch (Exception)
            {
                // The call never reached libaf (the marshaller failed): the
                // payload is still ours.
                Destroy(payload);
                return AfException.ToNative(code, msg);
            }
        }

        /// <summary>A new payload block holding a GCHandle to ex, or IntPtr.Zero
        /// (out of memory). Never throws.</summary>
        private static IntPtr NewPayload(Exception ex)
        {
            IntPtr block = IntPtr.Zero;
            GCHandle h = default(GCHandle);
            try
            {
                block = Marshal.AllocHGlobal(BlockSize);
                h = GCHandle.Alloc(ex);
                Marshal.WriteInt64(block, 0, Magic);
                Marshal.WriteIntPtr(block, HandleOffset, GCHandle.ToIntPtr(h));
                lock (s_lock) s_live.Add(block);
                return block;
            }
            catch (Exception)
            {
                try
                {
                    if (h.IsAllocated) h.Free();
                    if (block != IntPtr.Zero) Marshal.FreeHGlobal(block);
                }
                catch (Exception)
                {
                    // Nothing more to give back.
                }
                return IntPtr.Zero;
            }
        }

        /// <summary>af_error_new_with's destroy: frees the GCHandle and the
        /// block. Runs on any thread, exactly once per payload; never throws
        /// (it is called from libaf).</summary>
        private static void Destroy(IntPtr payload)
        {
            try
            {
                if (payload == IntPtr.Zero) return;
                bool ours;
                lock (s_lock) ours = s_live.Remove(payload);
                // Not one of ours (cannot happen: libaf passes back what it was
                // given): leave it alone rather than free foreign memory.
                if (!ours || Marshal.ReadInt64(payload, 0) != Magic) return;
                IntPtr h = Marshal.ReadIntPtr(payload, HandleOffset);
                Marshal.WriteInt64(payload, 0, 0);
                Marshal.WriteIntPtr(payload, HandleOffset, IntPtr.Zero);
                if (h != IntPtr.Zero) GCHandle.FromIntPtr(h).Free();
                Marshal.FreeHGlobal(payload);
            }
            catch (Exception)
            {
                // Never unwind into libaf.
            }
        }

        /// <summary>The exception error itself carries (a payload this binding
        /// made), or null: no payload, another binding's, or a released
        /// handle. error is borrowed and must stay alive during the call; its
        /// causes are not looked at.</summary>
        internal static Exception Own(IntPtr error)
        {
            if (error == IntPtr.Zero) return null;
            IntPtr p = Native.af_error_payload(error);
            if (p == IntPtr.Zero) return null;
            lock (s_lock)
                if (!s_live.Contains(p)) return null;
            // Live while error is (error holds it): safe to read.
            if (Marshal.ReadInt64(p, 0) != Magic) return null;
            IntPtr h = Marshal.ReadIntPtr(p, HandleOffset);
            if (h == IntPtr.Zero) return null;
            return GCHandle.FromIntPtr(h).Target as Exception;
        }

        /// <summary>The first exception carried by error or one of its causes
        /// (the outermost: one thrown with another's AfException inside it
        /// already holds it as InnerException), or null.</summary>
        internal static Exception Carried(IntPtr error)
        {
            for (IntPtr e = error; e != IntPtr.Zero; e = Native.af_error_cause(e))
            {
                Exception ex = Own(e);
                if (ex != null) return ex;
            }
            return null;
        }
    }
}
