// Stop handlers of the tools (see signals.h). The handlers only do async-signal-safe work: an
// atomic store (api::request_stop), write(2) of a message prepared beforehand, unlink(2) of the
// registered temporary files (api::remove_temporary_files), and re-raising the signal with its
// default action so the process ends as killed by it.
#include "common/signals.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "common/tool_main.h"
#include "nn/process.h"
#include "nn/stop.h"

namespace nn::tool {
namespace {

constexpr int kSignals[] = {SIGTERM, SIGINT, SIGHUP};
constexpr size_t kNoticeMax = 256;
// The notice printed on the first signal, per signal (prepared before any signal can come).
char g_notice[3][kNoticeMax];
size_t g_notice_length[3] = {0, 0, 0};

int slot_of(int signal) {
  for (int i = 0; i < 3; ++i)
    if (kSignals[i] == signal) return i;
  return -1;
}

extern "C" void on_stop_signal(int signal) {
  const int saved_errno = errno;
  if (api::stop_signal() != 0) {
    // The second signal: end now. Outputs being written have no name yet (O_TMPFILE) or are
    // unlinked here, so nothing partial stays behind.
    api::remove_temporary_files();
    ::signal(signal, SIG_DFL);
    ::raise(signal);  // delivered when the handler returns: the default action ends the process
    errno = saved_errno;
    return;
  }
  api::request_stop(signal);
  const int slot = slot_of(signal);
  if (slot >= 0 && g_notice_length[slot] > 0)
    (void)!::write(2, g_notice[slot], g_notice_length[slot]);
  errno = saved_errno;
}

}  // namespace

void install_stop_handlers() {
  const bool training = std::strcmp(kToolName, "nn-train") == 0;
  const bool tuning = std::strcmp(kToolName, "nn-tune") == 0;
  const bool speak = api::world_rank() == 0;
  for (int i = 0; i < 3; ++i) {
    const int signal = kSignals[i];
    struct sigaction old {};
    if (::sigaction(signal, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;
    const std::string notice =
        std::string(kToolName) + ": " + api::signal_name(signal) +
        (training ? ": stopping after the current minibatch and saving a checkpoint (send it "
                    "again to stop at once, without one)\n"
         : tuning ? ": passing it on to the running trials, which save a checkpoint and stop "
                    "(send it again to stop nn-tune at once)\n"
                  : ": stopping without writing any output (send it again to stop at once)\n");
    g_notice_length[i] = speak && notice.size() < kNoticeMax ? notice.size() : 0;
    std::memcpy(g_notice[i], notice.c_str(), g_notice_length[i]);
    struct sigaction action {};
    action.sa_handler = on_stop_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    ::sigaction(signal, &action, nullptr);
  }
}

int report_interrupted(const Interrupted& e) {
  const int status = 128 + e.signal();
  if (api::world_rank() == 0) {
    std::string line = std::string(kToolName) + ": " + e.what();
    if (!e.checkpoint().empty()) line += "; to continue, run the same command with --resume";
    std::fprintf(stderr, "%s\n", line.c_str());
    std::fflush(stderr);
  }
  // Training runs agree on where to stop and end together; any other stop under mpirun is one
  // rank's, and the others may be waiting for it.
  if (api::world_size() > 1 && e.checkpoint().empty()) api::abort_job(status);
  return status;
}

}  // namespace nn::tool
