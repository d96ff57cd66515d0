// CUDA Graphs for the training step (Backend::begin_step_graph, cuda/step_graph.h; label `cuda`,
// skips without a device): a sequence of calls shaped like a training step (uploads of each
// step's data, products, an activation, a sum kept on the device, an Adam update whose step count
// changes every step, a scratch buffer that grows, a read-back in the middle) gives, recorded as
// graphs, exactly the bits it gives launched call by call; a dropped step changes nothing; and
// the executable graphs are updated in place from step to step.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/device_probe.h"
#include "backend/device_array.h"
#include "core/random.h"

namespace nn {
namespace {

constexpr uint32_t kRows = 32, kIn = 48, kOut = 300;
// Above the arena's first chunk (1 MiB): the first recorded step grows it (a split).
constexpr size_t kBig = 300000;

// A backend made with NN_CUDA_GRAPHS=1 (read when the backend is made).
std::unique_ptr<Backend> graph_backend() {
  setenv("NN_CUDA_GRAPHS", "1", 1);
  auto b = make_backend("cuda");
  unsetenv("NN_CUDA_GRAPHS");
  return b;
}

// The state a "training step" changes, in one backend's memory.
struct State {
  DeviceArray<float> x, big, w, bias, z, g, m, v, wide;
  DeviceArray<double> sum;
  explicit State(Backend& b)
      : x(b, kRows * kIn),
        big(b, kBig),
        w(b, kIn * kOut),
        bias(b, kOut),
        z(b, kRows * kOut),
        g(b, kIn * kOut),
        m(b, kIn * kOut),
        v(b, kIn * kOut),
        wide(b, 8 * 4000),
        sum(b, 1) {
    Rng rng(3);
    std::vector<float> w0(kIn * kOut), b0(kOut);
    for (float& e : w0) e = float(rng.uniform() - 0.5);
    for (float& e : b0) e = float(rng.uniform() - 0.5);
    w.upload(w0);
    bias.upload(b0);
    b.fill(m.data(), m.size(), 0.0f);
    b.fill(v.data(), v.size(), 0.0f);
    b.fill(wide.data(), wide.size(), 1.0f);
    sum.upload(std::vector<double>{0.0});
  }
};

// Step s's calls. Its inputs differ every step; `wide_cols` grows with s, so the column-norm
// scratch grows in some steps; the read-back in the middle splits a recorded step.
void run_step(Backend& b, State& st, uint32_t s, std::vector<float>& seen) {
  Rng rng(100 + s);
  std::vector<float> x(kRows * kIn), big(kBig);
  for (float& e : x) e = float(rng.uniform());
  for (float& e : big) e = float(rng.uniform() * 1e-3);
  b.upload(st.x.data(), x.data(), x.size() * sizeof(float));
  b.upload(st.big.data(), big.data(), big.size() * sizeof(float));
  b.gemm(false, false, kRows, kOut, kIn, 1.0f, st.x.data(), kIn, st.w.data(), kOut, 0.0f,
         st.z.data(), kOut);
  b.broadcast_bias(st.z.data(), st.bias.data(), kRows, kOut, /*accumulate=*/true);
  ActivationParams act;
  act.kind = Activation::Sigmoid;
  b.activate(act, st.z.data(), kRows, kOut);
  b.sum_squares_accumulate(st.z.data(), st.z.size(), 0.5, st.sum.data());
  seen.resize(st.z.size());
  b.download(seen.data(), st.z.data(), seen.size() * sizeof(float));
  b.gemm(true, false, kIn, kOut, kRows, 1.0f / kRows, st.x.data(), kIn, st.z.data(), kOut, 0.0f,
         st.g.data(), kOut);
  b.axpy(kIn * kOut, 1.0f, st.big.data(), st.g.data());
  OptimizerParams p;
  p.kind = OptimizerKind::Adam;
  p.alpha = 0.01f;
  p.step = s + 1;
  b.optimizer_step(p, st.w.data(), st.g.data(), st.m.data(), st.v.data(), st.w.size());
  const uint32_t wide_cols = 1000 * (1 + s % 4);
  b.clip_column_norms(st.wide.data(), 8, wide_cols, 0.5f + 0.1f * float(s));
}

std::vector<float> host(const DeviceArray<float>& a) {
  return a.to_host();
}

class CudaStepGraphs : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_device_count() == 0)
      GTEST_SKIP() << "no CUDA device, CUDA graphs not checked: " << cuda_device_summary();
  }
};

