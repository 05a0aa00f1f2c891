// TensorList: the value behind TensorFlow's list ops (TensorListPushBack, ...) and so behind
// tf.TensorArray and the per-iteration values a loop's gradient keeps. It lives in a scalar
// variant tensor (see flowstone/variant.h), shares its element tensors when copied, and is
// changed in place only by the last reader of its value.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "flowstone/kernel.h"
#include "flowstone/shape.h"
#include "flowstone/status.h"
#include "flowstone/tensor.h"
#include "flowstone/variant.h"

namespace flowstone {

class TensorList final : public VariantValue {
 public:
  TensorList(DType element_dtype, PartialShape element_shape, int64_t max_num_elements = -1)
      : element_dtype(element_dtype),
        element_shape(std::move(element_shape)),
        max_num_elements(max_num_elements) {}

  std::string TypeName() const override { return "tensorflow::TensorList"; }
  std::string DebugString() const override;
  std::unique_ptr<VariantValue> Clone() const override {
    return std::make_unique<TensorList>(*this);
  }

  DType element_dtype;
  // What every element's shape must be compatible with; elements may refine it.
  PartialShape element_shape;
  // -1: unbounded (EmptyTensorList's max_num_elements).
  int64_t max_num_elements;
  // An element that was never set is an uninitialized Tensor; reading it gives zeros when its
  // shape is known.
  std::vector<Tensor> tensors;
};

// Reads the TensorList in input `index` of a kernel (a scalar variant), or InvalidArgument naming
// the op.
Status GetInputList(KernelContext& ctx, int index, const TensorList** list);

// Outputs a list at output `output` that the kernel may change: input `input`'s own list when
// this kernel holds its last reference, else a copy (value semantics).
Status ForwardInputList(KernelContext& ctx, int input, int output, TensorList** list);

// Grows or shrinks `list` to `size` elements (new ones unset). A size whose bookkeeping alone
// would pass the device's memory limit is ResourceExhausted, not a crash.
Status ResizeList(KernelContext& ctx, TensorList* list, int64_t size);

// Outputs a new list at output `output`.
Status OutputNewList(KernelContext& ctx, int output, std::unique_ptr<TensorList> list);

// The elementwise sum of TensorLists (AddN over variants, which is how gradients of lists add
// up) and a list of zeros shaped like `list` (ZerosLike of a variant).
Status AddTensorLists(KernelContext& ctx);
Status ZerosLikeTensorList(KernelContext& ctx);

}  // namespace flowstone
