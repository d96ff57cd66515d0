// nn-train's test hook: the pipeline tests make one rank fail mid-epoch to check that a whole
// mpirun job ends cleanly. Set in the environment:
//   NN_TEST_FAIL_RANK=r NN_TEST_FAIL_STEP=s [NN_TEST_FAIL_MODE=throw|exit|hang] (default throw).
#pragma once

#include <cstdint>
#include <functional>

namespace nn::tool {

// For run_training's on_step on rank `rank`: null unless the variables name this rank; otherwise
// at step s it throws nn::Error, ends the process without a word (exit) or hangs.
std::function<void(uint64_t step)> failure_injection_from_environment(int rank);

}  // namespace nn::tool