TEST_F(CudaStepGraphs, RecordedStepsGiveTheBitsOfTheSameCallsLaunched) {
  auto launched = graph_backend();
  auto recorded = graph_backend();
  State a(*launched), r(*recorded);
  std::vector<float> seen_a, seen_r;
  const uint32_t steps = 6;
  for (uint32_t s = 0; s < steps; ++s) {
    run_step(*launched, a, s, seen_a);
    ASSERT_EQ(recorded->begin_step_graph(), "");
    run_step(*recorded, r, s, seen_r);
    recorded->end_step_graph();
    // The read-back inside the recorded step saw the step's own activations.
    ASSERT_EQ(seen_a, seen_r) << "step " << s;
  }
  EXPECT_EQ(host(a.w), host(r.w));
  EXPECT_EQ(host(a.m), host(r.m));
  EXPECT_EQ(host(a.v), host(r.v));
  EXPECT_EQ(host(a.z), host(r.z));
  EXPECT_EQ(host(a.wide), host(r.wide));
  EXPECT_EQ(a.sum.to_host(), r.sum.to_host());

  std::string notes;
  for (const std::string& line : recorded->path_notes()) notes += line + "\n";
  EXPECT_NE(notes.find("CUDA graphs: 6 steps recorded"), std::string::npos) << notes;
  EXPECT_NE(notes.find("splits at a read-back to the host"), std::string::npos) << notes;
  // From the second step on, each segment of the same shape is updated in place.
  EXPECT_EQ(notes.find("(0 updated in place"), std::string::npos) << notes;
  // The backend that launched every call recorded nothing.
  for (const std::string& line : launched->path_notes())
    EXPECT_EQ(line.find("CUDA graphs"), std::string::npos) << line;
}

TEST_F(CudaStepGraphs, AnAbandonedStepChangesNothing) {
  auto b = graph_backend();
  DeviceArray<float> x(*b, 1000);
  b->fill(x.data(), x.size(), 1.0f);
  ASSERT_EQ(b->begin_step_graph(), "");
  b->fill(x.data(), x.size(), 7.0f);
  b->abandon_step_graph();
  EXPECT_EQ(x.to_host(), std::vector<float>(1000, 1.0f));
  ASSERT_EQ(b->begin_step_graph(), "");
  b->fill(x.data(), x.size(), 7.0f);
  b->end_step_graph();
  EXPECT_EQ(x.to_host(), std::vector<float>(1000, 7.0f));
}

// Uploads beside the stream (Backend::begin_side_uploads) as the training loop makes them: each
// step's data copied into the buffer set of its parity once the step before the previous one is
// done, the work after the copies reading them; with and without the steps recorded as graphs.
TEST_F(CudaStepGraphs, UploadsBesideTheStreamArriveBeforeTheWorkAfterThem) {
  for (const bool record : {false, true}) {
    SCOPED_TRACE(record ? "recorded" : "launched");
    auto b = graph_backend();
    const size_t n = size_t(1) << 20;
    DeviceArray<float> sets[2] = {DeviceArray<float>(*b, n), DeviceArray<float>(*b, n)};
    DeviceArray<float> acc(*b, n);
    b->fill(acc.data(), n, 0.0f);
    uint64_t marks[2] = {b->stream_mark(), b->stream_mark()};
    std::vector<float> want(n, 0.0f), data(n);
    for (uint32_t s = 0; s < 12; ++s) {
      const unsigned set = s % 2;
      for (size_t i = 0; i < n; ++i) data[i] = float((i + s) % 7);
      for (size_t i = 0; i < n; ++i) want[i] = want[i] * 0.5f + data[i];
      b->begin_side_uploads(marks[set]);
      b->upload(sets[set].data(), data.data(), n * sizeof(float));
      b->end_side_uploads();
      if (record) ASSERT_EQ(b->begin_step_graph(), "");
      b->scale(acc.data(), n, 0.5f);
      b->axpy(n, 1.0f, sets[set].data(), acc.data());
      if (record) b->end_step_graph();
      marks[set] = b->stream_mark();
    }
    EXPECT_EQ(acc.to_host(), want);
  }
}

// On by default since the H200 run of 2026-12-04 (backend/cuda_paths.h); NN_CUDA_GRAPHS=0 turns
// recording off.
TEST_F(CudaStepGraphs, RecordedByDefaultAndNotWithTheVariableAtZero) {
  unsetenv("NN_CUDA_GRAPHS");
  auto on = make_backend("cuda");
  EXPECT_EQ(on->begin_step_graph(), "");
  on->end_step_graph();
  setenv("NN_CUDA_GRAPHS", "0", 1);
  auto off = make_backend("cuda");
  unsetenv("NN_CUDA_GRAPHS");
  EXPECT_EQ(off->begin_step_graph(), "off (set NN_CUDA_GRAPHS=1 to record the steps)");
  off->end_step_graph();  // nothing begun: no effect
}

}  // namespace
}  // namespace nn
