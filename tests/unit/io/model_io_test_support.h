// Shared pieces of the model_io tests: a scratch directory, sample NetworkFiles that use every
// feature of the format, and a field-by-field comparison.
#pragma once

#include <string>
#include <vector>

#include "io/network_file.h"

namespace nn::test {

// A fresh directory under the system temporary directory, removed with everything in it.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  // Names of all entries (hidden ones included), sorted.
  std::vector<std::string> entries() const;

 private:
  std::string path_;
};

// Deterministic values of varied sign and magnitude (exact float round trips are tested).
std::vector<float> sample_values(size_t count, uint32_t seed);

// Two inputs (one sparse), a batch-normalised hidden layer with two sources and per-layer
// overrides, a skip connection, an output fed by a shared transposed weight, optimizer state for
// weights, biases and BN, and a training state. Every field differs from its default.
NetworkFile rich_network_file();

// Image -> convolution -> max pooling -> fully connected output, with DSSTNE's conv weight shape.
NetworkFile conv_network_file();

// EXPECTs that every field of `actual` equals `expected` (floats bit-exact).
void expect_same_network_file(const NetworkFile& expected, const NetworkFile& actual);

std::string read_file_bytes(const std::string& path);
void write_file_bytes(const std::string& path, const std::string& bytes);

}  // namespace nn::test
