//! Run journals (af.h "Run journals"): reading and compacting the file a
//! run given [`RunOptions::journal_path`](crate::RunOptions::journal_path)
//! records its LM calls in.

use std::path::Path;

use crate::error::{check, Result};
use crate::sys;
use crate::util::{bytes_to_string, path_bytes};

/// A journal's contents as JSON:
///
/// ```text
/// {"program": "<hash hex>", "inputs": "<hash hex>", "calls": N,
///  "prompt_tokens": N, "completion_tokens": N,
///  "models": {"<model>": {"calls", "prompt_tokens", "completion_tokens"}}}
/// ```
///
/// (fields may be added). Read-only: a run may be writing the journal
/// meanwhile.
///
/// A journal is a SQLite file in which a program run given it in
/// [`RunOptions::journal_path`](crate::RunOptions::journal_path) records
/// each LM call it completes (the reply, the model, the provider and its
/// usage), committed before the call's result is used. It belongs to one
/// program and one list of inputs (their hashes are stored when it is
/// created): rerunning the same program on the same inputs with the same
/// journal answers every recorded call from it, without reaching the
/// provider, and asks the providers only the rest, so a run killed at any
/// moment resumes where it stopped. Host functions are run again. The file
/// holds LM replies in clear, so libaf creates it with mode 0600.
/// To forget a journal, delete the file and its `-wal` and `-shm` siblings.
///
/// Errors: `NotFound` (no such file), `Format` (not a journal, or corrupt),
/// `Io`, `InvalidArgument` (the path is not UTF-8).
///
/// ```no_run
/// let summary = libaf::journal_summary_json("runs/nightly.journal")?;
/// println!("{summary}");
/// # Ok::<(), libaf::Error>(())
/// ```
pub fn journal_summary_json(path: impl AsRef<Path>) -> Result<String> {
    let p = path_bytes(path.as_ref(), "journal path")?;
    let mut b = sys::af_bytes_t::default();
    check(unsafe { sys::af_journal_summary_json(p.as_ptr().cast(), p.len(), &mut b) })?;
    Ok(unsafe { bytes_to_string(&mut b) })
}

/// Compacts a journal no run is writing: folds its write-ahead log into the
/// file and frees unused pages. The journal stays valid and resumable (a
/// rerun still answers its recorded calls from it). The file holds the
/// LM replies of the LM calls it recorded (see
/// [`journal_summary_json`]).
///
/// Errors: as [`journal_summary_json`], and `Io` when a run holds the
/// journal.
pub fn journal_compact(path: impl AsRef<Path>) -> Result<()> {
    let p = path_bytes(path.as_ref(), "journal path")?;
    check(unsafe { sys::af_journal_compact(p.as_ptr().cast(), p.len()) })
}
