// Random number ops: RandomStandardNormal, RandomUniform, RandomUniformInt, TruncatedNormal, and
// their stateless forms (StatelessRandomUniform, ...), whose seed is an input.
//
// Numbers come from Philox4x32-10, a counter-based generator (Salmon, Moraes, Dror and Shaw,
// "Parallel Random Numbers: As Easy as 1, 2, 3", SC'11): block i of the stream is a pure
// function of (key, counter = i), so any thread can produce any part of an output without
// sharing generator state. The key is the op's `seed`, the upper half of the counter its `seed2`
// and the lower half the block index.
//
// Each kernel instance (one per node per session) owns an atomic block counter. A run reserves
// the blocks it needs with one fetch_add, so concurrent runs draw disjoint numbers, repeated runs
// draw new ones, and a fresh session with the same seeds replays the same sequence. With
// seed = seed2 = 0 the kernel picks a random key instead (TensorFlow's "nondeterministic" seed).
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <random>
#include <type_traits>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/random/random_util.h"

namespace flowstone {
namespace {

using random::BoxMuller;
using random::PhiloxBlock;
using random::PhiloxStream;
using random::RandomKernel;
using random::ReadShape;
using random::ReadStatelessSeed;
using random::UniformDouble;
using random::UniformFloat;

// ---------------------------------------------------------------------------------------------
// From random bits to distributions

// Values of type T one Philox block yields: 4 floats or 2 doubles (53-bit uniforms need two
// words each).
template <typename T>
constexpr int kPerBlock = sizeof(T) == 4 ? 4 : 2;

template <typename T>
void UniformBlock(const PhiloxBlock& w, T* out) {
  if constexpr (std::is_same_v<T, float>) {
    for (int i = 0; i < 4; ++i) out[i] = UniformFloat(w[i]);
  } else {
    out[0] = UniformDouble(w[0], w[1]);
    out[1] = UniformDouble(w[2], w[3]);
  }
}

template <typename T>
void NormalBlock(const PhiloxBlock& w, T* out) {
  if constexpr (std::is_same_v<T, float>) {
    BoxMuller(UniformFloat(w[0]), UniformFloat(w[1]), &out[0], &out[1]);
    BoxMuller(UniformFloat(w[2]), UniformFloat(w[3]), &out[2], &out[3]);
  } else {
    BoxMuller(UniformDouble(w[0], w[1]), UniformDouble(w[2], w[3]), &out[0], &out[1]);
  }
}

// Uniform floats from 8 consecutive blocks at once, the same words and floats as UniformBlock on
// each. With AVX2, Philox4x32-10 runs on the 8 counters side by side, about 4 times faster than
// block by block: dropout's masks (RandomUniform over each activation) were 5% of the tutorial
// CNN's training step.
constexpr int kLaneBlocks = 8;

void UniformFloatLanesScalar(const PhiloxStream& s, uint64_t first_block, float* out) {
  for (int j = 0; j < kLaneBlocks; ++j) UniformBlock(s.Block(first_block + j), out + 4 * j);
}

#if defined(__x86_64__)
// The high 32 bits of each lane's 32x32-bit product: even lanes from one widening multiply, odd
// lanes from another on the lanes shifted down.
__attribute__((target("avx2"))) inline __m256i MulHi32(__m256i a, __m256i m) {
  const __m256i even = _mm256_srli_epi64(_mm256_mul_epu32(a, m), 32);
  const __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), m);
  return _mm256_blend_epi32(even, odd, 0xAA);
}

