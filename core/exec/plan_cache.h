// PlanCache: the one cache of compiled programs of a context, shared by
// af_compile, af_ir_call and the lazy evaluator. The key is an IR's
// plan_key, always confirmed by structural equality (ir_equal), so a key
// collision can only cost a compile, never return a wrong program. The lazy
// evaluator's lookup (find) confirms by an exact signature of its cut
// instead (lazy/cut.h), stored with the program it compiled.
// Bounded by entries and bytes, least recently used out first.
//
// A program larger than max_bytes runs but is not kept.
//
// With a directory, a miss in memory looks for `<dir>/<hash>.afp`, named by
// the IR's defined hash (ir_hash, af_ir_hash): a saved
// program loaded through every loader check and compared with the IR. A
// missing, corrupt, truncated or foreign file is a miss whose program is
// then written there atomically; it is never an error and never a wrong plan.
// The directory is private (made 0700, files 0600) and bounded: the cache
// counts the bytes it finds there once and those it writes, and past
// max_disk_bytes scans it and removes the least recently used files (a hit
// touches its file) down to three quarters of the bound. No save scans it.
#pragma once

#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>

#include "exec/program.h"

namespace af {

struct PlanCacheOptions {
  size_t max_entries = 1024;
  size_t max_bytes = size_t(256) << 20;
  std::string dir;  // "" = memory only
  uint64_t max_disk_bytes = uint64_t(1) << 30;
};

struct PlanCacheStats {
  uint64_t hits = 0, misses = 0, disk_hits = 0, evictions = 0, not_kept = 0;
  size_t entries = 0, bytes = 0;
  uint64_t disk_files = 0, disk_bytes = 0, disk_evictions = 0;
};

// Approximate memory a compiled program holds: its IR, its sliced form and
// its compiled sub-IRs included (what max_bytes bounds).
size_t program_bytes(const Program& p);

class PlanCache {
 public:
  // `compiles`: where the programs it compiles are counted (its context's
  // compiles), or nullptr.
  explicit PlanCache(PlanCacheOptions options = {}, std::atomic<uint64_t>* compiles = nullptr);
  // Checks the options (INVALID_ARGUMENT; IO when dir cannot be created or
  // written) and applies them; evicts down to the new bounds.
  void configure(PlanCacheOptions options);

  // The compiled program of ir (default CompileOptions): from memory, from
  // disk, or compiled and stored. `key` is plan_key(*ir), and `eqn_ids`
  // the equations' identities from that pass, or empty (compile's CSE then
  // hashes them itself). Thread-safe; compiling runs outside the lock.
  // Throws what compile throws.
  // `sig`, when given, is ir's signature (see find), kept with its program.
  std::shared_ptr<const Program> get(const IRPtr& ir, uint64_t key, std::span<const uint64_t> eqn_ids = {},
                                     std::span<const uint32_t> sig = {});
  // Without the identities: most gets hit (the lazy evaluator's), and a hit
  // has no use for them.
  std::shared_ptr<const Program> get(const IRPtr& ir) { return get(ir, plan_key(*ir)); }

  // The lazy evaluator's lookup: the program stored under `key` with
  // signature `sig` (what lazy::Cut writes a cut as: exact, within this
  // process, for the IR it names), counted as a hit; nullptr (counting
  // nothing: the caller goes on with get) if none. Confirming by signature
  // compares two arrays of numbers, never the IRs.
  std::shared_ptr<const Program> find(uint64_t key, std::span<const uint32_t> sig);

  PlanCacheStats stats() const;

 private:
  struct Entry {
    uint64_t key;  // plan_key
    std::shared_ptr<const Program> prog;
    size_t bytes;
    std::vector<uint32_t> sig;  // the lazy evaluator's signature of prog's IR, or empty
  };
  using Lru = std::list<Entry>;  // most recent first

  // The program of the entry under key that `same` (bool(const Entry&))
  // accepts, made the most recent.
  template <class Same>
  std::shared_ptr<const Program> find_locked(uint64_t key, const Same& same) {
    auto [lo, hi] = index_.equal_range(key);
    for (auto it = lo; it != hi; ++it) {
      Lru::iterator e = it->second;
      if (!same(*e)) continue;
      lru_.splice(lru_.begin(), lru_, e);
      return e->prog;
    }
    return nullptr;
  }
  // `same` for get: the IR itself, or an equal one.
  static auto equal_to(const IR& ir) {
    return [&ir](const Entry& e) { return e.prog->ir.get() == &ir || ir_equal(*e.prog->ir, ir); };
  }
  void insert_locked(uint64_t key, std::shared_ptr<const Program> prog, std::span<const uint32_t> sig);
  void evict_locked();
  // On disk, by the defined hash (ir_hash).
  static std::string file_of(const std::string& dir, uint64_t hash);
  static std::shared_ptr<const Program> load_from_disk(const std::string& dir, const IRPtr& ir,
                                                       uint64_t hash);
  void save_to_disk(const std::string& dir, uint64_t max_disk_bytes, const Program& prog, uint64_t hash);
  // Counts the directory's plan files (and removes stale temporary ones);
  // past `bound`, removes the least recently used down to 3/4 of it.
  // Called with disk_mu_ held.
  void scan_disk_locked(const std::string& dir, uint64_t bound);

  mutable std::mutex mu_;
  std::mutex disk_mu_;  // scans and trims of the directory; never held with mu_
  std::atomic<uint64_t> disk_files_{0}, disk_bytes_{0}, disk_evictions_{0};
  PlanCacheOptions options_;
  std::atomic<uint64_t>* const compiles_;
  Lru lru_;
  std::unordered_multimap<uint64_t, Lru::iterator> index_;
  PlanCacheStats stats_;
};

}  // namespace af
