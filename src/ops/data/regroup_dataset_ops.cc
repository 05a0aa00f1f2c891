// Datasets that regroup another dataset's elements: UnbatchDataset (each element's rows),
// WindowDataset (windows of elements, each window a dataset per component, as TF's) and
// IgnoreErrorsDataset (the input without the elements whose computation failed).
#include <deque>

#include "dataset.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"

namespace flowstone::data {
namespace {

// Registers a dataset op of one input dataset and the scalar `inputs` ({name, dtype}) after it.
OpBuilder RegroupDatasetOp(const char* name,
                           const std::vector<std::pair<const char*, const char*>>& inputs = {}) {
  OpBuilder b(name);
  b.Input("input_dataset", "variant");
  for (const auto& [input, dtype] : inputs) b.Input(input, dtype);
  b.Output("handle", "variant")
      .RequiredAttr("output_types", AttrType::kTypeList)
      .RequiredAttr("output_shapes", AttrType::kShapeList)
      .Attr("metadata", "")
      .Stateful()
      .Shape(shape_fns::Scalar)
      .NotDifferentiable();
  return b;
}

// --- UnbatchDataset -------------------------------------------------------------------------

class UnbatchDataset final : public DatasetBase {
 public:
  UnbatchDataset(const Node& node, DatasetPtr input, std::vector<DType> types,
                 std::vector<PartialShape> shapes)
      : DatasetBase("UnbatchDataset", node.name(), std::move(types), std::move(shapes)),
        input_(std::move(input)) {}

  std::unique_ptr<IteratorBase> MakeIterator() const override {
    return std::make_unique<Iterator>(std::static_pointer_cast<const UnbatchDataset>(self()));
  }

  // Known when the input's elements have a static number of rows (batch(n, drop_remainder=True)).
  int64_t Cardinality() const override {
    const int64_t n = input_->Cardinality();
    if (n < 0) return n;
    for (const PartialShape& shape : input_->output_shapes()) {
      if (shape.known_rank() && shape.rank() > 0 && shape.dim(0) >= 0) return n * shape.dim(0);
    }
    return kUnknownCardinality;
  }

 private:
  class Iterator final : public IteratorBase {
   public:
    explicit Iterator(std::shared_ptr<const UnbatchDataset> dataset)
        : dataset_(std::move(dataset)), input_(dataset_->input_->MakeIterator()) {}

    Status GetNext(KernelContext& ctx, Element* out, bool* end) override {
      while (row_ == rows_) {
        FS_RETURN_IF_ERROR(input_->GetNext(ctx, &batch_, end));
        if (*end) return Status::OK();
        FS_RETURN_IF_ERROR(dataset_->Annotate(CountRows()));
      }
      out->resize(batch_.size());
      for (size_t i = 0; i < batch_.size(); ++i) {
        FS_RETURN_IF_ERROR(SliceRow(batch_[i], row_, &(*out)[i]));
      }
      ++row_;
      *end = false;
      return Status::OK();
    }

   private:
    // Every component of a batch must have the same (first) number of rows.
    Status CountRows() {
      row_ = 0;
      rows_ = -1;
      for (const Tensor& t : batch_) {
        if (t.rank() == 0) {
          return errors::InvalidArgument(
              "Unbatching a dataset needs components of rank >= 1, "
              "got a scalar");
        }
        if (rows_ >= 0 && t.dim(0) != rows_) {
          return errors::InvalidArgument(
              "Unbatching a dataset needs all components to have the "
              "same first dimension, got ",
              rows_, " and ", t.dim(0));
        }
        rows_ = t.dim(0);
      }
      if (rows_ < 0) rows_ = 0;
      return Status::OK();
    }

    std::shared_ptr<const UnbatchDataset> dataset_;
    std::unique_ptr<IteratorBase> input_;
    Element batch_;
    int64_t row_ = 0, rows_ = 0;
  };

