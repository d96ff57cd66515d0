// main() for every tool: starts MPI when launched by mpirun (nn/process.h), runs the tool body
// and maps exceptions to messages and exit codes. Under mpirun every rank's error is printed with
// its rank, and a failing rank ends the whole job (MPI_Abort) instead of leaving the others
// waiting for it. Before anything else, a process whose OpenBLAS runs kernels older than the CPU
// restarts itself with the matching ones (restart_with_matching_blas_kernels).
#include "common/tool_main.h"

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <new>
#include <string>

#include "common/signals.h"
#include "common/stdin_spool.h"
#include "nn/error.h"
#include "nn/process.h"

namespace {

int fail(int status, const std::string& message, bool usage) {
  const std::string rank = nn::api::rank_prefix();
  std::fprintf(stderr, "%s: %serror: %s\n", nn::tool::kToolName, rank.c_str(),
               nn::tool::with_stdin_names(message).c_str());
  if (usage) std::fprintf(stderr, "(run '%s --help' for usage)\n", nn::tool::kToolName);
  if (nn::api::world_size() > 1) nn::api::abort_job(status);
  return status;
}

int run_tool(int argc, char** argv) {
  nn::tool::install_stop_handlers();  // SIGTERM/SIGINT/SIGHUP: stop cleanly (common/signals.h)
  try {
    return nn::tool::run(argc, argv);
  } catch (const nn::Interrupted& e) {
    return nn::tool::report_interrupted(e);
  } catch (const nn::ArgumentError& e) {  // the tool's UsageError, or a job's settings
    return fail(2, e.what(), true);
  } catch (const nn::Error& e) {
    return fail(1, e.what(), false);
  } catch (const std::bad_alloc&) {
    const std::string& what = nn::api::current_allocation();
    return fail(1,
                "out of memory" + (what.empty() ? std::string() : " while allocating " + what) +
                    " (memory budget " + nn::api::format_bytes(nn::api::memory_budget()) +
                    "; see --memory-limit)",
                false);
  } catch (const std::exception& e) {
    return fail(1, e.what(), false);
  }
}

// The path to execute this program again under. The kernel names a process after the last part
// of the path it was executed from (the name ps, top, pgrep, pkill and killall match), so the
// restart goes through the real path (/usr/bin/nn-train) rather than the /proc/self/exe link,
// which would rename every tool "exe". The link itself is the fallback when the path cannot be
// read or the file was replaced since it started (an upgrade under a running tool).
std::string own_executable_path() {
  char path[4096];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) return "/proc/self/exe";
  path[n] = '\0';
  const std::string resolved(path);
  if (access(resolved.c_str(), X_OK) != 0) return "/proc/self/exe";  // " (deleted)", or gone
  return resolved;
}

// OpenBLAS chose its kernels when this process loaded it, from the CPU's model number; on a CPU
// newer than the library they are an older instruction set's, several times slower
// (nn/process.h). Its only remedy is OPENBLAS_CORETYPE at load time, so the tool starts again,
// as the same program with the same arguments, with the variable set (the restarted process
// sees it set and goes on). A user's own OPENBLAS_CORETYPE, whatever its value, is kept. If
// the restart fails, the tool runs with the kernels it has.
void restart_with_matching_blas_kernels(char** argv) {
  std::string kernels = nn::api::blas_kernels_override();
  // Test hook: restart with these kernels on any CPU, as on one whose OpenBLAS chose older ones,
  // so that the restart itself is tested everywhere (tests/tools/blas_kernels.sh).
  const char* forced = std::getenv("NN_TEST_BLAS_RESTART");
  if (forced && *forced && !std::getenv("OPENBLAS_CORETYPE")) kernels = forced;
  if (kernels.empty() || setenv("OPENBLAS_CORETYPE", kernels.c_str(), 1) != 0) return;
  execv(own_executable_path().c_str(), argv);
  unsetenv("OPENBLAS_CORETYPE");  // still here: the restart failed
}

}  // namespace

int main(int argc, char** argv) {
  restart_with_matching_blas_kernels(argv);
  // Past a file-size limit (ulimit -f, RLIMIT_FSIZE) the kernel sends SIGXFSZ, whose default
  // action kills the process mid-write, leaving its temporary file. Ignored, the write fails
  // with EFBIG instead, and the atomic writer reports "File too large" and removes it.
  std::signal(SIGXFSZ, SIG_IGN);
  std::unique_ptr<nn::api::ProcessSession> session;
  try {
    session = std::make_unique<nn::api::ProcessSession>(&argc, &argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", nn::tool::kToolName, e.what());
    return 1;
  }
  return run_tool(argc, argv);
}
