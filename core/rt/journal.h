// Journal: a run's record of the LM calls it completed, in a SQLite file, so
// that a run of the same program on the same inputs resumes without asking
// a provider again (af.h "Run journals", docs/SEMANTICS.md "Durable runs").
//
// Contract: a call counts as done only once its row is committed (a killed
// run loses at most the calls in flight), and a row answers only a request
// equal to the one it was written for: the journal is bound to one program
// and one list of inputs when created, and a row is keyed by a 128-bit hash
// of its request (model, messages, schema, sampling params) and its
// occurrence among equal requests (a program asking the same thing three
// times gets three rows, so three answers). Keys do not depend on where or
// in which form a call ran (streamed or not, a batch run in slices or
// whole, a batched switch branch by branch or item by item), so a resumed
// run finds its calls whatever it chose. Anything that does not match is
// refused (another program or inputs: INVALID_ARGUMENT; not a journal, or a
// row whose checksum fails: FORMAT), never used.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "value/error.h"

namespace af {

// The key of a request: its 16-byte hash (request_key in prims/lm.cpp).
using JournalKey = std::string;

// Appends one part of a key's input, length-prefixed (so no two different
// lists of parts write the same bytes); the key is the hash of them all.
inline void append_key_part(std::string& b, std::string_view part) {
  const uint64_t n = part.size();
  b.append(reinterpret_cast<const char*>(&n), sizeof n);
  b.append(part);
}

// What a completed call answered.
struct JournalEntry {
  std::string reply;     // the text, or the JSON of a structured reply
  std::string model;
  std::string provider;  // the one that answered
  std::string name;      // the equation's name path ("" for none): for people only
  uint64_t prompt_tokens = 0;
  uint64_t completion_tokens = 0;
  // A host function's call (model = the function's name), not an LM call:
  // summaries count it apart. Not part of the row's checksum (rows written
  // before the column existed stay valid).
  bool host_function = false;
};

class Journal {
 public:
  // Opens the journal at `path` for a run of the program hashed `program`
  // on the inputs hashed `inputs`, creating it (0600, missing parent
  // directories made) when missing. Holds an exclusive lock on the file
  // until the journal is freed: a second run on it fails with IO.
  static std::shared_ptr<Journal> open(const std::string& path, uint64_t program, uint64_t inputs);
  ~Journal();  // close()
  // Writes what is queued, then lets the file go (its lock released): a
  // run closes its journal as it finishes. A record() after this fails its
  // call (CANCELLED). Any thread, the writer's included; idempotent.
  void close() noexcept;
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  // A recorded answer to `key` not yet taken by this run (the first of
  // them), taken out: each recorded call answers one call.
  std::optional<JournalEntry> take(const JournalKey& key);
  // Records `entry` for `key` as its next occurrence; `then` runs once the
  // row is committed
  // (err == nullptr) or its write failed (IO), on the journal's writer
  // thread. Writes that come while one commits share the next transaction.
  void record(JournalKey key, JournalEntry entry, std::function<void(const Error* err)> then);

  // af_journal_summary_json / af_journal_compact.
  static std::string summary_json(const std::string& path);
  static void compact(const std::string& path);

  struct Writer;  // the connection and the writer thread's queue (journal.cpp)

 private:
  Journal() = default;
  std::shared_ptr<Writer> writer_;
  std::mutex mu_;
  struct Recorded {
    std::deque<JournalEntry> untaken;  // in occurrence order
    uint64_t rows = 0;                 // in the file, the next occurrence's number
  };
  std::unordered_map<JournalKey, Recorded> recorded_;
};

}  // namespace af
