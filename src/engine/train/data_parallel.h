// Data parallelism: every process (rank) holds the whole network and trains on its slice of each
// global minibatch (distributed/row_split.h says which rows). This file holds the gradient
// side:
//   - GradientReducer: sums the ranks' gradients weighted by their row counts, so the result is
//     the gradient of the global batch-mean loss however unevenly the rows were split. Gradients
//     are grouped into buckets in the order the backward pass finishes them, and each bucket's
//     all-reduce starts as soon as its layers are done, overlapping the backward pass of the
//     layers before them (Communicator::start_all_reduce runs it on a communication thread).
// The communicator may hold host memory (MPI: gradients of a device backend are staged through
// host buffers) or device memory (NCCL with the CUDA backend: gradients are scaled, packed and
// reduced on the device, never leaving it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "backend/device_array.h"
#include "distributed/communicator.h"
#include "distributed/row_split.h"
#include "model/network.h"

namespace nn {

struct GradientReducerOptions {
  size_t bucket_bytes = size_t(4) << 20;  // small parameters are packed up to this size
  bool overlap = true;  // start buckets during backward (false: all after it, for comparison)
  // Parameters the reducer leaves alone: their owner reduces what it computed (a sampled output
  // layer's columns, train/sampled_output.h).
  std::vector<const Parameter*> excluded;
};

class GradientReducer {
 public:
  GradientReducer(Network& net, Communicator& comm, GradientReducerOptions options = {});
  ~GradientReducer();

  // Before backward: this rank's gradients will be weighted by `weight` (its rows / the global
  // batch's rows). Weight 0 (a rank without rows) contributes zeros whatever the gradient
  // arrays hold, even when no backward pass ran or an empty one left NaNs.
  void begin(float weight);
  // Network::backward's after_layer hook: starts the buckets this layer completes.
  void layer_done(Layer& layer);
  // Starts what is left and waits for every bucket: gradients then hold the gradient of the
  // global batch-mean loss, identical on every rank.
  void finish();

  size_t buckets() const { return buckets_.size(); }
  size_t bytes_per_step() const { return total_floats_ * sizeof(float); }
  double wait_seconds() const { return wait_seconds_; }  // time finish() spent blocked, summed
  bool overlapping() const { return overlap_; }

 private:
  struct Bucket {
    std::vector<Parameter*> params;
    size_t floats = 0;
    size_t pending = 0;  // parameters not yet final this step
    bool started = false;
    std::vector<float> staging;         // packed parameters (or a host copy of a device gradient)
    DeviceArray<float> device_staging;  // packed parameters, with a Device communicator
    std::unique_ptr<PendingOp> op;
  };
  void start(Bucket& b);
  void start_on_device(Bucket& b);
  void unpack(Bucket& b);

  Network& net_;
  Communicator& comm_;
  Backend& backend_;
  bool host_memory_;    // host gradients can be handed to the communicator as they are
  bool device_memory_;  // a Device communicator (on the backend's device): gradients stay there
  bool overlap_;
  float weight_ = 1.0f;
  std::vector<Bucket> buckets_;
  std::unordered_map<const Parameter*, size_t> bucket_of_;
  size_t total_floats_ = 0;
  double wait_seconds_ = 0;
};

}  // namespace nn
