// Shared set-up of the serving tests: two trained-looking networks of the same shape (different
// seeds) saved as network files, the index files that name their units (input m0..m29, output
// o0..o29; the layers are 32 wide, so two units of each are unnamed padding), and helpers to
// call a Service and read its JSON.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "nn/nn.h"
#include "nn/serve.h"

namespace nn::serve_test {

using json = nlohmann::json;

inline const char* kNetwork = R"({ "Name": "served", "ErrorFunction": "CrossEntropy",
  "Layers": [
    { "Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true },
    { "Name": "Hidden", "Kind": "Hidden", "N": 24, "Activation": "Sigmoid" },
    { "Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output",
      "Activation": "Sigmoid" } ] })";
constexpr uint32_t kWidth = 32, kItems = 30;

class ServeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("nn-serve-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    for (uint64_t seed : {1, 2}) {
      api::DataShape shape;
      shape.width = kWidth;
      shape.sparse = true;
      auto m = api::Model::from_json(kNetwork, {{"input", shape}, {"output", shape}}, seed);
      m->save(path("net" + std::to_string(seed) + ".nc"));
    }
    std::filesystem::copy_file(path("net1.nc"), path("network.nc"));
    std::ofstream in(path("input.idx")), out(path("output.idx"));
    for (uint32_t i = 0; i < kItems; ++i) {
      in << "m" << i << "\t" << i << "\n";
      out << "m" << i << "\t" << i << "\n";
    }
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  api::ServeOptions options() const {
    api::ServeOptions o;
    o.network = path("network.nc");
    o.input_index = path("input.idx");
    o.output_index = path("output.idx");
    o.threads = 2;
    return o;
  }

  std::filesystem::path dir_;
};

inline api::ServeResponse post(api::Service& s, const std::string& path, const std::string& body) {
  return s.handle({"POST", path, body});
}
inline api::ServeResponse get(api::Service& s, const std::string& path) {
  return s.handle({"GET", path, ""});
}
inline json body(const api::ServeResponse& r) {
  return json::parse(r.body);
}

}  // namespace nn::serve_test
