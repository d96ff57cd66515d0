// nn-train's test hook: the pipeline tests make one rank fail mid-epoch to check that a whole
// mpirun job ends cleanly. Set in the environment:
//   NN_TEST_FAIL_RANK=r NN_TEST_FAIL_STEP=s
//   [NN_TEST_FAIL_MODE=throw|exit|hang|sigterm|sigint|sigstop|sigkill]
// (default throw; sigterm and sigint send that signal to the rank itself at the start of update
// s, for the graceful-stop tests).
#pragma once

#include <cstdint>
#include <functional>

namespace nn::tool {

// For run_training's on_step on rank `rank`: null unless the variables name this rank; otherwise
// at step s it throws nn::Error, ends the process without a word (exit), hangs, or raises a
// stop signal.
std::function<void(uint64_t step)> failure_injection_from_environment(int rank);

}  // namespace nn::tool
