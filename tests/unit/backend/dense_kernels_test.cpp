// Memory, elementwise, reduction and dense linear-algebra kernels of every backend against naive
// double-precision references written here (not backend/math/'s formulas).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/device_array.h"
#include "backend/math/bf16_math.h"
#include "backend_test_util.h"
#include "core/error.h"
#include "core/random.h"

namespace nn {
namespace {

using test::all_near;
using test::to_device;
using test::uniform;

class BackendMemory : public test::BackendTest {};
class BackendElementwise : public test::BackendTest {};
class BackendGemm : public test::BackendTest {};
class BackendBias : public test::BackendTest {};
class BackendColumnSums : public test::BackendTest {};

TEST_P(BackendMemory, AllocationsAre64ByteAlignedAndCopiesRoundTrip) {
  auto be = backend(2);
  for (size_t bytes : {size_t(0), size_t(1), size_t(63), size_t(4096 + 4)}) {
    void* p = be->allocate(bytes);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << bytes;  // cudaMalloc gives 256
    be->release(p);
  }
  be->release(nullptr);  // must be harmless
  std::vector<float> host = {1, 2, 3, 4, 5}, back(5, 0.0f), other(5, 0.0f);
  float* a = static_cast<float*>(be->allocate(5 * sizeof(float)));
  float* b = static_cast<float*>(be->allocate(5 * sizeof(float)));
  be->upload(a, host.data(), 5 * sizeof(float));
  be->copy(b, a, 5 * sizeof(float));
  be->download(back.data(), b, 5 * sizeof(float));
  be->synchronize();
  EXPECT_EQ(back, host);
  be->release(a);
  be->release(b);
}

TEST_P(BackendElementwise, FillAxpyScaleAndReductions) {
  auto be = backend(2);
  Rng rng(3);
  // Big enough to take the parallel path, odd so the tail is exercised.
  const size_t n = (size_t(1) << 17) + 7;
  auto x = uniform(n, rng, -2, 2), y = uniform(n, rng, -1, 1);
  auto dx = to_device(*be, x), dy = to_device(*be, y);
  std::vector<double> want(n);
  for (size_t i = 0; i < n; ++i) want[i] = double(y[i]) + 0.5 * double(x[i]);
  be->axpy(n, 0.5f, dx.data(), dy.data());
  y = dy.to_host();
  EXPECT_TRUE(all_near(y, want, 1e-6, 1e-6));
  for (size_t i = 0; i < n; ++i) want[i] = double(y[i]) * -3.0;
  be->scale(dy.data(), n, -3.0f);
  y = dy.to_host();
  EXPECT_TRUE(all_near(y, want, 1e-6, 1e-6));

  double sq = 0.0, ab = 0.0;
  for (float v : x) {
    sq += double(v) * v;
    ab += std::fabs(double(v));
  }
  EXPECT_NEAR(be->sum_squares(dx.data(), n), sq, 1e-9 * sq);
  EXPECT_NEAR(be->sum_abs(dx.data(), n), ab, 1e-9 * ab);
  EXPECT_EQ(be->sum_squares(dx.data(), 0), 0.0);

  be->fill(dx.data(), n, 0.25f);
  x = dx.to_host();
  for (size_t i = 0; i < n; i += 997) ASSERT_EQ(x[i], 0.25f);
  EXPECT_EQ(x[n - 1], 0.25f);
}

// op(A) is m x k, op(B) is k x n; leading dimensions are padded to catch stride mistakes.
void check_gemm(Backend& be, bool ta, bool tb, int m, int n, int k, float alpha, float beta) {
  Rng rng(uint64_t(m * 131 + n * 7 + k + ta * 2 + tb));
  const int a_rows = ta ? k : m, a_cols = ta ? m : k;
  const int b_rows = tb ? n : k, b_cols = tb ? k : n;
  const int lda = a_cols + 3, ldb = b_cols + 1, ldc = n + 2;
  auto a = uniform(size_t(a_rows) * lda, rng, -1, 1);
  auto b = uniform(size_t(b_rows) * ldb, rng, -1, 1);
  auto c = uniform(size_t(m) * ldc, rng, -1, 1);
  std::vector<double> want(c.begin(), c.end());
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double s = 0.0;
      for (int p = 0; p < k; ++p) {
        const double av = ta ? a[size_t(p) * lda + i] : a[size_t(i) * lda + p];
        const double bv = tb ? b[size_t(j) * ldb + p] : b[size_t(p) * ldb + j];
        s += av * bv;
      }
      want[size_t(i) * ldc + j] = alpha * s + beta * double(c[size_t(i) * ldc + j]);
    }
  auto da = to_device(be, a), db = to_device(be, b), dc = to_device(be, c);
  be.gemm(ta, tb, m, n, k, alpha, da.data(), lda, db.data(), ldb, beta, dc.data(), ldc);
  EXPECT_TRUE(all_near(dc.to_host(), want, 1e-5 * k, 1e-5)) << "ta=" << ta << " tb=" << tb;
}

TEST_P(BackendGemm, AllTransposeCombinationsMatchReference) {
  auto be = backend(2);
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      check_gemm(*be, ta, tb, 17, 23, 31, 1.0f, 0.0f);
      check_gemm(*be, ta, tb, 5, 64, 9, -0.5f, 1.0f);
      check_gemm(*be, ta, tb, 1, 1, 1, 2.0f, 0.5f);
    }
}