  DatasetPtr input_;
};

Status UnbatchKernel(KernelContext& ctx) {
  DatasetPtr input;
  FS_RETURN_IF_ERROR(GetInputDataset(ctx, 0, &input));
  std::vector<DType> types;
  std::vector<PartialShape> shapes;
  FS_RETURN_IF_ERROR(ElementSpecAttrs(ctx.node(), &types, &shapes));
  return SetOutputDataset(ctx, std::make_shared<UnbatchDataset>(ctx.node(), input, std::move(types),
                                                                std::move(shapes)));
}

FS_REGISTER_OP(RegroupDatasetOp("UnbatchDataset")
                   .Kernel("CPU", UnbatchKernel)
                   .Doc("The rows (along the first dimension) of each element of the input, "
                        "one element each (Dataset.unbatch)."));

// --- WindowDataset --------------------------------------------------------------------------

// The values of one component of one window, as a dataset (the elements of a window).
class WindowComponentDataset final : public DatasetBase {
 public:
  WindowComponentDataset(const std::string& node, DType dtype, PartialShape shape,
                         std::vector<Tensor> values)
      : DatasetBase("WindowDataset", node, {dtype}, {std::move(shape)}),
        values_(std::move(values)) {}

  std::unique_ptr<IteratorBase> MakeIterator() const override {
    return std::make_unique<Iterator>(
        std::static_pointer_cast<const WindowComponentDataset>(self()));
  }

 private:
  class Iterator final : public IteratorBase {
   public:
    explicit Iterator(std::shared_ptr<const WindowComponentDataset> dataset)
        : dataset_(std::move(dataset)) {}
    Status GetNext(KernelContext&, Element* out, bool* end) override {
      *end = next_ == dataset_->values_.size();
      if (!*end) *out = {dataset_->values_[next_++]};
      return Status::OK();
    }

   private:
    std::shared_ptr<const WindowComponentDataset> dataset_;
    size_t next_ = 0;
  };

  std::vector<Tensor> values_;
};

class WindowDataset final : public DatasetBase {
 public:
  struct Params {
    int64_t size, shift, stride;
    bool drop_remainder;
    std::vector<DType> component_types;  // of the input's elements
    std::vector<PartialShape> component_shapes;
  };

  WindowDataset(const Node& node, DatasetPtr input, Params params)
      : DatasetBase("WindowDataset", node.name(),
                    std::vector<DType>(input->output_types().size(), DType::kVariant),
                    std::vector<PartialShape>(input->output_types().size(), PartialShape({}))),
        input_(std::move(input)),
        params_(std::move(params)) {}

  std::unique_ptr<IteratorBase> MakeIterator() const override {
    return std::make_unique<Iterator>(std::static_pointer_cast<const WindowDataset>(self()));
  }

  int64_t Cardinality() const override {
    const int64_t n = input_->Cardinality();
    if (n < 0) return n;
    const Params& p = params_;
    if (!p.drop_remainder) return n / p.shift + (n % p.shift == 0 ? 0 : 1);
    const int64_t rest = n - ((p.size - 1) * p.stride + 1);
    return rest < 0 ? 0 : rest / p.shift + 1;
  }

 private:
  // Keeps the elements from the start of the next window on; a window takes every stride-th
  // of them, then the start moves `shift` elements on.
  class Iterator final : public IteratorBase {
   public:
    explicit Iterator(std::shared_ptr<const WindowDataset> dataset)
        : dataset_(std::move(dataset)), input_(dataset_->input_->MakeIterator()) {}

    Status GetNext(KernelContext& ctx, Element* out, bool* end) override {
      const Params& p = dataset_->params_;
      const size_t span = static_cast<size_t>((p.size - 1) * p.stride + 1);
      // Elements the previous shift went past that had not been read yet.
      while (to_skip_ > 0 && !input_end_) {
        Element skipped;
        FS_RETURN_IF_ERROR(input_->GetNext(ctx, &skipped, &input_end_));
        if (!input_end_) --to_skip_;
      }
      while (buffer_.size() < span && !input_end_) {
        Element element;
        FS_RETURN_IF_ERROR(input_->GetNext(ctx, &element, &input_end_));
        if (!input_end_) buffer_.push_back(std::move(element));
      }
      std::vector<size_t> taken;
      for (size_t i = 0; i < buffer_.size() && taken.size() < size_t(p.size); i += p.stride) {
        taken.push_back(i);
      }
      if (taken.empty() || (p.drop_remainder && taken.size() < size_t(p.size))) {
        *end = true;
        return Status::OK();
      }
      const size_t components = p.component_types.size();
      out->assign(components, Tensor());
      for (size_t c = 0; c < components; ++c) {
        std::vector<Tensor> values;
        for (size_t i : taken) values.push_back(buffer_[i][c]);
        Tensor* slot = &(*out)[c];
        FS_RETURN_IF_ERROR(AllocateHost(DType::kVariant, TensorShape{}, slot));
        slot->data<Variant>()[0] =
            Variant(std::make_shared<DatasetVariant>(std::make_shared<WindowComponentDataset>(
                dataset_->node(), p.component_types[c], p.component_shapes[c], std::move(values))));
      }
      const size_t drop = std::min(buffer_.size(), static_cast<size_t>(p.shift));
      buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(drop));
      to_skip_ = p.shift - static_cast<int64_t>(drop);
      *end = false;
      return Status::OK();
    }

