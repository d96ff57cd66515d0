// Convolutions through oneDNN (Debian's libdnnl, the CPU sibling of cuDNN) for the CPU backend.
//
// Threading: Debian's oneDNN uses OpenMP, whose barriers stall on a busy machine (see
// cpu/backend.cpp). So oneDNN runs single-threaded (primitives are created and executed with
// OpenMP's thread count set to 1 on the calling thread) and our pool spreads fixed slices of
// the batch over threads, as the im2col path does; weight gradients are summed slice by slice
// in slice order, so results do not depend on the thread count.
//
// Layouts: primitives choose their own (blocked) layouts ("any"); reorders convert our NCHW
// batches and OIHW filters on the way in and out (the jit kernels on blocked layouts were 1.2-4x
// faster than oneDNN's own gemm convolution on plain layouts for the Fashion-MNIST shapes, with
// the reorders included). Outputs that must be added to (multiple sources, backward data) go
// through a reorder with a sum post-op.
//
// Shapes: DSSTNE's output sizes can leave inputs at the end of an axis unread (an even kernel
// with stride 1, or a stride that does not divide); oneDNN wants in + pad_l + pad_r - kernel to
// be a multiple of the stride, so such inputs are cropped away through a strided view of the
// batch (their gradient is zero). A shape oneDNN rejects falls back to im2col + sgemm.
#include "backend/cpu/conv.h"
#include "backend/cpu/cpu_backend.h"
#include "core/error.h"

#ifdef NN_HAVE_DNNL

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>
#include <vector>

namespace nn::cpu {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;
using Dims = memory::dims;
constexpr auto kF32 = memory::data_type::f32;

// oneDNN single-threaded on this thread while alive.
class SingleThreaded {
 public:
  SingleThreaded() : previous_(omp_get_max_threads()) { omp_set_num_threads(1); }
  ~SingleThreaded() { omp_set_num_threads(previous_); }

 private:
  int previous_;
};

// Grow-only 64-byte aligned memory.
class Buffer {
 public:
  Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { std::free(ptr_); }
  void* get(size_t bytes) {
    if (bytes > size_) {
      std::free(ptr_);
      size_ = (bytes + 63) / 64 * 64;
      ptr_ = std::aligned_alloc(64, size_);
      if (!ptr_) throw BackendError(std::string(__FILE__) + ": out of memory for oneDNN buffers");
    }
    return ptr_;
  }

 private:
  void* ptr_ = nullptr;
  size_t size_ = 0;
};

// Per-thread working memory of slice tasks.
struct ThreadBuffers {
  Buffer src, dst, weights, scratch, reorder_scratch;
};
ThreadBuffers& thread_buffers() {
  thread_local ThreadBuffers b;
  return b;
}

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

// A reorder between two layouts, or nothing when they are equal (and nothing is added).
struct Reorder {
  bool active = false;
  dnnl::reorder prim;
  memory::desc scratch;

