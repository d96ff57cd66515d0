// CUDA Graphs for the training step (Backend::begin_step_graph, docs/performance.md): the step's
// work on the backend's stream is captured instead of launched, and launched at the end of the
// step (or of each segment, where a call that waits for the device splits it) as one graph.
//
// Each step is captured afresh, so every argument of every call (a learning rate, a step
// number, a launch sized by the batch's non-zeros) is the step's own: nothing is replayed from
// an earlier step. What is kept between steps is the instantiated graph of each segment: when a
// step's segment has the shape (the same kernels and copies in the same order) of the last
// step's, its executable graph is updated in place (cudaGraphExecUpdate, cheap) rather than
// instantiated anew.
//
// Uploads recorded in a graph read pinned host memory when the graph runs, not when the call is
// made: they go through upload_buffer(), two arenas used by alternate steps, an arena reused only
// after the step that last used it has run (an event recorded after its last launch).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace nn {
namespace cuda {

class StepGraphs {
 public:
  explicit StepGraphs(cudaStream_t stream);
  ~StepGraphs();
  StepGraphs(const StepGraphs&) = delete;
  StepGraphs& operator=(const StepGraphs&) = delete;

  // A new step: its arena is made free (waited for) and capture begins on the stream.
  void begin_step();
  // Ends the capture of the current segment and launches it on the stream. `split_reason`: the
  // call that needs the device now (null at the end of the step); counted for path notes.
  void end_segment(const char* split_reason);
  // Capture resumes after a split (the next segment of the same step).
  void begin_segment();
  // The end of the step: its last segment launched; its arena's event recorded.
  void end_step();
  // The step failed: the capture in progress, if any, is ended and dropped (not launched).
  void abandon() noexcept;
  bool capturing() const { return capturing_; }
  bool in_step() const { return in_step_; }

  // `bytes` of pinned host memory in the step's arena for an upload recorded in the graph, or
  // null when the arena is full; grow_upload_space() (not while capturing) adds room for it.
  void* upload_buffer(size_t bytes);
  void grow_upload_space(size_t bytes);

  // How the steps went, for Backend::path_notes.
  std::vector<std::string> notes() const;

 private:
  struct Chunk {
    void* host = nullptr;
    size_t bytes = 0;
    size_t used = 0;
  };
  struct Arena {
    std::vector<Chunk> chunks;
    cudaEvent_t done = nullptr;
    bool pending = false;
  };
  void release_chunks(Arena& a) noexcept;
  void launch(cudaGraph_t graph);

  cudaStream_t stream_;
  Arena arenas_[2];
  Arena* arena_ = nullptr;              // the step's
  std::vector<cudaGraphExec_t> execs_;  // by segment index within a step
  size_t segment_ = 0;
  bool capturing_ = false;
  bool in_step_ = false;
  // Counts for notes().
  uint64_t steps_ = 0, launched_ = 0, updated_ = 0, instantiated_ = 0, nodes_ = 0;
  std::map<std::string, uint64_t> splits_;
  std::string failure_;  // a capture that could not be ended, reported by end_step()
};

}  // namespace cuda
}  // namespace nn
