// Files, shared by saved graphs (core/io) and profiles (core/exec): atomic
// writes and reads that never block on what is not a regular file.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace af {

// Writes bytes to `path` so that a crash never leaves a half-written file
// and nothing planted beside it is followed: a temporary "<path>.tmp.<pid>.<n>"
// created with O_EXCL | O_NOFOLLOW in the same directory, fsync, rename onto
// path, fsync of the directory. Temporary files of this name left by
// processes that no longer exist (a killed save) are removed first. `what`
// starts each IO error ("save graph", "profile"). `mode`: the new file's
// permissions (before the umask). `clean`: false skips the look for stale
// temporary files (a directory scan), for callers that clean up themselves.
void write_file_atomic(const std::string& path, std::string_view bytes, const char* what,
                       unsigned mode = 0644, bool clean = true);

// IO unless a file could be written at `path` (the directory exists and is
// writable): checked by creating and removing a temporary file as above,
// never by opening `path` itself.
void check_writable(const std::string& path, const char* what);

// Creates directory `dir` and its missing parents with `mode` (before the
// umask); IO naming `what` if one cannot be made or `dir` exists and is not a
// directory. Existing directories are left as they are.
void make_dirs(const std::string& dir, unsigned mode, const char* what);
// make_dirs of the directory part of `path` (nothing for a bare name), mode
// 0777 before the umask, as mkdir -p makes them.
void make_parent_dirs(const std::string& path, const char* what);

// Reads a regular file of at most max_bytes. A FIFO, device or directory is
// refused without blocking (opened O_NONBLOCK, then fstat) with IO; a larger
// file with FORMAT naming the size and the limit (nothing is read).
std::vector<uint8_t> read_regular_file(const std::string& path, uint64_t max_bytes, const char* what);

}  // namespace af
