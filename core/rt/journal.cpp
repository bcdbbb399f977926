#include "rt/journal.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <thread>
#include <vector>

#include "value/file.h"
#include "value/hash.h"
#include "value/value.h"

namespace af {

namespace {

// The file's SQLite application id ("AFJ1"): a SQLite database of something
// else is never taken for a journal, nor written to.
constexpr int32_t kApplicationId = 0x41464a31;
constexpr const char* kFormat = "1";

std::string where(const std::string& path) { return "journal " + json_quoted(path); }

[[noreturn]] void db_fail(sqlite3* db, int rc, const std::string& path, const std::string& doing) {
  const int primary = rc & 0xff;
  const char* msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  if (primary == SQLITE_NOTADB || primary == SQLITE_CORRUPT)
    fail(Code::Format, where(path) + ": " + doing + ": " + msg +
                           " (not a libaf journal, or a damaged one: give another path, or delete the file and its "
                           "-wal and -shm siblings to start over)");
  fail(Code::IO, where(path) + ": " + doing + ": " + msg);
}

struct Stmt {
  sqlite3_stmt* s = nullptr;
  Stmt(sqlite3* db, const char* sql, const std::string& path) {
    if (int rc = sqlite3_prepare_v2(db, sql, -1, &s, nullptr); rc != SQLITE_OK) db_fail(db, rc, path, "reading it");
  }
  ~Stmt() { sqlite3_finalize(s); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  std::string text(int col) const {
    auto p = reinterpret_cast<const char*>(sqlite3_column_text(s, col));
    return p ? std::string(p, size_t(sqlite3_column_bytes(s, col))) : std::string();
  }
};

void exec(sqlite3* db, const char* sql, const std::string& path, const char* doing) {
  if (int rc = sqlite3_exec(db, sql, nullptr, nullptr, nullptr); rc != SQLITE_OK) db_fail(db, rc, path, doing);
}

int64_t single_int(sqlite3* db, const char* sql, const std::string& path) {
  Stmt st(db, sql, path);
  int rc = sqlite3_step(st.s);
  if (rc != SQLITE_ROW) db_fail(db, rc, path, "reading it");
  return sqlite3_column_int64(st.s, 0);
}

std::string hex(uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

// A row's checksum over everything it holds: a row damaged on disk in a
// way SQLite cannot see (a flipped byte inside a reply) is refused, never
// answered.
uint64_t row_checksum(const JournalKey& k, uint64_t seq, const JournalEntry& e) {
  uint64_t h = hash_bytes(k);
  for (const std::string* s : {&e.reply, &e.model, &e.provider, &e.name}) h = hash_mix(hash_mix(h, s->size()), hash_bytes(*s));
  for (uint64_t v : {seq, e.prompt_tokens, e.completion_tokens}) h = hash_mix(h, v);
  return h;
}

// A connection to an existing or new journal file. The descriptor holding
// the file's run lock stays open as long as the connection: closing any
// descriptor of a file drops the process's POSIX locks on it, SQLite's
// included.
struct Connection {
  sqlite3* db = nullptr;
  int fd = -1;
  std::string path;
  ~Connection() { close(); }
  void close() noexcept {
    sqlite3_close_v2(db);
    db = nullptr;
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

bool exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

// Opens `path` (creating it 0600 when `create`) and takes its run lock.
void open_locked(Connection& c, bool create) {
  int flags = O_RDWR | O_CLOEXEC | O_NOFOLLOW | (create ? O_CREAT : 0);
  c.fd = ::open(c.path.c_str(), flags, 0600);
  if (c.fd < 0) {
    int err = errno;
    if (err == ENOENT) fail(Code::NotFound, where(c.path) + ": no such file");
    if (err == ELOOP) fail(Code::IO, where(c.path) + ": is a symbolic link; give the file's own path");
    fail(Code::IO, where(c.path) + ": cannot open or create it: " + std::strerror(err));
  }
  struct stat st;
  if (::fstat(c.fd, &st) != 0 || !S_ISREG(st.st_mode)) fail(Code::IO, where(c.path) + ": is not a regular file");
  if (::flock(c.fd, LOCK_EX | LOCK_NB) != 0)
    fail(Code::IO, where(c.path) + ": another run is writing it (one run at a time writes a journal); wait for it "
                                   "to finish or give another path");
  if (int rc = sqlite3_open_v2(c.path.c_str(), &c.db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr);
      rc != SQLITE_OK)
    db_fail(c.db, rc, c.path, "opening it");
  sqlite3_busy_timeout(c.db, 5000);  // a reader folding the log in
}

// The file's meta table, or nothing for a new (empty) file; FORMAT for a
// SQLite file of something else.
// Whether the calls table has its kind column (journals written before host
// function rows existed do not).
bool has_kind_column(sqlite3* db, const std::string& path) {
  Stmt st(db, "SELECT count(*) FROM pragma_table_info('calls') WHERE name = 'kind'", path);
  return sqlite3_step(st.s) == SQLITE_ROW && sqlite3_column_int(st.s, 0) > 0;
}

std::optional<std::unordered_map<std::string, std::string>> read_meta(sqlite3* db, const std::string& path) {
  const int64_t app = single_int(db, "PRAGMA application_id", path);
  const int64_t tables = single_int(db, "SELECT count(*) FROM sqlite_master", path);
  if (app == 0 && tables == 0) return std::nullopt;
  if (app != kApplicationId)
    fail(Code::Format, where(path) + ": is a SQLite database but not a libaf journal; give another path");
  std::unordered_map<std::string, std::string> meta;
  Stmt st(db, "SELECT key, value FROM meta", path);
  int rc;
  while ((rc = sqlite3_step(st.s)) == SQLITE_ROW) meta[st.text(0)] = st.text(1);
  if (rc != SQLITE_DONE) db_fail(db, rc, path, "reading it");
  if (meta["format"] != kFormat)
    fail(Code::Version, where(path) + ": journal format \"" + meta["format"] +
                            "\" is not this libaf's (" + kFormat + "); use the libaf that wrote it, or another path");
  return meta;
}

}  // namespace

struct Journal::Writer {
  Connection conn;
  sqlite3_stmt* insert = nullptr;
  std::mutex mu;
  std::condition_variable cv;
  struct Pending {
    JournalKey key;
    uint64_t seq;
    JournalEntry entry;
    std::function<void(const Error*)> then;
  };
  std::vector<Pending> queue;  // with mu held
  bool stop = false;           // with mu held
  std::thread thread;

  ~Writer() { close(); }
  void close() noexcept {
    sqlite3_finalize(insert);
    insert = nullptr;
    conn.close();
  }

  // Commits a batch in one transaction; the error of a failed one.
  std::optional<Error> commit(std::vector<Pending>& batch) {
    sqlite3* db = conn.db;
    auto failed = [&](int rc) {
      std::string msg = sqlite3_errmsg(db);
      sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
      return Error(Code::IO, where(conn.path) + ": recording " + std::to_string(batch.size()) +
                                 " completed call(s) failed: " + msg + " (rc " + std::to_string(rc) + ")");
    };
    if (int rc = sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr); rc != SQLITE_OK) return failed(rc);
    for (const Pending& p : batch) {
      const JournalEntry& e = p.entry;
      sqlite3_reset(insert);
      sqlite3_bind_blob(insert, 1, p.key.data(), int(p.key.size()), SQLITE_STATIC);
      sqlite3_bind_int64(insert, 2, int64_t(p.seq));
      sqlite3_bind_text(insert, 3, e.name.data(), int(e.name.size()), SQLITE_STATIC);
      sqlite3_bind_text(insert, 4, e.model.data(), int(e.model.size()), SQLITE_STATIC);
      sqlite3_bind_text(insert, 5, e.provider.data(), int(e.provider.size()), SQLITE_STATIC);
      sqlite3_bind_text(insert, 6, e.reply.data(), int(e.reply.size()), SQLITE_STATIC);
      sqlite3_bind_int64(insert, 7, int64_t(e.prompt_tokens));
      sqlite3_bind_int64(insert, 8, int64_t(e.completion_tokens));
      sqlite3_bind_int64(insert, 9, int64_t(row_checksum(p.key, p.seq, e)));
      sqlite3_bind_int(insert, 10, e.host_function ? 1 : 0);
      if (int rc = sqlite3_step(insert); rc != SQLITE_DONE) {
        sqlite3_reset(insert);
        return failed(rc);
      }
    }
    sqlite3_reset(insert);
    if (int rc = sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr); rc != SQLITE_OK) return failed(rc);
    return std::nullopt;
  }

  // Commits `batch`, then runs its continuations.
  void write(std::vector<Pending>& batch) {
    std::optional<Error> err = commit(batch);
    for (Pending& p : batch) {
      try {
        p.then(err ? &*err : nullptr);
      } catch (...) {  // a continuation reports its own failures; none may end the writer
      }
    }
  }

  // The writer thread: whatever queued while the last transaction
  // committed goes in the next one (group commit). Ends once stopped with
  // nothing queued.
  static void loop(std::shared_ptr<Writer> w) {
    for (;;) {
      std::vector<Pending> batch;
      {
        std::unique_lock<std::mutex> lock(w->mu);
        w->cv.wait(lock, [&] { return w->stop || !w->queue.empty(); });
        if (w->queue.empty()) return;
        batch.swap(w->queue);
      }
      w->write(batch);
    }
  }

  // What is still queued, written on this thread.
  void drain() {
    for (;;) {
      std::vector<Pending> batch;
      {
        std::lock_guard<std::mutex> lock(mu);
        if (queue.empty()) return;
        batch.swap(queue);
      }
      write(batch);
    }
  }
};

std::shared_ptr<Journal> Journal::open(const std::string& path, uint64_t program, uint64_t inputs) {
  if (path.empty()) invalid("journal: the path is empty");
  make_parent_dirs(path, "journal");
  auto w = std::make_shared<Writer>();
  Connection& c = w->conn;
  c.path = path;
  open_locked(c, true);
  auto meta = read_meta(c.db, path);  // before any write: a foreign file is left as it is
  // WAL: a commit appends to the log (readers go on reading); NORMAL syncs
  // the log at checkpoints only, so a killed process loses nothing
  // committed (an OS crash may lose the last transactions, never corrupt).
  exec(c.db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL", path, "opening it");
  if (!meta) {
    std::string sql =
        "BEGIN IMMEDIATE;"
        "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;"
        "CREATE TABLE calls(request BLOB NOT NULL, seq INTEGER NOT NULL, name TEXT NOT NULL,"
        " model TEXT NOT NULL, provider TEXT NOT NULL, reply TEXT NOT NULL, prompt_tokens INTEGER NOT NULL,"
        " completion_tokens INTEGER NOT NULL, checksum INTEGER NOT NULL,"
        " kind INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (request, seq)) WITHOUT ROWID;"
        "INSERT INTO meta VALUES ('format', '" + std::string(kFormat) + "'), ('program', '" + hex(program) +
        "'), ('inputs', '" + hex(inputs) + "');"
        "PRAGMA application_id = " + std::to_string(kApplicationId) + ";"
        "COMMIT;";
    exec(c.db, sql.c_str(), path, "creating it");
  } else {
    auto differs = [&](const char* what, uint64_t mine) {
      const std::string& theirs = (*meta)[what];
      if (theirs == hex(mine)) return;
      invalid(where(path) + " belongs to a run of other " + what + " (" + what + " hash " + theirs +
              ", this run's " + hex(mine) + "): a journal resumes only the run that wrote it; give this run "
              "its own journal, or delete the file to start over");
    };
    differs("program", program);
    differs("inputs", inputs);
    // Journals written before host function rows existed lack the column
    // that tells them apart (0 = an LM call, 1 = a host function's).
    if (!has_kind_column(c.db, path))
      exec(c.db, "ALTER TABLE calls ADD COLUMN kind INTEGER NOT NULL DEFAULT 0", path, "upgrading it");
  }
  std::shared_ptr<Journal> j(new Journal());
  {
    // In key and occurrence order.
    Stmt st(c.db,
            "SELECT request, seq, name, model, provider, reply, prompt_tokens, completion_tokens, checksum "
            "FROM calls ORDER BY request, seq",
            path);
    int rc;
    while ((rc = sqlite3_step(st.s)) == SQLITE_ROW) {
      auto blob = static_cast<const char*>(sqlite3_column_blob(st.s, 0));
      JournalKey k(blob ? blob : "", size_t(sqlite3_column_bytes(st.s, 0)));
      const uint64_t seq = uint64_t(sqlite3_column_int64(st.s, 1));
      JournalEntry e{st.text(5), st.text(3), st.text(4), st.text(2), uint64_t(sqlite3_column_int64(st.s, 6)),
                     uint64_t(sqlite3_column_int64(st.s, 7))};
      Recorded& r = j->recorded_[k];
      if (uint64_t(sqlite3_column_int64(st.s, 8)) != row_checksum(k, seq, e))
        fail(Code::Format, where(path) + ": the row of a call to model " + json_quoted(e.model) + " (name " +
                               json_quoted(e.name) + ") is damaged (its checksum does not match); delete the "
                               "file to start over");
      r.untaken.push_back(std::move(e));
      r.rows = seq + 1;  // a failed write may have left a gap
    }
    if (rc != SQLITE_DONE) db_fail(c.db, rc, path, "reading it");
  }
  const char* insert =
      "INSERT OR REPLACE INTO calls (request, seq, name, model, provider, reply, prompt_tokens,"
      " completion_tokens, checksum, kind) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
  if (int rc = sqlite3_prepare_v3(c.db, insert, -1, SQLITE_PREPARE_PERSISTENT, &w->insert, nullptr); rc != SQLITE_OK)
    db_fail(c.db, rc, path, "preparing its writes");
  w->thread = std::thread(Writer::loop, w);
  j->writer_ = std::move(w);
  return j;
}

Journal::~Journal() { close(); }

void Journal::close() noexcept {
  if (!writer_) return;  // open() failed before its writer started
  Writer& w = *writer_;
  {
    std::lock_guard<std::mutex> lock(w.mu);
    if (w.stop) return;
    w.stop = true;
  }
  w.cv.notify_one();
  if (w.thread.get_id() == std::this_thread::get_id()) {
    // A continuation of the writer thread ended the run: what is still
    // queued is written here, so the file is free when this returns; the
    // thread ends once back in its loop (nothing is queued any more).
    w.drain();
    w.thread.detach();
  } else {
    w.thread.join();  // it writes what is queued first
  }
  w.close();
}

std::optional<JournalEntry> Journal::take(const JournalKey& key) {
  std::lock_guard<std::mutex> lock(mu_);
  if (recorded_.empty()) return std::nullopt;
  auto it = recorded_.find(key);
  if (it == recorded_.end() || it->second.untaken.empty()) return std::nullopt;
  JournalEntry e = std::move(it->second.untaken.front());
  it->second.untaken.pop_front();
  return e;
}

void Journal::record(JournalKey key, JournalEntry entry, std::function<void(const Error*)> then) {
  uint64_t seq;
  {
    std::lock_guard<std::mutex> lock(mu_);
    seq = recorded_[key].rows++;
  }
  {
    std::lock_guard<std::mutex> lock(writer_->mu);
    if (!writer_->stop) {
      writer_->queue.push_back(Writer::Pending{std::move(key), seq, std::move(entry), std::move(then)});
      writer_->cv.notify_one();
      return;
    }
  }
  Error ended(Code::Cancelled, "the run ended before this call's reply could be recorded in its journal");
  then(&ended);
}

std::string Journal::summary_json(const std::string& path) {
  if (path.empty()) invalid("journal: the path is empty");
  if (!exists(path)) fail(Code::NotFound, where(path) + ": no such file");
  Connection c;
  c.path = path;
  if (int rc = sqlite3_open_v2(path.c_str(), &c.db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr);
      rc != SQLITE_OK)
    db_fail(c.db, rc, path, "opening it");
  sqlite3_busy_timeout(c.db, 5000);
  auto meta = read_meta(c.db, path);
  if (!meta) fail(Code::Format, where(path) + ": is empty, not a libaf journal");
  std::vector<Entry> models, hosts;
  int64_t calls = 0, prompt = 0, completion = 0;
  // Host function calls (kind 1, model = the function's name) are counted
  // apart from LM calls; a journal written before they existed has none.
  Stmt st(c.db,
          has_kind_column(c.db, path)
              ? "SELECT model, count(*), sum(prompt_tokens), sum(completion_tokens), kind FROM calls "
                "GROUP BY model, kind ORDER BY model"
              : "SELECT model, count(*), sum(prompt_tokens), sum(completion_tokens), 0 FROM calls "
                "GROUP BY model ORDER BY model",
          path);
  int rc;
  while ((rc = sqlite3_step(st.s)) == SQLITE_ROW) {
    int64_t n = sqlite3_column_int64(st.s, 1), p = sqlite3_column_int64(st.s, 2), q = sqlite3_column_int64(st.s, 3);
    if (sqlite3_column_int(st.s, 4)) {
      hosts.emplace_back(st.text(0), Value::integer(n));
      continue;
    }
    calls += n;
    prompt += p;
    completion += q;
    models.emplace_back(st.text(0), Value::dict({{"calls", Value::integer(n)},
                                                 {"prompt_tokens", Value::integer(p)},
                                                 {"completion_tokens", Value::integer(q)}}));
  }
  if (rc != SQLITE_DONE) db_fail(c.db, rc, path, "reading it");
  return to_json(Value::dict({{"program", Value::str((*meta)["program"])},
                              {"inputs", Value::str((*meta)["inputs"])},
                              {"calls", Value::integer(calls)},
                              {"prompt_tokens", Value::integer(prompt)},
                              {"completion_tokens", Value::integer(completion)},
                              {"models", Value::dict(std::move(models))},
                              {"host_calls", Value::dict(std::move(hosts))}}));
}

void Journal::compact(const std::string& path) {
  if (path.empty()) invalid("journal: the path is empty");
  Connection c;
  c.path = path;
  open_locked(c, false);
  if (!read_meta(c.db, path)) fail(Code::Format, where(path) + ": is empty, not a libaf journal");
  exec(c.db, "VACUUM; PRAGMA wal_checkpoint(TRUNCATE)", path, "compacting it");
}

}  // namespace af