TEST_P(BackendGemm, ZeroInnerDimensionScalesC) {
  auto be = backend(1);
  auto c = to_device(*be, std::vector<float>{1, 2, 3, 4});
  be->gemm(false, false, 2, 2, 0, 1.0f, nullptr, 1, nullptr, 2, 0.5f, c.data(), 2);
  EXPECT_EQ(c.to_host(), (std::vector<float>{0.5f, 1, 1.5f, 2}));
  // beta == 0 overwrites, even NaN and inf (as BLAS does when there are terms).
  c.upload(std::vector<float>{std::nanf(""), INFINITY, 3, 4});
  be->gemm(false, false, 2, 2, 0, 1.0f, nullptr, 1, nullptr, 2, 0.0f, c.data(), 2);
  EXPECT_EQ(c.to_host(), (std::vector<float>{0, 0, 0, 0}));
}

TEST_P(BackendBias, BroadcastSetsOrAccumulates) {
  auto be = backend(2);
  const uint32_t rows = 300, cols = 130;  // parallel path
  Rng rng(5);
  auto bias = uniform(cols, rng, -1, 1);
  auto z0 = uniform(size_t(rows) * cols, rng, -1, 1);
  auto dbias = to_device(*be, bias), dz = to_device(*be, z0);
  be->broadcast_bias(dz.data(), dbias.data(), rows, cols, true);
  std::vector<double> want(z0.size());
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t c = 0; c < cols; ++c)
      want[size_t(r) * cols + c] = double(z0[size_t(r) * cols + c]) + bias[c];
  EXPECT_TRUE(all_near(dz.to_host(), want, 1e-6, 1e-6));
  be->broadcast_bias(dz.data(), dbias.data(), rows, cols, false);
  const auto z = dz.to_host();
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t c = 0; c < cols; ++c) ASSERT_EQ(z[size_t(r) * cols + c], bias[c]);
}

