// Shared machinery of the elementwise kernels (binary arithmetic, comparisons, unary math,
// SelectV2): run-time numpy broadcasting, integer arithmetic that wraps, and type lists.
//
// A Broadcaster maps every output element to the element of each input it reads. Adjacent output
// dimensions that every input either spans fully or broadcasts over in the same way are merged
// first, so [3,1] vs [1,4] is a 2-d problem and [8,16,32] vs [8,16,32] a 1-d one; the kernels then
// see long contiguous runs whose inputs are either contiguous (stride 1) or one repeated element
// (stride 0), which are loops a compiler vectorizes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "flowstone/kernel.h"
#include "flowstone/shape.h"
#include "flowstone/shape_inference.h"
#include "flowstone/status.h"
#include "ops/multiversion.h"

namespace flowstone {

// Integer +, -, * and negation wrap around on overflow, as in numpy and TensorFlow; in C++ signed
// overflow is undefined, so the arithmetic is done on the unsigned type of the same width.
template <typename T>
inline T WrapAdd(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}
template <typename T>
inline T WrapSub(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
  } else {
    return a - b;
  }
}
template <typename T>
inline T WrapMul(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    // uint8 promotes to int, whose product of two bytes cannot overflow.
    using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return a * b;
  }
}
template <typename T>
inline T WrapNeg(T a) {
  return WrapSub(T(0), a);
}

template <int N>
class Broadcaster {
 public:
  // Broadcasts the input shapes; fails with "Incompatible shapes: [2,3] vs. [4]".
  Status Init(const TensorShape* const (&shapes)[N]) {
    out_shape_ = *shapes[0];
    for (int k = 1; k < N; ++k) {
      FS_RETURN_IF_ERROR(BroadcastShapes(out_shape_, *shapes[k], &out_shape_));
    }
    // Merge dimensions, skipping size-1 output dimensions (nobody moves along them). `mask` has
    // bit k set where input k is broadcast (holds size 1) along a dimension.
    const int rank = out_shape_.rank();
    dims_ = Dims();
    Dims masks;
    for (int i = 0; i < rank; ++i) {
      const int64_t d = out_shape_.dim(i);
      if (d == 1) continue;
      int64_t mask = 0;
      for (int k = 0; k < N; ++k) {
        const int j = shapes[k]->rank() - rank + i;
        if (j < 0 || shapes[k]->dim(j) == 1) mask |= int64_t{1} << k;
      }
      if (dims_.size() > 0 && masks[masks.size() - 1] == mask) {
        dims_[dims_.size() - 1] *= d;
      } else {
        dims_.push_back(d);
        masks.push_back(mask);
      }
    }
    if (dims_.size() == 0) {  // every input holds exactly one element
      dims_.push_back(1);
      masks.push_back(0);
    }
    const int groups = dims_.size();
    for (int k = 0; k < N; ++k) {
      strides_[k] = Dims();
      strides_[k].resize(groups);
      int64_t running = 1;
      for (int g = groups - 1; g >= 0; --g) {
        const bool broadcast = (masks[g] >> k) & 1;
        strides_[k][g] = broadcast ? 0 : running;
        if (!broadcast) running *= dims_[g];
      }
      inner_stride_[k] = strides_[k][groups - 1];
    }
    return Status::OK();
  }

  const TensorShape& output_shape() const { return out_shape_; }
  // Stride of input k along the innermost merged dimension: 1 (contiguous) or 0 (repeated).
  int64_t inner_stride(int k) const { return inner_stride_[k]; }

