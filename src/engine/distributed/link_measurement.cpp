// Timing collectives between the ranks (see link_measurement.h).
#include "distributed/link_measurement.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"

namespace nn {

std::vector<LinkSample> time_collectives(Communicator& comm, const LinkTiming& timing) {
  const int p = comm.size();
  if (p < 2)
    throw ArgumentError(
        "measuring the link needs at least 2 processes: start it with mpirun -np N (N >= 2)");
  if (comm.memory_space() != MemorySpace::Host)
    throw ArgumentError("the link is measured on host memory (an MPI communicator)");
  std::vector<LinkSample> out;
  for (const double size : timing.sizes) {
    // Whole floats, an equal share per rank.
    const size_t per_rank = std::max<size_t>(1, size_t(size / 4.0) / size_t(p));
    const size_t total = per_rank * size_t(p);
    std::vector<float> whole(total, 1.0f), part(per_rank, 1.0f);
    const int repeats = size >= 4194304.0 ? timing.large_repeats : timing.repeats;
    for (const char* op : {"all_reduce", "all_gather", "reduce_scatter"}) {
      const std::string name = op;
      auto run = [&] {
        if (name == "all_reduce")
          comm.all_reduce_sum(whole.data(), total);
        else if (name == "all_gather")
          comm.all_gather(part.data(), per_rank, whole.data());
        else
          comm.reduce_scatter_sum(whole.data(), part.data(), per_rank);
      };
      run();  // warm-up: connections, buffers
      std::vector<double> seconds;
      for (int r = 0; r < std::max(repeats, 1); ++r) {
        // Sums grow by a factor p each time: keep the values small and finite.
        std::fill(whole.begin(), whole.end(), 1.0f);
        comm.barrier();
        const auto start = std::chrono::steady_clock::now();
        run();
        double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        comm.all_reduce_max(&t, 1);
        seconds.push_back(t);
      }
      std::nth_element(seconds.begin(), seconds.begin() + seconds.size() / 2, seconds.end());
      out.push_back({name, double(total) * 4.0, seconds[seconds.size() / 2]});
    }
  }
  return out;
}

}  // namespace nn