  Reorder() = default;
  Reorder(const dnnl::engine& eng, const memory::desc& from, const memory::desc& to, bool sum) {
    if (from == to && !sum) return;
    dnnl::primitive_attr attr = user_scratchpad();
    if (sum) {
      dnnl::post_ops ops;
      ops.append_sum(1.0f);
      attr.set_post_ops(ops);
    }
    dnnl::reorder::primitive_desc pd(eng, from, eng, to, attr);
    prim = dnnl::reorder(pd);
    scratch = pd.scratchpad_desc();
    active = true;
  }
  void run(dnnl::stream& s, const memory& from, const memory& to, Buffer& scratch_buffer) const {
    std::unordered_map<int, memory> args{{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
    if (scratch.get_size())
      args[DNNL_ARG_SCRATCHPAD] =
          memory(scratch, from.get_engine(), scratch_buffer.get(scratch.get_size()));
    prim.execute(s, args);
  }
};

// Primitives and reorders for one geometry and slice size.
struct Plan {
  memory::desc user_src, user_dst, user_weights, user_bias;  // our layouts (src maybe cropped)
  dnnl::convolution_forward::primitive_desc fwd_pd;
  dnnl::convolution_backward_data::primitive_desc data_pd;
  dnnl::convolution_backward_weights::primitive_desc weights_pd;
  dnnl::convolution_forward fwd;
  dnnl::convolution_backward_data data;
  dnnl::convolution_backward_weights weights;
  Reorder src_fwd, weights_fwd, dst_fwd, dst_fwd_sum;
  Reorder dst_data, weights_data, src_data_sum;
  Reorder src_weights, dst_weights, weights_weights;
};

Tag data_tag(size_t nd) {
  return nd == 3 ? Tag::ncw : nd == 4 ? Tag::nchw : Tag::ncdhw;
}
Tag weights_tag(size_t nd) {
  return nd == 3 ? Tag::oiw : nd == 4 ? Tag::oihw : Tag::oidhw;
}

std::unique_ptr<Plan> make_plan(const dnnl::engine& eng, const ConvGeometry& g, int64_t mb) {
  // oneDNN orders spatial axes outermost first: (z, y, x) of ours.
  Dims full{mb, g.in_channels}, src{mb, g.in_channels}, dst{mb, g.out_channels},
      wei{g.out_channels, g.in_channels}, strides, pad_l, pad_r;
  bool cropped = false;
  for (int a = int(g.dims) - 1; a >= 0; --a) {
    const int64_t in = g.in[a], out = g.out[a], k = g.kernel[a], s = g.stride[a], p = g.pad[a];
    const int64_t reach = (out - 1) * s + k - p;  // inputs touched, counting right padding
    const int64_t used = std::min(in, reach);
    cropped |= used < in;
    full.push_back(in);
    src.push_back(used);
    dst.push_back(out);
    wei.push_back(k);
    strides.push_back(s);
    pad_l.push_back(p);
    pad_r.push_back(reach - used);
  }
  const size_t nd = src.size();
  auto plan = std::make_unique<Plan>();
  const memory::desc user_full(full, kF32, data_tag(nd));
  plan->user_src = cropped ? user_full.submemory_desc(src, Dims(nd, 0)) : user_full;
  plan->user_dst = memory::desc(dst, kF32, data_tag(nd));
  plan->user_weights = memory::desc(wei, kF32, weights_tag(nd));
  plan->user_bias = memory::desc({int64_t(g.out_channels)}, kF32, Tag::x);
  const memory::desc any_src(src, kF32, Tag::any), any_dst(dst, kF32, Tag::any),
      any_wei(wei, kF32, Tag::any);
  const auto attr = user_scratchpad();
  const auto algo = dnnl::algorithm::convolution_direct;

  plan->fwd_pd = dnnl::convolution_forward::primitive_desc(
      dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, algo, any_src, any_wei,
                                      plan->user_bias, any_dst, strides, pad_l, pad_r),
      attr, eng);
  plan->data_pd = dnnl::convolution_backward_data::primitive_desc(
      dnnl::convolution_backward_data::desc(algo, any_src, any_wei, any_dst, strides, pad_l, pad_r),
      attr, eng, plan->fwd_pd);
  plan->weights_pd = dnnl::convolution_backward_weights::primitive_desc(
      dnnl::convolution_backward_weights::desc(algo, any_src, any_wei, plan->user_bias, any_dst,
                                               strides, pad_l, pad_r),
      attr, eng, plan->fwd_pd);
  plan->fwd = dnnl::convolution_forward(plan->fwd_pd);
  plan->data = dnnl::convolution_backward_data(plan->data_pd);
  plan->weights = dnnl::convolution_backward_weights(plan->weights_pd);

  const Plan& p = *plan;
  plan->src_fwd = Reorder(eng, p.user_src, p.fwd_pd.src_desc(), false);
  plan->weights_fwd = Reorder(eng, p.user_weights, p.fwd_pd.weights_desc(), false);
  plan->dst_fwd = Reorder(eng, p.fwd_pd.dst_desc(), p.user_dst, false);
  plan->dst_fwd_sum = Reorder(eng, p.fwd_pd.dst_desc(), p.user_dst, true);
  plan->dst_data = Reorder(eng, p.user_dst, p.data_pd.diff_dst_desc(), false);
  plan->weights_data = Reorder(eng, p.user_weights, p.data_pd.weights_desc(), false);
  plan->src_data_sum = Reorder(eng, p.data_pd.diff_src_desc(), p.user_src, true);
  plan->src_weights = Reorder(eng, p.user_src, p.weights_pd.src_desc(), false);
  plan->dst_weights = Reorder(eng, p.user_dst, p.weights_pd.diff_dst_desc(), false);
  plan->weights_weights = Reorder(eng, p.weights_pd.diff_weights_desc(), p.user_weights, false);
  return plan;
}

void execute(const dnnl::primitive& prim, const memory::desc& scratch, dnnl::stream& s,
             std::unordered_map<int, memory> args, Buffer& buffer) {
  if (scratch.get_size())
    args[DNNL_ARG_SCRATCHPAD] = memory(scratch, s.get_engine(), buffer.get(scratch.get_size()));
  prim.execute(s, args);
}

// `mem` viewed in layout `want` through `reorder`: the same memory when it is inactive, else a
// copy in `buffer`.
memory converted(const Reorder& reorder, const memory& mem, const memory::desc& want,
                 dnnl::stream& s, Buffer& buffer, Buffer& scratch) {
  if (!reorder.active) return mem;
  memory out(want, mem.get_engine(), buffer.get(want.get_size()));
  reorder.run(s, mem, out, scratch);
  return out;
}

// Batch slices: fixed by the row count alone.
struct Slices {
  uint32_t count, per;
  Slices(uint32_t rows) {
    per = std::max<uint32_t>(16, (rows + 31) / 32);
    count = (rows + per - 1) / per;
  }
  uint32_t first(uint32_t s) const { return s * per; }
  uint32_t rows(uint32_t s, uint32_t total) const { return std::min(per, total - s * per); }
};

}  // namespace

class DnnlConv {
 public:
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};

