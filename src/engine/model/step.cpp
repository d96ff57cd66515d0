// Input loading and output loss evaluation for one minibatch.
#include "model/step.h"

#include "core/error.h"
#include "losses/loss_setup.h"

namespace nn {

void load_inputs(Network& net, const BoundData& data, const HostBatch& batch) {
  Backend& be = net.backend();
  for (size_t i = 0; i < data.inputs.size(); ++i) {
    auto* layer = dynamic_cast<InputLayer*>(&net.layer(data.inputs[i].layer));
    NN_CHECK(layer != nullptr, "bound input is not an input layer");
    if (data.inputs[i].dataset->is_sparse())
      layer->load_sparse(be, batch.sparse[i]);
    else
      layer->load_dense(be, batch.dense[i].data(), batch.rows);
  }
}

OutputLosses::OutputLosses(Network& net, const BoundData& data) : net_(net), data_(data) {
  for (const auto& out : data_.outputs) {
    params_.push_back(loss_params(net_.spec(), net_.layer(out.layer).spec(), out.dataset));
    targets_.push_back(std::make_unique<TargetBuffer>());
  }
}

double OutputLosses::evaluate(const HostBatch& batch, bool write_deltas) {
  Backend& be = net_.backend();
  const size_t n_in = data_.inputs.size();
  double err = 0.0;
  for (size_t o = 0; o < data_.outputs.size(); ++o) {
    const size_t slot = n_in + o;
    Layer& out = net_.layer(data_.outputs[o].layer);
    const TargetView& tv =
        data_.outputs[o].dataset->is_sparse()
            ? targets_[o]->load_sparse(be, batch.sparse[slot])
            : targets_[o]->load_dense(be, batch.dense[slot], out.units(), batch.weights[slot]);
    if (write_deltas)
      err += be.loss_and_delta(params_[o], out.activations(), tv, batch.rows, out.units(),
                               out.delta());
    else
      err += be.loss(params_[o], out.activations(), tv, batch.rows, out.units());
  }
  return err;
}

}  // namespace nn
