// BF16 arithmetic (docs/wide-outputs.md, "BF16 arithmetic"): the conversions of
// backend/math/bf16_math.h against a rounding reference written here (in double), the CPU's
// capability check (cpu/bf16_support.h) on made-up flag sets, and on every backend: conversion,
// the BF16 gemm against a double reference over BF16-rounded operands (FP32 accumulation), and
// the stated tolerance against FP32: |C_bf16 - C_fp32| <= 2^-7 * |alpha| * sum_p |a_ip b_pj|
// plus FP32 accumulation error. The backend tests skip where BF16 is refused (no AVX512-BF16).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/bf16_support.h"
#include "backend/device_array.h"
#include "backend/math/bf16_math.h"
#include "backend_test_util.h"
#include "core/error.h"
#include "core/random.h"

namespace nn {
namespace {

using test::to_device;
using test::uniform;

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// The BF16 value nearest to finite f, ties to the even mantissa, found by comparing the two
// neighbours in double (no bit tricks): returns its bits.
uint16_t reference_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  const uint16_t down = uint16_t(u >> 16);  // toward zero
  const uint16_t up = uint16_t(down + 1);   // away from zero (may become infinity)
  const double x = std::fabs(double(f));
  const double lo = std::fabs(double(math::bf16_to_float(down)));
  // Past the largest BF16 the next step would be 2^128: IEEE rounds to infinity from half way.
  const double hi =
      (up & 0x7fffu) == 0x7f80u ? std::ldexp(1.0, 128) : std::fabs(double(math::bf16_to_float(up)));
  if (x - lo < hi - x) return down;
  if (hi - x < x - lo) return up;
  return (down & 1u) ? up : down;
}

TEST(Bf16Math, KnownValuesAndTiesToEven) {
  EXPECT_EQ(math::float_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(math::float_to_bf16(-2.0f), 0xc000);
  EXPECT_EQ(math::float_to_bf16(0.0f), 0x0000);
  EXPECT_EQ(math::float_to_bf16(-0.0f), 0x8000);
  EXPECT_EQ(math::float_to_bf16(from_bits(0x3f808000)), 0x3f80);  // tie, even stays
  EXPECT_EQ(math::float_to_bf16(from_bits(0x3f818000)), 0x3f82);  // tie, odd rounds up
  EXPECT_EQ(math::float_to_bf16(from_bits(0x3f808001)), 0x3f81);  // above the tie
  EXPECT_EQ(math::float_to_bf16(from_bits(0x3f807fff)), 0x3f80);  // below the tie
  EXPECT_EQ(math::float_to_bf16(from_bits(0x00008000)), 0x0000);  // subnormal tie
  EXPECT_EQ(math::float_to_bf16(from_bits(0x00018000)), 0x0002);
  EXPECT_EQ(math::bf16_to_float(0x3f80), 1.0f);
  EXPECT_EQ(math::bf16_to_float(0xc040), -3.0f);
}

TEST(Bf16Math, InfinityNaNAndOverflow) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(math::float_to_bf16(inf), 0x7f80);
  EXPECT_EQ(math::float_to_bf16(-inf), 0xff80);
  // The largest float rounds past the largest BF16 (0x7f7f) to infinity, as IEEE rounding does.
  EXPECT_EQ(math::float_to_bf16(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_EQ(math::float_to_bf16(from_bits(0x7f7f7fff)), 0x7f7f);
  // NaNs stay NaN, including those whose payload is only in the low 16 bits.
  for (uint32_t bits : {0x7fc00000u, 0x7f800001u, 0xff800001u, 0x7fffffffu})
    EXPECT_TRUE(std::isnan(math::bf16_to_float(math::float_to_bf16(from_bits(bits)))))
        << std::hex << bits;
}

TEST(Bf16Math, MatchesReferenceRoundingOnRandomBitPatterns) {
  Rng rng(18);
  int checked = 0;
  for (int i = 0; i < 400000; ++i) {
    const uint32_t bits = uint32_t(rng.uniform() * 4294967296.0);
    const float f = from_bits(bits);
    if (!std::isfinite(f)) continue;
    ASSERT_EQ(math::float_to_bf16(f), reference_bf16(f)) << std::hex << bits;
    const float r = math::round_to_bf16(f);
    if (std::isfinite(r) && std::fabs(f) >= std::numeric_limits<float>::min())
      ASSERT_LE(std::fabs(double(r) - f), std::ldexp(std::fabs(double(f)), -8)) << f;
    ++checked;
  }
  EXPECT_GT(checked, 390000);
}

TEST(Bf16Math, OperandSpanCoversPaddedRows) {
  EXPECT_EQ(math::operand_span(3, 4, 7), size_t(2 * 7 + 4));
  EXPECT_EQ(math::operand_span(1, 5, 9), size_t(5));
  EXPECT_EQ(math::operand_span(0, 5, 9), size_t(0));
  EXPECT_EQ(math::operand_span(4, 0, 9), size_t(0));
}

// ---- the CPU's capability check --------------------------------------------------------------

const std::vector<std::string> kBf16Flags = {"fpu",      "sse2",     "avx2",       "avx512f",
                                             "avx512bw", "avx512vl", "avx512_bf16"};

TEST(Bf16Support, ReadsTheFlagsLineOfCpuinfo) {
  const std::string cpuinfo =
      "processor\t: 0\nmodel name\t: Some CPU\nflags\t\t: fpu avx512f avx512_bf16\n"
      "bugs\t\t: none\n\nprocessor\t: 1\nflags\t\t: fpu\n";
  EXPECT_EQ(cpu::cpuinfo_flags(cpuinfo),
            (std::vector<std::string>{"fpu", "avx512f", "avx512_bf16"}));
  EXPECT_TRUE(cpu::cpuinfo_flags("processor : 0\n").empty());
}

TEST(Bf16Support, AcceptsNativeBf16AndNamesWhatIsMissing) {
  const cpu::DnnlBf16 full{true, true};
  EXPECT_EQ(cpu::bf16_refusal(kBf16Flags, full), "");

  std::vector<std::string> no_bf16 = kBf16Flags;
  no_bf16.pop_back();
  const std::string lacks = cpu::bf16_refusal(no_bf16, full);
  EXPECT_NE(lacks.find("lacks avx512_bf16"), std::string::npos) << lacks;
  EXPECT_NE(lacks.find("--precision fp32"), std::string::npos) << lacks;

  // An AVX2-only CPU lacks every AVX-512 part.
  const std::string avx2 = cpu::bf16_refusal({"fpu", "avx2", "fma"}, full);
  EXPECT_NE(avx2.find("avx512f, avx512bw, avx512vl, avx512_bf16"), std::string::npos) << avx2;

  EXPECT_NE(cpu::bf16_refusal(kBf16Flags, {false, false}).find("oneDNN"), std::string::npos);
  EXPECT_NE(cpu::bf16_refusal(kBf16Flags, {true, false}).find("ONEDNN_MAX_CPU_ISA"),
            std::string::npos);
}

// ---- every backend -----------------------------------------------------------------------------

class BackendBf16 : public test::BackendTest {
 protected:
  // A backend in BF16 precision, or a skip naming why this one refuses it.
  std::unique_ptr<Backend> bf16_backend(int threads = 2) {
    auto be = backend(threads);
    try {
      be->set_precision(Precision::BF16);
    } catch (const ConfigError& e) {
      refusal_ = e.what();
      return nullptr;
    }
    return be;
  }
  std::string refusal_;
};

#define NN_BF16_BACKEND_OR_SKIP(var, threads) \
  auto var = bf16_backend(threads);           \
  if (!var) GTEST_SKIP() << "BF16 refused here: " << refusal_

TEST_P(BackendBf16, Fp32IsTheDefaultAndBf16IsRefusedOnlyWhereUnsupported) {
  auto be = backend(2);
  EXPECT_EQ(be->precision(), Precision::FP32);
  if (on_cpu()) {
    const std::string why = cpu::bf16_refusal(cpu::host_cpu_flags(), cpu::dnnl_bf16_support());
    if (why.empty()) {
      be->set_precision(Precision::BF16);
      EXPECT_EQ(be->precision(), Precision::BF16);
    } else {
      EXPECT_THROW(be->set_precision(Precision::BF16), ConfigError);
      EXPECT_EQ(be->precision(), Precision::FP32);
    }
  }
  be->set_precision(Precision::FP32);
  EXPECT_EQ(be->precision(), Precision::FP32);
}

TEST_P(BackendBf16, ConversionMatchesTheRoundingRule) {
  auto be = backend(2);
  Rng rng(3);
  auto x = uniform(100003, rng, -1e4, 1e4);  // parallel on the CPU
  x[0] = from_bits(0x3f808000);
  x[1] = from_bits(0x3f818000);
  x[2] = std::numeric_limits<float>::infinity();
  x[3] = std::nanf("");
  x[4] = -0.0f;
  auto dx = to_device(*be, x);
  DeviceArray<uint16_t> dy(*be, x.size());
  be->convert_to_bf16(dx.data(), dy.data(), x.size());
  const std::vector<uint16_t> y = dy.to_host();
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i])) {
      ASSERT_TRUE(std::isnan(math::bf16_to_float(y[i])));
      continue;
    }
    ASSERT_EQ(y[i], reference_bf16(x[i])) << "at " << i << ": " << x[i];
  }
}

