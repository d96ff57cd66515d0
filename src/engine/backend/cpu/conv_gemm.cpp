// Convolution as im2col + sgemm, one example at a time: the example's input patches become a
// [in channels * kernel volume][output positions] matrix (columns), and the convolution is one
// single-threaded OpenBLAS sgemm with the [out channels][in channels * kernel volume] weights.
// Examples are spread over the pool; each thread keeps its own column buffer, which for the
// usual image sizes stays in cache between the im2col and the sgemm. The always-available
// fallback for builds without oneDNN, and the second implementation the tests compare.
#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "backend/cpu/conv.h"

namespace nn::cpu {
namespace {

// Output positions o in [lo, hi) along one axis whose input o * stride - pad + k is inside
// [0, in); the others read padding.
struct Span {
  int64_t lo, hi;
};

Span valid_outputs(uint32_t in, uint32_t out, uint32_t stride, uint32_t pad, uint32_t k) {
  const int64_t off = int64_t(k) - int64_t(pad);  // input index = o * stride + off
  const int64_t s = stride;
  int64_t lo = off >= 0 ? 0 : (-off + s - 1) / s;
  const int64_t last = int64_t(in) - 1 - off;  // o * stride <= last
  int64_t hi = last < 0 ? 0 : last / s + 1;
  lo = std::min<int64_t>(lo, out);
  hi = std::clamp<int64_t>(hi, lo, out);
  return {lo, hi};
}

// Visits every line of the column matrix: for each (channel, kz, ky, kx) row and each (oz, oy)
// output line, calls line(col_offset, x_offset_or_-1, x_span, kx_offset) where col_offset is the
// line's first element in the column matrix, x_offset the input line's first element (-1 when
// the whole line reads padding), and input index = x_offset + ox * stride_x + kx_offset.
template <typename F>
void for_each_line(const ConvGeometry& g, F&& line) {
  const int64_t plane_out = int64_t(g.out_plane());
  int64_t row = 0;
  for (uint32_t c = 0; c < g.in_channels; ++c) {
    for (uint32_t kz = 0; kz < g.kernel[2]; ++kz) {
      for (uint32_t ky = 0; ky < g.kernel[1]; ++ky) {
        for (uint32_t kx = 0; kx < g.kernel[0]; ++kx, ++row) {
          const Span sx = valid_outputs(g.in[0], g.out[0], g.stride[0], g.pad[0], kx);
          const int64_t kx_off = int64_t(kx) - int64_t(g.pad[0]);
          for (uint32_t oz = 0; oz < g.out[2]; ++oz) {
            const int64_t iz = int64_t(oz) * g.stride[2] - g.pad[2] + kz;
            for (uint32_t oy = 0; oy < g.out[1]; ++oy) {
              const int64_t iy = int64_t(oy) * g.stride[1] - g.pad[1] + ky;
              const int64_t col_off = row * plane_out + (int64_t(oz) * g.out[1] + oy) * g.out[0];
              const bool inside = iz >= 0 && iz < g.in[2] && iy >= 0 && iy < g.in[1];
              const int64_t x_off =
                  inside ? ((int64_t(c) * g.in[2] + iz) * g.in[1] + iy) * g.in[0] : -1;
              line(col_off, x_off, sx, kx_off);
            }
          }
        }
      }
    }
  }
}

void im2col(const ConvGeometry& g, const float* x, float* col) {
  const int64_t n = g.out[0], s = g.stride[0];
  for_each_line(g, [&](int64_t col_off, int64_t x_off, Span sx, int64_t kx_off) {
    float* dst = col + col_off;
    if (x_off < 0) {
      std::fill(dst, dst + n, 0.0f);
      return;
    }
    std::fill(dst, dst + sx.lo, 0.0f);
    const float* src = x + x_off;
    if (s == 1 && sx.hi > sx.lo) {
      std::memcpy(dst + sx.lo, src + sx.lo + kx_off, size_t(sx.hi - sx.lo) * sizeof(float));
    } else {
      for (int64_t o = sx.lo; o < sx.hi; ++o) dst[o] = src[o * s + kx_off];
    }
    std::fill(dst + sx.hi, dst + n, 0.0f);
  });
}

// The adjoint of im2col: x += scatter(col).
void col2im_add(const ConvGeometry& g, const float* col, float* x) {
  const int64_t s = g.stride[0];
  for_each_line(g, [&](int64_t col_off, int64_t x_off, Span sx, int64_t kx_off) {
    if (x_off < 0) return;
    const float* src = col + col_off;
    float* dst = x + x_off;
    for (int64_t o = sx.lo; o < sx.hi; ++o) dst[o * s + kx_off] += src[o];
  });
}

struct Dims {
  int m, n, k;  // out channels, output positions, in channels * kernel volume
};

Dims gemm_dims(const ConvGeometry& g) {
  return {int(g.out_channels), int(g.out_plane()), int(g.in_channels * g.kernel_volume())};
}

// The input of example b as a column matrix: the input itself for 1x1 convolutions, else im2col
// into the thread's buffer.
const float* columns(const ConvGeometry& g, const float* xb, std::vector<float>& buffer) {
  if (g.is_pointwise()) return xb;
  const Dims d = gemm_dims(g);
  buffer.resize(size_t(d.k) * d.n);
  im2col(g, xb, buffer.data());
  return buffer.data();
}

}  // namespace

void conv_forward_gemm(ThreadPool& pool, const ConvGeometry& g, uint32_t rows, const float* x,
                       const float* w, const float* bias, bool accumulate, float* y) {
  const Dims d = gemm_dims(g);
  parallel_ranges(pool, rows, 1, [&](size_t lo, size_t hi) {
    thread_local std::vector<float> buffer;
    for (size_t b = lo; b < hi; ++b) {
      const float* cols = columns(g, x + b * g.in_size(), buffer);
      float* yb = y + b * g.out_size();
      for (int c = 0; c < d.m; ++c) {
        float* yc = yb + size_t(c) * d.n;
        const float v = bias ? bias[c] : 0.0f;
        if (!accumulate)
          std::fill(yc, yc + d.n, v);
        else if (v != 0.0f)
          for (int p = 0; p < d.n; ++p) yc[p] += v;
      }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, d.m, d.n, d.k, 1.0f, w, d.k, cols, d.n,
                  1.0f, yb, d.n);
    }
  });
}