// gemm_bias: C = op(A) op(B) + bias, from FP32 operands and from BF16 copies, for every
// transposition and an output width that is not a multiple of 8 (rows of C and B misaligned for
// tensor cores). C starts as NaN: it is written, not read. On the CPU it is the base class's
// broadcast_bias + gemm, bit for bit; on a GPU one cuBLASLt matmul with a bias epilogue.
TEST_P(BackendBias, GemmWithBiasIsTheProductPlusTheBias) {
  auto be = backend(2);
  bool bf16_products = true;  // BF16 copies only where this backend multiplies them natively
  try {
    backend(1)->set_precision(Precision::BF16);
  } catch (const ConfigError&) {
    bf16_products = false;
  }
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (bool bf16 : {false, true}) {
        if (bf16 && !bf16_products) continue;
        const int m = 64, n = 302, k = 96;
        Rng rng(uint64_t(17 + 4 * ta + 2 * tb + bf16));
        const int lda = ta ? m : k, ldb = tb ? k : n;
        auto a = uniform(size_t(m) * k, rng, -1, 1);
        auto b = uniform(size_t(k) * n, rng, -1, 1);
        auto bias = uniform(size_t(n), rng, -1, 1);
        if (bf16)  // operands exactly representable, so the reference is exact
          for (auto* v : {&a, &b})
            for (float& x : *v) x = math::round_to_bf16(x);
        std::vector<double> want(size_t(m) * n);
        for (int i = 0; i < m; ++i)
          for (int j = 0; j < n; ++j) {
            double s = bias[size_t(j)];
            for (int p = 0; p < k; ++p) {
              const double av = ta ? a[size_t(p) * lda + i] : a[size_t(i) * lda + p];
              const double bv = tb ? b[size_t(j) * ldb + p] : b[size_t(p) * ldb + j];
              s += av * bv;
            }
            want[size_t(i) * n + j] = s;
          }
        auto da = to_device(*be, a), db = to_device(*be, b), dbias = to_device(*be, bias);
        DeviceArray<uint16_t> a16(*be, a.size()), b16(*be, b.size());
        be->convert_to_bf16(da.data(), a16.data(), a.size());
        be->convert_to_bf16(db.data(), b16.data(), b.size());
        auto dc = to_device(*be, std::vector<float>(size_t(m) * n, std::nanf("")));
        be->gemm_bias(ta, tb, m, n, k, da.data(), bf16 ? a16.data() : nullptr, lda, db.data(),
                      bf16 ? b16.data() : nullptr, ldb, dbias.data(), dc.data());
        const std::vector<float> got = dc.to_host();
        EXPECT_TRUE(all_near(got, want, 1e-5 * k, 1e-5))
            << "ta=" << ta << " tb=" << tb << " bf16=" << bf16;
        if (!on_cpu()) continue;
        auto ref = to_device(*be, std::vector<float>(size_t(m) * n, 0.0f));
        be->broadcast_bias(ref.data(), dbias.data(), m, n, false);
        if (bf16)
          be->gemm_bf16_ab(ta, tb, m, n, k, 1.0f, a16.data(), lda, b16.data(), ldb, 1.0f,
                           ref.data(), n);
        else
          be->gemm(ta, tb, m, n, k, 1.0f, da.data(), lda, db.data(), ldb, 1.0f, ref.data(), n);
        EXPECT_TRUE(test::bitwise_equal(got, ref.to_host()))
            << "ta=" << ta << " tb=" << tb << " bf16=" << bf16;
      }
  // The CPU computes it in two passes and says nothing. A GPU has one line on the epilogue among
  // its notes (other opt-in paths add lines of their own): which path each shape took when the
  // epilogue is on, that it is off otherwise (the default until it passes on a GPU).
  const std::vector<std::string> notes = be->path_notes();
  if (on_cpu()) {
    EXPECT_TRUE(notes.empty());
  } else {
    std::vector<std::string> epilogue;
    for (const std::string& line : notes)
      if (line.find("bias epilogue") != std::string::npos) epilogue.push_back(line);
    ASSERT_EQ(epilogue.size(), 1u) << ::testing::PrintToString(notes);
    EXPECT_TRUE(epilogue[0].find("product shapes") != std::string::npos ||
                epilogue[0].find("off (NN_CUDA_BIAS_EPILOGUE=0)") != std::string::npos)
        << epilogue[0];
  }
}

TEST_P(BackendColumnSums, MatchReferenceWithAlphaBeta) {
  auto be = backend(2);
  Rng rng(6);
  for (uint32_t cols : {1u, 7u, 513u, 1500u}) {
    const uint32_t rows = 97;
    auto x = uniform(size_t(rows) * cols, rng, -1, 1);
    auto out = uniform(cols, rng, -1, 1);
    std::vector<double> want(cols);
    for (uint32_t c = 0; c < cols; ++c) {
      double s = 0.0;
      for (uint32_t r = 0; r < rows; ++r) s += x[size_t(r) * cols + c];
      want[c] = 0.25 * double(out[c]) + (1.0 / rows) * s;
    }
    auto dx = to_device(*be, x), dout = to_device(*be, out);
    be->column_sums(dx.data(), rows, cols, 1.0f / rows, 0.25f, dout.data());
    EXPECT_TRUE(all_near(dout.to_host(), want, 1e-6, 1e-5)) << cols;
    dout.upload(std::vector<float>(cols, std::nanf("")));  // beta == 0 overwrites, even NaN
    be->column_sums(dx.data(), rows, cols, 2.0f, 0.0f, dout.data());
    for (uint32_t c = 0; c < cols; ++c) {
      double s = 0.0;
      for (uint32_t r = 0; r < rows; ++r) s += x[size_t(r) * cols + c];
      want[c] = 2.0 * s;
    }
    EXPECT_TRUE(all_near(dout.to_host(), want, 1e-5, 1e-5)) << cols;
  }
}

NN_INSTANTIATE_ON_BACKENDS(BackendMemory);
NN_INSTANTIATE_ON_BACKENDS(BackendElementwise);
NN_INSTANTIATE_ON_BACKENDS(BackendGemm);
NN_INSTANTIATE_ON_BACKENDS(BackendBias);
NN_INSTANTIATE_ON_BACKENDS(BackendColumnSums);

}  // namespace
}  // namespace nn
