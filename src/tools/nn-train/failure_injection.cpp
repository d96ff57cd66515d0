// Test failure injection (see failure_injection.h).
#include "nn-train/failure_injection.h"

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <string>
#include <thread>

#include "nn/error.h"

namespace nn::tool {

std::function<void(uint64_t)> failure_injection_from_environment(int rank) {
  const char* r = std::getenv("NN_TEST_FAIL_RANK");
  const char* s = std::getenv("NN_TEST_FAIL_STEP");
  if (!r || !s || std::atoi(r) != rank) return nullptr;
  const uint64_t at = std::strtoull(s, nullptr, 10);
  const char* m = std::getenv("NN_TEST_FAIL_MODE");
  const std::string mode = m ? m : "throw";
  return [at, mode](uint64_t step) {
    if (step != at) return;
    if (mode == "exit") std::_Exit(3);  // dies without a word, as a crashed rank would
    // A stop signal to this process at exactly this update (the stop tests' deterministic kill).
    if (mode == "sigterm") return void(std::raise(SIGTERM));
    if (mode == "sigint") return void(std::raise(SIGINT));
    // A lost rank: every thread stopped (as by a debugger, or a machine that froze), or killed
    // at once; unlike "hang", its heartbeats stop too (distributed/mpi/rank_heartbeat.h).
    if (mode == "sigstop") return void(std::raise(SIGSTOP));
    if (mode == "sigkill") return void(std::raise(SIGKILL));
    if (mode == "hang")
      for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
    throw Error("injected failure at step " + std::to_string(step) + " (NN_TEST_FAIL_RANK)");
  };
}

}  // namespace nn::tool
