// Helpers shared by the array op families (shape_ops.cc, array_ops.cc, slice_ops.cc,
// fill_ops.cc). Array ops move elements without looking at them, so their kernels work on
// unsigned integers of the element's size and serve every dtype with one instantiation per size.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/shape.h"
#include "flowstone/status.h"
#include "flowstone/tensor.h"
#include "flowstone/types.h"

namespace flowstone {
namespace array_util {

// The index dtypes TensorFlow allows for shape-like inputs (Tshape, Tidx, Tperm, ...).
inline const std::vector<DType> kIndexTypes = {DType::kInt32, DType::kInt64};

// The values of an integer tensor, whatever its rank.
inline std::vector<int64_t> IntValues(const Tensor& t) {
  std::vector<int64_t> out(static_cast<size_t>(t.num_elements()));
  for (int64_t i = 0; i < t.num_elements(); ++i) out[i] = t.ElementAsInt64(i);
  return out;
}

// The 16-byte element (complex128). Not unsigned __int128: that type asks for 16-byte alignment,
// and complex128 elements are only 8-byte aligned.
struct Element16 {
  uint64_t lo, hi;
  bool operator==(const Element16&) const = default;
};

// Calls fn.template operator()<U>() with the unsigned integer type U of `bytes` bytes (Element16
// for 16); copying a U copies one element of any dtype of that size exactly.
template <typename F>
Status DispatchElementSize(size_t bytes, F&& fn) {
  switch (bytes) {
    case 16:
      return fn.template operator()<Element16>();
    case 1:
      return fn.template operator()<uint8_t>();
    case 2:
      return fn.template operator()<uint16_t>();
    case 4:
      return fn.template operator()<uint32_t>();
    case 8:
      return fn.template operator()<uint64_t>();
    default:
      return errors::Internal("no array kernel for elements of ", bytes, " bytes");
  }
}

// Product of dims [begin, end) of a shape.
inline int64_t DimProduct(const TensorShape& shape, int begin, int end) {
  int64_t n = 1;
  for (int i = begin; i < end; ++i) n *= shape.dim(i);
  return n;
}

// Product of dims [begin, end) of a partial shape, or -1 when one of them is unknown.
inline int64_t KnownProduct(const PartialShape& shape, int begin, int end) {
  int64_t n = 1;
  for (int i = begin; i < end; ++i) {
    if (shape.dim(i) < 0) return -1;
    n *= shape.dim(i);
  }
  return n;
}

// Maps an axis in [-rank, rank) to [0, rank); `what` names it in the error ("axis", "dim").
inline Status CanonicalAxis(int64_t axis, int rank, const char* what, int* out) {
  if (axis < -rank || axis >= rank) {
    return errors::InvalidArgument("Expected ", what, " in the range [", -rank, ", ", rank,
                                   "), but got ", axis);
  }
  *out = static_cast<int>(axis < 0 ? axis + rank : axis);
  return Status::OK();
}

// Reads a scalar (or one-element) integer input such as an axis; fails naming the argument.
inline Status ScalarIndex(const Tensor& t, const char* what, int64_t* out) {
  if (t.num_elements() != 1 || t.rank() > 1) {
    return errors::InvalidArgument(what, " must be a scalar, but got a tensor of shape ",
                                   t.shape().ToString());
  }
  *out = t.ElementAsInt64(0);
  return Status::OK();
}

// The string a scalar string tensor holds (a file name, a pattern, a separator); InvalidArgument
// naming `what` for any other shape.
inline Status ScalarString(const Tensor& t, const char* what, std::string* out) {
  if (t.rank() != 0) {
    return errors::InvalidArgument(what, " must be a scalar string, got shape ",
                                   t.shape().ToString());
  }
  *out = *t.data<std::string>();
  return Status::OK();
}

// "[1,2]" for a list of ints, as TensorFlow's messages print index vectors.
inline std::string JoinInts(const std::vector<int64_t>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) out += StrCat(i ? "," : "", values[i]);
  return out + "]";
}

// Visits the rows (all dims but the last) of a strided view of `out_dims`: calls fn(r, offset)
// for each row r in row-major order, with offset = sum_j i_j * strides[j] over the row's
// multi-index. Rows are spread over threads.
template <typename F>
void ForEachStridedRow(KernelContext& ctx, const std::vector<int64_t>& out_dims,
                       const std::vector<int64_t>& strides, F&& fn) {
  const int m = static_cast<int>(out_dims.size());
  const int64_t row_len = out_dims[m - 1];
  int64_t rows = 1;
  for (int j = 0; j + 1 < m; ++j) rows *= out_dims[j];
  if (rows == 0 || row_len == 0) return;
  ctx.ParallelFor(rows, row_len, [&](int64_t begin, int64_t end) {
    // The multi-index of row `begin`, then advanced like an odometer.
    std::vector<int64_t> index(std::max(m - 1, 0));
    int64_t offset = 0;
    for (int64_t j = m - 2, r = begin; j >= 0; --j) {
      index[j] = r % out_dims[j];
      r /= out_dims[j];
      offset += index[j] * strides[j];
    }
    for (int64_t r = begin; r < end; ++r) {
      fn(r, offset);
      for (int j = m - 2; j >= 0; --j) {
        offset += strides[j];
        if (++index[j] < out_dims[j]) break;
        offset -= index[j] * strides[j];
        index[j] = 0;
      }
    }
  });
}

// Drops dims of size 1 and merges each dim with the next when the strided side is contiguous
// across them too (strides[j] == strides[j + 1] * dims[j + 1]), so that a slice keeping whole
// trailing dims ([224, 224, 3] -> [200, 200, 3]) copies rows of 600 elements, not of 3. The
// contiguous side is contiguous across any dims, so the element order is unchanged.
inline void CoalesceStridedDims(std::vector<int64_t>* dims, std::vector<int64_t>* strides) {
  std::vector<int64_t> merged_dims, merged_strides;
  for (size_t j = 0; j < dims->size(); ++j) {
    const int64_t d = (*dims)[j], stride = (*strides)[j];
    if (d == 1) continue;
    if (!merged_dims.empty() && merged_strides.back() == stride * d) {
      merged_dims.back() *= d;
      merged_strides.back() = stride;
    } else {
      merged_dims.push_back(d);
      merged_strides.push_back(stride);
    }
  }
  if (merged_dims.empty()) {  // every dim was 1: one element
    merged_dims.push_back(1);
    merged_strides.push_back(1);
  }
  *dims = std::move(merged_dims);
  *strides = std::move(merged_strides);
}

// Copies `n` groups of kLen contiguous elements: group p from src + p * stride to dst + p * kLen.
// The group size is a constant, so each copy is a few moves, not a call.
template <int kLen, typename U>
void CopyShortGroups(const U* src, int64_t stride, int64_t n, U* dst) {
  for (int64_t p = 0; p < n; ++p) std::memcpy(dst + p * kLen, src + p * stride, kLen * sizeof(U));
}

// Output element (i_0, ..., i_{m-1}) is input element at offset sum_j i_j * in_strides[j], for
// the output dims `out_dims`. The innermost loop is a memcpy when the last output dim is
// contiguous in the input.
template <typename U>
void StridedGather(KernelContext& ctx, const U* in, std::vector<int64_t> out_dims,
                   std::vector<int64_t> in_strides, U* out) {
  CoalesceStridedDims(&out_dims, &in_strides);
  const size_t m = out_dims.size();
  if constexpr (std::is_trivially_copyable_v<U>) {
    // Contiguous runs of at most 4 elements (flipping the width of an RGB image: runs of 3)
    // would cost a memcpy call each; a row of the last two dims is copied in one loop instead.
    const int64_t group = out_dims.back();
    if (m >= 2 && in_strides.back() == 1 && group <= 4) {
      const int64_t groups = out_dims[m - 2], group_stride = in_strides[m - 2];
      out_dims.pop_back();
      in_strides.pop_back();
      ForEachStridedRow(ctx, out_dims, in_strides, [&](int64_t r, int64_t offset) {
        U* dst = out + r * groups * group;
        const U* src = in + offset;
        switch (group) {
          case 1:
            return CopyShortGroups<1>(src, group_stride, groups, dst);
          case 2:
            return CopyShortGroups<2>(src, group_stride, groups, dst);
          case 3:
            return CopyShortGroups<3>(src, group_stride, groups, dst);
          default:
            return CopyShortGroups<4>(src, group_stride, groups, dst);
        }
      });
      return;
    }
  }
  const int64_t row_len = out_dims.back();
  const int64_t row_stride = in_strides.back();
  ForEachStridedRow(ctx, out_dims, in_strides, [&](int64_t r, int64_t offset) {
    U* dst = out + r * row_len;
    const U* src = in + offset;
    if constexpr (!std::is_trivially_copyable_v<U>) {  // strings
      for (int64_t k = 0; k < row_len; ++k) dst[k] = src[k * row_stride];
    } else if (row_stride == 1) {
      std::memcpy(dst, src, row_len * sizeof(U));
    } else {
      for (int64_t k = 0; k < row_len; ++k) dst[k] = src[k * row_stride];
    }
  });
}

// The inverse of StridedGather: the contiguous elements of `in` (of dims `in_dims`) are written
// to `out` at offsets sum_j i_j * out_strides[j]. The strided positions must be distinct.
template <typename U>
void StridedScatter(KernelContext& ctx, const U* in, std::vector<int64_t> in_dims,
                    std::vector<int64_t> out_strides, U* out) {
  CoalesceStridedDims(&in_dims, &out_strides);
  const int64_t row_len = in_dims.back();
  const int64_t row_stride = out_strides.back();
  ForEachStridedRow(ctx, in_dims, out_strides, [&](int64_t r, int64_t offset) {
    const U* src = in + r * row_len;
    U* dst = out + offset;
    if constexpr (!std::is_trivially_copyable_v<U>) {  // strings
      for (int64_t k = 0; k < row_len; ++k) dst[k * row_stride] = src[k];
    } else if (row_stride == 1) {
      std::memcpy(dst, src, row_len * sizeof(U));
    } else {
      for (int64_t k = 0; k < row_len; ++k) dst[k * row_stride] = src[k];
    }
  });
}

// --- Gradient building blocks -------------------------------------------------------------

// A constant int32 or int64 vector (or, with scalar, the one-element scalar) for gradient graphs.
inline Endpoint IndexConst(GradientContext& ctx, const std::vector<int64_t>& values, DType dtype,
                           bool scalar = false) {
  TensorShape shape = scalar ? TensorShape{} : TensorShape{static_cast<int64_t>(values.size())};
  Tensor t = Tensor::Host(dtype, shape);
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == DType::kInt64) {
      t.data<int64_t>()[i] = values[i];
    } else {
      t.data<int32_t>()[i] = static_cast<int32_t>(values[i]);
    }
  }
  return ctx.Const(t);
}

inline Endpoint IndexScalar(GradientContext& ctx, int64_t value, DType dtype = DType::kInt32) {
  return IndexConst(ctx, {value}, dtype, /*scalar=*/true);
}

// The shape of x as a vector of `dtype`, matching the index type of the op being differentiated.
inline Endpoint ShapeAs(GradientContext& ctx, Endpoint x, DType dtype) {
  AttrMap attrs;
  attrs.Set("out_type", dtype);
  return ctx.Op("Shape", {x}, attrs);
}

// The sum of all elements of x, a scalar.
inline Endpoint SumAll(GradientContext& ctx, Endpoint x) {
  AttrMap attrs;
  attrs.Set("keep_dims", false);
  Endpoint flat = ctx.Op("Reshape", {x, IndexConst(ctx, {-1}, DType::kInt32)});
  return ctx.Op("Sum", {flat, IndexScalar(ctx, 0)}, attrs);
}

}  // namespace array_util
}  // namespace flowstone
