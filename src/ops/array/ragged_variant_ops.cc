// A ragged tensor as variants, so that tf.data carries ragged elements as ordinary tensors:
//   - RaggedTensorToVariant: the whole ragged tensor (nested row splits and flat values) as one
//     scalar variant, or with batched_input each of its rows as one element of a vector;
//   - RaggedTensorFromVariant: a tensor of such variants back into one ragged tensor whose first
//     dimensions are the variant tensor's (uniform, as ragged dimensions) and then the rows'.
// Batching a dataset stacks the scalar variants and RaggedTensorFromVariant gives the batch one
// more ragged dimension; unbatching slices the batched_input encoding (python/flowstone/framework/
// type_spec.py, RaggedTensorSpec). TensorFlow's schemas. Not differentiable here (TensorFlow
// differentiates them through RaggedTensorToVariantGradient; see docs/COMPAT.md).
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "flowstone/variant.h"
#include "ops/array_util.h"

namespace flowstone {
namespace {

using array_util::kIndexTypes;
using Splits = std::vector<int64_t>;

// One ragged tensor: its row splits, outermost first, and its flat values. Never changed once
// made, so copies share the tensors.
class RaggedVariant final : public VariantValue {
 public:
  RaggedVariant(std::vector<Tensor> splits, Tensor values)
      : splits_(std::move(splits)), values_(std::move(values)) {}
  std::string TypeName() const override { return "tensorflow::RaggedTensorVariant"; }
  std::string DebugString() const override {
    return StrCat("RaggedTensorVariant(ragged_rank=", splits_.size(),
                  ", values=", values_.shape().ToString(), ")");
  }
  std::unique_ptr<VariantValue> Clone() const override {
    return std::make_unique<RaggedVariant>(*this);
  }
  const std::vector<Tensor>& splits() const { return splits_; }
  const Tensor& values() const { return values_; }
  // The number of rows of the outermost dimension.
  int64_t nrows() const { return splits_.empty() ? values_.dim(0) : splits_[0].dim(0) - 1; }

 private:
  std::vector<Tensor> splits_;
  Tensor values_;
};

// Writes `values` into the int32 or int64 vector `out`.
void WriteInts(const Splits& values, Tensor* out) {
  for (size_t i = 0; i < values.size(); ++i) {
    if (out->dtype() == DType::kInt32) {
      out->data<int32_t>()[i] = static_cast<int32_t>(values[i]);
    } else {
      out->data<int64_t>()[i] = values[i];
    }
  }
}

// An int32 or int64 vector holding `values`.
Tensor IntVector(DType dtype, const Splits& values) {
  Tensor t = Tensor::Host(dtype, TensorShape{static_cast<int64_t>(values.size())});
  WriteInts(values, &t);
  return t;
}

// Rows [begin, end) of `t` along its first dimension, copied.
Tensor SliceRows(const Tensor& t, int64_t begin, int64_t end) {
  Dims dims = t.shape().dims();
  dims[0] = end - begin;
  Tensor out = Tensor::Host(t.dtype(), TensorShape(dims));
  const int64_t row = t.dim(0) == 0 ? 0 : t.num_elements() / t.dim(0);
  CopyElements(t.dtype(),
               static_cast<const char*>(t.raw_data()) +
                   static_cast<size_t>(begin * row) * DTypeSize(t.dtype()),
               out.raw_data(), (end - begin) * row);
  return out;
}

bool SameInnerDims(const Tensor& a, const Tensor& b) {
  if (a.rank() != b.rank()) return false;
  for (int d = 1; d < a.rank(); ++d) {
    if (a.dim(d) != b.dim(d)) return false;
  }
  return true;
}

// The nested splits of inputs [0, levels), each checked to partition the level below it.
Status ReadSplits(KernelContext& ctx, int levels, std::vector<Splits>* out) {
  const Tensor& values = ctx.input(levels);
  out->resize(levels);
  for (int k = 0; k < levels; ++k) {
    const Tensor& t = ctx.input(k);
    if (t.rank() != 1 || t.dim(0) < 1) {
      return errors::InvalidArgument("RaggedTensorToVariant: rt_nested_splits[", k,
                                     "] must be a non-empty vector, got shape ",
                                     t.shape().ToString());
    }
    (*out)[k] = array_util::IntValues(t);
  }
  if (values.rank() < 1) {
    return errors::InvalidArgument(
        "RaggedTensorToVariant: rt_dense_values must have rank >= 1 when RAGGED_RANK > 0, got "
        "shape ",
        values.shape().ToString());
  }
  for (int k = 0; k < levels; ++k) {
    const Splits& s = (*out)[k];
    const int64_t below =
        k + 1 < levels ? static_cast<int64_t>((*out)[k + 1].size()) - 1 : values.dim(0);
    if (s.front() != 0 || s.back() != below || !std::is_sorted(s.begin(), s.end())) {
      return errors::InvalidArgument("RaggedTensorToVariant: rt_nested_splits[", k,
                                     "] must start at 0, not decrease and end at ", below,
                                     " (the size of the next dimension), got [",
                                     array_util::JoinInts(s), "]");
    }
  }
  return Status::OK();
}

Status RaggedTensorToVariantKernel(KernelContext& ctx) {
  const int levels = ctx.num_inputs() - 1;
  const Tensor& values = ctx.input(levels);
  bool batched = false;
  FS_RETURN_IF_ERROR(ctx.attrs().Get("batched_input", &batched));
  Tensor* out;
  if (!batched) {
    if (levels > 0) {
      std::vector<Splits> splits;
      FS_RETURN_IF_ERROR(ReadSplits(ctx, levels, &splits));
    }
    std::vector<Tensor> splits;
    for (int k = 0; k < levels; ++k) splits.push_back(ctx.input(k));
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{}, &out));
    out->data<Variant>()[0] = Variant(std::make_shared<RaggedVariant>(std::move(splits), values));
    return Status::OK();
  }
  if (levels == 0) {
    return errors::InvalidArgument(
        "RaggedTensorToVariant: batched_input needs RAGGED_RANK >= 1 (a ragged tensor whose "
        "rows are encoded one by one), got RAGGED_RANK 0");
  }
  std::vector<Splits> splits;
  FS_RETURN_IF_ERROR(ReadSplits(ctx, levels, &splits));
  const int64_t rows = static_cast<int64_t>(splits[0].size()) - 1;
  const DType splits_dtype = ctx.input(0).dtype();
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{rows}, &out));
  for (int64_t r = 0; r < rows; ++r) {
    // The row's span in each level below, and its splits rebased to start at 0.
    int64_t begin = splits[0][r], end = splits[0][r + 1];
    std::vector<Tensor> row_splits;
    for (int k = 1; k < levels; ++k) {
      Splits part(splits[k].begin() + begin, splits[k].begin() + end + 1);
      for (int64_t& v : part) v -= splits[k][begin];
      row_splits.push_back(IntVector(splits_dtype, part));
      begin = splits[k][begin];
      end = splits[k][end];
    }
    out->data<Variant>()[r] = Variant(
        std::make_shared<RaggedVariant>(std::move(row_splits), SliceRows(values, begin, end)));
  }
  return Status::OK();
}

