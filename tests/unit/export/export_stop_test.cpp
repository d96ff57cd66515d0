// export_onnx and a stop request (a signal to nn-export): nothing is written, the existing target
// is left as it was, and the error says so; without a request the same job writes the model.
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>

#include "config/parse.h"
#include "core/error.h"
#include "io/network_file.h"
#include "nn/error.h"
#include "nn/export.h"
#include "nn/stop.h"

namespace nn {
namespace {

std::string scratch_dir() {
  const auto dir =
      std::filesystem::temp_directory_path() / ("nn-export-stop-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir.string();
}

std::string tiny_network(const std::string& dir) {
  NetworkFile f;
  f.spec = parse_network_json(R"({ "Name": "tiny", "Layers": [
      { "Name": "Input", "Kind": "Input", "N": 4, "DataSet": "input" },
      { "Name": "Output", "Kind": "Output", "N": 3, "DataSet": "output",
        "Activation": "Sigmoid" } ] })",
                              "tiny.json");
  WeightArrays w;
  w.input_layer = "Input";
  w.output_layer = "Output";
  w.width = 3;
  w.height = 4;
  w.weights.assign(12, 0.25f);
  w.bias.assign(3, 0.5f);
  f.weights.push_back(w);
  const std::string path = dir + "/tiny.nc";
  write_network_file(path, f);
  return path;
}

std::string contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(ExportStop, AStopRequestWritesNothingAndKeepsTheTarget) {
  const std::string dir = scratch_dir();
  api::ExportJob job;
  job.network = tiny_network(dir);
  job.output = dir + "/model.onnx";
  { std::ofstream(job.output) << "previous model"; }
  api::request_stop(SIGTERM);
  try {
    api::export_onnx(job);
    ADD_FAILURE() << "a stop request must end the export";
  } catch (const Interrupted& e) {
    EXPECT_NE(std::string(e.what()).find("nothing was written"), std::string::npos) << e.what();
  }
  api::clear_stop_request();
  EXPECT_EQ(contents(job.output), "previous model");
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) files += entry.exists();
  EXPECT_EQ(files, 2u) << "only tiny.nc and model.onnx";

  // Without a request the same job replaces the target with the model.
  api::export_onnx(job);
  EXPECT_NE(contents(job.output), "previous model");
  EXPECT_GT(contents(job.output).size(), 100u);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace nn