// One product C = alpha op(A) op(B) + beta C in BF16 mode, checked three ways (see the file
// comment). Leading dimensions are padded to catch stride mistakes.
void check_bf16_gemm(Backend& be, bool ta, bool tb, int m, int n, int k, float alpha, float beta) {
  Rng rng(uint64_t(m * 131 + n * 7 + k + ta * 2 + tb));
  const int a_rows = ta ? k : m, a_cols = ta ? m : k;
  const int b_rows = tb ? n : k, b_cols = tb ? k : n;
  const int lda = a_cols + 3, ldb = b_cols + 1, ldc = n + 2;
  auto a = uniform(size_t(a_rows) * lda, rng, -1, 1);
  auto b = uniform(size_t(b_rows) * ldb, rng, -1, 1);
  auto c = uniform(size_t(m) * ldc, rng, -1, 1);
  // Padding holds NaN: a product that read it would show.
  for (int r = 0; r < a_rows; ++r)
    for (int j = a_cols; j < lda; ++j) a[size_t(r) * lda + j] = std::nanf("");
  std::vector<double> exact(c.size()), rounded(c.size()), magnitude(c.size());
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double s = 0.0, s16 = 0.0, mag = 0.0;
      for (int p = 0; p < k; ++p) {
        const float av = ta ? a[size_t(p) * lda + i] : a[size_t(i) * lda + p];
        const float bv = tb ? b[size_t(j) * ldb + p] : b[size_t(p) * ldb + j];
        s += double(av) * bv;
        s16 += double(math::round_to_bf16(av)) * math::round_to_bf16(bv);
        mag += std::fabs(double(av) * bv);
      }
      const size_t at = size_t(i) * ldc + j;
      exact[at] = alpha * s + beta * double(c[at]);
      rounded[at] = alpha * s16 + beta * double(c[at]);
      magnitude[at] = std::fabs(alpha) * mag;
    }
  auto da = to_device(be, a), db = to_device(be, b), dc = to_device(be, c);
  be.gemm(ta, tb, m, n, k, alpha, da.data(), lda, db.data(), ldb, beta, dc.data(), ldc);
  const std::vector<float> got = dc.to_host();
  double largest_bf16_effect = 0.0, largest_accumulation_tol = 0.0;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      const size_t at = size_t(i) * ldc + j;
      // FP32 accumulation of the BF16 products: k roundings of at most 2^-24 each.
      const double accumulation =
          (k + 2) * std::ldexp(magnitude[at] + std::fabs(beta * c[at]), -24) + 1e-30;
      ASSERT_LE(std::fabs(got[at] - rounded[at]), accumulation)
          << "ta=" << ta << " tb=" << tb << " (" << i << ", " << j << ") vs BF16 reference";
      // The stated tolerance against FP32: each operand's rounding is at most 2^-8 relative
      // (8 significant bits), so a product's is at most 2^-7 (1 + 2^-9).
      ASSERT_LE(std::fabs(got[at] - exact[at]),
                std::ldexp(magnitude[at], -7) * (1 + 1.0 / 512) + accumulation)
          << "ta=" << ta << " tb=" << tb << " (" << i << ", " << j << ") vs FP32 reference";
      largest_bf16_effect = std::max(largest_bf16_effect, std::fabs(exact[at] - rounded[at]));
      largest_accumulation_tol = std::max(largest_accumulation_tol, accumulation);
    }
  // The operands really were rounded: the BF16 reference differs from FP32 by more than the
  // accumulation tolerance that the result met.
  EXPECT_GT(largest_bf16_effect, largest_accumulation_tol);
  // The padding of C is untouched.
  for (int i = 0; i < m; ++i)
    for (int j = n; j < ldc; ++j) ASSERT_EQ(got[size_t(i) * ldc + j], c[size_t(i) * ldc + j]);
}