__attribute__((target("avx2"))) void UniformFloatLanesAvx2(const PhiloxStream& s,
                                                           uint64_t first_block, float* out) {
  alignas(32) uint32_t lo[kLaneBlocks], hi[kLaneBlocks];
  for (int j = 0; j < kLaneBlocks; ++j) {
    lo[j] = static_cast<uint32_t>(first_block + j);
    hi[j] = static_cast<uint32_t>((first_block + j) >> 32);
  }
  __m256i c0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(lo));
  __m256i c1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(hi));
  __m256i c2 = _mm256_set1_epi32(static_cast<int>(s.seed2_lo()));
  __m256i c3 = _mm256_set1_epi32(static_cast<int>(s.seed2_hi()));
  const __m256i m0 = _mm256_set1_epi32(static_cast<int>(0xD2511F53u));
  const __m256i m1 = _mm256_set1_epi32(static_cast<int>(0xCD9E8D57u));
  uint32_t key0 = s.key()[0], key1 = s.key()[1];
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key0 += 0x9E3779B9u;
      key1 += 0xBB67AE85u;
    }
    const __m256i hi0 = MulHi32(c0, m0), hi1 = MulHi32(c2, m1);
    const __m256i lo0 = _mm256_mullo_epi32(c0, m0), lo1 = _mm256_mullo_epi32(c2, m1);
    c0 = _mm256_xor_si256(_mm256_xor_si256(hi1, c1), _mm256_set1_epi32(static_cast<int>(key0)));
    c2 = _mm256_xor_si256(_mm256_xor_si256(hi0, c3), _mm256_set1_epi32(static_cast<int>(key1)));
    c1 = lo1;
    c3 = lo0;
  }
  // UniformFloat: the top 24 bits, scaled by 2^-24 (exact).
  const __m256 scale = _mm256_set1_ps(0x1p-24f);
  alignas(32) float words[4][kLaneBlocks];
  const __m256i c[4] = {c0, c1, c2, c3};
  for (int i = 0; i < 4; ++i) {
    _mm256_store_ps(words[i], _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(c[i], 8)), scale));
  }
  for (int j = 0; j < kLaneBlocks; ++j) {
    for (int i = 0; i < 4; ++i) out[4 * j + i] = words[i][j];
  }
}
#endif

void UniformFloatLanes(const PhiloxStream& s, uint64_t first_block, float* out) {
#if defined(__x86_64__)
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2) return UniformFloatLanesAvx2(s, first_block, out);
#endif
  UniformFloatLanesScalar(s, first_block, out);
}

// TruncatedNormal keeps normals with |z| < 2 (about 95.4% of them). Each group of kPerBlock
// outputs owns a fixed range of this many blocks, so groups can be filled in parallel and in any
// order. Failing to find kPerBlock accepted values in 8 blocks has probability below 1e-14; a
// group that does keeps reading the following blocks, which are then shared with the next group
// and only cost independence in that vanishingly rare case.
constexpr uint64_t kTruncatedBlocksPerGroup = 8;

// ---------------------------------------------------------------------------------------------
// Kernels

// Fills `n` outputs in groups of `group` elements; group g calls fill(g, out, count) with its
// part of the output. Groups are independent, so they run in parallel.
template <typename T, typename Fill>
void FillGroups(KernelContext& ctx, T* out, int64_t n, int64_t group, int64_t cost_per_group,
                Fill fill) {
  int64_t groups = (n + group - 1) / group;
  ctx.ParallelFor(groups, cost_per_group, [&](int64_t begin, int64_t end) {
    for (int64_t g = begin; g < end; ++g) {
      int64_t first = g * group;
      fill(g, out + first, std::min(group, n - first));
    }
  });
}

// RandomUniform (kind kUniform), RandomStandardNormal (kNormal), TruncatedNormal (kTruncated).
enum class Dist { kUniform, kNormal, kTruncated };

// How many blocks of the stream `n` values of distribution kDist and type T use.
template <Dist kDist, typename T>
uint64_t FloatBlocks(int64_t n) {
  const uint64_t groups = static_cast<uint64_t>((n + kPerBlock<T> - 1) / kPerBlock<T>);
  return groups * (kDist == Dist::kTruncated ? kTruncatedBlocksPerGroup : 1);
}

