// value/file.h: writes that follow nothing planted beside the target and
// leave no temporary files behind, reads that refuse what is not a regular
// file without blocking on it.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

#include "value/error.h"
#include "value/file.h"

namespace af {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void put(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

bool exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

struct Dir {
  std::string path;
  Dir() {
    char tmpl[] = "/tmp/af_file_test.XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~Dir() { std::system(("rm -rf '" + path + "'").c_str()); }
};

Code code_of(const std::function<void()>& f, std::string* msg = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (msg) *msg = e.what();
    return e.code();
  }
  return Code::Internal;  // "did not fail": no test expects INTERNAL
}

TEST(Files, NonRegularFilesAreRefusedWithoutBlocking) {
  Dir d;
  std::string fifo = d.path + "/pipe.afg";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto t0 = std::chrono::steady_clock::now();
  std::string msg;
  EXPECT_EQ(code_of([&] { read_regular_file(fifo, 1 << 20, "load graph"); }, &msg), Code::IO);
  EXPECT_NE(msg.find("not a regular file (a FIFO)"), std::string::npos) << msg;
  EXPECT_EQ(code_of([&] { read_regular_file(d.path, 1 << 20, "load graph"); }, &msg), Code::IO);
  EXPECT_NE(msg.find("a directory"), std::string::npos) << msg;
  EXPECT_EQ(code_of([&] { read_regular_file("/dev/zero", 1 << 20, "load graph"); }, &msg), Code::IO);
  EXPECT_NE(msg.find("a device"), std::string::npos) << msg;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
  // A regular file over the limit is refused before it is read.
  put(d.path + "/big", std::string(100, 'x'));
  EXPECT_EQ(code_of([&] { read_regular_file(d.path + "/big", 99, "load graph"); }, &msg), Code::Format);
  EXPECT_NE(msg.find("is 100 bytes, over the 99 bytes limit"), std::string::npos) << msg;
  EXPECT_EQ(read_regular_file(d.path + "/big", 100, "load graph").size(), 100u);
}

TEST(Files, AtomicWritesFollowNoPlantedLinkAndLeaveNoTemporaries) {
  Dir d;
  std::string target = d.path + "/out.json", victim = d.path + "/victim";
  put(victim, "precious");
  // The old profile writer opened "<path>.tmp" with O_TRUNC: a link planted
  // there truncated whatever it pointed to.
  ASSERT_EQ(::symlink(victim.c_str(), (target + ".tmp").c_str()), 0);
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(::symlink(victim.c_str(), (target + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(i)).c_str()), 0);
  write_file_atomic(target, "{\"a\":1}", "profile");
  EXPECT_EQ(slurp(target), "{\"a\":1}");
  EXPECT_EQ(slurp(victim), "precious");
  write_file_atomic(target, "x", "profile");
  EXPECT_EQ(slurp(target), "x");
  check_writable(target, "profile");
  EXPECT_EQ(slurp(target), "x");  // checked without touching the target
  std::string msg;
  EXPECT_EQ(code_of([&] { write_file_atomic(d.path + "/no/such/dir/x", "x", "save graph"); }, &msg), Code::IO);
  EXPECT_NE(msg.find("save graph: cannot create"), std::string::npos) << msg;
  EXPECT_EQ(code_of([&] { check_writable(d.path + "/no/such/dir/x", "profile"); }), Code::IO);
  EXPECT_EQ(code_of([&] { write_file_atomic("", "x", "save graph"); }), Code::InvalidArgument);
}

TEST(Files, TemporariesOfDeadProcessesAreCleanedOnTheNextSave) {
  Dir d;
  std::string target = d.path + "/g.afg";
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  ::waitpid(child, nullptr, 0);  // now a pid no process has
  std::string dead = target + ".tmp." + std::to_string(child) + ".0";
  std::string live = target + ".tmp." + std::to_string(::getppid()) + ".0";
  std::string other = d.path + "/other.afg.tmp." + std::to_string(child) + ".0";
  std::string odd = target + ".tmp." + std::to_string(child) + ".x";
  for (const auto& p : {dead, live, other, odd}) put(p, "partial");
  write_file_atomic(target, "graph", "save graph");
  EXPECT_FALSE(exists(dead));   // a killed save's leftover
  EXPECT_TRUE(exists(live));    // a save still in progress elsewhere
  EXPECT_TRUE(exists(other));   // another target's
  EXPECT_TRUE(exists(odd));     // not of the exact shape
  EXPECT_EQ(slurp(target), "graph");
}

}  // namespace
}  // namespace af
