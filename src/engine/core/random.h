// Counter-based random numbers: value = hash(seed, stream, counter). Results do not depend on
// thread count or scheduling, so CPU runs are deterministic and a GPU backend can reproduce the
// same streams. Also a small sequential generator for host-side work (shuffles, initialisation).
#pragma once

#include <cmath>
#include <cstdint>

#ifdef __CUDACC__
#define NN_HD __host__ __device__ __forceinline__
#else
#define NN_HD inline
#endif

namespace nn {

// SplitMix64 finaliser: a strong 64-bit mixing function.
NN_HD uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// The multiplier uniform_at() applies to the stream, and its inverse modulo 2^64 (it is odd).
constexpr uint64_t kStreamMultiplier = 0xD1B54A32D192ED03ull;
constexpr uint64_t stream_multiplier_inverse() {
  uint64_t x = kStreamMultiplier;  // Newton's iteration doubles the correct low bits each step
  for (int i = 0; i < 6; ++i) x *= 2 - kStreamMultiplier * x;
  return x;
}
constexpr uint64_t kStreamMultiplierInverse = stream_multiplier_inverse();
static_assert(kStreamMultiplier * kStreamMultiplierInverse == 1, "inverse modulo 2^64");

// Uniform float in [0, 1) for (seed, stream, counter).
NN_HD float uniform_at(uint64_t seed, uint64_t stream, uint64_t counter) {
  uint64_t h = mix64(seed ^ mix64(stream * kStreamMultiplier + counter));
  return static_cast<float>(h >> 40) * (1.0f / 16777216.0f);
}

// Uniform double in [0, 1) with 53 bits for (seed, stream, counter): weight initialisation,
// where every weight is drawn from its own counter (its global position), so a network split
// over processes starts from exactly the weights of a single-process one.
NN_HD double uniform53_at(uint64_t seed, uint64_t stream, uint64_t counter) {
  const uint64_t h = mix64(seed ^ mix64(stream * kStreamMultiplier + counter));
  return static_cast<double>(h >> 11) * (1.0 / 9007199254740992.0);
}

// The stream whose counter i draws exactly what `stream` draws at counter i + offset. A process
// that holds rows [first, ...) of a minibatch masks them with shift_stream(stream, first * width)
// and so draws the same numbers as one process holding the whole batch (data parallelism),
// without any backend learning about offsets.
NN_HD uint64_t shift_stream(uint64_t stream, uint64_t offset) {
  return stream + offset * kStreamMultiplierInverse;
}

// Sequential generator (SplitMix64 stream) for host code: shuffles.
class Rng {
 public:
  explicit Rng(uint64_t seed = 0) : state_(seed) {}
  uint64_t next_u64() {
    state_ += 0x9E3779B97F4A7C15ull;
    uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1).
  double uniform() { return static_cast<double>(next_u64() >> 11) * (1.0 / 9007199254740992.0); }
  // Uniform integer in [0, n).
  uint64_t below(uint64_t n) { return n ? next_u64() % n : 0; }
  // Standard normal (Box-Muller).
  double normal() {
    double u1 = uniform(), u2 = uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  uint64_t state() const { return state_; }
  void set_state(uint64_t s) { state_ = s; }

 private:
  uint64_t state_;
};

}  // namespace nn
