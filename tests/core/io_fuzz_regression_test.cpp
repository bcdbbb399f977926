// Replays every input the fuzzers ever flagged (fuzz/regressions: the graph
// loader's) and their seed corpora (fuzz/corpus/<target>) through the fuzz
// harnesses, so ctest catches a regression without clang or libFuzzer.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "../../fuzz/graph_harness.h"
#include "../../fuzz/schema_harness.h"
#include "../../fuzz/value_json_harness.h"

namespace af {
namespace {

std::vector<std::filesystem::path> inputs(const char* dir) {
  std::vector<std::filesystem::path> out;
  for (const auto& e : std::filesystem::directory_iterator(std::string(AF_SOURCE_DIR) + "/" + dir))
    if (e.is_regular_file() && e.path().filename().string()[0] != '.') out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::string bytes_of(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

void replay(const char* dir, size_t at_least) {
  auto files = inputs(dir);
  EXPECT_GE(files.size(), at_least) << dir;
  for (const auto& path : files) {
    std::string bytes = bytes_of(path);
    SCOPED_TRACE(path.string());
    // Aborts (fails the whole binary, loudly) on a broken invariant.
    fuzz::graph_one(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    // The raw bytes as a whole file, as af_ir_from_bytes sees them.
    try {
      io::load_ir({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
    } catch (const Error& e) {
      EXPECT_TRUE(e.code() == Code::Format || e.code() == Code::Version) << e.what();
    }
  }
}

TEST(FuzzRegressions, SavedFindingsStayFixed) { replay("fuzz/regressions", 1); }
TEST(FuzzRegressions, SeedCorpusLoadsOrFailsCleanly) { replay("fuzz/corpus/graph", 8); }

// Each harness aborts (fails the binary) on a broken invariant.
TEST(FuzzRegressions, JsonValueSeedsParseOrFailCleanly) {
  size_t parsed = 0;
  for (const auto& path : inputs("fuzz/corpus/value_json")) {
    std::string bytes = bytes_of(path);
    SCOPED_TRACE(path.string());
    parsed += fuzz::value_json_one(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  EXPECT_GE(parsed, 5u);
}

TEST(FuzzRegressions, SchemaAndReplySeedsValidateOrFailCleanly) {
  auto files = inputs("fuzz/corpus/schema");
  EXPECT_GE(files.size(), 5u);
  for (const auto& path : files) {
    std::string bytes = bytes_of(path);
    SCOPED_TRACE(path.string());
    fuzz::schema_one(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
}

}  // namespace
}  // namespace af
