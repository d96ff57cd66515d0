// The GradientReducer's path for a Device communicator (NCCL: buckets packed, weighted and reduced
// in backend memory) checked without a GPU: the world communicator is relabelled as a Device one
// and the network runs on the CPU backend, whose memory both can address. The result must equal
// the host path's bit for bit (same products, same reductions). Alone and under mpirun -np 2/3.
#include <gtest/gtest.h>

#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "config/parse.h"
#include "distributed/communicator.h"
#include "distributed/process.h"
#include "model/network.h"
#include "train/data_parallel.h"

namespace nn {
namespace {

// Forwards every operation to `inner` but says its buffers are device memory.
class DeviceLabelled : public Communicator {
 public:
  explicit DeviceLabelled(Communicator& inner) : inner_(inner) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  MemorySpace memory_space() const override { return MemorySpace::Device; }
  std::string name() const override { return "device-labelled"; }
  void all_reduce_raw(void* d, size_t n, CommType t, ReduceOp op) override {
    ++reductions;
    inner_.all_reduce_raw(d, n, t, op);
  }
  void all_gather_v_raw(const void* s, void* r, const size_t* c, CommType t) override {
    inner_.all_gather_v_raw(s, r, c, t);
  }
  void reduce_scatter_v_raw(const void* s, void* r, const size_t* c, CommType t,
                            ReduceOp op) override {
    inner_.reduce_scatter_v_raw(s, r, c, t, op);
  }
  void gather_v_raw(const void* s, void* r, const size_t* c, CommType t, int root) override {
    inner_.gather_v_raw(s, r, c, t, root);
  }
  void broadcast_raw(void* d, size_t n, CommType t, int root) override {
    inner_.broadcast_raw(d, n, t, root);
  }
  void barrier() override { inner_.barrier(); }
  std::unique_ptr<Communicator> split(int color, int key) override {
    return inner_.split(color, key);
  }
  std::unique_ptr<Communicator> split_by_host() override { return inner_.split_by_host(); }
  std::unique_ptr<PendingOp> start_all_reduce_raw(void* d, size_t n, CommType t,
                                                  ReduceOp op) override {
    ++reductions;
    return inner_.start_all_reduce_raw(d, n, t, op);
  }
  int reductions = 0;

 private:
  Communicator& inner_;
};

std::vector<float> pattern(size_t n, int rank, int salt) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = float(int((i * 7 + size_t(salt)) % 23) - 11) * 0.37f + float(rank);
  return v;
}

TEST(GradientReducerDevicePath, MatchesTheHostPathBitForBit) {
  auto world = world_communicator();
  const int p = world->size(), r = world->rank();
  const char* json = R"({ "Name": "reduce", "ErrorFunction": "CrossEntropy", "Layers": [
      { "Name": "Input", "Kind": "Input", "N": 50, "DataSet": "input" },
      { "Name": "H1", "Kind": "Hidden", "N": 9, "Activation": "Sigmoid" },
      { "Name": "H2", "Kind": "Hidden", "N": 300, "Activation": "Sigmoid" },
      { "Name": "Output", "Kind": "Output", "N": 50, "DataSet": "output",
        "Activation": "Sigmoid" } ] })";
  auto be = make_backend("cpu", 1);
  Network net(*be, parse_network_json(json, "reduce.json"), {{"Input", false}});
  net.set_max_batch(4);
  GradientReducerOptions options;
  options.bucket_bytes = 4096;  // packed buckets and buckets of one large parameter
  DeviceLabelled device(*world);
  GradientReducer over_device(net, device, options);
  GradientReducer over_host(net, *world, options);
  ASSERT_GT(over_device.buckets(), 1u);
  ASSERT_LT(over_device.buckets(), net.parameters().size());  // some bucket holds several
  auto fill = [&](bool garbage_on_rank_1) {
    int salt = 0;
    for (Parameter* q : net.parameters()) {
      std::vector<float> g = pattern(q->size(), r, salt++);
      if (garbage_on_rank_1 && r == 1) g.assign(g.size(), std::numeric_limits<float>::quiet_NaN());
      q->grad.upload(g);
    }
  };
  for (bool empty_rank : {false, true}) {
    // Rank 1 without rows: weight 0 and NaN gradients that must not reach the sum.
    const float weight = empty_rank && r == 1 ? 0.0f : float(r + 1) / float(p * (p + 1) / 2);
    fill(empty_rank);
    over_host.begin(weight);
    over_host.finish();
    std::vector<std::vector<float>> want;
    for (Parameter* q : net.parameters()) want.push_back(q->grad.to_host());
    fill(empty_rank);
    const int before = device.reductions;
    over_device.begin(weight);
    for (auto it = net.order().rbegin(); it != net.order().rend(); ++it)
      over_device.layer_done(**it);
    over_device.finish();
    EXPECT_EQ(device.reductions - before, int(over_device.buckets()));
    size_t i = 0;
    for (Parameter* q : net.parameters()) {
      const auto got = q->grad.to_host();
      ASSERT_EQ(got.size(), want[i].size());
      for (size_t k = 0; k < got.size(); ++k)
        ASSERT_EQ(got[k], want[i][k]) << q->name << "[" << k << "] empty_rank " << empty_rank;
      ++i;
    }
  }
}

}  // namespace
}  // namespace nn
