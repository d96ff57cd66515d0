// Networks whose files or specs claim sizes beyond what fits: rejected with the layer, the
// sizes and the memory budget before anything is allocated (a network file whose input layer
// claimed 2e9 units used to allocate until the kernel stepped in).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "backend/backend.h"
#include "core/error.h"
#include "core/memory_budget.h"
#include "io/dsstne_network_writer.h"
#include "io/network_file.h"
#include "model/network.h"

namespace nn {
namespace {

using test::dsstne_fc_layer;
using test::DsstneNetwork;
using test::DsstneWeight;

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no ConfigError";
  return "";
}

TEST(NetworkLimits, FileClaimingBillionsOfUnitsIsRejectedBeforeAllocation) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("nn_limits_" + std::to_string(::getpid()) + ".nc"))
          .string();
  DsstneNetwork net;
  net.layers = {dsstne_fc_layer("Input", 0, 2000000000u, {}, 0, "in"),
                dsstne_fc_layer("Output", 2, 2, {"Input"}, 0, "out")};
  DsstneWeight w;  // no arrays stored: DSSTNE would initialise 4e9 of them
  w.input_layer = "Input";
  w.output_layer = "Output";
  w.width = 2;
  w.height = 2000000000u;
  net.weights = {w};
  test::write_dsstne_network(path, net);
  EXPECT_LT(std::filesystem::file_size(path), 100000u);
  const NetworkFile file = read_network_file(path);
  std::filesystem::remove(path);
  set_memory_budget(uint64_t(8) << 30);
  auto backend = make_backend("cpu", 1);
  const std::string m = error_of([&] { Network n(*backend, file.spec, {}); });
  set_memory_budget(0);
  EXPECT_NE(m.find("layer 'Output': weights from 'Input' (2000000000 x 2 parameters"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("more than the memory budget of 8.0 GiB"), std::string::npos) << m;
}

TEST(NetworkLimits, UnitsBeyond32BitsAreRejected) {
  NetworkSpec spec;
  LayerSpec in, out;
  in.name = "Input";
  in.kind = LayerKind::Input;
  in.n = {65536, 65536, 1, 1};
  in.dimensions = 2;
  out.name = "Output";
  out.kind = LayerKind::Output;
  out.n = {2, 1, 1, 1};
  out.sources = {"Input"};
  spec.layers = {in, out};
  auto backend = make_backend("cpu", 1);
  const std::string m = error_of([&] { Network n(*backend, spec, {}); });
  EXPECT_NE(m.find("layer 'Input': N = 65536 x 65536 x 1 x 1 = 4294967296 units; a layer has at "
                   "most 4294967295 units"),
            std::string::npos)
      << m;
}

TEST(NetworkLimits, MinibatchActivationsAreCheckedAgainstTheBudget) {
  NetworkSpec spec;
  LayerSpec in, out;
  in.name = "Input";
  in.kind = LayerKind::Input;
  in.n = {1000, 1, 1, 1};
  out.name = "Output";
  out.kind = LayerKind::Output;
  out.n = {10, 1, 1, 1};
  out.sources = {"Input"};
  spec.layers = {in, out};
  spec.source = "net.json";
  auto backend = make_backend("cpu", 1);
  set_memory_budget(uint64_t(1) << 20);
  Network net(*backend, spec, {});
  const std::string m = error_of([&] { net.set_max_batch(1000); });
  EXPECT_NO_THROW(net.set_max_batch(10));
  set_memory_budget(0);
  EXPECT_NE(m.find("net.json: a minibatch of 1000 rows over 1010 units in all layers needs 11.6 "
                   "MiB, more than the memory budget of 1.0 MiB"),
            std::string::npos)
      << m;
}

}  // namespace
}  // namespace nn
