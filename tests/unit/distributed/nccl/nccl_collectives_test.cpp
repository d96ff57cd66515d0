// NCCL communicator tests (CTest label cuda; under `mpirun -np 2` also mpi): every collective of
// the Communicator seam run over NCCL on device buffers and over the host communicator (MPI under
// mpirun, LocalCommunicator alone) on the same data, results compared (exactly for integers and
// for sums of two floats; with a tolerance otherwise). Also the data-parallel gradient reduction
// with both communicators on a CUDA network. Every test skips with a message when there is no
// CUDA device, or fewer devices on this host than ranks (NCCL needs one device per rank);
// scripts/gpu-check.sh runs them on a GPU (2 ranks only with 2 GPUs).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/device_probe.h"
#include "backend/device_array.h"
#include "config/parse.h"
#include "core/error.h"
#include "distributed/device_placement.h"
#include "distributed/nccl/nccl_communicator.h"
#include "distributed/process.h"
#include "model/network.h"
#include "train/data_parallel.h"

namespace nn {
namespace {

template <typename T>
DeviceArray<T> on(Backend& b, const std::vector<T>& v) {
  DeviceArray<T> d;
  d.assign(b, v);
  return d;
}

class Nccl : public ::testing::Test {
 protected:
  void SetUp() override {
    host_ = world_communicator();
    const int devices = cuda_device_count();
    if (devices == 0) GTEST_SKIP() << "no CUDA device, NCCL not checked: " << cuda_device_summary();
    const int here = ranks_on_this_host();
    if (here > devices)
      GTEST_SKIP() << here << " ranks on this host but " << devices
                   << " CUDA device(s): NCCL needs one device per rank, not checked";
    backend_ = make_backend("cuda", 1, default_device());
    auto& cuda = dynamic_cast<CudaBackend&>(*backend_);
    nccl_ = std::make_unique<NcclCommunicator>(*host_, cuda.device(), cuda.stream());
  }
  void TearDown() override {
    nccl_.reset();
    backend_.reset();
  }
  int p() const { return host_->size(); }
  int r() const { return host_->rank(); }

  std::shared_ptr<Communicator> host_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<NcclCommunicator> nccl_;
};

// Rank q contributes q+1 elements, except rank 1 which contributes none.
std::vector<size_t> uneven_counts(int p) {
  std::vector<size_t> counts(static_cast<size_t>(p));
  for (int q = 0; q < p; ++q) counts[size_t(q)] = q == 1 ? 0 : size_t(q + 1) * 37;
  return counts;
}

template <typename T>
std::vector<T> pattern(size_t n, int rank, int salt) {
  std::vector<T> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = T(int((i * 7 + size_t(salt)) % 23) - 11 + 3 * rank);
  return v;
}

TEST_F(Nccl, DescribesItself) {
  EXPECT_EQ(nccl_->size(), host_->size());
  EXPECT_EQ(nccl_->rank(), host_->rank());
  EXPECT_EQ(nccl_->memory_space(), MemorySpace::Device);
  EXPECT_TRUE(nccl_->compatible_with(MemorySpace::Device));
  EXPECT_FALSE(nccl_->compatible_with(MemorySpace::Host));
  EXPECT_EQ(nccl_->name(), "nccl");
}

template <typename T>
void check_all_reduce(Backend& be, Communicator& nccl, Communicator& host, int rank) {
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min}) {
    for (size_t n : {size_t(1), size_t(1000), size_t(100003)}) {
      std::vector<T> want = pattern<T>(n, rank, int(op));
      auto d = on(be, want);
      host.all_reduce_raw(want.data(), n, CommTypeOf<T>::value, op);
      nccl.all_reduce_raw(d.data(), n, CommTypeOf<T>::value, op);
      EXPECT_EQ(d.to_host(), want)
          << comm_type_name(CommTypeOf<T>::value) << " op " << int(op) << " n " << n;
    }
  }
}

// Small integers: every summation order gives the same floats, so all types compare exactly.
TEST_F(Nccl, AllReduceEveryTypeAndOperation) {
  check_all_reduce<float>(*backend_, *nccl_, *host_, r());
  check_all_reduce<double>(*backend_, *nccl_, *host_, r());
  check_all_reduce<int32_t>(*backend_, *nccl_, *host_, r());
  check_all_reduce<int64_t>(*backend_, *nccl_, *host_, r());
}

TEST_F(Nccl, AllReduceOfRealFloatsWithinRounding) {
  std::vector<float> want(4099);
  for (size_t i = 0; i < want.size(); ++i) want[i] = std::sin(float(i) * 0.37f + float(r()));
  auto d = on(*backend_, want);
  host_->all_reduce_sum(want.data(), want.size());
  nccl_->all_reduce_sum(d.data(), d.size());
  const auto got = d.to_host();
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5f * float(p())) << i;
}

