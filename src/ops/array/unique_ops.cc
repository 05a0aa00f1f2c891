// Set-like ops on vectors: Unique and UniqueWithCounts (tf.unique, tf.unique_with_counts: the
// distinct values in order of first appearance, and where each element went) and ListDiff
// (tf.setdiff1d: the values of x that are not in y). None is differentiable, as in TensorFlow.
#include <cstdint>
#include <limits>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/array_util.h"

namespace flowstone {
namespace {

// The element types the kernels compare (TensorFlow's Unique and ListDiff take no complex
// numbers either).
const std::vector<DType> kUniqueTypes = {DType::kFloat32, DType::kFloat64, DType::kInt32,
                                         DType::kInt64,   DType::kUInt8,   DType::kBool,
                                         DType::kFloat16, DType::kBFloat16};

using array_util::kIndexTypes;

Status CheckVector(const Tensor& t, const char* name) {
  if (t.rank() != 1) {
    return errors::InvalidArgument(name, " must be a vector (1-D), got shape ",
                                   t.shape().ToString());
  }
  return Status::OK();
}

Status UniqueShape(InferenceContext& ctx) {
  PartialShape x;
  FS_RETURN_IF_ERROR(ctx.WithRank(0, 1, &x));
  ctx.set_output(0, PartialShape({-1}));
  ctx.set_output(1, x);
  if (ctx.num_outputs() == 3) ctx.set_output(2, PartialShape({-1}));
  return Status::OK();
}

// Writes an index vector of the output's dtype (int32 or int64).
void SetIndex(Tensor* t, int64_t i, int64_t value) {
  if (t->dtype() == DType::kInt32) {
    t->data<int32_t>()[i] = static_cast<int32_t>(value);
  } else {
    t->data<int64_t>()[i] = value;
  }
}

// Equal values (0.0 and -0.0 alike) share an entry; each NaN is its own value, as in
// TensorFlow.
Status UniqueKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  FS_RETURN_IF_ERROR(CheckVector(x, "x"));
  const int64_t n = x.num_elements();
  if (ctx.output_type(1) == DType::kInt32 && n > std::numeric_limits<int32_t>::max()) {
    return errors::InvalidArgument("x has ", n, " elements, too many for out_idx=int32");
  }
  Tensor* idx;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(1, x.shape(), &idx));
  return DispatchDType<float, double, int32_t, int64_t, uint8_t, bool>(
      x.dtype(), "Unique", [&]<typename T>() -> Status {
        const T* in = x.data<T>();
        std::unordered_map<T, int64_t> first;
        std::vector<int64_t> order;  // position of each distinct value's first appearance
        std::vector<int64_t> count;
        for (int64_t i = 0; i < n; ++i) {
          auto [it, inserted] = first.emplace(in[i], static_cast<int64_t>(order.size()));
          if (inserted) {
            order.push_back(i);
            count.push_back(0);
          }
          ++count[it->second];
          SetIndex(idx, i, it->second);
        }
        const int64_t distinct = static_cast<int64_t>(order.size());
        Tensor* y;
        FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{distinct}, &y));
        for (int64_t j = 0; j < distinct; ++j) y->data<T>()[j] = in[order[j]];
        if (ctx.num_outputs() == 3) {
          Tensor* counts;
          FS_RETURN_IF_ERROR(ctx.AllocateOutput(2, TensorShape{distinct}, &counts));
          for (int64_t j = 0; j < distinct; ++j) SetIndex(counts, j, count[j]);
        }
        return Status::OK();
      });
}

FS_REGISTER_OP(OpBuilder("Unique")
                   .Input("x", "T")
                   .Output("y", "T")
                   .Output("idx", "out_idx")
                   .TypeAttr("T", kUniqueTypes)
                   .TypeAttr("out_idx", kIndexTypes, DType::kInt32)
                   .Shape(UniqueShape)
                   .Kernel("CPU", UniqueKernel)
                   .NotDifferentiable()
                   .Doc("The distinct values of a vector in order of first appearance (y) and, "
                        "for each element, the position of its value in y (idx)."));

FS_REGISTER_OP(OpBuilder("UniqueWithCounts")
                   .Input("x", "T")
                   .Output("y", "T")
                   .Output("idx", "out_idx")
                   .Output("count", "out_idx")
                   .TypeAttr("T", kUniqueTypes)
                   .TypeAttr("out_idx", kIndexTypes, DType::kInt32)
                   .Shape(UniqueShape)
                   .Kernel("CPU", UniqueKernel)
                   .NotDifferentiable()
                   .Doc("Unique, and how often each distinct value occurs (count)."));

// --- ListDiff --------------------------------------------------------------------------------

Status ListDiffShape(InferenceContext& ctx) {
  PartialShape unused;
  FS_RETURN_IF_ERROR(ctx.WithRank(0, 1, &unused));
  FS_RETURN_IF_ERROR(ctx.WithRank(1, 1, &unused));
  ctx.set_output(0, PartialShape({-1}));
  ctx.set_output(1, PartialShape({-1}));
  return Status::OK();
}

Status ListDiffKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& y = ctx.input(1);
  FS_RETURN_IF_ERROR(CheckVector(x, "x"));
  FS_RETURN_IF_ERROR(CheckVector(y, "y"));
  return DispatchDType<float, double, int32_t, int64_t, uint8_t, bool>(
      x.dtype(), "ListDiff", [&]<typename T>() -> Status {
        const T* xs = x.data<T>();
        const std::unordered_set<T> removed(y.data<T>(), y.data<T>() + y.num_elements());
        std::vector<int64_t> kept;
        for (int64_t i = 0; i < x.num_elements(); ++i) {
          if (removed.count(xs[i]) == 0) kept.push_back(i);
        }
        const int64_t n = static_cast<int64_t>(kept.size());
        Tensor* out;
        Tensor* idx;
        FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{n}, &out));
        FS_RETURN_IF_ERROR(ctx.AllocateOutput(1, TensorShape{n}, &idx));
        for (int64_t j = 0; j < n; ++j) {
          out->data<T>()[j] = xs[kept[j]];
          SetIndex(idx, j, kept[j]);
        }
        return Status::OK();
      });
}

FS_REGISTER_OP(OpBuilder("ListDiff")
                   .Input("x", "T")
                   .Input("y", "T")
                   .Output("out", "T")
                   .Output("idx", "out_idx")
                   .TypeAttr("T", kUniqueTypes)
                   .TypeAttr("out_idx", kIndexTypes, DType::kInt32)
                   .Shape(ListDiffShape)
                   .Kernel("CPU", ListDiffKernel)
                   .NotDifferentiable()
                   .Doc("The values of x that are not in y, in x's order (out), and their "
                        "positions in x (idx) (tf.setdiff1d)."));

}  // namespace
}  // namespace flowstone
