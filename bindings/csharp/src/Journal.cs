// Journal.cs — run journals (af.h "Run journals"): reading and compacting
// the file a run given RunOptions.JournalPath records its LM calls in.
using System;

namespace Af
{
    /// <summary>Run journals. A journal is a SQLite file a program run given
    /// <see cref="RunOptions.JournalPath"/> records each LM call it completes
    /// in (the reply, the model, the provider and its usage), committed before
    /// the call's result is used. It belongs to one program and one list of
    /// inputs (their hashes are stored when it is created): rerunning the same
    /// program on the same inputs with the same journal answers every recorded
    /// call from it, without reaching the provider, and asks the providers
    /// only the rest, so a run killed at any moment resumes where it stopped.
    /// Host functions are run again. The file holds LM replies in
    /// clear, so libaf creates it with mode 0600. To forget a journal, delete
    /// the file and its "-wal" and "-shm" siblings.</summary>
    public static class Journal
    {
        /// <summary>The journal's contents as JSON:
        /// {"program": "&lt;hash hex&gt;", "inputs": "&lt;hash hex&gt;",
        /// "calls": N, "prompt_tokens": N, "completion_tokens": N,
        /// "models": {"&lt;model&gt;": {"calls", "prompt_tokens",
        /// "completion_tokens"}}} (fields may be added). Read-only: a run may
        /// be writing the journal meanwhile. Throws AfNotFoundException (no
        /// such file), AfFormatException (not a journal, or corrupt),
        /// AfIOException, AfInvalidArgumentException.</summary>
        public static string SummaryJson(string path)
        {
            byte[] p = Utf8.Encode(path, nameof(path));
            AfException.Check(Native.af_journal_summary_json(p, Utf8.Len(p), out AfBytes o));
            return Utf8.TakeBytes(ref o);
        }

        /// <summary>Compacts a journal no run is writing: folds its
        /// write-ahead log into the file and frees unused pages. The journal
        /// stays valid and resumable. Throws as SummaryJson, and AfIOException
        /// when a run holds the journal.</summary>
        public static void Compact(string path)
        {
            byte[] p = Utf8.Encode(path, nameof(path));
            AfException.Check(Native.af_journal_compact(p, Utf8.Len(p)));
        }
    }
}