TEST_F(Nccl, BroadcastFromEveryRoot) {
  for (int root = 0; root < p(); ++root) {
    std::vector<int64_t> want = pattern<int64_t>(777, r(), root);
    auto d = on(*backend_, want);
    host_->broadcast(want.data(), want.size(), root);
    nccl_->broadcast(d.data(), d.size(), root);
    EXPECT_EQ(d.to_host(), want) << "root " << root;
  }
  std::vector<uint8_t> bytes(33, uint8_t(r() + 1));
  auto d = on(*backend_, bytes);
  nccl_->broadcast_bytes(d.data(), d.size(), p() - 1);
  EXPECT_EQ(d.to_host(), std::vector<uint8_t>(33, uint8_t(p())));
}

TEST_F(Nccl, AllGatherEqualCountsAndInPlace) {
  const size_t n = 513;
  std::vector<float> mine = pattern<float>(n, r(), 1);
  std::vector<float> want(n * size_t(p()), -1.0f);
  host_->all_gather(mine.data(), n, want.data());
  auto send = on(*backend_, mine);
  auto recv = on(*backend_, std::vector<float>(want.size(), -1.0f));
  nccl_->all_gather(send.data(), n, recv.data());
  EXPECT_EQ(recv.to_host(), want);
  // In place: this rank's block already sits in the receive buffer.
  std::vector<float> placed(want.size(), -1.0f);
  std::copy(mine.begin(), mine.end(), placed.begin() + std::ptrdiff_t(n * size_t(r())));
  auto inplace = on(*backend_, placed);
  nccl_->all_gather(inplace.data() + n * size_t(r()), n, inplace.data());
  EXPECT_EQ(inplace.to_host(), want);
}

TEST_F(Nccl, AllGatherVariableCountsIncludingAnEmptyRank) {
  const auto counts = uneven_counts(p());
  const size_t total = std::accumulate(counts.begin(), counts.end(), size_t(0));
  std::vector<double> mine = pattern<double>(counts[size_t(r())], r(), 2);
  std::vector<double> want(total, -1.0);
  host_->all_gather_v(mine.data(), want.data(), counts);
  auto send = on(*backend_, mine.empty() ? std::vector<double>(1, 0.0) : mine);
  auto recv = on(*backend_, std::vector<double>(total, -1.0));
  nccl_->all_gather_v(send.data(), recv.data(), counts);
  EXPECT_EQ(recv.to_host(), want);
}

TEST_F(Nccl, ReduceScatterEqualAndVariableCounts) {
  {
    const size_t n = 301;
    std::vector<float> send = pattern<float>(n * size_t(p()), r(), 3);
    std::vector<float> want(n, -1.0f);
    host_->reduce_scatter_sum(send.data(), want.data(), n);
    auto ds = on(*backend_, send);
    auto dr = on(*backend_, std::vector<float>(n, -1.0f));
    nccl_->reduce_scatter_sum(ds.data(), dr.data(), n);
    EXPECT_EQ(dr.to_host(), want);
  }
  {
    const auto counts = uneven_counts(p());
    const size_t total = std::accumulate(counts.begin(), counts.end(), size_t(0));
    std::vector<int64_t> send = pattern<int64_t>(total, r(), 4);
    std::vector<int64_t> want(counts[size_t(r())] + 1, -7);  // one guard element
    host_->reduce_scatter_sum_v(send.data(), want.data(), counts);
    auto ds = on(*backend_, send);
    auto dr = on(*backend_, std::vector<int64_t>(want.size(), -7));
    nccl_->reduce_scatter_sum_v(ds.data(), dr.data(), counts);
    EXPECT_EQ(dr.to_host(), want);
  }
}

TEST_F(Nccl, GatherEqualAndVariableCountsToEachRoot) {
  const auto counts = uneven_counts(p());
  const size_t total = std::accumulate(counts.begin(), counts.end(), size_t(0));
  for (int root = 0; root < p(); ++root) {
    std::vector<int32_t> mine = pattern<int32_t>(counts[size_t(r())], r(), root);
    std::vector<int32_t> want(total, -1);
    host_->gather_v(mine.data(), r() == root ? want.data() : nullptr, counts, root);
    auto send = on(*backend_, mine.empty() ? std::vector<int32_t>(1, 0) : mine);
    auto recv = on(*backend_, std::vector<int32_t>(total, -1));
    nccl_->gather_v(send.data(), r() == root ? recv.data() : nullptr, counts, root);
    if (r() == root) EXPECT_EQ(recv.to_host(), want) << "root " << root;
    // Equal counts.
    std::vector<float> m2 = pattern<float>(64, r(), root);
    std::vector<float> w2(64 * size_t(p()), -1.0f);
    host_->gather(m2.data(), 64, r() == root ? w2.data() : nullptr, root);
    auto s2 = on(*backend_, m2);
    auto r2 = on(*backend_, std::vector<float>(w2.size(), -1.0f));
    nccl_->gather(s2.data(), 64, r() == root ? r2.data() : nullptr, root);
    if (r() == root) EXPECT_EQ(r2.to_host(), w2) << "root " << root;
  }
}