  // Calls run(out_offset, count, in_offsets) for the contiguous runs covering output elements
  // [begin, end): output elements out_offset + j read element in_offsets[k] + j * inner_stride(k)
  // of input k, for j in [0, count).
  template <typename RunFn>
  void ForEachRun(int64_t begin, int64_t end, RunFn&& run) const {
    const int groups = dims_.size();
    const int64_t inner = dims_[groups - 1];
    int64_t col = begin % inner;
    int64_t row = begin / inner;
    // Coordinates of the current row in the outer merged dimensions, and where it starts in
    // each input.
    Dims coord;
    coord.resize(groups);
    int64_t row_offset[N] = {};
    for (int g = groups - 2; g >= 0; --g) {
      coord[g] = row % dims_[g];
      row /= dims_[g];
      for (int k = 0; k < N; ++k) row_offset[k] += coord[g] * strides_[k][g];
    }
    int64_t pos = begin;
    while (pos < end) {
      const int64_t count = std::min(inner - col, end - pos);
      int64_t offsets[N];
      for (int k = 0; k < N; ++k) offsets[k] = row_offset[k] + col * inner_stride_[k];
      run(pos, count, offsets);
      pos += count;
      col = 0;
      // Next row: an odometer over the outer dimensions.
      for (int g = groups - 2; g >= 0; --g) {
        for (int k = 0; k < N; ++k) row_offset[k] += strides_[k][g];
        if (++coord[g] < dims_[g]) break;
        for (int k = 0; k < N; ++k) row_offset[k] -= dims_[g] * strides_[k][g];
        coord[g] = 0;
      }
    }
  }

  // Runs ForEachRun over the whole output, split across the intra-op threads when it is large.
  // `cost_per_element` is a rough cycle count per output element.
  template <typename RunFn>
  void Run(const KernelContext& ctx, int64_t cost_per_element, RunFn&& run) const {
    const int64_t n = out_shape_.num_elements();
    if (n == 0) return;
    ctx.ParallelFor(n, cost_per_element,
                    [&](int64_t begin, int64_t end) { ForEachRun(begin, end, run); });
  }

 private:
  TensorShape out_shape_;
  Dims dims_;        // merged output dimensions
  Dims strides_[N];  // per input, its stride along each merged dimension (0 = broadcast)
  int64_t inner_stride_[N] = {};
};

// Allocates output 0 of an elementwise op, reusing the buffer of an input of the output's shape
// and dtype when this kernel holds its only reference (ForwardOrAllocateOutput makes the final
// check, so that only a candidate that can be forwarded is tried).
inline Status ForwardMatchingInputOrAllocate(KernelContext& ctx, const TensorShape& out_shape,
                                             Tensor** out) {
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    const Tensor& in = ctx.input(i);
    if (in.shape() == out_shape && in.dtype() == ctx.output_type(0) && in.RefCountIsOne()) {
      return ctx.ForwardOrAllocateOutput(i, 0, out_shape, out);
    }
  }
  return ctx.AllocateOutput(0, out_shape, out);
}

// A list of element types: the dtypes an op accepts (for TypeAttr) and the C++ types its kernel
// is instantiated for come from the same list.
template <typename... Ts>
struct TypeList {
  static std::vector<DType> DTypes() { return {DTypeOf<Ts>::value...}; }
};
using FloatTypeList = TypeList<float, double>;
using RealTypeList = TypeList<float, double, int32_t, int64_t>;
using NumericTypeList = TypeList<float, double, int32_t, int64_t, uint8_t>;
using ComplexTypeList = TypeList<complex64, complex128>;
// TensorFlow's registrations for the math ops that also take complex numbers.
using FloatAndComplexTypeList = TypeList<float, double, complex64, complex128>;
using RealAndComplexTypeList = TypeList<float, double, int32_t, int64_t, complex64, complex128>;
using NumericAndComplexTypeList =
    TypeList<float, double, int32_t, int64_t, uint8_t, complex64, complex128>;

// out[j] = fn(x[j * xs], y[j * ys]) for j in [0, n), strides 0 or 1. Each stride pattern gets its
// own loop so the compiler can vectorize it, with AVX2 where the CPU has it.
template <typename T, typename Out, typename Fn>
FS_MULTIVERSION void BinaryRun(const T* x, int64_t xs, const T* y, int64_t ys, Out* out, int64_t n,
                               Fn fn) {
  if (xs == 1 && ys == 1) {
    for (int64_t j = 0; j < n; ++j) out[j] = fn(x[j], y[j]);
  } else if (xs == 1) {
    const T b = *y;
    for (int64_t j = 0; j < n; ++j) out[j] = fn(x[j], b);
  } else if (ys == 1) {
    const T a = *x;
    for (int64_t j = 0; j < n; ++j) out[j] = fn(a, y[j]);
  } else {
    const Out value = fn(*x, *y);
    for (int64_t j = 0; j < n; ++j) out[j] = value;
  }
}