// Fills out[0, n) from the stream's blocks starting at `base`, in parallel groups.
template <Dist kDist, typename T>
void GenerateFloats(KernelContext& ctx, const PhiloxStream& s, uint64_t base, T* out, int64_t n) {
  if constexpr (kDist == Dist::kUniform && std::is_same_v<T, float>) {
    // Groups of 8 blocks; element i is still word i % 4 of block base + i / 4.
    constexpr int64_t kGroup = 4 * kLaneBlocks;
    FillGroups(ctx, out, n, kGroup, 30 * kLaneBlocks, [&](int64_t g, float* dst, int64_t count) {
      const uint64_t first = base + static_cast<uint64_t>(g) * kLaneBlocks;
      if (count == kGroup) {
        UniformFloatLanes(s, first, dst);
        return;
      }
      for (int64_t i = 0; i < count; i += 4) {
        float values[4];
        UniformBlock(s.Block(first + static_cast<uint64_t>(i / 4)), values);
        std::copy(values, values + std::min<int64_t>(4, count - i), dst + i);
      }
    });
    return;
  }
  constexpr int64_t per = kPerBlock<T>;
  const uint64_t blocks_per_group = kDist == Dist::kTruncated ? kTruncatedBlocksPerGroup : 1;
  FillGroups(ctx, out, n, per, kDist == Dist::kUniform ? 30 : 150,
             [&](int64_t g, T* dst, int64_t count) {
               uint64_t block = base + static_cast<uint64_t>(g) * blocks_per_group;
               T values[per];
               if constexpr (kDist == Dist::kUniform) {
                 UniformBlock(s.Block(block), values);
                 std::copy(values, values + count, dst);
               } else if constexpr (kDist == Dist::kNormal) {
                 NormalBlock(s.Block(block), values);
                 std::copy(values, values + count, dst);
               } else {
                 int64_t filled = 0;
                 while (filled < count) {
                   NormalBlock(s.Block(block++), values);
                   for (int64_t i = 0; i < per && filled < count; ++i) {
                     if (std::abs(values[i]) < T(2)) dst[filled++] = values[i];
                   }
                 }
               }
             });
}

// Maps random words onto [lo, hi) by scaling (Lemire's multiply-shift) rather than by modulo:
// the bias is at most range / 2^32 (int32) or range / 2^64 (int64). Uses one block per
// kPerBlock<T> values from `base` on.
template <typename T>
void GenerateInts(KernelContext& ctx, const PhiloxStream& s, uint64_t base, T lo, T hi, T* out,
                  int64_t n) {
  using U = std::make_unsigned_t<T>;
  const U range = static_cast<U>(static_cast<U>(hi) - static_cast<U>(lo));
  FillGroups(ctx, out, n, kPerBlock<T>, 30, [&](int64_t g, T* dst, int64_t count) {
    PhiloxBlock w = s.Block(base + static_cast<uint64_t>(g));
    for (int64_t i = 0; i < count; ++i) {
      U offset;
      if constexpr (sizeof(T) == 4) {
        offset = static_cast<U>((uint64_t{w[i]} * range) >> 32);
      } else {
        uint64_t bits = (uint64_t{w[2 * i]} << 32) | w[2 * i + 1];
        offset = static_cast<U>((static_cast<unsigned __int128>(bits) * range) >> 64);
      }
      dst[i] = static_cast<T>(static_cast<U>(lo) + offset);
    }
  });
}

// The bounds of a uniform integer draw: scalars with minval < maxval.
Status ReadIntBounds(const Tensor& minval, const Tensor& maxval, int64_t* lo, int64_t* hi) {
  if (minval.rank() != 0 || maxval.rank() != 0) {
    return errors::InvalidArgument("minval and maxval must be scalars, but have shapes ",
                                   minval.shape().ToString(), " and ", maxval.shape().ToString());
  }
  *lo = minval.ElementAsInt64(0);
  *hi = maxval.ElementAsInt64(0);
  if (*lo >= *hi) {
    return errors::InvalidArgument("Need minval < maxval: ", *lo, " >= ", *hi,
                                   " (values are drawn from [minval, maxval))");
  }
  return Status::OK();
}

template <Dist kDist>
class RandomFloatKernel final : public RandomKernel {
 public:
  using RandomKernel::RandomKernel;

  Status Compute(KernelContext& ctx) override {
    TensorShape shape;
    FS_RETURN_IF_ERROR(ReadShape(ctx.input(0), &shape));
    Tensor* out;
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, shape, &out));
    return DispatchDType<float, double>(
        out->dtype(), node().type().c_str(), [&]<typename T>() -> Status {
          const int64_t n = out->num_elements();
          GenerateFloats<kDist, T>(ctx, stream(), Reserve(FloatBlocks<kDist, T>(n)), out->data<T>(),
                                   n);
          return Status::OK();
        });
  }
};

