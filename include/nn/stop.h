// Public API: stopping a running job cleanly. A program's signal handler (the tools install one
// for SIGTERM and SIGINT) calls request_stop(); the jobs poll the request at safe points: a
// training run finishes the minibatch in flight, saves a checkpoint of that exact state and
// throws nn::Interrupted naming it; prediction and dataset jobs throw nn::Interrupted before
// they write anything. Under mpirun the ranks agree on the step to stop at, so a request on any
// one rank stops them all. Functions marked async-signal-safe may be called from a handler.
#pragma once

#include <string>
#include <vector>

namespace nn::api {

// Records a stop request (the first signal number sticks). Async-signal-safe.
void request_stop(int signal) noexcept;
// The signal of the pending request, 0 when none. Async-signal-safe.
int stop_signal() noexcept;
// Forgets a request (for programs that go on after an Interrupted job).
void clear_stop_request() noexcept;

// Removes every temporary file the library is writing at this moment (outputs not yet renamed
// into place), for a program about to end at once, e.g. on a second signal. Most temporary
// files have no name at all (Linux O_TMPFILE) and vanish with the process anyway; this removes
// the named ones of file systems without it. Async-signal-safe.
void remove_temporary_files() noexcept;

// A named temporary file of the program's own (e.g. standard input spooled for a library that
// needs a path) registered for remove_temporary_files(): returns a handle for
// unregister_temporary_file, -1 when it could not be registered.
int register_temporary_file(const std::string& path) noexcept;
void unregister_temporary_file(int handle) noexcept;

// Removes the files ".<name of target>.tmp.<pid>.<n>" beside `target` whose process is gone:
// temporary files a killed run left behind (the library's outputs follow this naming). Returns
// the paths removed; never throws.
std::vector<std::string> remove_stale_temporary_files(const std::string& target);

// "SIGTERM", "SIGINT", "SIGHUP", ... or "signal N".
std::string signal_name(int signal);

}  // namespace nn::api
