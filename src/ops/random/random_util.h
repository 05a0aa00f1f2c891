// Shared parts of the random ops. Philox4x32-10, the counter-based generator behind every random op
// (Salmon, Moraes, Dror and Shaw, "Parallel Random Numbers: As Easy as 1, 2, 3", SC'11): block i of
// a stream is a pure function of (key, counter = i), so any thread can produce any part of an
// output without sharing generator state. Shared by random_ops.cc (uniform, normal, truncated
// normal) and the distribution samplers in this folder (gamma, Poisson, binomial, ...), with the
// seed handling of the stateful kernels (RandomKernel) and the readers of `shape` and stateless
// `seed` inputs.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <random>
#include <vector>

#include "flowstone/kernel.h"

namespace flowstone {
namespace random {

using PhiloxBlock = std::array<uint32_t, 4>;

inline PhiloxBlock Philox4x32(PhiloxBlock counter, std::array<uint32_t, 2> key) {
  // Multipliers and Weyl key increments from the paper.
  constexpr uint32_t kM0 = 0xD2511F53, kM1 = 0xCD9E8D57;
  constexpr uint32_t kW0 = 0x9E3779B9, kW1 = 0xBB67AE85;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key[0] += kW0;
      key[1] += kW1;
    }
    uint64_t p0 = uint64_t{kM0} * counter[0];
    uint64_t p1 = uint64_t{kM1} * counter[2];
    counter = {static_cast<uint32_t>(p1 >> 32) ^ counter[1] ^ key[0], static_cast<uint32_t>(p1),
               static_cast<uint32_t>(p0 >> 32) ^ counter[3] ^ key[1], static_cast<uint32_t>(p0)};
  }
  return counter;
}

// One (seed, seed2) stream: the key is `seed`, the upper half of the counter `seed2` and the
// lower half the block index.
class PhiloxStream {
 public:
  PhiloxStream(uint64_t seed, uint64_t seed2)
      : key_{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)},
        seed2_lo_(static_cast<uint32_t>(seed2)),
        seed2_hi_(static_cast<uint32_t>(seed2 >> 32)) {}

  PhiloxBlock Block(uint64_t index) const {
    return Philox4x32(
        {static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32), seed2_lo_, seed2_hi_},
        key_);
  }

  // The parts of Block's inputs that do not depend on the index, for vectorized generators.
  const std::array<uint32_t, 2>& key() const { return key_; }
  uint32_t seed2_lo() const { return seed2_lo_; }
  uint32_t seed2_hi() const { return seed2_hi_; }

 private:
  std::array<uint32_t, 2> key_;
  uint32_t seed2_lo_;
  uint32_t seed2_hi_;
};

// Uniform in [0, 1) on a grid of 2^-24 (float) from one word, 2^-53 (double) from two.
inline float UniformFloat(uint32_t w) { return static_cast<float>(w >> 8) * 0x1p-24f; }
inline double UniformDouble(uint32_t hi, uint32_t lo) {
  return static_cast<double>(((uint64_t{hi} << 32) | lo) >> 11) * 0x1p-53;
}

// Box-Muller: two independent standard normals from two uniforms. u1 is moved to (0, 1] so the
// logarithm is finite.
template <typename T>
void BoxMuller(T u1, T u2, T* z0, T* z1) {
  T radius = std::sqrt(T(-2) * std::log(T(1) - u1));
  T theta = T(2) * std::numbers::pi_v<T> * u2;
  *z0 = radius * std::cos(theta);
  *z1 = radius * std::sin(theta);
}

// The words of a stream read in order from a starting block on, for samplers that consume a
// variable number of them (rejection sampling). Each output element of a sampler starts at its
// own block, so elements can be drawn in parallel and in any order.
class WordReader {
 public:
  WordReader(const PhiloxStream& stream, uint64_t first_block)
      : stream_(stream), next_block_(first_block) {}

  uint32_t Next() {
    if (pos_ == 4) {
      words_ = stream_.Block(next_block_++);
      pos_ = 0;
    }
    return words_[pos_++];
  }
  // Uniform in [0, 1) with 53 random bits.
  double Uniform() {
    const uint32_t hi = Next();
    return UniformDouble(hi, Next());
  }
  // A standard normal (one of a Box-Muller pair; the other is dropped to keep the reader
  // stateless between draws).
  double Normal() {
    double z0, z1;
    const double u1 = Uniform();
    BoxMuller(u1, Uniform(), &z0, &z1);
    return z0;
  }

 private:
  const PhiloxStream& stream_;
  uint64_t next_block_;
  PhiloxBlock words_{};
  int pos_ = 4;
};

// Reads the `shape` input of a random op.
inline Status ReadShape(const Tensor& shape, TensorShape* out) {
  if (shape.rank() != 1) {
    return errors::InvalidArgument("shape must be a vector of dimensions, but has shape ",
                                   shape.shape().ToString());
  }
  std::vector<int64_t> dims(shape.num_elements());
  for (int64_t i = 0; i < shape.num_elements(); ++i) dims[i] = shape.ElementAsInt64(i);
  Status s = ValidateDims(dims);
  if (!s.ok()) return errors::InvalidArgument("Invalid shape for a random tensor: ", s.message());
  *out = TensorShape(dims);
  return Status::OK();
}

// The seed input of a stateless op ([2] integers: key and counter).
inline Status ReadStatelessSeed(const Tensor& seed, PhiloxStream* out) {
  if (seed.rank() != 1 || seed.num_elements() != 2) {
    return errors::InvalidArgument("seed must have shape [2], not ", seed.shape().ToString());
  }
  *out = PhiloxStream(static_cast<uint64_t>(seed.ElementAsInt64(0)),
                      static_cast<uint64_t>(seed.ElementAsInt64(1)));
  return Status::OK();
}

// The seeds, the stream and the block counter shared by all random kernels.
class RandomKernel : public OpKernel {
 public:
  explicit RandomKernel(const Node& node) : OpKernel(node), stream_(0, 0) {}

  Status Init() override {
    uint64_t seed = static_cast<uint64_t>(node().attrs().GetOr<int64_t>("seed", 0));
    uint64_t seed2 = static_cast<uint64_t>(node().attrs().GetOr<int64_t>("seed2", 0));
    if (seed == 0 && seed2 == 0) {
      seed = FreshSeed();
      seed2 = FreshSeed();
    }
    stream_ = PhiloxStream(seed, seed2);
    return Status::OK();
  }

 protected:
  // Reserves `blocks` consecutive blocks of the stream for one run; returns the first index.
  uint64_t Reserve(uint64_t blocks) {
    return next_block_.fetch_add(blocks, std::memory_order_relaxed);
  }
  const PhiloxStream& stream() const { return stream_; }

 private:
  static uint64_t FreshSeed() {
    try {
      std::random_device device;
      return (uint64_t{device()} << 32) | device();
    } catch (const std::exception&) {
      // No entropy device: the clock still differs from run to run.
      return static_cast<uint64_t>(
          std::chrono::high_resolution_clock::now().time_since_epoch().count());
    }
  }

  PhiloxStream stream_;
  std::atomic<uint64_t> next_block_{0};
};

}  // namespace random
}  // namespace flowstone
