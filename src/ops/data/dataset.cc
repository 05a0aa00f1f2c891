#include "dataset.h"

#include <algorithm>
#include <thread>

#include "flowstone/shape_inference.h"

namespace flowstone::data {

Status DatasetBase::Annotate(const Status& s) const {
  if (s.ok() || s.code() == Code::kOutOfRange) return s;
  Status out(s.code(), StrCat(s.message(), "\n\t [[in ", op_, " '", node_, "']]"));
  if (const auto* payloads = s.payloads()) {
    for (const auto& [key, value] : *payloads) out.SetPayload(key, value);
  }
  return out;
}

Status GetInputDataset(KernelContext& ctx, int index, DatasetPtr* out) {
  const Tensor& t = ctx.input(index);
  const DatasetVariant* value = nullptr;
  if (t.dtype() == DType::kVariant && t.num_elements() == 1) {
    value = t.data<Variant>()[0].get<DatasetVariant>();
  }
  if (value == nullptr) {
    return errors::InvalidArgument(ctx.node().op_def().name, " (node '", ctx.node().name(),
                                   "'): input ", index,
                                   " must be a dataset (a scalar variant made by a dataset op), "
                                   "got ",
                                   t.DebugString());
  }
  *out = value->dataset();
  return Status::OK();
}

Status SetOutputDataset(KernelContext& ctx, DatasetPtr dataset) {
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{}, &out));
  out->data<Variant>()[0] = Variant(std::make_shared<DatasetVariant>(std::move(dataset)));
  return Status::OK();
}

Status ElementSpecAttrs(const Node& node, std::vector<DType>* types,
                        std::vector<PartialShape>* shapes) {
  FS_RETURN_IF_ERROR(node.attrs().Get("output_types", types));
  FS_RETURN_IF_ERROR(node.attrs().Get("output_shapes", shapes));
  if (types->size() != shapes->size()) {
    return errors::InvalidArgument(node.op_def().name, " (node '", node.name(),
                                   "'): ", types->size(), " output_types but ", shapes->size(),
                                   " output_shapes; give one shape per component");
  }
  return Status::OK();
}

Status ScalarInt64Input(KernelContext& ctx, int index, const char* name, int64_t* out) {
  const Tensor& t = ctx.input(index);
  if (t.num_elements() != 1 || t.rank() != 0) {
    return errors::InvalidArgument(name, " of ", ctx.node().op_def().name, " (node '",
                                   ctx.node().name(), "') must be a scalar, got shape ",
                                   t.shape().ToString());
  }
  *out = t.ElementAsInt64(0);
  return Status::OK();
}

Status ScalarBoolInput(KernelContext& ctx, int index, const char* name, bool* out) {
  int64_t value = 0;
  FS_RETURN_IF_ERROR(ScalarInt64Input(ctx, index, name, &value));
  *out = value != 0;
  return Status::OK();
}

Status ParallelCallsInput(KernelContext& ctx, int index, int64_t* out) {
  FS_RETURN_IF_ERROR(ScalarInt64Input(ctx, index, "num_parallel_calls", out));
  if (*out == -1) {  // AUTOTUNE: one call per core
    *out = std::max<int64_t>(1, std::thread::hardware_concurrency());
  } else if (*out <= 0) {
    return errors::InvalidArgument("num_parallel_calls must be positive or AUTOTUNE (-1), got ",
                                   *out);
  }
  return Status::OK();
}

Status CheckElement(const DatasetBase& dataset, const Element& element) {
  const auto& types = dataset.output_types();
  if (element.size() != types.size()) {
    return errors::InvalidArgument(dataset.op(), " (node '", dataset.node(), "') produced ",
                                   element.size(), " components, but its output_types has ",
                                   types.size());
  }
  for (size_t i = 0; i < types.size(); ++i) {
    if (element[i].dtype() != types[i]) {
      return errors::InvalidArgument(dataset.op(), " (node '", dataset.node(), "'): component ", i,
                                     " has dtype ", DTypeName(element[i].dtype()),
                                     ", but the dataset declares ", DTypeName(types[i]));
    }
    const PartialShape& declared = dataset.output_shapes()[i];
    if (!declared.IsCompatibleWith(element[i].shape())) {
      return errors::InvalidArgument(dataset.op(), " (node '", dataset.node(), "'): component ", i,
                                     " has shape ", element[i].shape().ToString(),
                                     ", which is not compatible with the declared shape ",
                                     declared.ToString());
    }
  }
  return Status::OK();
}

Status AllocateHost(DType dtype, const TensorShape& shape, Tensor* out) {
  Status s = Tensor::Allocate(CpuAllocator(), dtype, shape, out);
  if (!s.ok()) {
    return errors::ResourceExhausted("OOM when allocating a dataset element of shape ",
                                     shape.ToString(), " and type ", DTypeShortName(dtype));
  }
  return Status::OK();
}

Status SliceRow(const Tensor& t, int64_t index, Tensor* out) {
  Dims dims = t.shape().dims();
  dims.erase(0);
  TensorShape row_shape(dims);
  FS_RETURN_IF_ERROR(AllocateHost(t.dtype(), row_shape, out));
  const int64_t row = row_shape.num_elements();
  const char* src = static_cast<const char*>(t.raw_data()) +
                    static_cast<size_t>(index * row) * DTypeSize(t.dtype());
  CopyElements(t.dtype(), src, out->raw_data(), row);
  return Status::OK();
}

Status StackRows(const std::vector<Tensor>& rows, Tensor* out) {
  const Tensor& first = rows.front();
  Dims dims = first.shape().dims();
  dims.insert(0, static_cast<int64_t>(rows.size()));
  FS_RETURN_IF_ERROR(AllocateHost(first.dtype(), TensorShape(dims), out));
  const int64_t row = first.num_elements();
  char* dst = static_cast<char*>(out->raw_data());
  for (const Tensor& r : rows) {
    CopyElements(first.dtype(), r.raw_data(), dst, row);
    dst += static_cast<size_t>(row) * DTypeSize(first.dtype());
  }
  return Status::OK();
}

}  // namespace flowstone::data