   private:
    std::shared_ptr<const WindowDataset> dataset_;
    std::unique_ptr<IteratorBase> input_;
    std::deque<Element> buffer_;
    int64_t to_skip_ = 0;
    bool input_end_ = false;
  };

  DatasetPtr input_;
  Params params_;
};

Status WindowKernel(KernelContext& ctx) {
  DatasetPtr input;
  FS_RETURN_IF_ERROR(GetInputDataset(ctx, 0, &input));
  WindowDataset::Params p;
  FS_RETURN_IF_ERROR(ScalarInt64Input(ctx, 1, "size", &p.size));
  FS_RETURN_IF_ERROR(ScalarInt64Input(ctx, 2, "shift", &p.shift));
  FS_RETURN_IF_ERROR(ScalarInt64Input(ctx, 3, "stride", &p.stride));
  FS_RETURN_IF_ERROR(ScalarBoolInput(ctx, 4, "drop_remainder", &p.drop_remainder));
  for (auto [name, value] : {std::pair{"size", p.size}, {"shift", p.shift}, {"stride", p.stride}}) {
    if (value <= 0) {
      return errors::InvalidArgument("Window ", name, " must be greater than zero, but got ", value,
                                     ".");
    }
  }
  p.component_types = input->output_types();
  p.component_shapes = input->output_shapes();
  return SetOutputDataset(ctx, std::make_shared<WindowDataset>(ctx.node(), input, std::move(p)));
}

FS_REGISTER_OP(RegroupDatasetOp("WindowDataset", {{"size", "int64"},
                                                  {"shift", "int64"},
                                                  {"stride", "int64"},
                                                  {"drop_remainder", "bool"}})
                   .Kernel("CPU", WindowKernel)
                   .Doc("Windows of `size` elements taken every `stride`, starting every `shift` "
                        "elements; each window is one dataset per component (Dataset.window)."));

// --- IgnoreErrorsDataset --------------------------------------------------------------------

class IgnoreErrorsDataset final : public DatasetBase {
 public:
  IgnoreErrorsDataset(const Node& node, DatasetPtr input)
      : DatasetBase("IgnoreErrorsDataset", node.name(), input->output_types(),
                    input->output_shapes()),
        input_(std::move(input)) {}

  std::unique_ptr<IteratorBase> MakeIterator() const override {
    return std::make_unique<Iterator>(input_->MakeIterator());
  }

 private:
  class Iterator final : public IteratorBase {
   public:
    explicit Iterator(std::unique_ptr<IteratorBase> input) : input_(std::move(input)) {}
    Status GetNext(KernelContext& ctx, Element* out, bool* end) override {
      while (true) {
        Status s = input_->GetNext(ctx, out, end);
        if (s.ok()) return s;
        // Cancellation ends the run, as every dataset's; other errors drop the element.
        if (s.code() == Code::kCancelled || s.code() == Code::kDeadlineExceeded) return s;
      }
    }

   private:
    std::unique_ptr<IteratorBase> input_;
  };

  DatasetPtr input_;
};

Status IgnoreErrorsKernel(KernelContext& ctx) {
  DatasetPtr input;
  FS_RETURN_IF_ERROR(GetInputDataset(ctx, 0, &input));
  return SetOutputDataset(ctx, std::make_shared<IgnoreErrorsDataset>(ctx.node(), input));
}

FS_REGISTER_OP(RegroupDatasetOp("IgnoreErrorsDataset")
                   .Attr("log_warning", false)
                   .Kernel("CPU", IgnoreErrorsKernel)
                   .Doc("The input without the elements whose computation failed "
                        "(tf.data.experimental.ignore_errors)."));

}  // namespace
}  // namespace flowstone::data
