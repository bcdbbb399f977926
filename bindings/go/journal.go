package af

/*
#include "af/af.h"
*/
import "C"

import "runtime"

// JournalSummaryJSON describes the journal at path (see
// RunOptions.JournalPath: a SQLite file recording each LM call a run
// completed, which a rerun of the same program on the same inputs answers
// from without reaching the provider; created 0600, it holds the LM
// replies) as JSON:
//
//	{"program": "<hash hex>", "inputs": "<hash hex>", "calls": N,
//	 "prompt_tokens": N, "completion_tokens": N,
//	 "models": {"<model>": {"calls": N, "prompt_tokens": N, "completion_tokens": N}}}
//
// It only reads (a run may be writing the journal meanwhile). Fields may be
// added. Errors: CodeNotFound (no such file), CodeFormat (not a journal, or
// corrupt), CodeIO, CodeInvalidArgument (path not UTF-8).
func JournalSummaryJSON(path string) (string, error) {
	p, n := cstr(path)
	var b C.af_bytes_t
	e := C.af_journal_summary_json(p, n, &b)
	runtime.KeepAlive(path)
	if err := takeError(e); err != nil {
		return "", err
	}
	return takeBytes(&b), nil
}

// JournalCompact compacts the journal at path (see RunOptions.JournalPath:
// a SQLite file recording each LM call a run completed, which a rerun of
// the same program on the same inputs answers from without reaching the
// provider; created 0600, it holds LM replies): it folds the
// write-ahead log into the file and frees unused pages. The journal stays
// valid and resumable. No run may be writing it: one that is makes it
// CodeIO. Other errors as JournalSummaryJSON.
func JournalCompact(path string) error {
	p, n := cstr(path)
	e := C.af_journal_compact(p, n)
	runtime.KeepAlive(path)
	return takeError(e)
}