void conv_backward_data_gemm(ThreadPool& pool, const ConvGeometry& g, uint32_t rows,
                             const float* dy, const float* w, float* dx) {
  const Dims d = gemm_dims(g);
  parallel_ranges(pool, rows, 1, [&](size_t lo, size_t hi) {
    thread_local std::vector<float> buffer;
    for (size_t b = lo; b < hi; ++b) {
      const float* dyb = dy + b * g.out_size();
      float* dxb = dx + b * g.in_size();
      if (g.is_pointwise()) {  // the column matrix is dx itself
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, d.k, d.n, d.m, 1.0f, w, d.k, dyb, d.n,
                    1.0f, dxb, d.n);
        continue;
      }
      buffer.resize(size_t(d.k) * d.n);
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, d.k, d.n, d.m, 1.0f, w, d.k, dyb, d.n,
                  0.0f, buffer.data(), d.n);
      col2im_add(g, buffer.data(), dxb);
    }
  });
}

void conv_backward_filter_gemm(ThreadPool& pool, const ConvGeometry& g, uint32_t rows,
                               const float* x, const float* dy, float alpha, float* dw,
                               float* dbias) {
  const Dims d = gemm_dims(g);
  const size_t wsize = g.weight_size(), stride = wsize + d.m;
  // Fixed slices (they depend on rows only), each summed on its own, then in slice order.
  const uint32_t slices =
      std::max<uint32_t>(1, std::min<uint32_t>(16, (rows + kConvSliceRows - 1) / kConvSliceRows));
  const uint32_t per = (rows + slices - 1) / slices;
  // Kept between calls: a fresh allocation of this size is mmap'ed, and its page faults cost more
  // than the zeroing.
  thread_local std::vector<float> partial_buffer;
  partial_buffer.assign(size_t(slices) * stride, 0.0f);
  float* partial = partial_buffer.data();  // (the tasks must not name the thread_local)
  pool.run(slices, [&](size_t s) {
    thread_local std::vector<float> buffer;
    float* pw = partial + s * stride;
    float* pb = pw + wsize;
    const size_t lo = std::min<size_t>(rows, s * per), hi = std::min<size_t>(rows, lo + per);
    for (size_t b = lo; b < hi; ++b) {
      const float* cols = columns(g, x + b * g.in_size(), buffer);
      const float* dyb = dy + b * g.out_size();
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, d.m, d.k, d.n, 1.0f, dyb, d.n, cols, d.n,
                  1.0f, pw, d.k);
      for (int c = 0; c < d.m; ++c) {
        const float* dyc = dyb + size_t(c) * d.n;
        double sum = 0.0;
        for (int p = 0; p < d.n; ++p) sum += dyc[p];
        pb[c] += float(sum);
      }
    }
  });
  auto reduce = [&](size_t lo, size_t hi) {
    for (size_t i = lo; i < hi; ++i) {
      float sum = 0.0f;
      for (uint32_t s = 0; s < slices; ++s) sum += partial[s * stride + i];
      if (i < wsize)
        dw[i] = alpha * sum;
      else if (dbias)
        dbias[i - wsize] = alpha * sum;
    }
  };
  if (stride * slices < (size_t(1) << 15))
    reduce(0, stride);
  else
    parallel_ranges(pool, stride, 4096, reduce);
}

}  // namespace nn::cpu
