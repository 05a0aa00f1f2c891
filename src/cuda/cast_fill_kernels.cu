// GPU kernels that make or convert whole tensors: Cast between float32, float64, int32, int64,
// uint8 and bool, to float16 and bfloat16, and from those to complex64/complex128; Fill,
// ZerosLike and OnesLike for float32 and float64.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "cuda_kernel.h"
#include "gpu_launch.h"
#include "ops/array_util.h"

namespace flowstone::cuda {
namespace {

const std::vector<DType> kGpuFloatTypes = {DType::kFloat32, DType::kFloat64};

// ---------------------------------------------------------------------------------------------
// Cast: the CPU kernel's rules (src/ops/math_ops.cc): floats to integers saturate and NaN gives
// 0; integers narrow modulo 2^bits; anything to bool is `!= 0`.

template <typename To, typename From>
__device__ To CastValue(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    if (v != v) return To(0);
    // Inclusive bounds: the limits converted to From may round outward.
    constexpr From kLow = static_cast<From>(std::numeric_limits<To>::min());
    constexpr From kHigh = static_cast<From>(std::numeric_limits<To>::max());
    if (v <= kLow) return std::numeric_limits<To>::min();
    if (v >= kHigh) return std::numeric_limits<To>::max();
    return static_cast<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

template <typename To, typename From>
__global__ void CastKernel(const From* in, To* out, int64_t n) {
  for (int64_t i = GridStart(); i < n; i += GridStride()) out[i] = CastValue<To, From>(in[i]);
}

// To the 16-bit storage types, through float32 as the CPU kernel converts (round to nearest
// even; overflow gives infinity, NaN stays NaN); out holds their bits. With Truncate=true the
// mantissa bits the narrow type cannot hold are cleared first, so nothing is left to round.
__device__ float Narrowable(float v, bool truncate, int dropped_bits) {
  if (!truncate) return v;
  const uint32_t bits = __float_as_uint(v);
  const bool nan = (bits & 0x7fffffffu) > 0x7f800000u;
  return __uint_as_float(nan ? bits : bits & ~((1u << dropped_bits) - 1));
}

template <typename From>
__global__ void CastToHalfKernel(const From* in, uint16_t* out, int64_t n, bool truncate) {
  for (int64_t i = GridStart(); i < n; i += GridStride()) {
    const float v = Narrowable(static_cast<float>(in[i]), truncate, 13);
    out[i] = __half_as_ushort(__float2half_rn(v));
  }
}

template <typename From>
__global__ void CastToBFloat16Kernel(const From* in, uint16_t* out, int64_t n, bool truncate) {
  for (int64_t i = GridStart(); i < n; i += GridStride()) {
    const float v = Narrowable(static_cast<float>(in[i]), truncate, 16);
    out[i] = __bfloat16_as_ushort(__float2bfloat16_rn(v));
  }
}

// To complex64 or complex128 (R is its part's type): the real part converted, imaginary part 0.
template <typename R, typename From>
__global__ void CastToComplexKernel(const From* in, R* out, int64_t n) {
  for (int64_t i = GridStart(); i < n; i += GridStride()) {
    out[2 * i] = CastValue<R, From>(in[i]);
    out[2 * i + 1] = R(0);
  }
}

#define FS_GPU_CAST_TYPES float, double, int32_t, int64_t, uint8_t, bool

Status Cast(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  const DType dst = ctx.output_type(0);
  if (in.dtype() == dst) {
    ctx.SetOutput(0, in);
    return Status::OK();
  }
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, in.shape(), &out));
  const int64_t n = in.num_elements();
  if (n == 0) return Status::OK();
  if (dst == DType::kFloat16 || dst == DType::kBFloat16) {
    auto* bits = static_cast<uint16_t*>(out->raw_data());
    const bool truncate = ctx.node().attrs().GetOr<bool>("Truncate", false);
    return DispatchDType<FS_GPU_CAST_TYPES>(in.dtype(), "Cast", [&]<typename From>() {
      const From* from = ctx.input(0).data<From>();
      // As on the CPU, Truncate applies to floating-point sources only.
      const bool drop_bits = truncate && std::is_floating_point_v<From>;
      if (dst == DType::kFloat16) {
        CastToHalfKernel<<<BlocksFor(n), kThreadsPerBlock, 0, StreamOf(ctx)>>>(from, bits, n,
                                                                               drop_bits);
      } else {
        CastToBFloat16Kernel<<<BlocksFor(n), kThreadsPerBlock, 0, StreamOf(ctx)>>>(from, bits, n,
                                                                                   drop_bits);
      }
      return LaunchCheck("Cast");
    });
  }
  if (IsComplex(dst)) {
    return DispatchDType<FS_GPU_CAST_TYPES>(in.dtype(), "Cast", [&]<typename From>() {
      return DispatchDType<float, double>(RealPartType(dst), "Cast", [&]<typename R>() {
        CastToComplexKernel<<<BlocksFor(n), kThreadsPerBlock, 0, StreamOf(ctx)>>>(
            ctx.input(0).data<From>(), static_cast<R*>(out->raw_data()), n);
        return LaunchCheck("Cast");
      });
    });
  }
  return DispatchDType<FS_GPU_CAST_TYPES>(in.dtype(), "Cast", [&]<typename From>() {
    return DispatchDType<FS_GPU_CAST_TYPES>(dst, "Cast", [&]<typename To>() {
      CastKernel<<<BlocksFor(n), kThreadsPerBlock, 0, StreamOf(ctx)>>>(ctx.input(0).data<From>(),
                                                                       out->data<To>(), n);
      return LaunchCheck("Cast");
    });
  });
}

#undef FS_GPU_CAST_TYPES

// ---------------------------------------------------------------------------------------------
// Fill, OnesLike, ZerosLike

template <typename T>
__global__ void FillKernel(T* out, int64_t n, T value) {
  for (int64_t i = GridStart(); i < n; i += GridStride()) out[i] = value;
}

template <typename T>
Status LaunchFill(KernelContext& ctx, Tensor* out, T value) {
  const int64_t n = out->num_elements();
  if (n == 0) return Status::OK();
  FillKernel<<<BlocksFor(n), kThreadsPerBlock, 0, StreamOf(ctx)>>>(out->data<T>(), n, value);
  return LaunchCheck(ctx.node().type().c_str());
}

// `dims` and `value` are in host memory.
Status Fill(KernelContext& ctx) {
  const Tensor& dims_t = ctx.input(0);
  const Tensor& value = ctx.input(1);
  if (dims_t.rank() != 1) {
    return errors::InvalidArgument("dims must be a vector, got shape ", dims_t.shape().ToString());
  }
  if (value.rank() != 0) {
    return errors::InvalidArgument("value must be a scalar, got shape ", value.shape().ToString());
  }
  const std::vector<int64_t> dims = array_util::IntValues(dims_t);
  for (int64_t d : dims) {
    if (d < 0) {
      std::string listed;
      for (int64_t each : dims) listed += (listed.empty() ? "" : ", ") + std::to_string(each);
      return errors::InvalidArgument("Fill dimensions must be >= 0, got [", listed, "]");
    }
  }
  FS_RETURN_IF_ERROR(ValidateDims(dims));
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape(dims), &out));
  return DispatchDType<float, double>(value.dtype(), "Fill", [&]<typename T>() {
    return LaunchFill<T>(ctx, out, *value.data<T>());
  });
}