TEST_P(BackendBf16, GemmRoundsOperandsAndAccumulatesInFp32) {
  NN_BF16_BACKEND_OR_SKIP(be, 2);
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      check_bf16_gemm(*be, ta, tb, 17, 23, 31, 1.0f, 0.0f);
      check_bf16_gemm(*be, ta, tb, 5, 64, 9, -0.5f, 1.0f);
      check_bf16_gemm(*be, ta, tb, 64, 300, 257, 0.25f, 0.5f);  // split over threads by columns
      check_bf16_gemm(*be, ta, tb, 300, 40, 200, 1.0f, 1.0f);   // split by rows
    }
}

TEST_P(BackendBf16, GemmWithConvertedBEqualsGemmAndWorksInFp32Mode) {
  NN_BF16_BACKEND_OR_SKIP(be, 2);
  auto fp32 = backend(2);  // gemm_bf16_b does not depend on the precision setting
  const int m = 40, n = 96, k = 130;
  for (bool tb : {false, true}) {
    Rng rng(7 + tb);
    auto a = uniform(size_t(m) * k, rng, -2, 2);
    auto b = uniform(size_t(k) * n, rng, -2, 2);
    auto c = uniform(size_t(m) * n, rng, -1, 1);
    const int ldb = tb ? k : n;
    auto da = to_device(*be, a), db = to_device(*be, b), dc = to_device(*be, c);
    be->gemm(false, tb, m, n, k, 0.5f, da.data(), k, db.data(), ldb, 1.0f, dc.data(), n);
    DeviceArray<uint16_t> b16(*be, b.size());
    be->convert_to_bf16(db.data(), b16.data(), b.size());
    auto dc2 = to_device(*be, c);
    be->gemm_bf16_b(false, tb, m, n, k, 0.5f, da.data(), k, b16.data(), ldb, 1.0f, dc2.data(), n);
    EXPECT_TRUE(test::bitwise_equal(dc.to_host(), dc2.to_host())) << "tb=" << tb;

    auto fa = to_device(*fp32, a), fb = to_device(*fp32, b), fc = to_device(*fp32, c);
    DeviceArray<uint16_t> fb16(*fp32, b.size());
    fp32->convert_to_bf16(fb.data(), fb16.data(), b.size());
    fp32->gemm_bf16_b(false, tb, m, n, k, 0.5f, fa.data(), k, fb16.data(), ldb, 1.0f, fc.data(), n);
    EXPECT_TRUE(test::bitwise_equal(dc.to_host(), fc.to_host())) << "tb=" << tb;
  }
}

