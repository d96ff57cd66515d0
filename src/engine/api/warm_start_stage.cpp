// The warm start of a training run (see warm_start_stage.h).
#include "api/warm_start_stage.h"

#include <cstdlib>

#include "io/network_file.h"
#include "model/warm_start.h"

namespace nn::api {
namespace {

// Rank 0's arrays on every rank: a layer split over the ranks (model parallel) gives its whole
// arrays to rank 0 alone when saved, and every rank loads its columns from the whole arrays.
void share_arrays_from_rank0(NetworkFile& file, Communicator& comm) {
  if (comm.size() == 1) return;
  const auto share = [&](std::vector<float>& v) {
    uint64_t size = v.size();
    comm.broadcast(&size, 1, 0);
    v.resize(size_t(size));
    if (size) comm.broadcast(v.data(), v.size(), 0);
  };
  const auto share_list = [&](std::vector<std::vector<float>>& list) {
    uint64_t count = list.size();
    comm.broadcast(&count, 1, 0);
    list.resize(size_t(count));
    for (auto& v : list) share(v);
  };
  for (WeightArrays& w : file.weights) {
    share(w.weights);
    share(w.bias);
    share_list(w.weight_state);
    share_list(w.bias_state);
  }
  for (LayerArrays& a : file.layers) {
    for (auto* v : {&a.bn_scale, &a.bn_bias, &a.bn_running_mean, &a.bn_running_variance}) share(*v);
    share_list(a.bn_scale_state);
    share_list(a.bn_bias_state);
  }
}

std::string state_note(const NetworkFile& old, bool same_optimizer, bool carry) {
  if (carry) return "optimizer state of kept items carried over";
  if (same_optimizer) return "optimizer state afresh: NN_WARM_START_STATE=fresh";
  if (!old.training.present) return "optimizer state afresh: the old file has no training state";
  return std::string("optimizer state afresh: the old run used ") +
         to_string(old.training.optimizer);
}

}  // namespace

void apply_warm_start(const std::string& path, OptimizerKind optimizer, Network& net,
                      Communicator& comm, const LogSink& log) {
  const NetworkFile old = read_network_file(path);
  // The kept items' optimizer state comes along when the old run used the same optimizer (the
  // state means the same then). For measurements, NN_WARM_START_STATE=fresh starts it afresh
  // (docs/retraining.md compares the two).
  const char* setting = std::getenv("NN_WARM_START_STATE");
  const bool same_optimizer = old.training.present && old.training.optimizer == optimizer;
  const bool carry = same_optimizer && !(setting && std::string(setting) == "fresh");
  WarmStartResult started = warm_start(net.to_file(), old, path, carry);
  share_arrays_from_rank0(started.arrays, comm);
  net.load_arrays(started.arrays);
  log("warm start from " + path + " (" + state_note(old, same_optimizer, carry) +
      "; epochs and learning rate afresh):");
  for (const std::string& line : started.lines) log("  " + line);
}

}  // namespace nn::api
