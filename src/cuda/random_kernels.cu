// GPU kernels for RandomUniform, RandomStandardNormal and TruncatedNormal (float32 and float64)
// that draw the same numbers as the CPU kernels (src/ops/random_ops.cc) for the same seeds.
//
// Both use Philox4x32-10 with key = seed, counter = (block index, seed2), the same mapping from
// words to values, the same groups of outputs per block (8 blocks per group for
// TruncatedNormal), and the same per-kernel block counter, reserved once per run: so a GPU
// session replays a CPU session's sequence run by run, whichever device each run is on.
//
// Uniform values are bit-identical: Philox and the integer-to-float conversions are exact. Normal
// values go through log, sin and cos, which glibc and CUDA round differently; neither is
// correctly rounded, so bit-identical normals would need glibc's own algorithms on the device.
// Float normals are computed here with double-precision functions rounded to float. Run on the
// host against glibc's float functions (8 million values, four seed pairs), that matched the CPU
// kernel bit for bit in 98.5% of the values and within one unit in the last place (at most
// 2.4e-7) in the rest. On the device CUDA's double functions take the place of glibc's double
// ones (both within a unit in the last place of double), so float normals are expected to differ
// from the CPU's by a unit or two in the last place in a few percent of the values. Double
// normals use CUDA's double log, sin and cos and differ from the CPU's by a few units in the last
// place at most. The arithmetic around the functions is the CPU's, operation for operation (no
// multiply-add can be contracted: each product feeds a sqrt, a function or a store). A
// TruncatedNormal value within a rounding error of +-2 could be kept on one device and redrawn on
// the other, shifting its group of outputs; that needs a value within 5e-7 of the bound. So
// tests/gpu/test_cuda_dnn.py compares uniforms bit for bit and normals to 2e-6.
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "cuda/cuda_kernel.h"
#include "cuda/gpu_kernel_class.h"
#include "cuda/gpu_launch.h"
#include "flowstone/kernel.h"

namespace flowstone::cuda {
namespace {

// ---------------------------------------------------------------------------------------------
// Philox4x32-10, as in src/ops/random_ops.cc.

struct PhiloxKey {
  uint32_t k0, k1;
};
struct PhiloxWords {
  uint32_t w[4];
};

// The stream of one (seed, seed2) pair.
struct PhiloxStream {
  PhiloxKey key;
  uint32_t seed2_lo, seed2_hi;
};

PhiloxStream MakeStream(uint64_t seed, uint64_t seed2) {
  return PhiloxStream{{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)},
                      static_cast<uint32_t>(seed2),
                      static_cast<uint32_t>(seed2 >> 32)};
}

__device__ PhiloxWords Block(const PhiloxStream& s, uint64_t index) {
  constexpr uint32_t kM0 = 0xD2511F53, kM1 = 0xCD9E8D57;
  constexpr uint32_t kW0 = 0x9E3779B9, kW1 = 0xBB67AE85;
  uint32_t c0 = static_cast<uint32_t>(index), c1 = static_cast<uint32_t>(index >> 32);
  uint32_t c2 = s.seed2_lo, c3 = s.seed2_hi;
  uint32_t k0 = s.key.k0, k1 = s.key.k1;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += kW0;
      k1 += kW1;
    }
    const uint64_t p0 = uint64_t{kM0} * c0;
    const uint64_t p1 = uint64_t{kM1} * c2;
    const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0;
    const uint32_t n1 = static_cast<uint32_t>(p1);
    const uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
    const uint32_t n3 = static_cast<uint32_t>(p0);
    c0 = n0;
    c1 = n1;
    c2 = n2;
    c3 = n3;
  }
  return PhiloxWords{{c0, c1, c2, c3}};
}

// ---------------------------------------------------------------------------------------------
// From words to values, as in src/ops/random_ops.cc.

__device__ float UniformFloat(uint32_t w) { return static_cast<float>(w >> 8) * 0x1p-24f; }
__device__ double UniformDouble(uint32_t hi, uint32_t lo) {
  return static_cast<double>(((uint64_t{hi} << 32) | lo) >> 11) * 0x1p-53;
}

// Box-Muller with u1 moved to (0, 1]. The float version rounds double-precision log, cos and sin
// to float (see the top of the file for how close that comes to the CPU).
__device__ void BoxMuller(float u1, float u2, float* z0, float* z1) {
  const float log_term = static_cast<float>(log(static_cast<double>(1.0f - u1)));
  const float radius = sqrtf(-2.0f * log_term);
  const float theta = 2.0f * static_cast<float>(M_PI) * u2;
  *z0 = radius * static_cast<float>(cos(static_cast<double>(theta)));
  *z1 = radius * static_cast<float>(sin(static_cast<double>(theta)));
}
__device__ void BoxMuller(double u1, double u2, double* z0, double* z1) {
  const double radius = sqrt(-2.0 * log(1.0 - u1));
  const double theta = 2.0 * M_PI * u2;
  *z0 = radius * cos(theta);
  *z1 = radius * sin(theta);
}

// Outputs per block: 4 floats or 2 doubles.
template <typename T>
constexpr int kPerBlock = sizeof(T) == 4 ? 4 : 2;

template <typename T>
__device__ void UniformValues(const PhiloxWords& b, T* out) {
  if constexpr (sizeof(T) == 4) {
    for (int i = 0; i < 4; ++i) out[i] = UniformFloat(b.w[i]);
  } else {
    out[0] = UniformDouble(b.w[0], b.w[1]);
    out[1] = UniformDouble(b.w[2], b.w[3]);
  }
}

