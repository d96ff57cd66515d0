// Streaming training input (see example_stream.h).
#include "train/example_stream.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>

#include "core/error.h"
#include "core/memory_budget.h"

namespace nn {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint32_t kNotHere = std::numeric_limits<uint32_t>::max();
// Windows held at once: the one batches are taken from and the next (a batch may span both).
constexpr size_t kResidentWindows = 2;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

}  // namespace

struct ExampleStream::Window {
  uint64_t p0 = 0, p1 = 0;       // epoch positions [p0, p1)
  std::vector<uint32_t> order;   // example (id in the file) at each position
  std::vector<uint32_t> local;   // its id in `sets` (kNotHere: another rank's row)
  std::vector<ExampleSet> sets;  // one per distinct source
  BoundData bound;
  std::unique_ptr<BatchLoader> loader;
};

ExampleStream::ExampleStream(std::vector<StreamSource> sources, const BoundData& shell,
                             uint32_t minibatch, StreamSettings settings)
    : sources_(std::move(sources)), shell_(shell), minibatch_(std::max<uint32_t>(minibatch, 1)) {
  NN_CHECK(sources_.size() == shell_.inputs.size() + shell_.outputs.size(),
           "ExampleStream: one source per binding");
  // A dataset bound to several layers (an autoencoder's input and output) is read once.
  for (const StreamSource& s : sources_) {
    size_t u = 0;
    while (u < unique_.size() && (unique_[u].file != s.file || unique_[u].dataset != s.dataset))
      ++u;
    if (u == unique_.size()) unique_.push_back(s);
    unique_of_.push_back(u);
  }
  const uint64_t n = shell_.examples;
  bytes_per_example_ = 2 * sizeof(uint32_t);  // a window's order and local ids
  for (const StreamSource& s : unique_) bytes_per_example_ += s.file->bytes_per_example(s.dataset);
  const uint64_t memory = settings.memory ? settings.memory : memory_budget();
  // Two windows resident take at most half the budget; the rest is for the network, the
  // minibatches and the reads' transient buffers.
  uint64_t target = uint64_t(double(memory) / 4.0 / bytes_per_example_);
  layout_.examples = n;
  if (settings.window_chunks && settings.chunk) {
    layout_.chunk = settings.chunk;
    layout_.window_chunks = settings.window_chunks;
  } else {
    target = std::max<uint64_t>(target, 1);
    layout_.chunk = settings.chunk ? settings.chunk : std::max<uint64_t>(1, target / 64);
    layout_.window_chunks = settings.window_chunks ? settings.window_chunks
                                                   : std::max<uint64_t>(1, target / layout_.chunk);
  }
  layout_.chunk = std::min<uint64_t>(layout_.chunk, std::max<uint64_t>(n, 1));
  // Every window but the last holds at least a minibatch (one short chunk included), so a
  // minibatch spans at most two windows.
  layout_.window_chunks = std::max<uint64_t>(layout_.window_chunks,
                                             (minibatch_ + layout_.chunk - 1) / layout_.chunk + 1);
  layout_.window_chunks =
      std::min<uint64_t>(layout_.window_chunks, std::max<uint64_t>(1, layout_.chunks()));
  // netCDF-4 files: decompressed chunks cached between the reads of a window.
  for (const StreamSource& s : unique_) s.file->set_chunk_cache(memory / 8 / unique_.size());
}

ExampleStream::~ExampleStream() {
  end();
}

std::string ExampleStream::describe() const {
  const uint64_t wx = std::min(layout_.window_examples(), layout_.examples);
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "%llu window(s) of up to %llu examples (%llu chunks of %llu), %zu resident, "
                "about %s each",
                (unsigned long long)layout_.windows(), (unsigned long long)wx,
                (unsigned long long)layout_.window_chunks, (unsigned long long)layout_.chunk,
                kResidentWindows, format_bytes(uint64_t(double(wx) * bytes_per_example_)).c_str());
  return buf;
}

void ExampleStream::begin(const Rng& rng, bool shuffle, uint64_t first_batch,
                          const BatchLoader& loader, int rank, int ranks, bool whole) {
  end();
  rng_ = rng;
  shuffle_ = shuffle;
  first_position_ = first_batch * minibatch_;
  denoise_ = loader.denoise_settings();
  seed_ = loader.seed();
  rank_ = rank, ranks_ = ranks, whole_ = whole || ranks <= 1;
  stats_ = StreamStats();
  reader_done_ = false, stop_ = false;
  error_ = nullptr;
  reader_ = std::thread([this] { read_windows(); });
}

Rng ExampleStream::end() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  if (reader_.joinable()) reader_.join();
  ready_.clear();
  return rng_;
}

bool ExampleStream::needed(uint64_t p) const {
  if (p < first_position_) return false;
  if (whole_) return true;
  const uint64_t b = p / minibatch_;
  const uint32_t rows =
      static_cast<uint32_t>(std::min<uint64_t>(minibatch_, layout_.examples - b * minibatch_));
  const RowSlice s = rank_rows(rows, rank_, ranks_);
  const uint64_t r = p - b * minibatch_;
  return r >= s.first && r < uint64_t(s.first) + s.count;
}

