// PaddedBatchDatasetV2: batches of elements whose components may differ in shape, each padded
// with its padding value to padded_shapes (a -1 dimension: the largest in the batch).
#include <algorithm>

#include "dataset.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"

namespace flowstone::data {
namespace {

class PaddedBatchDataset final : public DatasetBase {
 public:
  PaddedBatchDataset(const Node& node, DatasetPtr input, int64_t batch_size, bool drop_remainder,
                     std::vector<std::vector<int64_t>> padded_shapes, Element padding_values,
                     std::vector<PartialShape> shapes)
      : DatasetBase("PaddedBatchDatasetV2", node.name(), input->output_types(), std::move(shapes)),
        input_(std::move(input)),
        batch_size_(batch_size),
        drop_remainder_(drop_remainder),
        padded_shapes_(std::move(padded_shapes)),
        padding_values_(std::move(padding_values)) {}

  std::unique_ptr<IteratorBase> MakeIterator() const override {
    return std::make_unique<Iterator>(std::static_pointer_cast<const PaddedBatchDataset>(self()));
  }
  int64_t Cardinality() const override {
    return BatchedCardinality(input_->Cardinality(), batch_size_, drop_remainder_);
  }

 private:
  class Iterator final : public IteratorBase {
   public:
    explicit Iterator(std::shared_ptr<const PaddedBatchDataset> dataset)
        : dataset_(std::move(dataset)), input_(dataset_->input_->MakeIterator()) {}

    Status GetNext(KernelContext& ctx, Element* out, bool* end) override {
      std::vector<Element> rows;
      while (static_cast<int64_t>(rows.size()) < dataset_->batch_size_) {
        Element row;
        FS_RETURN_IF_ERROR(input_->GetNext(ctx, &row, end));
        if (*end) break;
        rows.push_back(std::move(row));
      }
      const bool partial = static_cast<int64_t>(rows.size()) < dataset_->batch_size_;
      if (rows.empty() || (partial && dataset_->drop_remainder_)) {
        *end = true;
        return Status::OK();
      }
      *end = false;
      out->resize(rows[0].size());
      for (size_t c = 0; c < rows[0].size(); ++c) {
        FS_RETURN_IF_ERROR(dataset_->Annotate(PadComponent(rows, c, &(*out)[c])));
      }
      return Status::OK();
    }

   private:
    Status PadComponent(const std::vector<Element>& rows, size_t c, Tensor* out) const {
      const std::vector<int64_t>& padded = dataset_->padded_shapes_[c];
      const int rank = static_cast<int>(padded.size());
      std::vector<int64_t> dims = padded;
      for (const Element& row : rows) {
        const Tensor& t = row[c];
        if (t.rank() != rank) {
          return errors::InvalidArgument("Component ", c, " has rank ", t.rank(),
                                         ", but its padded shape has rank ", rank);
        }
        for (int d = 0; d < rank; ++d) {
          if (padded[d] >= 0 && t.dim(d) > padded[d]) {
            return errors::InvalidArgument(
                "Attempted to pad to a smaller size than the input element: component ", c,
                " has shape ", t.shape().ToString(), " and the padded shape is ",
                PartialShape(padded).ToString());
          }
          if (padded[d] < 0) dims[d] = std::max(dims[d] < 0 ? 0 : dims[d], t.dim(d));
        }
      }
      std::vector<int64_t> batch_dims = {static_cast<int64_t>(rows.size())};
      batch_dims.insert(batch_dims.end(), dims.begin(), dims.end());
      const DType dtype = rows[0][c].dtype();
      FS_RETURN_IF_ERROR(AllocateHost(dtype, TensorShape(batch_dims), out));
      const Tensor& fill = dataset_->padding_values_[c];
      const size_t width = DTypeSize(dtype);
      char* base = static_cast<char*>(out->raw_data());
      for (int64_t i = 0; i < out->num_elements(); ++i) {
        CopyElements(dtype, fill.raw_data(), base + static_cast<size_t>(i) * width, 1);
      }
      // Each row's elements go to the top-left corner of its padded slot, one innermost run at
      // a time.
      const int64_t slot = TensorShape(dims).num_elements();
      for (size_t r = 0; r < rows.size(); ++r) {
        const Tensor& t = rows[r][c];
        if (t.num_elements() == 0) continue;
        const int64_t run = rank == 0 ? 1 : t.dim(rank - 1);
        std::vector<int64_t> index(std::max(rank - 1, 0), 0);
        for (int64_t start = 0; start < t.num_elements(); start += run) {
          int64_t offset = 0;
          for (int d = 0; d + 1 < rank; ++d) offset = offset * dims[d] + index[d];
          if (rank > 0) offset *= dims[rank - 1];
          CopyElements(dtype, static_cast<const char*>(t.raw_data()) + start * width,
                       base + (static_cast<int64_t>(r) * slot + offset) * width, run);
          for (int d = rank - 2; d >= 0 && ++index[d] == t.dim(d); --d) index[d] = 0;
        }
      }
      return Status::OK();
    }