  // The plan for g with mb examples, or nullptr when oneDNN cannot run this shape.
  const Plan* plan(const ConvGeometry& g, int64_t mb) {
    std::string key = std::to_string(mb) + ":" + std::to_string(g.dims) + ":" +
                      std::to_string(g.in_channels) + ":" + std::to_string(g.out_channels);
    for (const auto* v : {&g.in, &g.out, &g.kernel, &g.stride, &g.pad})
      for (uint32_t e : *v) key += ":" + std::to_string(e);
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = plans_.find(key);
    if (it != plans_.end()) return it->second.get();
    std::unique_ptr<Plan> made;
    try {
      SingleThreaded one;
      made = make_plan(engine, g, mb);
    } catch (const dnnl::error&) {
      made.reset();  // not supported: the caller uses im2col + sgemm
    }
    return plans_.emplace(key, std::move(made)).first->second.get();
  }

 private:
  std::mutex mutex_;
  std::map<std::string, std::unique_ptr<Plan>> plans_;
};

DnnlConv* make_dnnl_conv() {
  return new DnnlConv;
}
void destroy_dnnl_conv(DnnlConv* conv) noexcept {
  delete conv;
}

namespace {

// The plans of the full slices and of the last one (which may be shorter); null if either is
// not supported.
struct SlicePlans {
  Slices slices;
  const Plan* full = nullptr;
  const Plan* last = nullptr;
  SlicePlans(DnnlConv& conv, const ConvGeometry& g, uint32_t rows) : slices(rows) {
    full = conv.plan(g, slices.rows(0, rows));
    last = conv.plan(g, slices.rows(slices.count - 1, rows));
  }
  bool ok() const { return full && last; }
  const Plan& of(uint32_t s) const { return s + 1 == slices.count ? *last : *full; }
};

// Filters in each plan's layout for `which` (forward or backward data), reordered once per call.
struct PreparedWeights {
  std::vector<std::unique_ptr<Buffer>> buffers;
  const float* full = nullptr;
  const float* last = nullptr;
};

PreparedWeights prepare_weights(DnnlConv& conv, const SlicePlans& sp, const float* w,
                                Reorder Plan::*which, memory::desc (*desc)(const Plan&)) {
  PreparedWeights out;
  SingleThreaded one;
  dnnl::stream s(conv.engine);
  Buffer scratch;
  auto prepare = [&](const Plan& p) -> const float* {
    const Reorder& r = p.*which;
    if (!r.active) return w;
    out.buffers.push_back(std::make_unique<Buffer>());
    const memory::desc want = desc(p);
    memory dst(want, conv.engine, out.buffers.back()->get(want.get_size()));
    r.run(s, memory(p.user_weights, conv.engine, const_cast<float*>(w)), dst, scratch);
    return static_cast<const float*>(dst.get_data_handle());
  };
  out.full = prepare(*sp.full);
  out.last = sp.last == sp.full ? out.full : prepare(*sp.last);
  s.wait();
  return out;
}

memory::desc fwd_weights_desc(const Plan& p) {
  return p.fwd_pd.weights_desc();
}
memory::desc data_weights_desc(const Plan& p) {
  return p.data_pd.weights_desc();
}

}  // namespace