std::shared_ptr<ExampleStream::Window> ExampleStream::load(uint64_t /*w*/,
                                                           std::vector<uint32_t> order,
                                                           uint64_t p0) {
  auto win = std::make_shared<Window>();
  win->p0 = p0;
  win->p1 = p0 + order.size();
  win->order = std::move(order);
  std::vector<uint64_t> ids;
  for (uint64_t i = 0; i < win->order.size(); ++i)
    if (needed(p0 + i)) ids.push_back(win->order[i]);
  std::sort(ids.begin(), ids.end());
  win->local.assign(win->order.size(), kNotHere);
  for (uint64_t i = 0; i < win->order.size(); ++i)
    if (needed(p0 + i))
      win->local[i] = static_cast<uint32_t>(
          std::lower_bound(ids.begin(), ids.end(), uint64_t(win->order[i])) - ids.begin());
  ExampleReadStats read;
  for (const StreamSource& s : unique_) win->sets.push_back(s.file->read(s.dataset, ids, &read));
  read.examples = ids.size();  // examples, not examples times datasets
  win->bound = shell_;
  win->bound.examples = ids.size();
  size_t slot = 0;
  for (auto* list : {&win->bound.inputs, &win->bound.outputs})
    for (LayerData& d : *list) d.dataset = &win->sets[unique_of_[slot++]];
  win->loader = std::make_unique<BatchLoader>(win->bound, denoise_, seed_);
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.read.add(read);
  ++stats_.windows;
  return win;
}

void ExampleStream::read_windows() {
  try {
    const std::vector<uint64_t> perm = chunk_permutation(layout_, rng_.state(), shuffle_);
    uint64_t position = 0;
    for (uint64_t w = 0; w < layout_.windows(); ++w) {
      std::vector<uint32_t> order = window_examples(layout_, perm, w);
      if (shuffle_) shuffle_in_place(order.data(), order.size(), rng_);
      const uint64_t p0 = position;
      position += order.size();
      if (position <= first_position_) continue;  // trained before a resumed epoch's start
      {
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait(lock, [&] { return stop_ || ready_.size() < kResidentWindows; });
        if (stop_) break;
      }
      const auto start = Clock::now();
      std::shared_ptr<Window> win = load(w, std::move(order), p0);
      const double secs = seconds_since(start);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        stats_.read_seconds += secs;
        ready_.push_back(std::move(win));
      }
      changed_.notify_all();
    }
  } catch (...) {
    std::lock_guard<std::mutex> lock(mutex_);
    error_ = std::current_exception();
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    reader_done_ = true;
  }
  changed_.notify_all();
}

HostBatch ExampleStream::assemble(uint64_t b, uint64_t step) {
  const uint64_t batch_start = b * minibatch_;
  NN_CHECK(batch_start < layout_.examples, "ExampleStream: minibatch beyond the epoch");
  const uint32_t rows =
      static_cast<uint32_t>(std::min<uint64_t>(minibatch_, layout_.examples - batch_start));
  const RowSlice s = whole_ ? RowSlice{0, rows} : rank_rows(rows, rank_, ranks_);
  uint64_t p = batch_start + s.first;
  const uint64_t end = p + s.count;
  HostBatch out;
  std::vector<uint32_t> ids, keys;
  size_t k = 0;
  {
    // Windows wholly before this batch are done with: the reader may read the next.
    std::lock_guard<std::mutex> lock(mutex_);
    while (!ready_.empty() && ready_.front()->p1 <= batch_start) ready_.pop_front();
  }
  changed_.notify_all();
  while (p < end) {
    std::shared_ptr<Window> win;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      const auto start = Clock::now();
      changed_.wait(lock, [&] { return ready_.size() > k || reader_done_ || error_; });
      stats_.wait_seconds += seconds_since(start);
      if (error_) std::rethrow_exception(error_);
      if (ready_.size() <= k)
        throw DataError("streaming: the reader ended before minibatch " + std::to_string(b + 1));
      win = ready_[k];
    }
    ++k;
    if (win->p1 <= p) continue;
    const uint64_t q = std::min(end, win->p1);
    ids.clear(), keys.clear();
    for (uint64_t i = p; i < q; ++i) {
      ids.push_back(win->local[i - win->p0]);
      keys.push_back(win->order[i - win->p0]);
    }
    HostBatch part;
    win->loader->assemble(ids.data(), uint32_t(ids.size()), step, true, part, keys.data());
    append_rows(out, part);
    p = q;
  }
  if (s.count == 0) {
    // No rows for this rank: an empty batch with every slot, as the in-memory loader makes.
    BatchLoader empty(shell_, denoise_, seed_);
    empty.assemble(nullptr, 0, step, true, out);
  }
  return out;
}

StreamedFiles open_streamed_files(const std::vector<std::string>& files) {
  StreamedFiles out;
  for (const std::string& path : files) {
    auto file = std::make_shared<ExampleFile>(path);
    for (size_t n = 0; n < file->datasets(); ++n) {
      out.headers.push_back(file->header(n));
      out.sources.push_back({file, n});
    }
  }
  return out;
}

std::vector<StreamSource> sources_for(const BoundData& bound, const StreamedFiles& files) {
  std::vector<StreamSource> out;
  for (const auto* list : {&bound.inputs, &bound.outputs})
    for (const LayerData& d : *list) {
      size_t i = 0;
      while (i < files.headers.size() && &files.headers[i] != d.dataset) ++i;
      NN_CHECK(i < files.headers.size(), "sources_for: a binding outside the streamed files");
      out.push_back(files.sources[i]);
    }
  return out;
}

}  // namespace nn