// Both operands converted by the caller (a layer converts its input and delta once and reuses
// them): the same bits as gemm in BF16 mode, for every transposition, in FP32 mode too.
TEST_P(BackendBf16, GemmWithBothOperandsConvertedEqualsGemm) {
  NN_BF16_BACKEND_OR_SKIP(be, 2);
  auto fp32 = backend(2);
  const int m = 40, n = 96, k = 130;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      Rng rng(11 + 2 * ta + tb);
      auto a = uniform(size_t(m) * k, rng, -2, 2);
      auto b = uniform(size_t(k) * n, rng, -2, 2);
      auto c = uniform(size_t(m) * n, rng, -1, 1);
      const int lda = ta ? m : k, ldb = tb ? k : n;
      auto da = to_device(*be, a), db = to_device(*be, b), dc = to_device(*be, c);
      be->gemm(ta, tb, m, n, k, 0.5f, da.data(), lda, db.data(), ldb, 1.0f, dc.data(), n);
      for (Backend* on : {be.get(), fp32.get()}) {
        auto oa = to_device(*on, a), ob = to_device(*on, b), oc = to_device(*on, c);
        DeviceArray<uint16_t> a16(*on, a.size()), b16(*on, b.size());
        on->convert_to_bf16(oa.data(), a16.data(), a.size());
        on->convert_to_bf16(ob.data(), b16.data(), b.size());
        on->gemm_bf16_ab(ta, tb, m, n, k, 0.5f, a16.data(), lda, b16.data(), ldb, 1.0f, oc.data(),
                         n);
        EXPECT_TRUE(test::bitwise_equal(dc.to_host(), oc.to_host()))
            << "ta=" << ta << " tb=" << tb << (on == be.get() ? " (BF16 mode)" : " (FP32 mode)");
      }
    }
}