void conv_forward_dnnl(DnnlConv& conv, ThreadPool& pool, const ConvGeometry& g, uint32_t rows,
                       const float* x, const float* w, const float* bias, bool accumulate,
                       float* y) {
  const SlicePlans sp(conv, g, rows);
  if (!sp.ok()) return conv_forward_gemm(pool, g, rows, x, w, bias, accumulate, y);
  const PreparedWeights pw = prepare_weights(conv, sp, w, &Plan::weights_fwd, fwd_weights_desc);
  std::vector<float> zeros;
  if (!bias) zeros.assign(g.out_channels, 0.0f);
  const float* b = bias ? bias : zeros.data();
  pool.run(sp.slices.count, [&](size_t si) {
    const uint32_t s_idx = uint32_t(si);
    const Plan& p = sp.of(s_idx);
    const uint32_t first = sp.slices.first(s_idx);
    SingleThreaded one;
    ThreadBuffers& tb = thread_buffers();
    dnnl::stream s(conv.engine);
    const auto& eng = conv.engine;
    const memory src =
        converted(p.src_fwd, memory(p.user_src, eng, const_cast<float*>(x + first * g.in_size())),
                  p.fwd_pd.src_desc(), s, tb.src, tb.reorder_scratch);
    const memory user_dst(p.user_dst, eng, y + first * g.out_size());
    const bool direct = !accumulate && !p.dst_fwd.active;
    const memory dst =
        direct ? user_dst
               : memory(p.fwd_pd.dst_desc(), eng, tb.dst.get(p.fwd_pd.dst_desc().get_size()));
    const float* wp = s_idx + 1 == sp.slices.count ? pw.last : pw.full;
    execute(p.fwd, p.fwd_pd.scratchpad_desc(), s,
            {{DNNL_ARG_SRC, src},
             {DNNL_ARG_WEIGHTS, memory(p.fwd_pd.weights_desc(), eng, const_cast<float*>(wp))},
             {DNNL_ARG_BIAS, memory(p.user_bias, eng, const_cast<float*>(b))},
             {DNNL_ARG_DST, dst}},
            tb.scratch);
    if (!direct) (accumulate ? p.dst_fwd_sum : p.dst_fwd).run(s, dst, user_dst, tb.reorder_scratch);
    s.wait();
  });
}

void conv_backward_data_dnnl(DnnlConv& conv, ThreadPool& pool, const ConvGeometry& g, uint32_t rows,
                             const float* dy, const float* w, float* dx) {
  const SlicePlans sp(conv, g, rows);
  if (!sp.ok()) return conv_backward_data_gemm(pool, g, rows, dy, w, dx);
  const PreparedWeights pw = prepare_weights(conv, sp, w, &Plan::weights_data, data_weights_desc);
  pool.run(sp.slices.count, [&](size_t si) {
    const uint32_t s_idx = uint32_t(si);
    const Plan& p = sp.of(s_idx);
    const uint32_t first = sp.slices.first(s_idx);
    SingleThreaded one;
    ThreadBuffers& tb = thread_buffers();
    dnnl::stream s(conv.engine);
    const auto& eng = conv.engine;
    const memory diff_dst = converted(
        p.dst_data, memory(p.user_dst, eng, const_cast<float*>(dy + first * g.out_size())),
        p.data_pd.diff_dst_desc(), s, tb.dst, tb.reorder_scratch);
    const memory diff_src(p.data_pd.diff_src_desc(), eng,
                          tb.src.get(p.data_pd.diff_src_desc().get_size()));
    const float* wp = s_idx + 1 == sp.slices.count ? pw.last : pw.full;
    execute(p.data, p.data_pd.scratchpad_desc(), s,
            {{DNNL_ARG_DIFF_DST, diff_dst},
             {DNNL_ARG_WEIGHTS, memory(p.data_pd.weights_desc(), eng, const_cast<float*>(wp))},
             {DNNL_ARG_DIFF_SRC, diff_src}},
            tb.scratch);
    p.src_data_sum.run(s, diff_src, memory(p.user_src, eng, dx + first * g.in_size()),
                       tb.reorder_scratch);
    s.wait();
  });
}

