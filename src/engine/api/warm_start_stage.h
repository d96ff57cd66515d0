// The warm start of a training run (docs/retraining.md), shared by nn-train (TrainJob) and the
// library's Trainer: the old network file read, its arrays matched to the new network's items by
// name (model/warm_start.h), the result made the same on every rank and loaded, and a line per
// layer logged.
#pragma once

#include <string>

#include "config/enums.h"
#include "core/log.h"
#include "distributed/communicator.h"
#include "model/network.h"

namespace nn::api {

// Starts `net` (built and initialised for the new data) from the network file at `path`.
// `optimizer` is the new run's: the kept items' optimizer state is carried over when the old
// run used the same one. Collective under mpirun: every rank calls it.
void apply_warm_start(const std::string& path, OptimizerKind optimizer, Network& net,
                      Communicator& comm, const LogSink& log);

}  // namespace nn::api