Status OnesLike(KernelContext& ctx) {
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, ctx.input(0).shape(), &out));
  return DispatchDType<float, double>(out->dtype(), "OnesLike",
                                      [&]<typename T>() { return LaunchFill<T>(ctx, out, T(1)); });
}

Status ZerosLike(KernelContext& ctx) {
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, ctx.input(0).shape(), &out));
  if (out->bytes() == 0) return Status::OK();
  // All-zero bytes are 0.0 in both float types.
  return CudaCheck(cudaMemsetAsync(out->raw_data(), 0, out->bytes(), StreamOf(ctx)),
                   "cudaMemsetAsync (ZerosLike)");
}

// Cast's type constraint applies to SrcT: integer sources other than int32 stay on the CPU.
FS_REGISTER_GPU_KERNEL(
    GpuKernel("Cast", Cast).Types({DType::kFloat32, DType::kFloat64, DType::kInt32}));
FS_REGISTER_GPU_KERNEL(
    GpuKernel("Fill", Fill).Types(kGpuFloatTypes).HostMemory("dims").HostMemory("value"));
FS_REGISTER_GPU_KERNEL(GpuKernel("OnesLike", OnesLike).Types(kGpuFloatTypes));
FS_REGISTER_GPU_KERNEL(GpuKernel("ZerosLike", ZerosLike).Types(kGpuFloatTypes));

}  // namespace
}  // namespace flowstone::cuda