// The multi-tensor optimizer step writes a tensor's BF16 copy from its updated values: the bits
// convert_to_bf16 gives after the step, for the tensors that ask; the others' copies untouched.
TEST_P(BackendBf16, OptimizerStepWritesTheUpdatedValuesBf16Copy) {
  auto be = backend(2);
  Rng rng(5);
  const size_t n0 = 20000, n1 = 777;  // several chunks of the CUDA kernel, and a small one
  auto w0 = uniform(n0, rng, -1, 1), g0 = uniform(n0, rng, -1, 1);
  auto w1 = uniform(n1, rng, -1, 1), g1 = uniform(n1, rng, -1, 1);
  auto dw0 = to_device(*be, w0), dg0 = to_device(*be, g0), dw1 = to_device(*be, w1),
       dg1 = to_device(*be, g1);
  std::vector<float> zeros0(n0, 0.0f), zeros1(n1, 0.0f);
  auto s0 = to_device(*be, zeros0), s1 = to_device(*be, zeros1);
  DeviceArray<uint16_t> copy0(*be, n0), copy1(*be, n1);
  const std::vector<uint16_t> untouched(n1, 0x7fc1);
  copy1.upload(untouched);
  OptimizerParams p;
  p.kind = OptimizerKind::RMSProp;
  p.alpha = 0.01f;
  p.lambda = 0.001f;
  p.mu = 0.9f;
  p.step = 1;
  OptimizerTensor t[2];
  t[0].w = dw0.data();
  t[0].g = dg0.data();
  t[0].state0 = s0.data();
  t[0].n = n0;
  t[0].w_bf16 = copy0.data();
  t[1].w = dw1.data();
  t[1].g = dg1.data();
  t[1].state0 = s1.data();
  t[1].n = n1;
  t[1].regularize = false;
  for (int step = 0; step < 2; ++step) be->optimizer_step_multi(p, t, 2);
  const std::vector<float> updated = dw0.to_host();
  EXPECT_NE(updated, w0);
  const std::vector<uint16_t> got = copy0.to_host();
  for (size_t i = 0; i < n0; ++i) ASSERT_EQ(got[i], math::float_to_bf16(updated[i])) << "at " << i;
  EXPECT_EQ(copy1.to_host(), untouched);
}

TEST_P(BackendBf16, ZeroInnerDimensionScalesC) {
  NN_BF16_BACKEND_OR_SKIP(be, 1);
  auto c = to_device(*be, std::vector<float>{1, 2, 3, 4});
  be->gemm(false, false, 2, 2, 0, 1.0f, nullptr, 1, nullptr, 2, 0.5f, c.data(), 2);
  EXPECT_EQ(c.to_host(), (std::vector<float>{0.5f, 1, 1.5f, 2}));
  be->gemm_bf16_b(false, false, 2, 2, 0, 1.0f, nullptr, 1, nullptr, 2, 0.0f, c.data(), 2);
  EXPECT_EQ(c.to_host(), (std::vector<float>{0, 0, 0, 0}));
}

TEST_P(BackendBf16, FewerThreadsGiveTheSameProducts) {
  NN_BF16_BACKEND_OR_SKIP(one, 1);
  NN_BF16_BACKEND_OR_SKIP(two, 2);
  if (!on_cpu()) GTEST_SKIP() << "threads are the CPU backend's";
  const int m = 256, n = 600, k = 128;
  Rng rng(11);
  auto a = uniform(size_t(m) * k, rng, -1, 1);
  auto b = uniform(size_t(k) * n, rng, -1, 1);
  std::vector<std::vector<float>> results;
  for (Backend* be : {one.get(), two.get()}) {
    auto da = to_device(*be, a), db = to_device(*be, b);
    auto dc = to_device(*be, std::vector<float>(size_t(m) * n, 0.0f));
    be->gemm(false, false, m, n, k, 1.0f, da.data(), k, db.data(), n, 0.0f, dc.data(), n);
    results.push_back(dc.to_host());
  }
  // Each element's sum over k is one kernel's, whichever block of C it falls in. Not promised
  // bit for bit by oneDNN across block widths, so the check is the FP32 accumulation bound.
  for (size_t i = 0; i < results[0].size(); ++i)
    ASSERT_NEAR(results[0][i], results[1][i], 1e-5 * k) << i;
}

NN_INSTANTIATE_ON_BACKENDS(BackendBf16);

}  // namespace
}  // namespace nn
