// Helpers shared by the op families in this folder: reading index tensors into flat slice
// offsets with TensorFlow's out-of-range messages, applying updates to slices with one combining
// rule per op (scatter_nd_ops.cc, resource_scatter_ops.cc), and checking that sizes computed from
// user data fit int64 (segment_ops.cc, broadcast_ops.cc, space_batch_ops.cc).
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "flowstone/kernel.h"
#include "flowstone/status.h"
#include "flowstone/tensor.h"
#include "ops/array_util.h"
#include "ops/elementwise.h"

namespace flowstone {
namespace scatter_util {

// The multi-index of element `flat` of a row-major tensor of `shape`, as "[1,2]" ("" for a
// scalar): TensorFlow names offending index entries this way.
inline std::string PositionOf(const TensorShape& shape, int64_t flat) {
  if (shape.rank() == 0) return "";
  std::vector<int64_t> position(shape.rank());
  for (int d = shape.rank() - 1; d >= 0; --d) {
    const int64_t n = std::max<int64_t>(shape.dim(d), 1);
    position[d] = flat % n;
    flat /= n;
  }
  return array_util::JoinInts(position);
}

// "indices[1] = 7 is not in [0, 5)", where `name` names the index tensor and `flat` the entry.
inline Status IndexOutOfRange(const char* name, const TensorShape& indices_shape, int64_t flat,
                              int64_t value, int64_t limit) {
  return errors::InvalidArgument(name, PositionOf(indices_shape, flat), " = ", value,
                                 " is not in [0, ", limit, ")");
}

// `dims` (all non-negative) as a shape, or InvalidArgument when its element count does not fit
// int64: sizes computed from user data (a shape input, the largest segment id) must not overflow.
inline Status CheckedShape(const std::vector<int64_t>& dims, TensorShape* out) {
  int64_t elements = 1;
  for (int64_t d : dims) {
    if (d > 0 && elements > std::numeric_limits<int64_t>::max() / d) {
      return errors::InvalidArgument("a tensor of shape ", array_util::JoinInts(dims),
                                     " would have too many elements to fit int64");
    }
    elements *= d;
  }
  *out = TensorShape(dims);
  return Status::OK();
}

// Checks that every entry of a 1-D-or-more index tensor is in [0, limit) and returns the values.
inline Status CheckedIndices(const Tensor& indices, int64_t limit, const char* name,
                             std::vector<int64_t>* out) {
  *out = array_util::IntValues(indices);
  for (size_t k = 0; k < out->size(); ++k) {
    const int64_t value = (*out)[k];
    if (value < 0 || value >= limit) {
      return IndexOutOfRange(name, indices.shape(), static_cast<int64_t>(k), value, limit);
    }
  }
  return Status::OK();
}

// The slices addressed by an index tensor of shape [..., K] into a tensor of `shape`: index
// vector n selects shape[K:]-shaped slice n, which starts at element offsets[n].
struct NdSlices {
  int index_depth = 0;     // K
  int64_t slice_size = 1;  // elements per slice: product of shape[K:]
  std::vector<int64_t> offsets;
};

// Reads `indices` ([..., K], K <= rank of `shape`) into slice offsets, failing on an index
// vector that points outside `shape`; `shape_name` says what shape belongs to ("param shape",
// "shape").
inline Status NdSliceOffsets(const Tensor& indices, const TensorShape& shape,
                             const char* shape_name, NdSlices* out) {
  if (indices.rank() < 1) {
    return errors::InvalidArgument(
        "indices must be at least a vector (the last dimension holds "
        "the index vectors), got shape ",
        indices.shape().ToString());
  }
  const int depth = static_cast<int>(indices.dim(indices.rank() - 1));
  if (indices.dim(indices.rank() - 1) > shape.rank()) {
    return errors::InvalidArgument("index innermost dimension length must be <= ", shape_name,
                                   " rank; saw: ", indices.dim(indices.rank() - 1), " vs. ",
                                   shape.rank(), " (", shape_name, " ", shape.ToString(), ")");
  }
  out->index_depth = depth;
  out->slice_size = array_util::DimProduct(shape, depth, shape.rank());
  std::vector<int64_t> strides(depth);
  int64_t stride = out->slice_size;
  for (int j = depth - 1; j >= 0; --j) {
    strides[j] = stride;
    stride *= shape.dim(j);
  }
  // One index vector per entry of indices.shape[:-1]; with K = 0 each is empty and selects the
  // whole tensor.
  const int64_t vectors = array_util::DimProduct(indices.shape(), 0, indices.rank() - 1);
  out->offsets.assign(static_cast<size_t>(vectors), 0);
  TensorShape rows_shape;
  for (int d = 0; d + 1 < indices.rank(); ++d) rows_shape.AddDim(indices.dim(d));
  for (int64_t n = 0; depth > 0 && n < vectors; ++n) {
    int64_t offset = 0;
    for (int j = 0; j < depth; ++j) {
      const int64_t value = indices.ElementAsInt64(n * depth + j);
      if (value < 0 || value >= shape.dim(j)) {
        std::vector<int64_t> vector(depth);
        for (int i = 0; i < depth; ++i) vector[i] = indices.ElementAsInt64(n * depth + i);
        return errors::InvalidArgument("indices", PositionOf(rows_shape, n), " = ",
                                       array_util::JoinInts(vector), " does not index into ",
                                       shape_name, " ", shape.ToString(), ": entry ", j, " is ",
                                       value, ", not in [0, ", shape.dim(j), ")");
      }
      offset += value * strides[j];
    }
    out->offsets[n] = offset;
  }
  return Status::OK();
}

// How a scatter combines an update u with the value v already in place. Integer sums and
// products wrap around, as in TensorFlow (WrapAdd: signed overflow is undefined in C++).
enum class Combine { kUpdate, kAdd, kSub, kMul, kDiv, kMax, kMin };

template <Combine C, typename T>
inline T Apply(T v, T u) {
  if constexpr (C == Combine::kUpdate) return u;
  if constexpr (C == Combine::kAdd) return WrapAdd(v, u);
  if constexpr (C == Combine::kSub) return WrapSub(v, u);
  if constexpr (C == Combine::kMul) return WrapMul(v, u);
  if constexpr (C == Combine::kDiv) return v / u;
  if constexpr (C == Combine::kMax) return std::max(v, u);
  if constexpr (C == Combine::kMin) return std::min(v, u);
}

// dst[offsets[n] + c] = Apply(dst[...], updates[n * slice_size + c]) for every slice n in index
// order (or with updates[0] for every element when `scalar_update`). Threads take disjoint
// columns c, so duplicate indices are combined in the same order at every thread count.
template <Combine C, typename T>
void ScatterSlices(KernelContext& ctx, const std::vector<int64_t>& offsets, int64_t slice_size,
                   const T* updates, bool scalar_update, T* dst) {
  const int64_t rows = static_cast<int64_t>(offsets.size());
  ctx.ParallelFor(slice_size, rows, [&](int64_t begin, int64_t end) {
    for (int64_t n = 0; n < rows; ++n) {
      T* out = dst + offsets[n];
      if (scalar_update) {
        for (int64_t c = begin; c < end; ++c) out[c] = Apply<C>(out[c], updates[0]);
      } else {
        const T* in = updates + n * slice_size;
        for (int64_t c = begin; c < end; ++c) out[c] = Apply<C>(out[c], in[c]);
      }
    }
  });
}

// Runs ScatterSlices with the element type of `dtype`: any dtype for kUpdate (elements are
// copied as unsigned integers of their size), the arithmetic types otherwise.
template <Combine C>
Status ScatterSlicesOfType(KernelContext& ctx, DType dtype, const std::vector<int64_t>& offsets,
                           int64_t slice_size, const void* updates, bool scalar_update, void* dst) {
  if constexpr (C == Combine::kUpdate) {
    return array_util::DispatchElementSize(DTypeSize(dtype), [&]<typename U>() -> Status {
      ScatterSlices<C, U>(ctx, offsets, slice_size, static_cast<const U*>(updates), scalar_update,
                          static_cast<U*>(dst));
      return Status::OK();
    });
  } else {
    return DispatchDType<float, double, int32_t, int64_t, uint8_t>(
        dtype, ctx.node().type().c_str(), [&]<typename T>() -> Status {
          ScatterSlices<C, T>(ctx, offsets, slice_size, static_cast<const T*>(updates),
                              scalar_update, static_cast<T*>(dst));
          return Status::OK();
        });
  }
}

}  // namespace scatter_util
}  // namespace flowstone
