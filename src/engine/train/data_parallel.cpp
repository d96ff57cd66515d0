// Row slicing and the bucketed, row-weighted gradient all-reduce of data-parallel training.
#include "train/data_parallel.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"

namespace nn {

GradientReducer::GradientReducer(Network& net, Communicator& comm, GradientReducerOptions options)
    : net_(net),
      comm_(comm),
      backend_(net.backend()),
      host_memory_(comm.memory_space() == MemorySpace::Host && net.backend().name() == "cpu"),
      device_memory_(comm.memory_space() == MemorySpace::Device),
      overlap_(options.overlap) {
  // A matrix shared by several layers is final only after all of them ran backward; which
  // layers write into it is not visible from here, so such networks reduce after backward.
  for (const LayerSpec& l : net.spec().layers)
    if (!l.shared_weights.empty()) overlap_ = false;
  auto excluded = [&options](const Parameter* p) {
    return std::find(options.excluded.begin(), options.excluded.end(), p) != options.excluded.end();
  };
  // Buckets in the order backward completes the parameters: layers in reverse forward order.
  const auto& order = net.order();
  Bucket current;
  auto close = [&] {
    if (current.params.empty()) return;
    for (Parameter* p : current.params) bucket_of_[p] = buckets_.size();
    buckets_.push_back(std::move(current));
    current = Bucket();
  };
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    for (Parameter* p : (*it)->parameters()) {
      // A model-parallel slice is this rank's alone, its gradient already over every row.
      if (bucket_of_.count(p) || p->sharded || excluded(p)) continue;
      const size_t bytes = p->size() * sizeof(float);
      if (bytes >= options.bucket_bytes) {  // a large parameter is a bucket of its own
        close();
        current.params.push_back(p);
        current.floats = p->size();
        close();
        continue;
      }
      if ((current.floats + p->size()) * sizeof(float) > options.bucket_bytes) close();
      current.params.push_back(p);
      current.floats += p->size();
      bucket_of_[p] = buckets_.size();  // provisional; close() confirms
    }
  }
  close();
  for (Parameter* p : net.parameters())  // parameters of no layer in order() (none today)
    if (!bucket_of_.count(p) && !p->sharded && !excluded(p)) {
      current.params.push_back(p);
      current.floats += p->size();
    }
  close();
  for (const Bucket& b : buckets_) total_floats_ += b.floats;
}

GradientReducer::~GradientReducer() {
  for (Bucket& b : buckets_) {
    try {
      if (b.op) b.op->wait();
    } catch (...) {
    }
  }
}

void GradientReducer::begin(float weight) {
  weight_ = weight;
  for (Bucket& b : buckets_) {
    b.pending = b.params.size();
    b.started = false;
  }
}

void GradientReducer::layer_done(Layer& layer) {
  if (!overlap_) return;
  for (Parameter* p : layer.parameters()) {
    auto it = bucket_of_.find(p);
    if (it == bucket_of_.end()) continue;
    Bucket& b = buckets_[it->second];
    if (b.pending > 0 && --b.pending == 0) start(b);
  }
}

void GradientReducer::start(Bucket& b) {
  if (b.started) return;
  b.started = true;
  if (device_memory_) {
    start_on_device(b);
    return;
  }
  if (host_memory_ && b.params.size() == 1) {
    Parameter* p = b.params[0];
    if (weight_ == 0.0f)
      backend_.fill(p->grad.data(), p->size(), 0.0f);
    else if (weight_ != 1.0f)
      backend_.scale(p->grad.data(), p->size(), weight_);
    b.op = comm_.start_all_reduce_sum(p->grad.data(), p->size());
    return;
  }
  b.staging.resize(b.floats);
  if (weight_ == 0.0f) {
    std::fill(b.staging.begin(), b.staging.end(), 0.0f);
  } else {
    size_t off = 0;
    for (Parameter* p : b.params) {
      backend_.download(b.staging.data() + off, p->grad.data(), p->size() * sizeof(float));
      off += p->size();
    }
    if (weight_ != 1.0f)
      for (float& v : b.staging) v *= weight_;
  }
  b.op = comm_.start_all_reduce_sum(b.staging.data(), b.floats);
}

// Device communicator: a lone parameter is reduced in place; several are packed into one device
// buffer by device copies. Scaling runs on the backend's stream before the reduction starts.
void GradientReducer::start_on_device(Bucket& b) {
  float* data = nullptr;
  if (b.params.size() == 1) {
    data = b.params[0]->grad.data();
  } else {
    if (b.device_staging.size() != b.floats) b.device_staging.resize(backend_, b.floats);
    data = b.device_staging.data();
    if (weight_ != 0.0f) {
      size_t off = 0;
      for (Parameter* p : b.params) {
        backend_.copy(data + off, p->grad.data(), p->size() * sizeof(float));
        off += p->size();
      }
    }
  }
  if (weight_ == 0.0f)
    backend_.fill(data, b.floats, 0.0f);
  else if (weight_ != 1.0f)
    backend_.scale(data, b.floats, weight_);
  b.op = comm_.start_all_reduce_sum(data, b.floats);
}

void GradientReducer::unpack(Bucket& b) {
  if (device_memory_) {
    if (b.params.size() == 1) return;
    size_t off = 0;
    for (Parameter* p : b.params) {
      backend_.copy(p->grad.data(), b.device_staging.data() + off, p->size() * sizeof(float));
      off += p->size();
    }
    return;
  }
  if (host_memory_ && b.params.size() == 1) return;
  size_t off = 0;
  for (Parameter* p : b.params) {
    backend_.upload(p->grad.data(), b.staging.data() + off, p->size() * sizeof(float));
    off += p->size();
  }
}

void GradientReducer::finish() {
  for (Bucket& b : buckets_) start(b);  // in bucket order, as every rank does
  const auto t0 = std::chrono::steady_clock::now();
  for (Bucket& b : buckets_) {
    b.op->wait();
    b.op.reset();
    unpack(b);
  }
  wait_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace nn
