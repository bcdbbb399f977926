#include "exec/plan_cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <unordered_set>

#include "io/afg.h"
#include "value/error.h"

namespace af {

namespace {

// Rough size of an IR: its equations with their atoms and output vars, the
// vars, and the sub-IRs their params hold, each distinct sub-IR once (they
// are shared, not copied).
size_t ir_bytes(const IR& ir, std::unordered_set<const IR*>& seen) {
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

void make_dirs(const std::string& dir) {
  std::string path;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    path = dir.substr(0, pos);
    if (path.empty()) continue;
    if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST)
      fail(Code::IO, "plan cache: cannot create the directory \"" + path + "\": " + std::strerror(errno));
  }
  struct stat st{};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    fail(Code::IO, "plan cache: \"" + dir + "\" is not a directory");
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    fail(Code::IO, "plan cache: the directory \"" + dir + "\" is not writable: " + std::strerror(errno));
}

}  // namespace

size_t program_bytes(const Program& p) {
  std::unordered_set<const IR*> seen;
  return sizeof(Program) + p.nodes.size() * sizeof(Program::Node) +
         (p.args.size() + p.results.size() + p.consumers.size() + p.roots.size()) *
             sizeof(uint32_t) +
         p.last_use.size() + p.constants.size() * sizeof(Value) + ir_bytes(*p.ir, seen);
}

PlanCache::PlanCache(PlanCacheOptions options) : options_(std::move(options)) {}

void PlanCache::configure(PlanCacheOptions options) {
  if (options.max_entries == 0)
    invalid("plan cache: max_entries must be at least 1");
  if (!options.dir.empty()) {
    if (options.dir.find('\0') != std::string::npos) invalid("plan cache: dir contains a NUL byte");
    make_dirs(options.dir);
  }
  std::lock_guard lock(mu_);
  options_ = std::move(options);
  evict_locked();
}

std::shared_ptr<const Program> PlanCache::find_locked(const IR& ir, uint64_t key) {
  auto [lo, hi] = index_.equal_range(key);
  for (auto it = lo; it != hi; ++it) {
    Lru::iterator e = it->second;
    if (e->prog->ir.get() != &ir && !ir_equal(*e->prog->ir, ir)) continue;
    lru_.splice(lru_.begin(), lru_, e);
    return e->prog;
  }
  return nullptr;
}

void PlanCache::insert_locked(uint64_t key, std::shared_ptr<const Program> prog) {
  size_t bytes = program_bytes(*prog);
  lru_.push_front(Entry{key, std::move(prog), bytes});
  index_.emplace(key, lru_.begin());
  stats_.bytes += bytes;
  evict_locked();
}

void PlanCache::evict_locked() {
  // The newest entry stays even when it alone is over max_bytes: the caller
  // is about to use it.
  while (lru_.size() > 1 && (lru_.size() > options_.max_entries || stats_.bytes > options_.max_bytes)) {
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

std::shared_ptr<const Program> PlanCache::get(const IRPtr& ir, uint64_t key, std::span<const uint64_t> eqn_ids) {
  std::string dir;
  {
    std::lock_guard lock(mu_);
    if (auto p = find_locked(*ir, key)) {
      ++stats_.hits;
      return p;
    }
    dir = options_.dir;
  }
  std::shared_ptr<const Program> prog;
  bool from_disk = false;
  const uint64_t hash = dir.empty() ? 0 : ir_hash(*ir);  // the file's name
  if (!dir.empty() && (prog = load_from_disk(dir, ir, hash))) from_disk = true;
  if (!prog) prog = compile(ir, {}, eqn_ids);
  if (!dir.empty() && !from_disk) save_to_disk(dir, *prog, hash);
  std::lock_guard lock(mu_);
  if (from_disk) ++stats_.disk_hits;
  else ++stats_.misses;
  // Another thread may have stored an equal program meanwhile: keep one.
  if (auto p = find_locked(*ir, key)) return p;
  insert_locked(key, prog);
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
    return prog;
  } catch (const Error&) {
    return nullptr;  // corrupt or truncated: recompiled and rewritten
  }
}

void PlanCache::save_to_disk(const std::string& dir, const Program& prog, uint64_t hash) {
  try {
    io::write_file_atomic(file_of(dir, hash), save_program(prog));
  } catch (const Error&) {
    // An IR no graph can hold, or a full disk: the memory level still has
    // the program; the next process compiles it again.
  }
}

PlanCacheStats PlanCache::stats() const {
  std::lock_guard lock(mu_);
  PlanCacheStats s = stats_;
  s.entries = lru_.size();
  return s;
}

}  // namespace af