class RandomUniformIntKernel final : public RandomKernel {
 public:
  using RandomKernel::RandomKernel;

  Status Compute(KernelContext& ctx) override {
    TensorShape shape;
    FS_RETURN_IF_ERROR(ReadShape(ctx.input(0), &shape));
    int64_t lo = 0, hi = 0;
    if (ctx.input(1).rank() != 0 || ctx.input(2).rank() != 0) {
      return ReadIntBounds(ctx.input(1), ctx.input(2), &lo, &hi);  // the shapes' error
    }
    Tensor* out;
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, shape, &out));
    if (out->num_elements() == 0) return Status::OK();  // empty: any bounds will do
    FS_RETURN_IF_ERROR(ReadIntBounds(ctx.input(1), ctx.input(2), &lo, &hi));
    return DispatchDType<int32_t, int64_t>(
        out->dtype(), "RandomUniformInt", [&]<typename T>() -> Status {
          const int64_t n = out->num_elements();
          const uint64_t base =
              Reserve(static_cast<uint64_t>((n + kPerBlock<T> - 1) / kPerBlock<T>));
          GenerateInts<T>(ctx, stream(), base, static_cast<T>(lo), static_cast<T>(hi),
                          out->data<T>(), n);
          return Status::OK();
        });
  }
};

// ---------------------------------------------------------------------------------------------
// Stateless ops: the stream is a pure function of the `seed` input ([2] integers: key and
// counter), read from its first block on, so the same seed and shape always give the same
// values (tf.random.stateless_*).

template <Dist kDist>
Status StatelessFloatKernel(KernelContext& ctx) {
  TensorShape shape;
  FS_RETURN_IF_ERROR(ReadShape(ctx.input(0), &shape));
  PhiloxStream stream(0, 0);
  FS_RETURN_IF_ERROR(ReadStatelessSeed(ctx.input(1), &stream));
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, shape, &out));
  return DispatchDType<float, double>(
      out->dtype(), ctx.node().type().c_str(), [&]<typename T>() -> Status {
        GenerateFloats<kDist, T>(ctx, stream, 0, out->data<T>(), out->num_elements());
        return Status::OK();
      });
}

Status StatelessUniformIntKernel(KernelContext& ctx) {
  TensorShape shape;
  FS_RETURN_IF_ERROR(ReadShape(ctx.input(0), &shape));
  PhiloxStream stream(0, 0);
  FS_RETURN_IF_ERROR(ReadStatelessSeed(ctx.input(1), &stream));
  int64_t lo = 0, hi = 0;
  FS_RETURN_IF_ERROR(ReadIntBounds(ctx.input(2), ctx.input(3), &lo, &hi));
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, shape, &out));
  return DispatchDType<int32_t, int64_t>(
      out->dtype(), "StatelessRandomUniformInt", [&]<typename T>() -> Status {
        GenerateInts<T>(ctx, stream, 0, static_cast<T>(lo), static_cast<T>(hi), out->data<T>(),
                        out->num_elements());
        return Status::OK();
      });
}

// ---------------------------------------------------------------------------------------------
// Schemas

Status RandomShape(InferenceContext& ctx) {
  PartialShape shape_vector;
  FS_RETURN_IF_ERROR(ctx.WithRank(0, 1, &shape_vector));
  PartialShape out;
  FS_RETURN_IF_ERROR(ctx.InputAsShape(0, &out));
  ctx.set_output(0, out);
  return Status::OK();
}

Status RandomUniformIntShape(InferenceContext& ctx) {
  PartialShape scalar;
  FS_RETURN_IF_ERROR(ctx.WithRank(1, 0, &scalar));
  FS_RETURN_IF_ERROR(ctx.WithRank(2, 0, &scalar));
  return RandomShape(ctx);
}

template <Dist kDist>
OpBuilder RandomFloatOp(const char* name, const char* doc) {
  OpBuilder builder(name);
  builder.Input("shape", "T")
      .Output("output", "dtype")
      .Attr("seed", 0)
      .Attr("seed2", 0)
      .TypeAttr("dtype", kFloatTypes)
      .TypeAttr("T", {DType::kInt32, DType::kInt64})
      .Stateful()
      .Shape(RandomShape)
      .KernelClass<RandomFloatKernel<kDist>>("CPU")
      .NotDifferentiable()
      .Doc(doc);
  return builder;
}

