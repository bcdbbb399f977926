#include "exec/plan_cache.h"

#include <dirent.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <unordered_set>

#include "io/afg.h"
#include "value/error.h"
#include "value/file.h"

namespace af {

namespace {

// Rough size of an IR: its equations with their atoms and output vars, the
// vars, and the sub-IRs their params hold, each distinct sub-IR once (they
// are shared, not copied).
size_t ir_bytes(const IR& ir, std::unordered_set<const void*>& seen) {
  size_t n = sizeof(IR) + ir.vars.size() * sizeof(Aval) + (ir.in.size() + ir.out.size()) * sizeof(Atom);
  for (const Eqn& e : ir.eqns) {
    n += sizeof(Eqn) + e.in.size() * sizeof(Atom) + e.out.size() * sizeof(VarId) + 64;
    e.params.any_ir([&](const IR& sub) {
      if (seen.insert(&sub).second) n += ir_bytes(sub, seen);
      return false;
    });
  }
  return n;
}

// The cache's directory: made (0700) if missing, and writable.
void make_cache_dir(const std::string& dir) {
  make_dirs(dir, 0700, "plan cache");
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    fail(Code::IO, "plan cache: the directory \"" + dir + "\" is not writable: " + std::strerror(errno));
}

// A program, its sliced form and its compiled sub-IRs, each distinct IR and
// program once.
size_t program_bytes(const Program& p, std::unordered_set<const void*>& seen) {
  size_t n = sizeof(Program) + p.nodes.size() * sizeof(Program::Node) +
             (p.args.size() + p.results.size() + p.consumers.size() + p.roots.size()) * sizeof(uint32_t) +
             p.last_use.size() + p.constants.size() * sizeof(Value) +
             p.subs.size() * sizeof(std::pair<const IR*, std::shared_ptr<const Program>>);
  if (seen.insert(p.ir.get()).second) n += ir_bytes(*p.ir, seen);
  if (p.sliced && seen.insert(p.sliced.get()).second) n += program_bytes(*p.sliced, seen);
  for (const auto& [ir, sub] : p.subs)
    if (sub && seen.insert(sub.get()).second) n += program_bytes(*sub, seen);
  return n;
}

}  // namespace

size_t program_bytes(const Program& p) {
  std::unordered_set<const void*> seen;
  return program_bytes(p, seen);
}

PlanCache::PlanCache(PlanCacheOptions options, std::atomic<uint64_t>* compiles)
    : options_(std::move(options)), compiles_(compiles) {}

void PlanCache::configure(PlanCacheOptions options) {
  if (options.max_entries == 0)
    invalid("plan cache: max_entries must be at least 1");
  if (!options.dir.empty()) {
    if (options.dir.find('\0') != std::string::npos) invalid("plan cache: dir contains a NUL byte");
    make_cache_dir(options.dir);
  }
  {
    std::lock_guard lock(mu_);
    options_ = options;
    evict_locked();
  }
  // Count what the directory holds (another process may have filled it),
  // trimmed to the bound from the start.
  std::lock_guard disk(disk_mu_);
  disk_files_ = disk_bytes_ = 0;
  if (!options.dir.empty()) scan_disk_locked(options.dir, options.max_disk_bytes);
}

void PlanCache::insert_locked(uint64_t key, std::shared_ptr<const Program> prog, std::span<const uint32_t> sig) {
  size_t bytes = program_bytes(*prog) + sig.size_bytes();
  if (bytes > options_.max_bytes) {  // it would push out everything else, and itself
    ++stats_.not_kept;
    return;
  }
  lru_.push_front(Entry{key, std::move(prog), bytes, {sig.begin(), sig.end()}});
  index_.emplace(key, lru_.begin());
  stats_.bytes += bytes;
  evict_locked();
}

void PlanCache::evict_locked() {
  while (!lru_.empty() && (lru_.size() > options_.max_entries || stats_.bytes > options_.max_bytes)) {
    Lru::iterator last = std::prev(lru_.end());
    auto [lo, hi] = index_.equal_range(last->key);
    for (auto it = lo; it != hi; ++it)
      if (it->second == last) {
        index_.erase(it);
        break;
      }
    stats_.bytes -= last->bytes;
    lru_.erase(last);
    ++stats_.evictions;
  }
}

std::shared_ptr<const Program> PlanCache::find(uint64_t key, std::span<const uint32_t> sig) {
  std::lock_guard lock(mu_);
  std::shared_ptr<const Program> p =
      find_locked(key, [sig](const Entry& e) { return !e.sig.empty() && std::ranges::equal(e.sig, sig); });
  if (p) ++stats_.hits;
  return p;
}

std::shared_ptr<const Program> PlanCache::get(const IRPtr& ir, uint64_t key, std::span<const uint64_t> eqn_ids,
                                              std::span<const uint32_t> sig) {
  std::string dir;
  uint64_t max_disk_bytes = 0;
  {
    std::lock_guard lock(mu_);
    if (auto p = find_locked(key, equal_to(*ir))) {
      ++stats_.hits;
      return p;
    }
    dir = options_.dir;
    max_disk_bytes = options_.max_disk_bytes;
  }
  std::shared_ptr<const Program> prog;
  bool from_disk = false;
  const uint64_t hash = dir.empty() ? 0 : ir_hash(*ir);  // the file's name
  if (!dir.empty() && (prog = load_from_disk(dir, ir, hash))) from_disk = true;
  if (!prog) prog = compile(ir, CompileOptions{.count = compiles_}, eqn_ids);
  if (!dir.empty() && !from_disk) save_to_disk(dir, max_disk_bytes, *prog, hash);
  std::lock_guard lock(mu_);
  if (from_disk) ++stats_.disk_hits;
  else ++stats_.misses;
  // Another thread may have stored an equal program meanwhile: keep one.
  if (auto p = find_locked(key, equal_to(*ir))) return p;
  insert_locked(key, prog, sig);
  return prog;
}

std::string PlanCache::file_of(const std::string& dir, uint64_t hash) {
  char name[32];
  std::snprintf(name, sizeof name, "%016llx.afp", static_cast<unsigned long long>(hash));
  return dir + "/" + name;
}

std::shared_ptr<const Program> PlanCache::load_from_disk(const std::string& dir, const IRPtr& ir,
                                                         uint64_t hash) {
  const std::string path = file_of(dir, hash);
  if (::access(path.c_str(), F_OK) != 0) return nullptr;
  try {
    std::vector<uint8_t> bytes = io::read_file(path);
    std::shared_ptr<const Program> prog = load_program(bytes);
    // A file of another IR under this name (a collision, a renamed or
    // foreign file) is a miss: the compiled program replaces it.
    if (!ir_equal(*prog->ir, *ir)) return nullptr;
    ::utimes(path.c_str(), nullptr);  // recently used: trimmed last
    return prog;
  } catch (const Error&) {
    return nullptr;  // corrupt or truncated: recompiled and rewritten
  }
}

void PlanCache::save_to_disk(const std::string& dir, uint64_t max_disk_bytes, const Program& prog,
                             uint64_t hash) {
  size_t size;
  try {
    std::string bytes = save_program(prog);
    size = bytes.size();
    write_file_atomic(file_of(dir, hash), bytes, "plan cache", 0600, /*clean=*/false);
  } catch (const Error&) {
    // An IR no graph can hold, or a full disk: the memory level still has
    // the program; the next process compiles it again.
    return;
  }
  disk_files_.fetch_add(1, std::memory_order_relaxed);
  if (disk_bytes_.fetch_add(size, std::memory_order_relaxed) + size > max_disk_bytes) {
    std::lock_guard disk(disk_mu_);
    if (disk_bytes_.load(std::memory_order_relaxed) > max_disk_bytes) scan_disk_locked(dir, max_disk_bytes);
  }
}

void PlanCache::scan_disk_locked(const std::string& dir, uint64_t bound) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  struct File {
    std::string path;
    uint64_t bytes;
    struct timespec used;
  };
  std::vector<File> files;
  const time_t now = ::time(nullptr);
  while (dirent* ent = ::readdir(d)) {
    std::string_view name = ent->d_name;
    const bool temp = name.find(".afp.tmp.") != std::string_view::npos;
    if (!temp && (name.size() != 20 || !name.ends_with(".afp"))) continue;
    std::string path = dir + "/" + std::string(name);
    struct stat st{};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    // A temporary file a killed process left (a save takes milliseconds).
    if (temp) {
      if (now - st.st_mtime > 600) ::unlink(path.c_str());
      continue;
    }
    files.push_back(File{std::move(path), uint64_t(st.st_size), st.st_mtim});
  }
  ::closedir(d);
  uint64_t total = 0;
  for (const File& f : files) total += f.bytes;
  uint64_t removed = 0;
  if (total > bound) {
    std::sort(files.begin(), files.end(), [](const File& a, const File& b) {
      return a.used.tv_sec != b.used.tv_sec ? a.used.tv_sec < b.used.tv_sec : a.used.tv_nsec < b.used.tv_nsec;
    });
    const uint64_t target = bound / 4 * 3;
    for (const File& f : files) {
      if (total <= target) break;
      if (::unlink(f.path.c_str()) != 0) continue;
      total -= f.bytes;
      ++removed;
    }
  }
  disk_files_ = files.size() - removed;
  disk_bytes_ = total;
  disk_evictions_.fetch_add(removed, std::memory_order_relaxed);
}

PlanCacheStats PlanCache::stats() const {
  std::lock_guard lock(mu_);
  PlanCacheStats s = stats_;
  s.entries = lru_.size();
  s.disk_files = disk_files_.load(std::memory_order_relaxed);
  s.disk_bytes = disk_bytes_.load(std::memory_order_relaxed);
  s.disk_evictions = disk_evictions_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace af
