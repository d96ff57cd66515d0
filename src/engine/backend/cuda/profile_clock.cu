// The CUDA backend's profile clock (core/profile_clock.h): each mark is an event recorded on the
// backend's stream, so its time is when the GPU got there, whatever the host was doing; and each
// range is also an NVTX range of the same name, so Nsight Systems shows the layers and phases on
// the host's timeline (NVTX3 is header-only: nothing to link, and its calls cost next to nothing
// when no tool is attached).
//
// No call here waits for the GPU except collect(wait = true): completed events are found with
// cudaEventQuery, and a mark's time is the previous mark's plus cudaEventElapsedTime between the
// two (short intervals keep the float milliseconds precise over a long run). Events are reused
// once collected.
#include <nvtx3/nvToolsExt.h>

#include <deque>
#include <new>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device_guard.h"

namespace nn {
namespace {

class EventProfileClock final : public ProfileClock {
 public:
  EventProfileClock(int device, cudaStream_t stream) : device_(device), stream_(stream) {}
  ~EventProfileClock() override {
    const cuda::DeviceGuard guard(device_, std::nothrow);
    for (cudaEvent_t e : recorded_) cudaEventDestroy(e);
    for (cudaEvent_t e : free_) cudaEventDestroy(e);
    if (anchor_) cudaEventDestroy(anchor_);
  }
  EventProfileClock(const EventProfileClock&) = delete;
  EventProfileClock& operator=(const EventProfileClock&) = delete;

  void open(const char* name) noexcept override {
    nvtxRangePushA(name);
    record();
  }
  void close() noexcept override {
    record();
    nvtxRangePop();
  }

  void collect(bool wait, std::vector<double>& times) override {
    const cuda::DeviceGuard guard(device_);
    if (failure_ != cudaSuccess) cuda::throw_cuda_error(failure_, failed_call_, __FILE__, __LINE__);
    if (wait && !recorded_.empty()) NN_CUDA_CALL(cudaEventSynchronize(recorded_.back()));
    while (!recorded_.empty()) {
      cudaEvent_t e = recorded_.front();
      if (!wait) {
        const cudaError_t status = cudaEventQuery(e);
        if (status == cudaErrorNotReady) {
          // Not an error: clear it where the runtime kept it as the last one, so that the next
          // kernel launch's check does not take it for a failure.
          if (cudaPeekAtLastError() == cudaErrorNotReady) cudaGetLastError();
          break;
        }
        NN_CUDA_CALL(status);
      }
      if (anchor_) {
        float ms = 0;
        NN_CUDA_CALL(cudaEventElapsedTime(&ms, anchor_, e));
        anchor_us_ += double(ms) * 1e3;
        free_.push_back(anchor_);
      }
      anchor_ = e;
      recorded_.pop_front();
      times.push_back(anchor_us_);
    }
  }

  const char* description() const override { return "CUDA events"; }

 private:
  void record() noexcept {
    if (failure_ != cudaSuccess) return;
    const cuda::DeviceGuard guard(device_, std::nothrow);
    cudaEvent_t e = nullptr;
    if (!free_.empty()) {
      e = free_.back();
      free_.pop_back();
    } else if (const cudaError_t status = cudaEventCreate(&e); status != cudaSuccess) {
      fail(status, "cudaEventCreate");
      return;
    }
    if (const cudaError_t status = cudaEventRecord(e, stream_); status != cudaSuccess) {
      cudaEventDestroy(e);
      fail(status, "cudaEventRecord");
      return;
    }
    try {
      recorded_.push_back(e);
    } catch (...) {
      cudaEventDestroy(e);
      fail(cudaErrorMemoryAllocation, "recording a profile mark");
    }
  }
  // A lost mark would shift every later one: the failure is thrown by the next collect().
  void fail(cudaError_t status, const char* call) noexcept {
    failure_ = status;
    failed_call_ = call;
  }

  int device_;
  cudaStream_t stream_;
  std::deque<cudaEvent_t> recorded_;  // not collected yet, in recording order
  std::vector<cudaEvent_t> free_;     // collected, ready to record again
  cudaEvent_t anchor_ = nullptr;      // the last collected mark; its time is anchor_us_
  double anchor_us_ = 0;
  cudaError_t failure_ = cudaSuccess;
  const char* failed_call_ = "";
};

}  // namespace

std::unique_ptr<ProfileClock> CudaBackend::make_profile_clock() {
  const cuda::DeviceGuard guard(device_);
  return std::make_unique<EventProfileClock>(device_, stream_);
}

}  // namespace nn