TEST_F(Nccl, AsynchronousAllReduceRunsBesideTheBackendStream) {
  std::vector<float> a = pattern<float>(1 << 20, r(), 5), b = pattern<float>(1000, r(), 6);
  auto da = on(*backend_, a), db = on(*backend_, b);
  auto op1 = nccl_->start_all_reduce_sum(da.data(), da.size());
  auto op2 = nccl_->start_all_reduce_sum(db.data(), db.size());
  backend_->scale(db.data(), 0, 1.0f);  // the backend goes on meanwhile
  host_->all_reduce_sum(a.data(), a.size());
  host_->all_reduce_sum(b.data(), b.size());
  op1->wait();
  op2->wait();
  EXPECT_EQ(da.to_host(), a);
  EXPECT_EQ(db.to_host(), b);
}

TEST_F(Nccl, SplitByParityAndByHost) {
  auto half = nccl_->split(r() % 2, r());
  ASSERT_NE(half, nullptr);
  EXPECT_EQ(half->name(), "nccl");
  EXPECT_EQ(half->size(), (p() + 1 - r() % 2) / 2);
  EXPECT_EQ(half->rank(), r() / 2);
  std::vector<int32_t> one = {r()};
  auto d = on(*backend_, one);
  half->all_reduce_sum(d.data(), 1);
  int32_t want = 0;
  for (int q = r() % 2; q < p(); q += 2) want += q;
  EXPECT_EQ(d.to_host()[0], want);
  EXPECT_EQ(nccl_->split(-1, 0), nullptr);
  auto local = nccl_->split_by_host();
  EXPECT_EQ(local->size(), p());  // every rank of these tests is on this host
  local->barrier();
  nccl_->barrier();
}

TEST_F(Nccl, HostMemoryAndByteReductionsAreRefused) {
  std::vector<float> host_buffer(8, 1.0f);
  EXPECT_THROW(nccl_->all_reduce_sum(host_buffer.data(), host_buffer.size()), InternalError);
  auto bytes = on(*backend_, std::vector<uint8_t>(4, 1));
  EXPECT_THROW(nccl_->all_reduce_raw(bytes.data(), 4, CommType::Byte, ReduceOp::Sum),
               InternalError);
  // The communicator is still usable.
  auto d = on(*backend_, std::vector<int32_t>{1});
  nccl_->all_reduce_sum(d.data(), 1);
  EXPECT_EQ(d.to_host()[0], p());
}

// The data-parallel gradient reduction of a CUDA network with NCCL (device packing and scaling)
// against the same reduction through host staging over the host communicator.
TEST_F(Nccl, GradientReducerOverNcclMatchesHostStaging) {
  const char* json = R"({ "Name": "nccl", "ErrorFunction": "CrossEntropy", "Layers": [
      { "Name": "Input", "Kind": "Input", "N": 50, "DataSet": "input" },
      { "Name": "H1", "Kind": "Hidden", "N": 9, "Activation": "Sigmoid" },
      { "Name": "H2", "Kind": "Hidden", "N": 300, "Activation": "Sigmoid" },
      { "Name": "Output", "Kind": "Output", "N": 50, "DataSet": "output",
        "Activation": "Sigmoid" } ] })";
  const NetworkSpec spec = parse_network_json(json, "nccl.json");
  Network net(*backend_, spec, {{"Input", false}});
  net.set_max_batch(4);
  // Small buckets: several parameters packed into one, and large ones on their own.
  GradientReducerOptions options;
  options.bucket_bytes = 4096;
  GradientReducer over_nccl(net, *nccl_, options);
  GradientReducer over_host(net, *host_, options);
  ASSERT_GT(over_nccl.buckets(), 1u);
  auto fill = [&](bool nan_on_rank_1) {
    int salt = 0;
    for (Parameter* q : net.parameters()) {
      std::vector<float> g = pattern<float>(q->size(), r(), salt++);
      if (nan_on_rank_1 && r() == 1) g.assign(g.size(), std::numeric_limits<float>::quiet_NaN());
      q->grad.upload(g);
    }
  };
  for (bool empty_rank : {false, true}) {
    // Row weights as the trainer gives them; with empty_rank, rank 1 has no rows (weight 0) and
    // garbage gradients that must not leak into the sum.
    const float weight =
        empty_rank && r() == 1 ? 0.0f : float(r() + 1) / float(p() * (p() + 1) / 2);
    fill(empty_rank);
    over_host.begin(weight);
    over_host.finish();
    std::vector<std::vector<float>> want;
    for (Parameter* q : net.parameters()) want.push_back(q->grad.to_host());
    fill(empty_rank);
    over_nccl.begin(weight);
    for (auto it = net.order().rbegin(); it != net.order().rend(); ++it) over_nccl.layer_done(**it);
    over_nccl.finish();
    size_t i = 0;
    for (Parameter* q : net.parameters()) {
      const auto got = q->grad.to_host();
      ASSERT_EQ(got.size(), want[i].size());
      for (size_t k = 0; k < got.size(); ++k)
        ASSERT_NEAR(got[k], want[i][k], 1e-5f * (1.0f + std::fabs(want[i][k])))
            << q->name << "[" << k << "] empty_rank " << empty_rank;
      ++i;
    }
  }
}

}  // namespace
}  // namespace nn