FS_REGISTER_OP(RandomFloatOp<Dist::kUniform>("RandomUniform", "Uniform random values in [0, 1)."));
FS_REGISTER_OP(RandomFloatOp<Dist::kNormal>("RandomStandardNormal",
                                            "Normal random values, mean 0 and stddev 1."));
FS_REGISTER_OP(RandomFloatOp<Dist::kTruncated>(
    "TruncatedNormal",
    "Normal random values (mean 0, stddev 1) redrawn until within 2 of the mean."));

Status StatelessShape(InferenceContext& ctx) {
  PartialShape seed;
  FS_RETURN_IF_ERROR(ctx.WithRank(1, 1, &seed));
  if (seed.dim(0) >= 0 && seed.dim(0) != 2) {
    return errors::InvalidArgument("seed must have shape [2], not ", seed.ToString());
  }
  return RandomShape(ctx);
}

Status StatelessUniformIntShape(InferenceContext& ctx) {
  PartialShape scalar;
  FS_RETURN_IF_ERROR(ctx.WithRank(2, 0, &scalar));
  FS_RETURN_IF_ERROR(ctx.WithRank(3, 0, &scalar));
  return StatelessShape(ctx);
}

template <Dist kDist>
OpBuilder StatelessFloatOp(const char* name, const char* doc) {
  OpBuilder builder(name);
  builder.Input("shape", "T")
      .Input("seed", "Tseed")
      .Output("output", "dtype")
      .TypeAttr("dtype", kFloatTypes)
      .TypeAttr("T", {DType::kInt32, DType::kInt64})
      .TypeAttr("Tseed", {DType::kInt32, DType::kInt64}, DType::kInt64)
      .Shape(StatelessShape)
      .Kernel("CPU", StatelessFloatKernel<kDist>)
      .NotDifferentiable()
      .Doc(doc);
  return builder;
}

FS_REGISTER_OP(StatelessFloatOp<Dist::kUniform>(
    "StatelessRandomUniform", "Uniform values in [0, 1), a pure function of shape and seed."));
FS_REGISTER_OP(StatelessFloatOp<Dist::kNormal>(
    "StatelessRandomNormal", "Standard normal values, a pure function of shape and seed."));
FS_REGISTER_OP(StatelessFloatOp<Dist::kTruncated>(
    "StatelessTruncatedNormal",
    "Standard normal values within 2 of the mean, a pure function of shape and seed."));

FS_REGISTER_OP(OpBuilder("StatelessRandomUniformInt")
                   .Input("shape", "T")
                   .Input("seed", "Tseed")
                   .Input("minval", "dtype")
                   .Input("maxval", "dtype")
                   .Output("output", "dtype")
                   .TypeAttr("dtype", {DType::kInt32, DType::kInt64})
                   .TypeAttr("T", {DType::kInt32, DType::kInt64})
                   .TypeAttr("Tseed", {DType::kInt32, DType::kInt64}, DType::kInt64)
                   .Shape(StatelessUniformIntShape)
                   .Kernel("CPU", StatelessUniformIntKernel)
                   .NotDifferentiable()
                   .Doc("Uniform integers in [minval, maxval), a pure function of shape and "
                        "seed."));

FS_REGISTER_OP(OpBuilder("RandomUniformInt")
                   .Input("shape", "T")
                   .Input("minval", "Tout")
                   .Input("maxval", "Tout")
                   .Output("output", "Tout")
                   .Attr("seed", 0)
                   .Attr("seed2", 0)
                   .TypeAttr("Tout", {DType::kInt32, DType::kInt64})
                   .TypeAttr("T", {DType::kInt32, DType::kInt64})
                   .Stateful()
                   .Shape(RandomUniformIntShape)
                   .KernelClass<RandomUniformIntKernel>("CPU")
                   .NotDifferentiable()
                   .Doc("Uniform random integers in [minval, maxval)."));

}  // namespace
}  // namespace flowstone
