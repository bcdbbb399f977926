// Files: atomic save (temporary file + fsync + rename) and bounded reads;
// the one-line summary `af verify` prints.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "io/afg.h"
#include "value/error.h"

namespace af::io {

namespace {

[[noreturn]] void io_error(const std::string& what, const std::string& path, int err) {
  fail(Code::IO, what + " \"" + path + "\": " + std::strerror(err));
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

void write_file_atomic(const std::string& path, std::string_view bytes) {
  if (path.empty()) invalid("save graph: the path is empty");
  if (path.find('\0') != std::string::npos) invalid("save graph: the path contains a NUL byte");
  static std::atomic<uint64_t> counter{0};
  // Same directory as the target, so the rename never crosses file systems.
  const std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." +
                          std::to_string(counter.fetch_add(1));
  Fd f;
  f.fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (f.fd < 0) io_error("cannot create", tmp, errno);
  auto abandon = [&](const char* what) {
    int err = errno;
    ::close(f.fd);
    f.fd = -1;
    ::unlink(tmp.c_str());
    io_error(what, path, err);
  };
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(f.fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) abandon("cannot write");
    done += size_t(n);
  }
  if (::fsync(f.fd) != 0) abandon("cannot sync");
  if (::close(f.fd) != 0) {
    f.fd = -1;
    int err = errno;
    ::unlink(tmp.c_str());
    io_error("cannot write", path, err);
  }
  f.fd = -1;
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    io_error("cannot rename the temporary file onto", path, err);
  }
}

std::vector<uint8_t> read_file(const std::string& path, uint64_t max_bytes) {
  if (path.find('\0') != std::string::npos) invalid("load graph: the path contains a NUL byte");
  Fd f;
  f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (f.fd < 0) io_error("cannot open", path, errno);
  struct stat st;
  if (::fstat(f.fd, &st) != 0) io_error("cannot stat", path, errno);
  if (!S_ISREG(st.st_mode)) fail(Code::IO, "cannot read \"" + path + "\": not a regular file");
  if (uint64_t(st.st_size) > max_bytes)
    fail(Code::Format, "invalid graph: \"" + path + "\" is " + std::to_string(st.st_size) +
                           " bytes, over the " + std::to_string(max_bytes) + " bytes limit");
  std::vector<uint8_t> out(size_t(st.st_size));
  size_t done = 0;
  while (done < out.size()) {
    ssize_t n = ::read(f.fd, out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) io_error("cannot read", path, errno);
    if (n == 0) break;  // shrank while reading: the loader reports the truncation
    done += size_t(n);
  }
  out.resize(done);
  return out;
}

std::string summary_json(const Loaded& g) {
  std::string out = "{\"ok\":true,\"container_version\":" + std::to_string(g.container_version) +
                    ",\"format_version\":" + std::to_string(g.format_version) + ",\"producer\":";
  append_json_string(out, g.producer);
  out += ",\"file_bytes\":" + std::to_string(g.file_bytes) +
         ",\"content_bytes\":" + std::to_string(g.content_bytes) +
         ",\"irs\":" + std::to_string(g.n_irs) + ",\"equations\":" + std::to_string(g.n_eqns) +
         ",\"primitives\":[";
  for (size_t i = 0; i < g.prims.size(); ++i) {
    if (i) out += ',';
    append_json_string(out, g.prims[i]);
  }
  out += "],\"host_functions\":[";
  for (size_t i = 0; i < g.host_functions.size(); ++i) {
    if (i) out += ',';
    append_json_string(out, g.host_functions[i]);
  }
  return out + "]}";
}

}  // namespace af::io
