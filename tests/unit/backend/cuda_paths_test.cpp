// The CUDA path table (backend/cuda_paths.h): only a path that passed on a GPU is on by default,
// the switches parse strictly, and docs/cuda-backend.md shows the code's table.
#include "backend/cuda_paths.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace nn {
namespace {

// Every path's variable unset for the test's duration, and restored after.
class CudaPaths : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const CudaPathInfo& p : cuda_paths()) {
      const char* v = std::getenv(p.variable);
      saved_.push_back(v ? v : "");
      had_.push_back(v != nullptr);
      unsetenv(p.variable);
    }
  }
  void TearDown() override {
    for (size_t i = 0; i < cuda_paths().size(); ++i) {
      if (had_[i])
        setenv(cuda_paths()[i].variable, saved_[i].c_str(), 1);
      else
        unsetenv(cuda_paths()[i].variable);
    }
  }
  std::vector<std::string> saved_;
  std::vector<bool> had_;
};

TEST_F(CudaPaths, OnlyAPathThatPassedOnAGpuIsOnByDefault) {
  std::set<std::string> names, variables;
  for (const CudaPathInfo& p : cuda_paths()) {
    SCOPED_TRACE(p.name);
    EXPECT_TRUE(names.insert(p.name).second) << "a name twice";
    EXPECT_TRUE(variables.insert(p.variable).second) << "a variable twice";
    if (p.on_by_default) EXPECT_STRNE(p.passed, "") << "on by default without a GPU run";
    EXPECT_EQ(cuda_path_on(p.path), p.on_by_default);
    EXPECT_STRNE(p.on, p.off);
  }
}

TEST_F(CudaPaths, EachVariableTurnsItsPathOnAndOffAndRefusesAnythingElse) {
  for (const CudaPathInfo& p : cuda_paths()) {
    SCOPED_TRACE(p.name);
    setenv(p.variable, p.on, 1);
    EXPECT_TRUE(cuda_path_on(p.path));
    setenv(p.variable, p.off, 1);
    EXPECT_FALSE(cuda_path_on(p.path));
    setenv(p.variable, "", 1);
    EXPECT_EQ(cuda_path_on(p.path), p.on_by_default);
    setenv(p.variable, "yes", 1);
    try {
      cuda_path_on(p.path);
      ADD_FAILURE() << "yes was taken";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string(p.variable) + "=yes"), std::string::npos)
          << e.what();
    }
    unsetenv(p.variable);
  }
}

TEST_F(CudaPaths, TheRowAlignmentFollowsThePaddedRowsPath) {
  const CudaPathInfo& p = cuda_path_info(CudaPath::PaddedRows);
  EXPECT_EQ(cuda_row_alignment_setting(), p.on_by_default ? 8u : 1u);
  setenv(p.variable, "16", 1);
  EXPECT_EQ(cuda_row_alignment_setting(), 16u);
  EXPECT_TRUE(cuda_path_on(CudaPath::PaddedRows));
  setenv(p.variable, "0", 1);
  EXPECT_THROW(cuda_row_alignment_setting(), ConfigError);
}

TEST_F(CudaPaths, UntriedPathsThatAreOnAreNamed) {
  // The code's table: a path that is on either passed or is named.
  for (const std::string& line : cuda_untried_paths_on()) ADD_FAILURE() << line;
  // A table in which side uploads have not passed and are off by default.
  std::vector<CudaPathInfo> table = cuda_paths();
  for (CudaPathInfo& p : table)
    if (p.path == CudaPath::SideUploads) {
      p.passed = "";
      p.on_by_default = false;
    }
  setenv("NN_CUDA_SIDE_UPLOADS", "0", 1);
  EXPECT_TRUE(cuda_untried_paths_on(table).empty());
  setenv("NN_CUDA_SIDE_UPLOADS", "1", 1);
  const std::vector<std::string> lines = cuda_untried_paths_on(table);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0],
            "side-uploads is on (NN_CUDA_SIDE_UPLOADS=1) and has not yet passed on a GPU");
}

// A path that passed cites a GPU check saved under docs/gpu-results/ (<passed>-results.tsv).
TEST_F(CudaPaths, EveryPassCitesSavedResults) {
  const std::string folder = std::string(NN_SOURCE_DIR) + "/docs/gpu-results/";
  if (!std::ifstream(folder + "README.md"))
    GTEST_SKIP() << "no docs/gpu-results under " << NN_SOURCE_DIR;
  for (const CudaPathInfo& p : cuda_paths()) {
    if (!*p.passed) continue;
    SCOPED_TRACE(p.name);
    std::ifstream results(folder + p.passed + "-results.tsv");
    ASSERT_TRUE(results) << folder << p.passed << "-results.tsv";
    std::string line;
    std::getline(results, line);
    EXPECT_EQ(line.rfind("step\tstatus", 0), 0u) << line;
  }
}

// The rows of docs/cuda-backend.md's table under "Paths and their switches", cell by cell.
std::vector<std::vector<std::string>> docs_rows() {
  std::ifstream in(std::string(NN_SOURCE_DIR) + "/docs/cuda-backend.md");
  std::string line;
  bool inside = false;
  std::vector<std::vector<std::string>> rows;
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0) inside = line.find("Paths and their switches") != line.npos;
    if (!inside || line.rfind("| `", 0) != 0) continue;
    std::vector<std::string> cells;
    std::stringstream cells_in(line.substr(1));
    std::string cell;
    while (std::getline(cells_in, cell, '|')) {
      const size_t a = cell.find_first_not_of(' '), b = cell.find_last_not_of(' ');
      cell = a == cell.npos ? "" : cell.substr(a, b - a + 1);
      if (cell.size() >= 2 && cell.front() == '`' && cell.back() == '`')
        cell = cell.substr(1, cell.size() - 2);
      cells.push_back(cell);
    }
    rows.push_back(cells);
  }
  return rows;
}

TEST_F(CudaPaths, TheDocsTableIsTheCodesTable) {
  // A test binary carried away from its tree (the GPU bundle) has no docs beside it.
  if (!std::ifstream(std::string(NN_SOURCE_DIR) + "/docs/cuda-backend.md"))
    GTEST_SKIP() << "no docs/cuda-backend.md under " << NN_SOURCE_DIR;
  const auto rows = docs_rows();
  ASSERT_EQ(rows.size(), cuda_paths().size())
      << "docs/cuda-backend.md, \"Paths and their switches\"";
  for (size_t i = 0; i < rows.size(); ++i) {
    const CudaPathInfo& p = cuda_paths()[i];
    SCOPED_TRACE(p.name);
    ASSERT_EQ(rows[i].size(), 8u);
    EXPECT_EQ(rows[i][0], p.name);
    EXPECT_EQ(rows[i][1], p.variable);
    EXPECT_EQ(rows[i][2], p.on);
    EXPECT_EQ(rows[i][3], p.off);
    EXPECT_EQ(rows[i][4], p.on_by_default ? "on" : "off");
    EXPECT_EQ(rows[i][5], *p.passed ? p.passed : "never");
    EXPECT_EQ(rows[i][6], p.added);
    EXPECT_EQ(rows[i][7], p.what);
  }
}

}  // namespace
}  // namespace nn
