#include "ops/data_structures/tensor_list.h"

#include <cstring>
#include <new>

namespace flowstone {

std::string TensorList::DebugString() const {
  return StrCat("TensorList<", DTypeName(element_dtype),
                ", element_shape=", element_shape.ToString(), ", size=", tensors.size(), ">");
}

Status GetInputList(KernelContext& ctx, int index, const TensorList** list) {
  const Tensor& handle = ctx.input(index);
  const TensorList* found = nullptr;
  if (handle.dtype() == DType::kVariant && handle.num_elements() == 1) {
    found = handle.data<Variant>()[0].get<TensorList>();
  }
  if (found == nullptr) {
    return errors::InvalidArgument(ctx.node().type(), " expected input ", index,
                                   " to be a scalar variant holding a TensorList, but got ",
                                   handle.DebugString(),
                                   ". Pass the handle made by a TensorList op (EmptyTensorList, "
                                   "TensorListReserve, TensorListFromTensor, ...).");
  }
  *list = found;
  return Status::OK();
}

Status ForwardInputList(KernelContext& ctx, int input, int output, TensorList** list) {
  const TensorList* in = nullptr;
  FS_RETURN_IF_ERROR(GetInputList(ctx, input, &in));
  Tensor* out = nullptr;
  FS_RETURN_IF_ERROR(ctx.ForwardOrAllocateOutput(input, output, TensorShape{}, &out));
  Variant& slot = out->data<Variant>()[0];
  // A forwarded input already holds the list; a fresh output shares it until GetMutable copies.
  if (slot.empty()) slot = ctx.input(input).data<Variant>()[0];
  *list = slot.GetMutable<TensorList>();
  return Status::OK();
}

Status ResizeList(KernelContext& ctx, TensorList* list, int64_t size) {
  const int64_t limit = ctx.device()->allocator()->limit();
  if (size < 0 || (limit > 0 && size > limit / static_cast<int64_t>(sizeof(Tensor)))) {
    return errors::ResourceExhausted(ctx.node().type(), ": a list of ", size,
                                     " elements does not fit in the memory limit of ", limit,
                                     " bytes on ", ctx.device()->name());
  }
  try {
    list->tensors.resize(static_cast<size_t>(size));
  } catch (const std::bad_alloc&) {
    return errors::ResourceExhausted(ctx.node().type(), ": out of memory growing a list to ", size,
                                     " elements");
  }
  return Status::OK();
}

Status OutputNewList(KernelContext& ctx, int output, std::unique_ptr<TensorList> list) {
  Tensor* out = nullptr;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(output, TensorShape{}, &out));
  out->data<Variant>()[0] = Variant(std::shared_ptr<VariantValue>(std::move(list)));
  return Status::OK();
}

namespace {

// a += b, elementwise, for the numeric dtypes gradients have.
Status AddInto(KernelContext& ctx, const Tensor& a, const Tensor& b, Tensor* sum) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) {
    return errors::InvalidArgument(
        "Trying to add two lists of tensors with incompatible element dtypes or shapes: ",
        a.DebugString(), " and ", b.DebugString());
  }
  FS_RETURN_IF_ERROR(ctx.AllocateTemp(a.dtype(), a.shape(), sum));
  return DispatchDType<float, double, int32_t, int64_t>(
      a.dtype(), "AddN", [&]<typename T>() -> Status {
        const T* x = a.data<T>();
        const T* y = b.data<T>();
        T* out = sum->data<T>();
        for (int64_t i = 0; i < a.num_elements(); ++i) out[i] = x[i] + y[i];
        return Status::OK();
      });
}

}  // namespace

Status AddTensorLists(KernelContext& ctx) {
  const TensorList* first = nullptr;
  FS_RETURN_IF_ERROR(GetInputList(ctx, 0, &first));
  auto sum = std::make_unique<TensorList>(*first);
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    const TensorList* next = nullptr;
    FS_RETURN_IF_ERROR(GetInputList(ctx, i, &next));
    if (next->element_dtype != sum->element_dtype || next->tensors.size() != sum->tensors.size()) {
      return errors::InvalidArgument(
          "Trying to add two lists of tensors with different dtypes or lengths: ",
          sum->DebugString(), " and ", next->DebugString());
    }
    for (size_t k = 0; k < next->tensors.size(); ++k) {
      const Tensor& b = next->tensors[k];
      Tensor& a = sum->tensors[k];
      // An element never set is zero.
      if (!b.initialized()) continue;
      if (!a.initialized()) {
        a = b;
        continue;
      }
      Tensor total;
      FS_RETURN_IF_ERROR(AddInto(ctx, a, b, &total));
      a = std::move(total);
    }
  }
  return OutputNewList(ctx, 0, std::move(sum));
}

Status ZerosLikeTensorList(KernelContext& ctx) {
  const TensorList* like = nullptr;
  FS_RETURN_IF_ERROR(GetInputList(ctx, 0, &like));
  auto zeros = std::make_unique<TensorList>(like->element_dtype, like->element_shape,
                                            like->max_num_elements);
  zeros->tensors.resize(like->tensors.size());
  for (size_t k = 0; k < like->tensors.size(); ++k) {
    const Tensor& element = like->tensors[k];
    if (!element.initialized()) continue;
    FS_RETURN_IF_ERROR(ctx.AllocateTemp(element.dtype(), element.shape(), &zeros->tensors[k]));
    // Variants are allocated empty; other dtypes are zero in all-zero bytes.
    if (element.dtype() != DType::kVariant) {
      std::memset(zeros->tensors[k].raw_data(), 0, zeros->tensors[k].bytes());
    }
  }
  return OutputNewList(ctx, 0, std::move(zeros));
}

}  // namespace flowstone