void conv_backward_filter_dnnl(DnnlConv& conv, ThreadPool& pool, const ConvGeometry& g,
                               uint32_t rows, const float* x, const float* dy, float alpha,
                               float* dw, float* dbias) {
  const SlicePlans sp(conv, g, rows);
  if (!sp.ok()) return conv_backward_filter_gemm(pool, g, rows, x, dy, alpha, dw, dbias);
  const size_t wsize = g.weight_size(), stride = wsize + g.out_channels;
  // Kept between calls (fully overwritten): a fresh allocation of this size is mmap'ed each time.
  // (The tasks use the pointer: they must not name the thread_local.)
  thread_local Buffer partial_buffer;
  float* partial =
      static_cast<float*>(partial_buffer.get(size_t(sp.slices.count) * stride * sizeof(float)));
  pool.run(sp.slices.count, [&](size_t si) {
    const uint32_t s_idx = uint32_t(si);
    const Plan& p = sp.of(s_idx);
    const uint32_t first = sp.slices.first(s_idx);
    SingleThreaded one;
    ThreadBuffers& tb = thread_buffers();
    dnnl::stream s(conv.engine);
    const auto& eng = conv.engine;
    float* pw = partial + si * stride;
    const memory src = converted(
        p.src_weights, memory(p.user_src, eng, const_cast<float*>(x + first * g.in_size())),
        p.weights_pd.src_desc(), s, tb.src, tb.reorder_scratch);
    const memory diff_dst = converted(
        p.dst_weights, memory(p.user_dst, eng, const_cast<float*>(dy + first * g.out_size())),
        p.weights_pd.diff_dst_desc(), s, tb.dst, tb.reorder_scratch);
    const memory user_weights(p.user_weights, eng, pw);
    const memory diff_weights =
        p.weights_weights.active
            ? memory(p.weights_pd.diff_weights_desc(), eng,
                     tb.weights.get(p.weights_pd.diff_weights_desc().get_size()))
            : user_weights;
    execute(p.weights, p.weights_pd.scratchpad_desc(), s,
            {{DNNL_ARG_SRC, src},
             {DNNL_ARG_DIFF_DST, diff_dst},
             {DNNL_ARG_DIFF_WEIGHTS, diff_weights},
             {DNNL_ARG_DIFF_BIAS, memory(p.user_bias, eng, pw + wsize)}},
            tb.scratch);
    if (p.weights_weights.active)
      p.weights_weights.run(s, diff_weights, user_weights, tb.reorder_scratch);
    s.wait();
  });
  auto reduce = [&](size_t lo, size_t hi) {
    for (size_t i = lo; i < hi; ++i) {
      float sum = 0.0f;
      for (uint32_t s = 0; s < sp.slices.count; ++s) sum += partial[s * stride + i];
      if (i < wsize)
        dw[i] = alpha * sum;
      else if (dbias)
        dbias[i - wsize] = alpha * sum;
    }
  };
  if (stride * sp.slices.count < (size_t(1) << 15))
    reduce(0, stride);
  else
    parallel_ranges(pool, stride, 4096, reduce);
}

}  // namespace nn::cpu

#else  // no oneDNN in this build: CpuBackend never selects it

namespace nn::cpu {

class DnnlConv {};

DnnlConv* make_dnnl_conv() {
  throw InternalError(std::string(__FILE__) + ": this build has no oneDNN");
}
void destroy_dnnl_conv(DnnlConv* conv) noexcept {
  delete conv;
}

void conv_forward_dnnl(DnnlConv&, ThreadPool&, const ConvGeometry&, uint32_t, const float*,
                       const float*, const float*, bool, float*) {
  throw InternalError(std::string(__FILE__) + ": this build has no oneDNN");
}
void conv_backward_data_dnnl(DnnlConv&, ThreadPool&, const ConvGeometry&, uint32_t, const float*,
                             const float*, float*) {
  throw InternalError(std::string(__FILE__) + ": this build has no oneDNN");
}
void conv_backward_filter_dnnl(DnnlConv&, ThreadPool&, const ConvGeometry&, uint32_t, const float*,
                               const float*, float, float*, float*) {
  throw InternalError(std::string(__FILE__) + ": this build has no oneDNN");
}

}  // namespace nn::cpu

#endif
