// Putting a host minibatch into a network's bound input layers (forward passes of training,
// validation, prediction and the gradient check all start here).
#include "model/batch_inputs.h"

#include "core/error.h"
#include "layers/input_layer.h"

namespace nn {

void load_inputs(Network& net, const BoundData& data, const HostBatch& batch, unsigned set) {
  Backend& be = net.backend();
  for (size_t i = 0; i < data.inputs.size(); ++i) {
    auto* layer = dynamic_cast<InputLayer*>(&net.layer(data.inputs[i].layer));
    NN_CHECK(layer != nullptr, "bound input is not an input layer");
    if (data.inputs[i].dataset->is_sparse())
      layer->load_sparse(be, batch.sparse[i], set);
    else
      layer->load_dense(be, batch.dense[i].data(), batch.rows, set);
  }
}

void load_full_inputs(Network& net, const BoundData& data, const HostBatch& whole) {
  Backend& be = net.backend();
  for (size_t i = 0; i < data.inputs.size(); ++i) {
    auto* layer = dynamic_cast<InputLayer*>(&net.layer(data.inputs[i].layer));
    NN_CHECK(layer != nullptr, "bound input is not an input layer");
    if (!layer->feeds_sharded()) continue;
    if (data.inputs[i].dataset->is_sparse())
      layer->load_full_sparse(be, whole.sparse[i]);
    else
      layer->load_full_dense(be, whole.dense[i].data(), whole.rows);
  }
}

}  // namespace nn
