// The precision stage (api/precision_stage.h): a BF16 request on a CPU is measured against FP32,
// and where BF16 is the slower the run says so with both rates and computes in FP32, unless
// forced. The decision is tested with given rates; the stage with a backend posing as a CPU that
// runs BF16 and with rates handed in (this machine may have no BF16 at all); the measurement on
// the CPU backend itself, whose BF16 products run here through oneDNN whatever the CPU.
#include "api/precision_stage.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "backend/counting_backend.h"
#include "backend/cpu/cpu_backend.h"
#include "config/parse.h"
#include "core/error.h"
#include "distributed/communicator.h"

namespace nn::api {
namespace {

// Sparse input, then two dense products: H2 (16 over 64 units) and Out (300 over 16).
NetworkSpec three_layers() {
  return parse_network_json(R"({"ErrorFunction": "CrossEntropy", "Layers": [
    {"Name": "In", "Kind": "Input", "N": 300, "DataSet": "in", "Sparse": true},
    {"Name": "H1", "Kind": "Hidden", "N": 64, "Activation": "Sigmoid"},
    {"Name": "H2", "Kind": "Hidden", "N": 16, "Activation": "Sigmoid"},
    {"Name": "Out", "Kind": "Output", "N": 300, "DataSet": "out", "Activation": "Sigmoid"}]})",
                            "precision_stage.json");
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(PrecisionChoice, Bf16StaysWhereItIsFasterAndFallsBackWhereItIsSlower) {
  const ProductShape shape{256, 27278, 1024};
  PrecisionChoice faster = choose_precision(Precision::BF16, false, {100.0, 260.0}, shape);
  EXPECT_EQ(faster.precision, Precision::BF16);
  EXPECT_FALSE(faster.fell_back);
  ASSERT_EQ(faster.lines.size(), 1u);
  EXPECT_TRUE(contains(faster.lines[0], "BF16 260.0 GFLOP/s against FP32's 100.0"))
      << faster.lines[0];

  PrecisionChoice slower = choose_precision(Precision::BF16, false, {216.0, 137.0}, shape);
  EXPECT_EQ(slower.precision, Precision::FP32);
  EXPECT_TRUE(slower.fell_back);
  ASSERT_EQ(slower.lines.size(), 1u);
  const std::string& w = slower.lines[0];
  EXPECT_TRUE(contains(w, "warning: BF16 was asked for")) << w;
  EXPECT_TRUE(contains(w, "BF16 137.0 GFLOP/s against FP32's 216.0")) << w;
  EXPECT_TRUE(contains(w, "256 x 1024 by 1024 x 27278")) << w;
  EXPECT_TRUE(contains(w, "computes in FP32")) << w;
  EXPECT_TRUE(contains(w, "--force-precision")) << w;

  PrecisionChoice forced = choose_precision(Precision::BF16, true, {216.0, 137.0}, shape);
  EXPECT_EQ(forced.precision, Precision::BF16);
  EXPECT_FALSE(forced.fell_back);
  ASSERT_EQ(forced.lines.size(), 1u);
  EXPECT_TRUE(contains(forced.lines[0], "slower than FP32")) << forced.lines[0];
  EXPECT_TRUE(contains(forced.lines[0], "--force-precision")) << forced.lines[0];

  // Nothing measured (a GPU, or no dense product): BF16 as asked.
  PrecisionChoice unmeasured = choose_precision(Precision::BF16, false, {}, ProductShape{});
  EXPECT_EQ(unmeasured.precision, Precision::BF16);
  ASSERT_EQ(unmeasured.lines.size(), 1u);
  EXPECT_FALSE(contains(unmeasured.lines[0], "GFLOP/s"));

  PrecisionChoice fp32 = choose_precision(Precision::FP32, false, {216.0, 137.0}, shape);
  EXPECT_EQ(fp32.precision, Precision::FP32);
  EXPECT_TRUE(fp32.lines.empty());
}

TEST(PrecisionChoice, TheWidestDenseProductSkipsSparseInputs) {
  CpuBackend be(1);
  Network net(be, three_layers(), {{"In", true}});
  const ProductShape s = widest_dense_product(net, 128);
  // H1 reads the sparse input (not a dense product); Out (16 -> 300) beats H2 (64 -> 16).
  EXPECT_EQ(s.m, 128);
  EXPECT_EQ(s.n, 300);
  EXPECT_EQ(s.k, 16);

  const NetworkSpec linear = parse_network_json(R"({"ErrorFunction": "L2", "Layers": [
    {"Name": "In", "Kind": "Input", "N": 40, "DataSet": "in", "Sparse": true},
    {"Name": "Out", "Kind": "Output", "N": 40, "DataSet": "out", "Activation": "Linear"}]})",
                                                "linear.json");
  Network only_sparse(be, linear, {{"In", true}});
  EXPECT_EQ(widest_dense_product(only_sparse, 128).m, 0);
}

// Two ranks seen from rank 0: the other rank measured `other` (FP32 and BF16 GFLOP/s).
class TwoRanks : public LocalCommunicator {
 public:
  explicit TwoRanks(const double other[2]) : other_{other[0], other[1]} {}
  int size() const override { return 2; }
  void all_reduce_raw(void* data, size_t n, CommType type, ReduceOp op) override {
    ASSERT_EQ(type, CommType::Float64);
    ASSERT_EQ(op, ReduceOp::Sum);
    ASSERT_EQ(n, 2u);
    auto* d = static_cast<double*>(data);
    d[0] += other_[0];
    d[1] += other_[1];
  }