// Appends the splits `part` (past its leading 0) to `out`, offset by out's last value.
void AppendSplits(const Splits& part, Splits* out) {
  const int64_t offset = out->back();
  for (size_t i = 1; i < part.size(); ++i) out->push_back(part[i] + offset);
}

Status RaggedTensorFromVariantKernel(KernelContext& ctx) {
  const Tensor& encoded = ctx.input(0);
  int64_t input_levels = 0, output_levels = 0;
  FS_RETURN_IF_ERROR(ctx.attrs().Get("input_ragged_rank", &input_levels));
  FS_RETURN_IF_ERROR(ctx.attrs().Get("output_ragged_rank", &output_levels));
  const int outer = encoded.rank();
  if (input_levels == -1) input_levels = output_levels - outer;
  if (input_levels < 0 || input_levels + outer != output_levels) {
    return errors::InvalidArgument("RaggedTensorFromVariant: output_ragged_rank (", output_levels,
                                   ") must be input_ragged_rank (", input_levels,
                                   ") + the rank of encoded_ragged (", outer, ")");
  }
  const DType values_dtype = ctx.output_type(static_cast<int>(output_levels));
  const DType splits_dtype = output_levels > 0 ? ctx.output_type(0) : DType::kInt64;
  const int64_t n = encoded.num_elements();
  std::vector<const RaggedVariant*> parts(n);
  for (int64_t i = 0; i < n; ++i) {
    parts[i] = encoded.data<Variant>()[i].get<RaggedVariant>();
    if (parts[i] == nullptr) {
      return errors::InvalidArgument("RaggedTensorFromVariant: encoded_ragged[", i,
                                     "] is not a ragged tensor (RaggedTensorToVariant's output)");
    }
    const RaggedVariant& p = *parts[i];
    if (static_cast<int64_t>(p.splits().size()) != input_levels) {
      return errors::InvalidArgument("RaggedTensorFromVariant: encoded_ragged[", i, "] has ",
                                     p.splits().size(), " ragged dimensions, expected ",
                                     "input_ragged_rank = ", input_levels);
    }
    if (p.values().dtype() != values_dtype ||
        (input_levels > 0 && p.splits()[0].dtype() != splits_dtype)) {
      return errors::InvalidArgument(
          "RaggedTensorFromVariant: encoded_ragged[", i, "] has values of ",
          DTypeName(p.values().dtype()), " and splits of ",
          input_levels > 0 ? DTypeName(p.splits()[0].dtype()) : "(none)", "; expected ",
          DTypeName(values_dtype), " and ", DTypeName(splits_dtype));
    }
    if (outer > 0 && p.values().rank() < 1) {
      return errors::InvalidArgument("RaggedTensorFromVariant: encoded_ragged[", i,
                                     "] is a scalar; only tensors of rank >= 1 can be rows");
    }
    if (i > 0 && !SameInnerDims(p.values(), parts[0]->values())) {
      return errors::InvalidArgument("RaggedTensorFromVariant: the flat values of encoded_ragged[",
                                     i, "] have shape ", p.values().shape().ToString(),
                                     ", whose inner dimensions differ from ",
                                     "encoded_ragged[0]'s ", parts[0]->values().shape().ToString());
    }
  }
  if (outer == 0) {
    for (int k = 0; k < input_levels; ++k) ctx.SetOutput(k, parts[0]->splits()[k]);
    ctx.SetOutput(static_cast<int>(input_levels), parts[0]->values());
    return Status::OK();
  }
  std::vector<Splits> splits;
  // The variant tensor's own dimensions but its last are uniform ragged dimensions.
  int64_t count = 1;
  for (int d = 0; d + 1 < outer; ++d) {
    Splits level(1, 0);
    for (int64_t i = 0; i < count * encoded.dim(d); ++i)
      level.push_back(level.back() + encoded.dim(d + 1));
    splits.push_back(std::move(level));
    count *= encoded.dim(d);
  }
  // Its last dimension counts each element's rows; the elements' own levels follow, concatenated.
  Splits rows(1, 0);
  for (const RaggedVariant* p : parts) rows.push_back(rows.back() + p->nrows());
  splits.push_back(std::move(rows));
  for (int k = 0; k < input_levels; ++k) {
    Splits level(1, 0);
    for (const RaggedVariant* p : parts)
      AppendSplits(array_util::IntValues(p->splits()[k]), &level);
    splits.push_back(std::move(level));
  }
  for (size_t k = 0; k < splits.size(); ++k) {
    Tensor* out;
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(
        static_cast<int>(k), TensorShape{static_cast<int64_t>(splits[k].size())}, &out));
    WriteInts(splits[k], out);
  }
  Dims dims = n > 0 ? parts[0]->values().shape().dims() : Dims{0};
  int64_t total = 0;
  for (const RaggedVariant* p : parts) total += p->values().dim(0);
  dims[0] = total;
  Tensor* values;
  FS_RETURN_IF_ERROR(
      ctx.AllocateOutput(static_cast<int>(output_levels), TensorShape(dims), &values));
  char* dst = static_cast<char*>(values->raw_data());
  for (const RaggedVariant* p : parts) {
    CopyElements(values_dtype, p->values().raw_data(), dst, p->values().num_elements());
    dst += static_cast<size_t>(p->values().num_elements()) * DTypeSize(values_dtype);
  }
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("RaggedTensorToVariant")
                   .InputList("rt_nested_splits", "Tsplits", "RAGGED_RANK")
                   .Input("rt_dense_values", "Tvalues")
                   .Output("encoded_ragged", "variant")
                   .TypeAttr("Tvalues", kAllTypesAndString)
                   .TypeAttr("Tsplits", kIndexTypes, DType::kInt64)
                   .RequiredAttr("batched_input", AttrType::kBool)
                   .Shape([](InferenceContext& ctx) {
                     bool batched = false;
                     FS_RETURN_IF_ERROR(ctx.attrs().Get("batched_input", &batched));
                     ctx.set_output(
                         0, batched ? PartialShape({-1}) : PartialShape(std::vector<int64_t>{}));
                     return Status::OK();
                   })
                   .Kernel("CPU", RaggedTensorToVariantKernel)
                   .NotDifferentiable()
                   .Doc("A ragged tensor as one scalar variant, or (batched_input) each of its "
                        "rows as one element of a variant vector."));

FS_REGISTER_OP(OpBuilder("RaggedTensorFromVariant")
                   .Input("encoded_ragged", "variant")
                   .OutputList("output_nested_splits", "Tsplits", "output_ragged_rank")
                   .Output("output_dense_values", "Tvalues")
                   .TypeAttr("Tvalues", kAllTypesAndString)
                   .TypeAttr("Tsplits", kIndexTypes, DType::kInt64)
                   .RequiredAttr("input_ragged_rank", AttrType::kInt)
                   .Shape([](InferenceContext& ctx) {
                     for (int i = 0; i + 1 < ctx.num_outputs(); ++i) {
                       ctx.set_output(i, PartialShape({-1}));
                     }
                     ctx.set_output(ctx.num_outputs() - 1, PartialShape::Unknown());
                     return Status::OK();
                   })
                   .Kernel("CPU", RaggedTensorFromVariantKernel)
                   .NotDifferentiable()
                   .Doc("Ragged tensors encoded by RaggedTensorToVariant, one per element of "
                        "encoded_ragged, as one ragged tensor whose first dimensions are "
                        "encoded_ragged's."));

}  // namespace
}  // namespace flowstone
