// The public process functions (include/nn/process.h): the engine's MPI session, ranks, device
// and thread defaults (distributed/), memory budget and allocation context (core/).
#include "nn/process.h"

#include "backend/cpu/blas_kernels.h"
#include "backend/cuda/device_probe.h"
#include "core/allocation_context.h"
#include "core/atomic_file.h"
#include "core/memory_budget.h"
#include "distributed/device_placement.h"
#include "distributed/process.h"

namespace nn::api {

struct ProcessSession::Impl {
  nn::ProcessSession session;
};

ProcessSession::ProcessSession(int* argc, char*** argv)
    : impl_(new Impl{nn::ProcessSession(argc, argv)}) {}
ProcessSession::~ProcessSession() = default;

bool launched_by_mpi() {
  return nn::launched_by_mpi();
}
bool mpi_active() {
  return nn::mpi_active();
}
int world_rank() {
  return nn::world_rank();
}
int world_size() {
  return nn::world_size();
}
void send_text(int to_rank, const std::string& text) {
  nn::send_text(to_rank, text);
}
std::optional<std::pair<int, std::string>> poll_text() {
  return nn::poll_text();
}
std::string rank_prefix() {
  return nn::rank_prefix();
}
void abort_job(int status) {
  nn::abort_job(status);
}
int default_thread_count() {
  return nn::default_thread_count();
}
int default_device() {
  return nn::default_device();
}
int cuda_device_count() {
  return nn::cuda_device_count();
}

uint64_t memory_budget() {
  return nn::memory_budget();
}
void set_memory_budget(uint64_t bytes) {
  nn::set_memory_budget(bytes);
}
uint64_t default_memory_budget() {
  return nn::default_memory_budget();
}
std::string format_bytes(uint64_t bytes) {
  return nn::format_bytes(bytes);
}
std::optional<uint64_t> parse_byte_size(const std::string& text) {
  return nn::parse_byte_size(text);
}
const std::string& current_allocation() {
  return nn::current_allocation();
}

std::string temporary_directory() {
  return nn::temporary_directory();
}

std::string blas_kernels_override() {
  return nn::blas_kernels_override();
}

std::string blas_kernels() {
  return nn::blas_kernels();
}

}  // namespace nn::api
