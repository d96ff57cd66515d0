// Padded rows in the kernels (ActivationParams::row_stride, LossParams::row_stride): an
// activation, its backward pass, a loss and the fused activation + loss over rows `stride`
// floats apart give, in each row's first `cols` columns, the values the same call gives over
// contiguous rows, and never touch the rest of a row. Every test runs on every backend.
// The values agree to a few ulp, not always to the bit: on the CPU a unit that falls in a
// vector loop's scalar tail in one layout and in its body in the other may be computed with
// and without fused multiply-adds (SoftPlus's polynomials show it).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/device_array.h"
#include "backend_test_util.h"
#include "core/random.h"

namespace nn {
namespace {

using test::all_near;
using test::DeviceTargets;
using test::RandomTargets;
using test::Targets;
using test::to_device;
using test::uniform;

constexpr uint32_t kRows = 5, kCols = 37, kStride = 48;
// What the padding holds before a call: a call that wrote it would change it.
constexpr float kSentinel = -1234.5f;

// [rows][stride] copy of contiguous [rows][cols] values, the padding holding kSentinel.
std::vector<float> widen(const std::vector<float>& v, uint32_t rows, uint32_t cols,
                         uint32_t stride) {
  std::vector<float> out(size_t(rows) * stride, kSentinel);
  for (uint32_t r = 0; r < rows; ++r)
    std::copy_n(v.data() + size_t(r) * cols, cols, out.data() + size_t(r) * stride);
  return out;
}

// The units of each row of a [rows][stride] array, and whether its padding is still kSentinel.
std::vector<float> units_of(const std::vector<float>& v, uint32_t rows, uint32_t cols,
                            uint32_t stride) {
  std::vector<float> out(size_t(rows) * cols);
  for (uint32_t r = 0; r < rows; ++r)
    std::copy_n(v.data() + size_t(r) * stride, cols, out.data() + size_t(r) * cols);
  return out;
}
// The same values within a few ulp (see the top of the file), as doubles for all_near.
::testing::AssertionResult same(const std::vector<float>& got, const std::vector<float>& want) {
  return all_near(got, std::vector<double>(want.begin(), want.end()), 1e-7, 1e-6);
}
bool padding_untouched(const std::vector<float>& v, uint32_t rows, uint32_t cols, uint32_t stride) {
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t c = cols; c < stride; ++c)
      if (std::memcmp(&v[size_t(r) * stride + c], &kSentinel, sizeof(float)) != 0) return false;
  return true;
}

ActivationParams activation(Activation a) {
  ActivationParams p;
  p.kind = a;
  p.slope = 0.2f;
  p.alpha = 1.3f;
  p.max_value = 1.7f;
  return p;
}

class PaddedRowsKernels : public test::BackendTest {};

TEST_P(PaddedRowsKernels, ActivationsOverPaddedRowsAreThoseOfTheUnits) {
  auto be = backend();
  Rng rng(3);
  for (Activation kind : test::kAllActivations) {
    SCOPED_TRACE(to_string(kind));
    const std::vector<float> z = uniform(size_t(kRows) * kCols, rng, -3.0, 3.0);
    ActivationParams p = activation(kind);
    auto plain = to_device(*be, z);
    be->activate(p, plain.data(), kRows, kCols);
    auto padded = to_device(*be, widen(z, kRows, kCols, kStride));
    p.row_stride = kStride;
    be->activate(p, padded.data(), kRows, kCols);
    const std::vector<float> got = padded.to_host();
    EXPECT_TRUE(same(units_of(got, kRows, kCols, kStride), plain.to_host()));
    EXPECT_TRUE(padding_untouched(got, kRows, kCols, kStride));

    // Backward: delta *= f'(a), through a of the forward pass.
    const std::vector<float> d = uniform(size_t(kRows) * kCols, rng, -1.0, 1.0);
    auto d_plain = to_device(*be, d);
    p.row_stride = 0;
    be->activation_backward(p, plain.data(), d_plain.data(), kRows, kCols);
    auto d_padded = to_device(*be, widen(d, kRows, kCols, kStride));
    p.row_stride = kStride;
    be->activation_backward(p, padded.data(), d_padded.data(), kRows, kCols);
    const std::vector<float> got_d = d_padded.to_host();
    EXPECT_TRUE(same(units_of(got_d, kRows, kCols, kStride), d_plain.to_host()));
    EXPECT_TRUE(padding_untouched(got_d, kRows, kCols, kStride));
  }
}

LossParams loss_params(ErrorFunction f, Activation a) {
  LossParams p;
  p.function = f;
  p.activation = activation(a);
  return p;
}

// Activations every error function takes: in (0, 1), rows summing to 1 for SoftMax.
std::vector<float> activations_for(Backend& be, Activation kind, Rng& rng) {
  std::vector<float> a = uniform(size_t(kRows) * kCols, rng, -2.0, 2.0);
  auto d = to_device(be, a);
  be.activate(activation(kind == Activation::SoftMax ? kind : Activation::Sigmoid), d.data(), kRows,
              kCols);
  return d.to_host();
}

TEST_P(PaddedRowsKernels, LossesOverPaddedRowsAreThoseOfTheUnits) {
  auto be = backend();
  Rng rng(5);
  const Activation kinds[] = {Activation::Sigmoid, Activation::SoftMax, Activation::Linear};
  for (ErrorFunction f : test::kAllErrorFunctions) {
    for (Activation kind : kinds) {
      for (Targets targets : test::kAllTargets) {
        SCOPED_TRACE(std::string(to_string(f)) + " " + to_string(kind) + " targets " +
                     std::to_string(int(targets)));
        const RandomTargets host_t(kRows, kCols, targets, 6, rng);
        const DeviceTargets t(*be, host_t.view(), kRows, kCols);
        const std::vector<float> a = activations_for(*be, kind, rng);
        LossParams p = loss_params(f, kind);
        auto a_plain = to_device(*be, a);
        DeviceArray<float> d_plain(*be, size_t(kRows) * kCols);
        const double e_plain =
            be->loss_and_delta(p, a_plain.data(), t.view(), kRows, kCols, d_plain.data());
        auto a_padded = to_device(*be, widen(a, kRows, kCols, kStride));
        auto d_padded = to_device(*be, std::vector<float>(size_t(kRows) * kStride, kSentinel));
        p.row_stride = kStride;
        const double e_padded =
            be->loss_and_delta(p, a_padded.data(), t.view(), kRows, kCols, d_padded.data());
        EXPECT_NEAR(e_padded, e_plain, 1e-6 * std::fabs(e_plain));
        const std::vector<float> got = d_padded.to_host();
        EXPECT_TRUE(same(units_of(got, kRows, kCols, kStride), d_plain.to_host()));
        EXPECT_TRUE(padding_untouched(got, kRows, kCols, kStride));
        EXPECT_TRUE(padding_untouched(a_padded.to_host(), kRows, kCols, kStride));
      }
    }
  }
}

// The output layer's fused step: z -> a and the loss in one call (Backend::activate_loss_
// accumulate), with the activation and the loss both told the stride.
TEST_P(PaddedRowsKernels, FusedActivationAndLossOverPaddedRowsAreThoseOfTheUnits) {
  auto be = backend();
  Rng rng(9);
  const std::pair<ErrorFunction, Activation> cases[] = {
      {ErrorFunction::CrossEntropy, Activation::Sigmoid},
      {ErrorFunction::CrossEntropy, Activation::SoftMax},
      {ErrorFunction::L2, Activation::SoftMax},
      {ErrorFunction::L2, Activation::Tanh},
      {ErrorFunction::ScaledMarginalCrossEntropy, Activation::Sigmoid}};
  for (const auto& [f, kind] : cases) {
    for (Targets targets : test::kAllTargets) {
      SCOPED_TRACE(std::string(to_string(f)) + " " + to_string(kind) + " targets " +
                   std::to_string(int(targets)));
      const RandomTargets host_t(kRows, kCols, targets, 6, rng);
      const DeviceTargets t(*be, host_t.view(), kRows, kCols);
      const std::vector<float> z = uniform(size_t(kRows) * kCols, rng, -3.0, 3.0);
      LossParams p = loss_params(f, kind);
      ActivationParams act = activation(kind);
      auto z_plain = to_device(*be, z);
      DeviceArray<float> d_plain(*be, size_t(kRows) * kCols);
      auto sum_plain = to_device(*be, std::vector<double>{0.0});
      be->activate_loss_accumulate(act, p, z_plain.data(), t.view(), kRows, kCols, d_plain.data(),
                                   sum_plain.data());
      auto z_padded = to_device(*be, widen(z, kRows, kCols, kStride));
      auto d_padded = to_device(*be, std::vector<float>(size_t(kRows) * kStride, kSentinel));
      auto sum_padded = to_device(*be, std::vector<double>{0.0});
      p.row_stride = act.row_stride = kStride;
      be->activate_loss_accumulate(act, p, z_padded.data(), t.view(), kRows, kCols, d_padded.data(),
                                   sum_padded.data());
      EXPECT_NEAR(sum_padded.to_host()[0], sum_plain.to_host()[0],
                  1e-6 * std::fabs(sum_plain.to_host()[0]));
      const std::vector<float> a = z_padded.to_host(), d = d_padded.to_host();
      EXPECT_TRUE(same(units_of(a, kRows, kCols, kStride), z_plain.to_host()));
      EXPECT_TRUE(same(units_of(d, kRows, kCols, kStride), d_plain.to_host()));
      EXPECT_TRUE(padding_untouched(a, kRows, kCols, kStride));
      EXPECT_TRUE(padding_untouched(d, kRows, kCols, kStride));
    }
  }
}

// The alignment the Network pads to: 1 on the CPU unless asked, what set_row_alignment says,
// and 0 taken as 1.
TEST_P(PaddedRowsKernels, RowAlignmentIsTheBackendsSetting) {
  auto be = backend();
  if (on_cpu() && !std::getenv("NN_CPU_ROW_ALIGN")) EXPECT_EQ(be->row_alignment(), 1u);
  be->set_row_alignment(16);
  EXPECT_EQ(be->row_alignment(), 16u);
  be->set_row_alignment(0);
  EXPECT_EQ(be->row_alignment(), 1u);
}

NN_INSTANTIATE_ON_BACKENDS(PaddedRowsKernels);

// The environment's setting: unset or empty gives the default, a count from 1 to 4096 itself,
// anything else a ConfigError naming the variable.
TEST(RowAlignmentFromEnv, ParsesACountOrNamesTheVariable) {
  const char* name = "NN_TEST_ROW_ALIGN";
  unsetenv(name);
  EXPECT_EQ(row_alignment_from_env(name, 8), 8u);
  setenv(name, "", 1);
  EXPECT_EQ(row_alignment_from_env(name, 8), 8u);
  setenv(name, "1", 1);
  EXPECT_EQ(row_alignment_from_env(name, 8), 1u);
  setenv(name, "32", 1);
  EXPECT_EQ(row_alignment_from_env(name, 8), 32u);
  for (const char* bad : {"0", "-8", "8x", "4097", "+8"}) {
    setenv(name, bad, 1);
    try {
      row_alignment_from_env(name, 8);
      ADD_FAILURE() << bad << " was taken";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string(name) + "=" + bad), std::string::npos)
          << e.what();
    }
  }
  unsetenv(name);
}

// The CPU backend reads NN_CPU_ROW_ALIGN when it is made (tools and the API make theirs).
TEST(RowAlignmentFromEnv, TheCpuBackendTakesNnCpuRowAlign) {
  setenv("NN_CPU_ROW_ALIGN", "8", 1);
  EXPECT_EQ(make_backend("cpu", 1)->row_alignment(), 8u);
  setenv("NN_CPU_ROW_ALIGN", "eight", 1);
  EXPECT_THROW(make_backend("cpu", 1), ConfigError);
  unsetenv("NN_CPU_ROW_ALIGN");
  EXPECT_EQ(make_backend("cpu", 1)->row_alignment(), 1u);
}

}  // namespace
}  // namespace nn