    std::shared_ptr<const PaddedBatchDataset> dataset_;
    std::unique_ptr<IteratorBase> input_;
  };

  DatasetPtr input_;
  int64_t batch_size_;
  bool drop_remainder_;
  std::vector<std::vector<int64_t>> padded_shapes_;
  Element padding_values_;
};

Status PaddedBatchKernel(KernelContext& ctx) {
  DatasetPtr input;
  FS_RETURN_IF_ERROR(GetInputDataset(ctx, 0, &input));
  int64_t batch_size = 0;
  FS_RETURN_IF_ERROR(ScalarInt64Input(ctx, 1, "batch_size", &batch_size));
  if (batch_size <= 0) return errors::InvalidArgument("Batch size must be greater than zero.");
  const int n = static_cast<int>(input->output_types().size());
  if (ctx.num_inputs() != 3 + 2 * n) {
    return errors::InvalidArgument("PaddedBatchDatasetV2: the input has ", n, " components, but ",
                                   (ctx.num_inputs() - 3) / 2,
                                   " padded shapes and padding values were given");
  }
  std::vector<std::vector<int64_t>> padded_shapes;
  Element padding_values;
  for (int i = 0; i < n; ++i) {
    const Tensor& shape = ctx.input(2 + i);
    std::vector<int64_t> dims;
    for (int64_t k = 0; k < shape.num_elements(); ++k) dims.push_back(shape.ElementAsInt64(k));
    padded_shapes.push_back(std::move(dims));
    const Tensor& value = ctx.input(2 + n + i);
    if (value.num_elements() != 1 || value.dtype() != input->output_types()[i]) {
      return errors::InvalidArgument("padding_values[", i,
                                     "] must be a scalar of the "
                                     "component's dtype ",
                                     DTypeName(input->output_types()[i]), ", got ",
                                     value.DebugString());
    }
    padding_values.push_back(value);
  }
  bool drop_remainder = false;
  FS_RETURN_IF_ERROR(ScalarBoolInput(ctx, 2 + 2 * n, "drop_remainder", &drop_remainder));
  std::vector<PartialShape> shapes;
  FS_RETURN_IF_ERROR(ctx.attrs().Get("output_shapes", &shapes));
  return SetOutputDataset(ctx, std::make_shared<PaddedBatchDataset>(
                                   ctx.node(), input, batch_size, drop_remainder,
                                   std::move(padded_shapes), std::move(padding_values), shapes));
}

FS_REGISTER_OP(OpBuilder("PaddedBatchDatasetV2")
                   .Input("input_dataset", "variant")
                   .Input("batch_size", "int64")
                   .InputList("padded_shapes", "int64", "N")
                   .InputTypeList("padding_values", "Toutput_types")
                   .Input("drop_remainder", "bool")
                   .Output("handle", "variant")
                   .Attr("parallel_copy", false)
                   .RequiredAttr("output_shapes", AttrType::kShapeList)
                   .Attr("metadata", "")
                   .Stateful()
                   .Shape(shape_fns::Scalar)
                   .Kernel("CPU", PaddedBatchKernel)
                   .NotDifferentiable()
                   .Doc("Batches of elements padded to padded_shapes with padding_values "
                        "(Dataset.padded_batch)."));

}  // namespace
}  // namespace flowstone::data
