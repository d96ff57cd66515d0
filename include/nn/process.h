// Public API: the process a program runs the library in. Under an MPI launcher (mpirun, srun)
// several processes ("ranks") form one job; a ProcessSession starts MPI for them, and the
// functions here say which rank this is, pick per-process defaults (threads, CUDA device) and
// end the whole job when one rank fails. Without MPI everything describes a single process.
// Also here: the memory budget that sizes read from files are checked against before anything
// is allocated for them (the tools' --memory-limit).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace nn::api {

// RAII for one program run: initialises MPI when an MPI launcher started the process and nobody
// has initialised it yet, and finalises only what it initialised. Throws nn::BackendError when
// the environment says MPI but this build has none. argc/argv may be null.
class ProcessSession {
 public:
  ProcessSession(int* argc, char*** argv);
  ~ProcessSession();
  ProcessSession(const ProcessSession&) = delete;
  ProcessSession& operator=(const ProcessSession&) = delete;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// True when the environment says an MPI launcher started this process.
bool launched_by_mpi();
// True while MPI is initialised (by a ProcessSession or by the embedding program).
bool mpi_active();
int world_rank();  // 0 without MPI
int world_size();  // 1 without MPI
// Text messages between the job's ranks, for programs that share out work among their ranks
// themselves (nn-tune's scheduler and its workers): in order between any two ranks. send_text
// returns once the text is sent or buffered (nn::BackendError without another rank);
// poll_text never waits: {sender's rank, text} of a message that has arrived, or nullopt.
void send_text(int to_rank, const std::string& text);
std::optional<std::pair<int, std::string>> poll_text();
// "rank 3: " when the job has more than one rank, "" otherwise (a prefix for messages).
std::string rank_prefix();
// Ends every process of the job with `status` (MPI_Abort under MPI, std::exit otherwise). For
// programs, after they have reported the reason; the library itself never calls it.
[[noreturn]] void abort_job(int status);

// CPU threads for this process when the user gave none: the CPUs it may use, shared among the
// job's ranks on this host. Collective under MPI (every rank calls it).
int default_thread_count();
// CUDA device for this process when the user gave none: its rank on this host modulo the host's
// GPUs (0 without GPUs or MPI). May be collective under MPI (every rank calls it).
int default_device();
// The CUDA devices this process can use (0 without a CUDA build, driver or device).
int cuda_device_count();

// The memory budget in bytes (default: the memory this process may use, lowered by a cgroup
// limit or RLIMIT_AS); set_memory_budget(0) restores the default.
uint64_t memory_budget();
void set_memory_budget(uint64_t bytes);
uint64_t default_memory_budget();
// "1.5 GiB", "300 MiB", "512 bytes".
std::string format_bytes(uint64_t bytes);
// "8G", "512M", "64k", "1.5GiB", "1000000" (suffixes are powers of 1024); nullopt when
// malformed or 0.
std::optional<uint64_t> parse_byte_size(const std::string& text);
// What the library was allocating on this thread when an allocation failed ("layer 'Hidden'
// weights"), for an out-of-memory message after std::bad_alloc; "" when nothing was named.
const std::string& current_allocation();

// $TMPDIR, or /tmp when it is unset or empty: where temporary files go.
std::string temporary_directory();

// OpenBLAS picks its kernels when it loads, from the CPU's model number; on a CPU newer than
// the library it falls back to kernels of an older instruction set (SSE3 instead of AVX-512:
// dense products several times slower; docs/performance.md). This returns the
// OPENBLAS_CORETYPE value whose kernels match this CPU when that happened and the variable is
// not set, else "". Only a process started with the variable set gets them: the tools restart
// themselves with it.
std::string blas_kernels_override();
// The kernels OpenBLAS runs ("SkylakeX", "Haswell", "Prescott", ...).
std::string blas_kernels();

// What this build and machine offer for compute, one line each (`nn-train --devices`):
//   cpu: 16 threads, OpenBLAS kernels SkylakeX
//   cuda module: /usr/local/lib/libnn_cuda.so     (or "cuda: not available: <why>")
//   cuda: CUDA runtime 13.0, driver 13.0
//   cuda:0 NVIDIA H200, sm_90, 139.8 GiB, 132 SMs
//   cuda path: padded-rows NN_CUDA_ROW_ALIGN on=8 off=1 default=off passed=never
// The last lines are the CUDA paths' switches (docs/cuda-backend.md, "Paths and their
// switches"). Opens the CUDA module when the build has one, even without a GPU.
std::vector<std::string> device_report();

}  // namespace nn::api