// Broadcasts the shapes of inputs 0 and 1, with a hint on failure.
inline Status InitBinaryBroadcast(const KernelContext& ctx, Broadcaster<2>* bcast) {
  Status s = bcast->Init({&ctx.input(0).shape(), &ctx.input(1).shape()});
  if (!s.ok()) {
    s.Append(
        ". Elementwise ops broadcast like numpy: aligned from the last dimension, each pair "
        "of dimensions must be equal or one of them 1.");
  }
  return s;
}

// The kernel of a broadcasting binary op z = fn(x, y) on element type T. Fn is a default-
// constructible functor; when it declares `template <typename T> static Status Check(const
// Tensor& y)` that check runs first on the second operand (integer division by zero, negative
// integer exponents), so bad input fails cleanly instead of trapping.
// The operands' common cases, which need no Broadcaster: equal shapes, or one operand a single
// element of no higher rank than the other. Sets the output shape and both strides (0 or 1).
inline bool SimpleBinaryBroadcast(const Tensor& x, const Tensor& y, const TensorShape** out_shape,
                                  int64_t* xs, int64_t* ys) {
  if (x.shape() == y.shape()) {
    *out_shape = &x.shape();
    *xs = *ys = 1;
  } else if (y.num_elements() == 1 && y.shape().rank() <= x.shape().rank()) {
    *out_shape = &x.shape();
    *xs = 1;
    *ys = 0;
  } else if (x.num_elements() == 1 && x.shape().rank() <= y.shape().rank()) {
    *out_shape = &y.shape();
    *xs = 0;
    *ys = 1;
  } else {
    return false;
  }
  return true;
}

template <typename Fn, typename T>
Status ComputeBroadcastBinary(KernelContext& ctx, int64_t cost_per_element) {
  using Out = decltype(Fn{}(T{}, T{}));
  const TensorShape* simple_shape;
  int64_t sxs, sys;
  if (SimpleBinaryBroadcast(ctx.input(0), ctx.input(1), &simple_shape, &sxs, &sys)) {
    const TensorShape out_shape = *simple_shape;
    const int64_t n = ctx.input(sxs == 1 ? 0 : 1).num_elements();
    if constexpr (requires { Fn::template Check<T>(ctx.input(1)); }) {
      if (n > 0) FS_RETURN_IF_ERROR(Fn::template Check<T>(ctx.input(1)));
    }
    Tensor* out;
    FS_RETURN_IF_ERROR(ForwardMatchingInputOrAllocate(ctx, out_shape, &out));
    const T* x = ctx.input(0).data<T>();
    const T* y = ctx.input(1).data<T>();
    Out* z = out->data<Out>();
    ctx.ParallelFor(n, cost_per_element, [&](int64_t begin, int64_t end) {
      BinaryRun(x + begin * sxs, sxs, y + begin * sys, sys, z + begin, end - begin, Fn{});
    });
    return Status::OK();
  }
  Broadcaster<2> bcast;
  FS_RETURN_IF_ERROR(InitBinaryBroadcast(ctx, &bcast));
  if constexpr (requires { Fn::template Check<T>(ctx.input(1)); }) {
    if (bcast.output_shape().num_elements() > 0) {
      FS_RETURN_IF_ERROR(Fn::template Check<T>(ctx.input(1)));
    }
  }
  Tensor* out;
  FS_RETURN_IF_ERROR(ForwardMatchingInputOrAllocate(ctx, bcast.output_shape(), &out));
  const T* x = ctx.input(0).data<T>();
  const T* y = ctx.input(1).data<T>();
  Out* z = out->data<Out>();
  const int64_t xs = bcast.inner_stride(0);
  const int64_t ys = bcast.inner_stride(1);
  bcast.Run(ctx, cost_per_element, [&](int64_t pos, int64_t count, const int64_t* offsets) {
    BinaryRun(x + offsets[0], xs, y + offsets[1], ys, z + pos, count, Fn{});
  });
  return Status::OK();
}

// A KernelFn dispatching on the dtype of input 0 over Ts.
template <typename Fn, typename... Ts>
KernelFn BroadcastBinaryKernel(TypeList<Ts...>, int64_t cost_per_element) {
  return [cost_per_element](KernelContext& ctx) {
    return DispatchDType<Ts...>(ctx.input(0).dtype(), ctx.node().type().c_str(), [&]<typename T>() {
      return ComputeBroadcastBinary<Fn, T>(ctx, cost_per_element);
    });
  };
}

}  // namespace flowstone
