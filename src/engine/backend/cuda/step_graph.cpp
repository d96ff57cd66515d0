// StepGraphs: capture, launch and bookkeeping of the training step's CUDA graphs (step_graph.h).
#include "backend/cuda/step_graph.h"

#include <algorithm>
#include <string>
#include <utility>

#include "backend/cuda/cuda_check.h"
#include "core/error.h"
#include "core/format.h"

namespace nn {
namespace cuda {
namespace {

constexpr size_t kUploadAlign = 256;
constexpr size_t kFirstChunkBytes = size_t(1) << 20;

size_t aligned(size_t bytes) {
  return (bytes + kUploadAlign - 1) / kUploadAlign * kUploadAlign;
}

}  // namespace

StepGraphs::StepGraphs(cudaStream_t stream) : stream_(stream) {
  for (Arena& a : arenas_) NN_CUDA_CALL(cudaEventCreateWithFlags(&a.done, cudaEventDisableTiming));
}

StepGraphs::~StepGraphs() {
  abandon();
  // The backend has waited for its stream before it lets this go: no launch still reads an
  // arena.
  for (cudaGraphExec_t e : execs_)
    if (e) cudaGraphExecDestroy(e);
  for (Arena& a : arenas_) {
    release_chunks(a);
    if (a.done) cudaEventDestroy(a.done);
  }
  cudaGetLastError();
}

void StepGraphs::release_chunks(Arena& a) noexcept {
  for (Chunk& c : a.chunks)
    if (c.host) cudaFreeHost(c.host);
  a.chunks.clear();
}

void StepGraphs::begin_step() {
  NN_CHECK(!in_step_, "begin_step_graph: a step is already being recorded");
  arena_ = &arenas_[steps_ % 2];
  if (arena_->pending) {
    // The step before last read this arena in its graphs; they have run once this returns
    // (usually long ago: the host is at most a step ahead of the device).
    NN_CUDA_CALL(cudaEventSynchronize(arena_->done));
    arena_->pending = false;
  }
  // A step that needed several chunks gets them as one next time, with room to spare.
  size_t total = 0;
  for (const Chunk& c : arena_->chunks) total += c.used;
  if (arena_->chunks.size() > 1) {
    release_chunks(*arena_);
    grow_upload_space(total + total / 2);
  }
  if (arena_->chunks.empty()) grow_upload_space(0);  // the first chunk, before any capture
  for (Chunk& c : arena_->chunks) c.used = 0;
  segment_ = 0;
  in_step_ = true;
  ++steps_;
  begin_segment();
}

void StepGraphs::begin_segment() {
  // Thread-local: a call on this thread that is not allowed while capturing fails at once
  // instead of being recorded wrongly; other threads (the batch loader) are not affected.
  NN_CUDA_CALL(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  capturing_ = true;
}

void StepGraphs::end_segment(const char* split_reason) {
  capturing_ = false;
  cudaGraph_t graph = nullptr;
  const cudaError_t status = cudaStreamEndCapture(stream_, &graph);
  if (status != cudaSuccess || !graph) {
    cudaGetLastError();
    if (graph) cudaGraphDestroy(graph);
    // The segment's work is lost: the step cannot end well. Remembered for end_step(), in case
    // the caller could not let the exception through (a release() in a destructor).
    failure_ = std::string("recording a training step as a CUDA graph failed (") +
               cudaGetErrorString(status) +
               "): a call in the step is not allowed in a graph; run with NN_CUDA_GRAPHS=0 "
               "and report it";
    throw BackendError(failure_);
  }
  try {
    launch(graph);
  } catch (...) {
    cudaGraphDestroy(graph);
    throw;
  }
  cudaGraphDestroy(graph);
  if (split_reason) ++splits_[split_reason];
  ++segment_;
}

void StepGraphs::launch(cudaGraph_t graph) {
  size_t nodes = 0;
  NN_CUDA_CALL(cudaGraphGetNodes(graph, nullptr, &nodes));
  if (nodes == 0) return;  // nothing recorded (a split right at the segment's start)
  nodes_ += nodes;
  if (execs_.size() <= segment_) execs_.resize(segment_ + 1, nullptr);
  cudaGraphExec_t& exec = execs_[segment_];
  if (exec) {
    // The last step's graph of this segment, given this step's parameters: allowed when the two
    // have the same nodes and edges; launches already queued keep the old parameters.
    cudaGraphExecUpdateResultInfo info{};
    if (cudaGraphExecUpdate(exec, graph, &info) == cudaSuccess) {
      ++updated_;
    } else {
      cudaGetLastError();
      cudaGraphExecDestroy(exec);
      exec = nullptr;
    }
  }
  if (!exec) {
    NN_CUDA_CALL(cudaGraphInstantiate(&exec, graph, 0));
    ++instantiated_;
  }
  NN_CUDA_CALL(cudaGraphLaunch(exec, stream_));
  ++launched_;
}

void StepGraphs::end_step() {
  if (!in_step_) return;
  if (capturing_) end_segment(nullptr);
  in_step_ = false;
  NN_CUDA_CALL(cudaEventRecord(arena_->done, stream_));
  arena_->pending = true;
  if (!failure_.empty()) throw BackendError(std::exchange(failure_, std::string()));
}

void StepGraphs::abandon() noexcept {
  if (capturing_) {
    cudaGraph_t graph = nullptr;
    cudaStreamEndCapture(stream_, &graph);
    if (graph) cudaGraphDestroy(graph);
    capturing_ = false;
  }
  if (in_step_ && arena_) {
    // Segments already launched may still read the arena.
    if (cudaEventRecord(arena_->done, stream_) == cudaSuccess) arena_->pending = true;
  }
  in_step_ = false;
  failure_.clear();
  cudaGetLastError();
}

void* StepGraphs::upload_buffer(size_t bytes) {
  const size_t need = aligned(bytes);
  for (Chunk& c : arena_->chunks) {
    if (c.bytes - c.used >= need) {
      void* p = static_cast<unsigned char*>(c.host) + c.used;
      c.used += need;
      return p;
    }
  }
  return nullptr;
}

void StepGraphs::grow_upload_space(size_t bytes) {
  NN_CHECK(!capturing_, "StepGraphs: the upload space grows only between segments");
  Chunk c;
  c.bytes = std::max(kFirstChunkBytes, aligned(bytes + bytes / 2));
  NN_CUDA_CALL(cudaMallocHost(&c.host, c.bytes));
  arena_->chunks.push_back(c);
}

std::vector<std::string> StepGraphs::notes() const {
  if (steps_ == 0) return {};
  std::string line = format(
      "CUDA graphs: %llu steps recorded, %llu graphs launched (%llu updated in place, %llu "
      "instantiated), %.1f nodes per step",
      (unsigned long long)steps_, (unsigned long long)launched_, (unsigned long long)updated_,
      (unsigned long long)instantiated_, double(nodes_) / double(steps_));
  if (splits_.empty()) return {line + ", no step split"};
  std::vector<std::string> out{line};
  for (const auto& [why, count] : splits_)
    out.push_back(format("CUDA graphs: %llu splits at %s", (unsigned long long)count, why.c_str()));
  return out;
}

}  // namespace cuda
}  // namespace nn
