// CpuBackend's BF16 products (docs/wide-outputs.md, "BF16 arithmetic"): the FP32 operands are
// rounded to BF16 (math::float_to_bf16, in our pool) and multiplied by oneDNN's matmul with BF16
// memory descriptors and an FP32 destination, so products accumulate in FP32 (on AVX512-BF16 the
// brgemm kernels use vdpbf16ps, which accumulates pairs of products in FP32). OpenBLAS 0.3.21's
// cblas_sbgemm would do the same, but Debian's build does not export it.
//
// Threading as for the FP32 gemm (cpu/dense.cpp): oneDNN runs single-threaded inside each of our
// pool's tasks (its OpenMP team would stall on a busy machine, cpu/conv_dnnl.cpp), and C is split
// into one block per task along its longer side, each block one matmul over strided views of the
// converted operands. Primitives are created once per shape and block (alpha and beta are part
// of a primitive: alpha as the output scale, beta as a sum post-op) and kept; each execution
// brings its own scratchpad, so concurrent callers share primitives safely.
//
// Converted operands keep the FP32 layout, padding included (math::operand_span), so leading
// dimensions and transposes pass through unchanged; oneDNN reads transposed operands through
// their strides. The buffers are per calling thread and grow only.
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "backend/cpu/bf16_support.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/gemm_split.h"
#include "backend/cpu/thread_pool.h"
#include "backend/math/bf16_math.h"
#include "core/error.h"

#ifdef NN_HAVE_DNNL
#include <omp.h>

#include <map>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <tuple>
#include <unordered_map>
#else
#include <cblas.h>
#endif

namespace nn {
namespace {

// Elements converted per task at least.
constexpr size_t kConvertGrain = size_t(1) << 15;

// Grow-only 64-byte aligned memory, one per purpose and calling thread.
class Scratch {
 public:
  Scratch() = default;
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  ~Scratch() { std::free(ptr_); }
  void* get(size_t bytes) {
    if (bytes > size_) {
      std::free(ptr_);
      ptr_ = nullptr;
      size_ = std::max<size_t>(64, (bytes + 63) / 64 * 64);
      ptr_ = std::aligned_alloc(64, size_);
      if (!ptr_) {
        size_ = 0;
        throw BackendError("out of host memory for a BF16 product's operands (" +
                           std::to_string(bytes) + " bytes)");
      }
    }
    return ptr_;
  }

 private:
  void* ptr_ = nullptr;
  size_t size_ = 0;
};

struct OperandBuffers {
  Scratch a, b;
};
OperandBuffers& operand_buffers() {
  thread_local OperandBuffers buffers;
  return buffers;
}

void convert_range(const float* src, uint16_t* dst, size_t lo, size_t hi) {
#pragma omp simd
  for (size_t i = lo; i < hi; ++i) dst[i] = math::float_to_bf16(src[i]);
}

}  // namespace

namespace cpu {

#ifdef NN_HAVE_DNNL
using dnnl::memory;

// oneDNN matmul primitives per shape (see the file comment).
class DnnlMatmul {
 public:
  // One block of C = alpha * op(A) op(B) + beta * C with BF16 A and B (leading dimensions in
  // elements, as the FP32 originals), on the calling thread.
  void run(bool ta, bool tb, int m, int n, int k, float alpha, const uint16_t* a, int lda,
           const uint16_t* b, int ldb, float beta, float* c, int ldc) {
    const Key key{ta, tb, m, n, k, lda, ldb, ldc, alpha, beta};
    const Entry& e = entry(key);
    const int previous = omp_get_max_threads();
    omp_set_num_threads(1);
    try {
      thread_local Scratch scratch;
      dnnl::stream stream(engine_);
      std::unordered_map<int, memory> args{
          {DNNL_ARG_SRC, memory(e.src, engine_, const_cast<uint16_t*>(a))},
          {DNNL_ARG_WEIGHTS, memory(e.weights, engine_, const_cast<uint16_t*>(b))},
          {DNNL_ARG_DST, memory(e.dst, engine_, c)}};
      if (e.scratch.get_size())
        args[DNNL_ARG_SCRATCHPAD] = memory(e.scratch, engine_, scratch.get(e.scratch.get_size()));
      e.prim.execute(stream, args);
      stream.wait();
    } catch (const dnnl::error& err) {
      omp_set_num_threads(previous);
      throw BackendError(std::string("oneDNN BF16 matmul failed: ") + err.what());
    }
    omp_set_num_threads(previous);
  }

 private:
  using Key = std::tuple<bool, bool, int, int, int, int, int, int, float, float>;
  struct Entry {
    dnnl::matmul prim;
    memory::desc src, weights, dst, scratch;
  };

  const Entry& entry(const Key& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = cache_.find(key);
    if (it != cache_.end()) return *it->second;
    const auto [ta, tb, m, n, k, lda, ldb, ldc, alpha, beta] = key;
    auto e = std::make_unique<Entry>();
    using Dims = memory::dims;
    const auto bf16 = memory::data_type::bf16;
    e->src = memory::desc({m, k}, bf16, ta ? Dims{1, lda} : Dims{lda, 1});
    e->weights = memory::desc({k, n}, bf16, tb ? Dims{1, ldb} : Dims{ldb, 1});
    e->dst = memory::desc({m, n}, memory::data_type::f32, Dims{ldc, 1});
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    // alpha as a linear post-op on the accumulators, not as an output scale: oneDNN 2.6's
    // brgemm matmul on AMX falls back to a kernel 2-4x slower for an output scale (the weight
    // gradient's 1/rows: 1024 x 27,278 by 256 took 71 ms against 32 ms), where the post-op is
    // fused into the same kernel. dst = alpha * acc, then + beta * dst by the sum post-op.
    dnnl::post_ops ops;
    if (alpha != 1.0f) ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_linear, alpha, 0.0f);
    if (beta != 0.0f) ops.append_sum(beta);
    if (ops.len() > 0) attr.set_post_ops(ops);
    try {
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(e->src, e->weights, e->dst), attr,
                                      engine_);
      e->prim = dnnl::matmul(pd);
      e->scratch = pd.scratchpad_desc();
    } catch (const dnnl::error& err) {
      throw BackendError(std::string("oneDNN has no BF16 matmul for this product: ") + err.what());
    }
    return *(cache_[key] = std::move(e));
  }

