#include "value/file.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "value/error.h"

namespace af {

namespace {

[[noreturn]] void io_error(const char* what, const std::string& doing, const std::string& path, int err) {
  fail(Code::IO, std::string(what) + ": " + doing + " \"" + path + "\": " + std::strerror(err));
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

void check_path(const std::string& path, const char* what) {
  if (path.empty()) invalid(std::string(what) + ": the path is empty");
  if (path.find('\0') != std::string::npos) invalid(std::string(what) + ": the path contains a NUL byte");
}

// "dir/" part of path ("" for a bare name) and the name.
std::pair<std::string, std::string> split(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return {"", path};
  return {path.substr(0, slash + 1), path.substr(slash + 1)};
}

// Removes "<name>.tmp.<pid>.<n>" files in dir whose process is gone (a save
// killed between create and rename). Only regular files of exactly that
// shape; a pid that exists (or that we may not signal) is left alone.
void remove_stale_temps(const std::string& dir, const std::string& name) {
  DIR* d = ::opendir(dir.empty() ? "." : dir.c_str());
  if (!d) return;
  const std::string prefix = name + ".tmp.";
  while (dirent* ent = ::readdir(d)) {
    std::string_view n(ent->d_name);
    if (n.size() <= prefix.size() || n.substr(0, prefix.size()) != prefix) continue;
    std::string_view rest = n.substr(prefix.size());
    size_t dot = rest.find('.');
    if (dot == 0 || dot == std::string_view::npos || dot + 1 == rest.size()) continue;
    bool digits = true;
    for (size_t i = 0; i < rest.size(); ++i)
      if (i != dot && (rest[i] < '0' || rest[i] > '9')) digits = false;
    if (!digits || dot > 9) continue;
    pid_t pid = pid_t(std::stol(std::string(rest.substr(0, dot))));
    if (pid <= 0 || pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;
    std::string full = dir + std::string(n);
    struct stat st;
    if (::lstat(full.c_str(), &st) == 0 && S_ISREG(st.st_mode)) ::unlink(full.c_str());
  }
  ::closedir(d);
}

// Creates a fresh temporary file beside path; returns its name, fd in f.
std::string create_temp(const std::string& path, const char* what, Fd& f, unsigned mode = 0644) {
  static std::atomic<uint64_t> counter{0};
  std::string tmp;
  for (int tries = 0;; ++tries) {
    tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
    f.fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (f.fd >= 0) return tmp;
    if (errno != EEXIST || tries >= 100) io_error(what, "cannot create", tmp, errno);
  }
}

void sync_dir(const std::string& dir) {
  int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;  // the rename is done; durability of the entry is best effort
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

void write_file_atomic(const std::string& path, std::string_view bytes, const char* what, unsigned mode,
                       bool clean) {
  check_path(path, what);
  auto [dir, name] = split(path);
  if (clean) remove_stale_temps(dir, name);
  Fd f;
  const std::string tmp = create_temp(path, what, f, mode);
  auto abandon = [&](const char* doing, const std::string& shown) {
    int err = errno;
    if (f.fd >= 0) ::close(f.fd);
    f.fd = -1;
    ::unlink(tmp.c_str());
    io_error(what, doing, shown, err);
  };
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(f.fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) abandon("cannot write", path);
    done += size_t(n);
  }
  if (::fsync(f.fd) != 0) abandon("cannot sync", path);
  int fd = f.fd;
  f.fd = -1;
  if (::close(fd) != 0) abandon("cannot write", path);
  if (::rename(tmp.c_str(), path.c_str()) != 0) abandon("cannot rename the temporary file onto", path);
  sync_dir(dir);
}

void make_dirs(const std::string& dir, unsigned mode, const char* what) {
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    const std::string part = dir.substr(0, pos);
    if (part.empty()) continue;
    if (::mkdir(part.c_str(), mode_t(mode)) != 0 && errno != EEXIST)
      io_error(what, "cannot create the directory", part, errno);
  }
  struct stat st{};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    fail(Code::IO, std::string(what) + ": \"" + dir + "\" is not a directory");
}

void make_parent_dirs(const std::string& path, const char* what) {
  check_path(path, what);
  const std::string dir = split(path).first;
  if (!dir.empty()) make_dirs(dir, 0777, what);
}

void check_writable(const std::string& path, const char* what) {
  check_path(path, what);
  Fd f;
  const std::string tmp = create_temp(path, what, f);
  ::unlink(tmp.c_str());
}

std::vector<uint8_t> read_regular_file(const std::string& path, uint64_t max_bytes, const char* what) {
  check_path(path, what);
  Fd f;
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
  f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (f.fd < 0) io_error(what, "cannot open", path, errno);
  struct stat st;
  if (::fstat(f.fd, &st) != 0) io_error(what, "cannot stat", path, errno);
  if (!S_ISREG(st.st_mode))
    fail(Code::IO, std::string(what) + ": cannot read \"" + path + "\": not a regular file (" +
                       (S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISDIR(st.st_mode) ? "a directory"
                        : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device" : "not a plain file") + ")");
  if (uint64_t(st.st_size) > max_bytes)
    fail(Code::Format, std::string(what) + ": \"" + path + "\" is " + std::to_string(st.st_size) +
                           " bytes, over the " + std::to_string(max_bytes) + " bytes limit");
  std::vector<uint8_t> out(size_t(st.st_size));
  size_t done = 0;
  while (done < out.size()) {
    ssize_t n = ::read(f.fd, out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) io_error(what, "cannot read", path, errno);
    if (n == 0) break;  // shrank while reading: the caller's checks see the truncation
    done += size_t(n);
  }
  out.resize(done);
  return out;
}

}  // namespace af
