// How the tools stop on SIGTERM, SIGINT and SIGHUP (docs/reliability.md, "Stopping"): the first
// signal asks the running job to stop at its next safe point (nn-train: after the minibatch in
// flight, saving a checkpoint of that state; the others: before writing anything), the second
// ends the process at once, removing the temporary files of outputs being written.
#pragma once

#include "nn/error.h"

namespace nn::tool {

// Installs the handlers (a signal that is ignored when the tool starts, as under nohup, stays
// ignored). Call once, after MPI is initialised (only rank 0 prints the notice).
void install_stop_handlers();

// Prints the one line saying where the job stopped (and, for a training run, how to resume),
// on rank 0, and returns the exit status 128 + signal. Under mpirun a stop the ranks did not
// agree on (no checkpoint) ends the whole job.
int report_interrupted(const Interrupted& e);

}  // namespace nn::tool