  dnnl::engine engine_{dnnl::engine::kind::cpu, 0};
  std::mutex mutex_;
  std::map<Key, std::unique_ptr<Entry>> cache_;
};

DnnlMatmul* make_dnnl_matmul() {
  return new DnnlMatmul();
}
void destroy_dnnl_matmul(DnnlMatmul* matmul) noexcept {
  delete matmul;
}
#else
class DnnlMatmul {};
DnnlMatmul* make_dnnl_matmul() {
  return nullptr;
}
void destroy_dnnl_matmul(DnnlMatmul* matmul) noexcept {
  delete matmul;
}
#endif

}  // namespace cpu

void CpuBackend::set_precision(Precision p) {
  if (p == Precision::BF16) {
    const std::string refusal = cpu::bf16_refusal(cpu::host_cpu_flags(), cpu::dnnl_bf16_support());
    if (!refusal.empty()) throw ConfigError("cpu backend: " + refusal);
    if (batch_invariant_)
      throw ConfigError(
          "cpu backend: BF16 products are not batch-invariant; serving keeps FP32 arithmetic");
  }
  precision_ = p;
}

void CpuBackend::convert_to_bf16(const float* src, uint16_t* dst, size_t n) {
  if (n < 2 * kConvertGrain) {
    convert_range(src, dst, 0, n);
    return;
  }
  cpu::parallel_ranges(
      *pool_, n, kConvertGrain, [=](size_t lo, size_t hi) { convert_range(src, dst, lo, hi); }, 32);
}

void CpuBackend::gemm_bf16(bool trans_a, bool trans_b, int m, int n, int k, float alpha,
                           const float* a, int lda, const float* b, int ldb, float beta, float* c,
                           int ldc) {
  // Called by gemm in BF16 mode (after its checks of m, n and k): both operands are converted.
  OperandBuffers& buffers = operand_buffers();
  const size_t span = math::operand_span(trans_b ? n : k, trans_b ? k : n, ldb);
  auto* b16 = static_cast<uint16_t*>(buffers.b.get(span * sizeof(uint16_t)));
  convert_to_bf16(b, b16, span);
  gemm_bf16_b(trans_a, trans_b, m, n, k, alpha, a, lda, b16, ldb, beta, c, ldc);
}

void CpuBackend::gemm_bf16_b(bool trans_a, bool trans_b, int m, int n, int k, float alpha,
                             const float* a, int lda, const uint16_t* b16, int ldb, float beta,
                             float* c, int ldc) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    gemm(trans_a, trans_b, m, n, k, alpha, a, lda, nullptr, ldb, beta, c, ldc);  // C = beta * C
    return;
  }
  const size_t a_span = math::operand_span(trans_a ? k : m, trans_a ? m : k, lda);
  auto* a16 = static_cast<uint16_t*>(operand_buffers().a.get(a_span * sizeof(uint16_t)));
  convert_to_bf16(a, a16, a_span);
  gemm_bf16_ab(trans_a, trans_b, m, n, k, alpha, a16, lda, b16, ldb, beta, c, ldc);
}

void CpuBackend::gemm_bf16_ab(bool trans_a, bool trans_b, int m, int n, int k, float alpha,
                              const uint16_t* a16, int lda, const uint16_t* b16, int ldb,
                              float beta, float* c, int ldc) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    gemm(trans_a, trans_b, m, n, k, alpha, nullptr, lda, nullptr, ldb, beta, c, ldc);
    return;
  }
#ifdef NN_HAVE_DNNL
  if (!matmul_) matmul_.reset(cpu::make_dnnl_matmul());
  cpu::DnnlMatmul& mm = *matmul_;
  constexpr int kGrain = 32;  // BF16 kernels work on 32-column (64-byte) tiles of B
  cpu::split_product(*pool_, threads_, m, n, k, kGrain, [&](bool by_columns, int lo, int hi) {
    if (by_columns) {
      const uint16_t* bp = trans_b ? b16 + size_t(lo) * ldb : b16 + lo;
      mm.run(trans_a, trans_b, m, hi - lo, k, alpha, a16, lda, bp, ldb, beta, c + lo, ldc);
    } else {
      const uint16_t* ap = trans_a ? a16 + lo : a16 + size_t(lo) * lda;
      mm.run(trans_a, trans_b, hi - lo, n, k, alpha, ap, lda, b16, ldb, beta, c + size_t(lo) * ldc,
             ldc);
    }
  });
#else
  // No oneDNN: set_precision refuses BF16, so only a direct call gets here. The same arithmetic
  // (BF16 operands, FP32 products and sums) through sgemm on the widened values, slowly.
  std::vector<float> wa(math::operand_span(trans_a ? k : m, trans_a ? m : k, lda)),
      wb(math::operand_span(trans_b ? n : k, trans_b ? k : n, ldb));
  for (size_t i = 0; i < wa.size(); ++i) wa[i] = math::bf16_to_float(a16[i]);
  for (size_t i = 0; i < wb.size(); ++i) wb[i] = math::bf16_to_float(b16[i]);
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, wa.data(), lda, wb.data(), ldb,
              beta, c, ldc);
#endif
}

}  // namespace nn