template <typename T>
__device__ void NormalValues(const PhiloxWords& b, T* out) {
  if constexpr (sizeof(T) == 4) {
    BoxMuller(UniformFloat(b.w[0]), UniformFloat(b.w[1]), &out[0], &out[1]);
    BoxMuller(UniformFloat(b.w[2]), UniformFloat(b.w[3]), &out[2], &out[3]);
  } else {
    BoxMuller(UniformDouble(b.w[0], b.w[1]), UniformDouble(b.w[2], b.w[3]), &out[0], &out[1]);
  }
}

enum class Dist { kUniform, kNormal, kTruncated };

// TruncatedNormal's blocks per group of kPerBlock outputs (random_ops.cc).
constexpr uint64_t kTruncatedBlocksPerGroup = 8;

// One thread per group of kPerBlock outputs; group g starts at block base + g * blocks_per_group.
template <typename T, Dist kDist>
__global__ void RandomKernel(PhiloxStream s, uint64_t base, int64_t n, T* out) {
  constexpr int per = kPerBlock<T>;
  const int64_t groups = (n + per - 1) / per;
  for (int64_t g = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; g < groups;
       g += int64_t{gridDim.x} * blockDim.x) {
    const int64_t first = g * per;
    const int64_t count = n - first < per ? n - first : per;
    T* dst = out + first;
    T values[per];
    if constexpr (kDist == Dist::kUniform) {
      UniformValues<T>(Block(s, base + static_cast<uint64_t>(g)), values);
      for (int64_t i = 0; i < count; ++i) dst[i] = values[i];
    } else if constexpr (kDist == Dist::kNormal) {
      NormalValues<T>(Block(s, base + static_cast<uint64_t>(g)), values);
      for (int64_t i = 0; i < count; ++i) dst[i] = values[i];
    } else {
      uint64_t block = base + static_cast<uint64_t>(g) * kTruncatedBlocksPerGroup;
      int64_t filled = 0;
      while (filled < count) {
        NormalValues<T>(Block(s, block++), values);
        for (int i = 0; i < per && filled < count; ++i) {
          if (fabs(static_cast<double>(values[i])) < 2.0) dst[filled++] = values[i];
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The kernel object: seeds and the block counter, per node and session as on the CPU.

Status ReadShape(const Tensor& shape, TensorShape* out) {
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

uint64_t FreshSeed() {
  try {
    std::random_device device;
    return (uint64_t{device()} << 32) | device();
  } catch (const std::exception&) {
    return static_cast<uint64_t>(
        std::chrono::high_resolution_clock::now().time_since_epoch().count());
  }
}

template <Dist kDist>
class RandomGpuKernel : public OpKernel {
 public:
  explicit RandomGpuKernel(const Node& node) : OpKernel(node) {}

  Status Init() override {
    uint64_t seed = static_cast<uint64_t>(node().attrs().GetOr<int64_t>("seed", 0));
    uint64_t seed2 = static_cast<uint64_t>(node().attrs().GetOr<int64_t>("seed2", 0));
    if (seed == 0 && seed2 == 0) {
      seed = FreshSeed();
      seed2 = FreshSeed();
    }
    stream_ = MakeStream(seed, seed2);
    return Status::OK();
  }

  Status Compute(KernelContext& ctx) override {
    TensorShape shape;
    FS_RETURN_IF_ERROR(ReadShape(ctx.input(0), &shape));
    Tensor* out;
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, shape, &out));
    const int64_t n = out->num_elements();
    return DispatchDType<float, double>(
        out->dtype(), node().type().c_str(), [&]<typename T>() -> Status {
          constexpr int64_t per = kPerBlock<T>;
          const int64_t groups = (n + per - 1) / per;
          const uint64_t blocks_per_group =
              kDist == Dist::kTruncated ? kTruncatedBlocksPerGroup : 1;
          // Reserved even for an empty output, as the CPU kernel does (it reserves 0 blocks).
          const uint64_t base = next_block_.fetch_add(
              static_cast<uint64_t>(groups) * blocks_per_group, std::memory_order_relaxed);
          if (n == 0) return Status::OK();
          RandomKernel<T, kDist><<<BlocksFor(groups), kThreadsPerBlock, 0, StreamOf(ctx)>>>(
              stream_, base, n, out->data<T>());
          return LaunchCheck(node().type().c_str());
        });
  }

 private:
  PhiloxStream stream_{};
  std::atomic<uint64_t> next_block_{0};
};

FS_REGISTER_GPU_KERNEL_CLASS(RandomGpuKernel<Dist::kUniform>,
                             GpuKernel("RandomUniform", nullptr)
                                 .Types({DType::kFloat32, DType::kFloat64})
                                 .HostMemory("shape"));
FS_REGISTER_GPU_KERNEL_CLASS(RandomGpuKernel<Dist::kNormal>,
                             GpuKernel("RandomStandardNormal", nullptr)
                                 .Types({DType::kFloat32, DType::kFloat64})
                                 .HostMemory("shape"));
FS_REGISTER_GPU_KERNEL_CLASS(RandomGpuKernel<Dist::kTruncated>,
                             GpuKernel("TruncatedNormal", nullptr)
                                 .Types({DType::kFloat32, DType::kFloat64})
                                 .HostMemory("shape"));

}  // namespace
}  // namespace flowstone::cuda