 private:
  double other_[2];
};

TEST(PrecisionStage, FallsBackToFp32AndSaysSoOnAPosingBf16Cpu) {
  test::CountingBackend be;
  be.pose_bf16 = true;
  be.set_precision(Precision::BF16);  // accepted, as on a CPU with AVX512-BF16
  Network net(be, three_layers(), {{"In", true}});
  LocalCommunicator one;
  std::vector<std::string> lines;
  const LogSink log = [&](const std::string& l) { lines.push_back(l); };
  ProductShape measured_shape;
  int measures = 0;
  auto slower = [&](Backend&, ProductShape s) {
    measured_shape = s;
    ++measures;
    return ProductRates{216.0, 137.0};
  };
  PrecisionChoice c = apply_precision_stage(Precision::BF16, false, 64, net, one, log, slower);
  EXPECT_EQ(measures, 1);
  EXPECT_EQ(measured_shape.n, 300);
  EXPECT_EQ(c.precision, Precision::FP32);
  EXPECT_EQ(be.precision(), Precision::FP32) << "the backend computes in FP32";
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(contains(lines[0], "64 x 16 by 16 x 300")) << lines[0];

  // Forced: measured and said, but BF16 kept.
  lines.clear();
  be.set_precision(Precision::BF16);
  c = apply_precision_stage(Precision::BF16, true, 64, net, one, log, slower);
  EXPECT_EQ(c.precision, Precision::BF16);
  EXPECT_EQ(be.precision(), Precision::BF16);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(contains(lines[0], "kept, as --force-precision asks")) << lines[0];

  // FP32 asked for: nothing measured, nothing said, the backend left alone.
  lines.clear();
  measures = 0;
  be.set_precision(Precision::FP32);
  c = apply_precision_stage(Precision::FP32, false, 64, net, one, log, slower);
  EXPECT_EQ(measures, 0);
  EXPECT_EQ(be.precision(), Precision::FP32);
  EXPECT_TRUE(lines.empty());

  // Under mpirun every rank decides on the mean of the ranks' rates: this rank measured BF16
  // slower (216 vs 137), the other one much faster (100 vs 400), so both keep BF16.
  lines.clear();
  be.set_precision(Precision::BF16);
  const double other[2] = {100.0, 400.0};
  TwoRanks two(other);
  c = apply_precision_stage(Precision::BF16, false, 64, net, two, log, slower);
  EXPECT_EQ(c.precision, Precision::BF16);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(contains(lines[0], "BF16 268.5 GFLOP/s against FP32's 158.0")) << lines[0];
}

TEST(PrecisionStage, DeviceBackendsAreNotMeasured) {
  test::CountingBackend be(/*host_memory=*/false);
  be.pose_bf16 = true;
  be.set_precision(Precision::BF16);
  Network net(be, three_layers(), {{"In", true}});
  LocalCommunicator one;
  int measures = 0;
  auto count = [&](Backend&, ProductShape) {
    ++measures;
    return ProductRates{216.0, 137.0};
  };
  const PrecisionChoice c =
      apply_precision_stage(Precision::BF16, false, 64, net, one, null_log(), count);
  EXPECT_EQ(measures, 0);
  EXPECT_EQ(c.precision, Precision::BF16);
  EXPECT_EQ(be.precision(), Precision::BF16);
}

TEST(PrecisionStage, MeasuresBothPrecisionsOnTheProductsTheStepRuns) {
  // A product above the probe's size: it is timed on fewer columns.
  test::CountingBackend be;
  be.pose_bf16 = true;
  be.set_precision(Precision::BF16);
  const ProductRates r = measure_product_rates(be, ProductShape{256, 27278, 128});
  EXPECT_GT(r.fp32_gflops, 0.0);
  EXPECT_GT(r.bf16_gflops, 0.0);
  EXPECT_EQ(be.gemms, 4u) << "a warm-up and three timed FP32 products";
  EXPECT_EQ(be.bf16_ab_gemms, 4u) << "a warm-up and three timed BF16 products";
  EXPECT_EQ(be.bf16_conversions, 5u) << "the weights once, the input before each product";
  EXPECT_EQ(be.precision(), Precision::BF16) << "the backend's precision is left as it was";

  // Nothing to measure.
  be.clear();
  const ProductRates none = measure_product_rates(be, ProductShape{});
  EXPECT_EQ(none.fp32_gflops, 0.0);
  EXPECT_EQ(none.bf16_gflops, 0.0);
  EXPECT_EQ(be.gemms + be.bf16_ab_gemms, 0u);
}

// The real thing where this CPU runs BF16 products (AVX512-BF16 and oneDNN's kernels for it).
TEST(PrecisionStage, MeasuresTheCpuBackendWhereItRunsBf16) {
  CpuBackend be(2);
  try {
    be.set_precision(Precision::BF16);
  } catch (const ConfigError& e) {
    GTEST_SKIP() << e.what();
  }
  const ProductRates r = measure_product_rates(be, ProductShape{256, 4096, 1024});
  EXPECT_GT(r.fp32_gflops, 0.0);
  EXPECT_GT(r.bf16_gflops, 0.0);
  EXPECT_EQ(be.precision(), Precision::BF16);
}

}  // namespace
}  // namespace nn::api
