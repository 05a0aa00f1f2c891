// Datasets made from tensors: TensorDataset (one element), TensorSliceDataset (the rows of its
// components), RangeDataset (int64 start, stop, step) and RandomDataset (endless random int64s).
#include <random>

#include "dataset.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"

namespace flowstone::data {
namespace {

std::vector<Tensor> Inputs(KernelContext& ctx) {
  std::vector<Tensor> out;
  for (int i = 0; i < ctx.num_inputs(); ++i) out.push_back(ctx.input(i));
  return out;
}

// --- TensorDataset --------------------------------------------------------------------------

class TensorDataset final : public DatasetBase {
 public:
  TensorDataset(const Node& node, Element element, std::vector<PartialShape> shapes)
      : DatasetBase("TensorDataset", node.name(), TypesOf(element), std::move(shapes)),
        element_(std::move(element)) {}

  static std::vector<DType> TypesOf(const Element& element) {
    std::vector<DType> types;
    for (const Tensor& t : element) types.push_back(t.dtype());
    return types;
  }

  std::unique_ptr<IteratorBase> MakeIterator() const override {
    return std::make_unique<Iterator>(std::static_pointer_cast<const TensorDataset>(self()));
  }
  int64_t Cardinality() const override { return 1; }

 private:
  class Iterator final : public IteratorBase {
   public:
    explicit Iterator(std::shared_ptr<const TensorDataset> dataset)
        : dataset_(std::move(dataset)) {}
    Status GetNext(KernelContext&, Element* out, bool* end) override {
      *end = done_;
      if (!done_) *out = dataset_->element_;
      done_ = true;
      return Status::OK();
    }

   private:
    std::shared_ptr<const TensorDataset> dataset_;
    bool done_ = false;
  };

  Element element_;
};

Status TensorDatasetKernel(KernelContext& ctx) {
  std::vector<PartialShape> shapes;
  FS_RETURN_IF_ERROR(ctx.attrs().Get("output_shapes", &shapes));
  Element element = Inputs(ctx);
  if (shapes.size() != element.size()) {
    return errors::InvalidArgument("TensorDataset (node '", ctx.node().name(), "') has ",
                                   element.size(), " components but ", shapes.size(),
                                   " output_shapes");
  }
  return SetOutputDataset(ctx,
                          std::make_shared<TensorDataset>(ctx.node(), std::move(element), shapes));
}

FS_REGISTER_OP(OpBuilder("TensorDataset")
                   .InputTypeList("components", "Toutput_types")
                   .Output("handle", "variant")
                   .RequiredAttr("output_shapes", AttrType::kShapeList)
                   .Attr("metadata", "")
                   .Stateful()
                   .Shape(shape_fns::Scalar)
                   .Kernel("CPU", TensorDatasetKernel)
                   .NotDifferentiable()
                   .Doc("A dataset of one element: its inputs (Dataset.from_tensors)."));

// --- TensorSliceDataset ---------------------------------------------------------------------

class TensorSliceDataset final : public DatasetBase {
 public:
  TensorSliceDataset(const Node& node, Element components, std::vector<DType> types,
                     std::vector<PartialShape> shapes)
      : DatasetBase("TensorSliceDataset", node.name(), std::move(types), std::move(shapes)),
        components_(std::move(components)) {}

  std::unique_ptr<IteratorBase> MakeIterator() const override {
    return std::make_unique<Iterator>(std::static_pointer_cast<const TensorSliceDataset>(self()));
  }
  int64_t Cardinality() const override { return components_.front().dim(0); }

 private:
  class Iterator final : public IteratorBase {
   public:
    explicit Iterator(std::shared_ptr<const TensorSliceDataset> dataset)
        : dataset_(std::move(dataset)) {}
    Status GetNext(KernelContext&, Element* out, bool* end) override {
      const Element& components = dataset_->components_;
      *end = next_ >= components.front().dim(0);
      if (*end) return Status::OK();
      out->resize(components.size());
      for (size_t i = 0; i < components.size(); ++i) {
        FS_RETURN_IF_ERROR(SliceRow(components[i], next_, &(*out)[i]));
      }
      ++next_;
      return Status::OK();
    }

   private:
    std::shared_ptr<const TensorSliceDataset> dataset_;
    int64_t next_ = 0;
  };

  Element components_;
};

Status TensorSliceDatasetKernel(KernelContext& ctx) {
  std::vector<PartialShape> shapes;
  FS_RETURN_IF_ERROR(ctx.attrs().Get("output_shapes", &shapes));
  Element components = Inputs(ctx);
  if (components.empty()) {
    return errors::InvalidArgument("TensorSliceDataset (node '", ctx.node().name(),
                                   "') needs at least one component");
  }
  std::vector<DType> types;
  for (size_t i = 0; i < components.size(); ++i) {
    const Tensor& t = components[i];
    if (t.rank() == 0) {
      return errors::InvalidArgument("TensorSliceDataset (node '", ctx.node().name(),
                                     "'): component ", i,
                                     " is a scalar; slicing needs at least one dimension");
    }
    if (t.dim(0) != components[0].dim(0)) {
      return errors::InvalidArgument(
          "TensorSliceDataset (node '", ctx.node().name(),
          "'): all components must have the same size in the 0th dimension, but component 0 "
          "has ",
          components[0].dim(0), " and component ", i, " has ", t.dim(0));
    }
    types.push_back(t.dtype());
  }
  return SetOutputDataset(ctx, std::make_shared<TensorSliceDataset>(
                                   ctx.node(), std::move(components), std::move(types), shapes));
}

FS_REGISTER_OP(OpBuilder("TensorSliceDataset")
                   .InputTypeList("components", "Toutput_types")
                   .Output("handle", "variant")
                   .RequiredAttr("output_shapes", AttrType::kShapeList)
                   .Attr("is_files", false)
                   .Attr("metadata", "")
                   .Stateful()
                   .Shape(shape_fns::Scalar)
                   .Kernel("CPU", TensorSliceDatasetKernel)
                   .NotDifferentiable()
                   .Doc("A dataset of the rows (slices along dimension 0) of its inputs "
                        "(Dataset.from_tensor_slices)."));

// --- RangeDataset ---------------------------------------------------------------------------

class RangeDataset final : public DatasetBase {
 public:
  RangeDataset(const Node& node, int64_t start, int64_t stop, int64_t step, DType dtype)
      : DatasetBase("RangeDataset", node.name(), {dtype}, {PartialShape(Dims{})}),
        start_(start),
        stop_(stop),
        step_(step) {}

  std::unique_ptr<IteratorBase> MakeIterator() const override {
    return std::make_unique<Iterator>(std::static_pointer_cast<const RangeDataset>(self()));
  }
  int64_t Cardinality() const override {
    // In unsigned arithmetic: stop - start may not fit an int64.
    if (step_ > 0 ? start_ >= stop_ : start_ <= stop_) return 0;
    const uint64_t distance = step_ > 0
                                  ? static_cast<uint64_t>(stop_) - static_cast<uint64_t>(start_)
                                  : static_cast<uint64_t>(start_) - static_cast<uint64_t>(stop_);
    const uint64_t stride =
        step_ > 0 ? static_cast<uint64_t>(step_) : 0 - static_cast<uint64_t>(step_);
    return static_cast<int64_t>((distance - 1) / stride + 1);
  }

 private:
  class Iterator final : public IteratorBase {
   public:
    explicit Iterator(std::shared_ptr<const RangeDataset> dataset)
        : dataset_(std::move(dataset)), next_(dataset_->start_) {}
    Status GetNext(KernelContext&, Element* out, bool* end) override {
      const int64_t step = dataset_->step_;
      *end = step > 0 ? next_ >= dataset_->stop_ : next_ <= dataset_->stop_;
      if (*end) return Status::OK();
      Tensor value;
      const DType dtype = dataset_->output_types()[0];
      FS_RETURN_IF_ERROR(AllocateHost(dtype, TensorShape{}, &value));
      if (dtype == DType::kInt32) {
        *value.data<int32_t>() = static_cast<int32_t>(next_);
      } else {
        *value.data<int64_t>() = next_;
      }
      *out = {value};
      // Stops instead of overflowing past the end of int64.
      if (__builtin_add_overflow(next_, step, &next_)) next_ = dataset_->stop_;
      return Status::OK();
    }

   private:
    std::shared_ptr<const RangeDataset> dataset_;
    int64_t next_;
  };

  int64_t start_, stop_, step_;
};

Status RangeDatasetKernel(KernelContext& ctx) {
  int64_t start = 0, stop = 0, step = 0;
  FS_RETURN_IF_ERROR(ScalarInt64Input(ctx, 0, "start", &start));
  FS_RETURN_IF_ERROR(ScalarInt64Input(ctx, 1, "stop", &stop));
  FS_RETURN_IF_ERROR(ScalarInt64Input(ctx, 2, "step", &step));
  if (step == 0) return errors::InvalidArgument("step must be a non-zero integer.");
  std::vector<DType> types;
  std::vector<PartialShape> shapes;
  FS_RETURN_IF_ERROR(ElementSpecAttrs(ctx.node(), &types, &shapes));
  if (types.size() != 1 || (types[0] != DType::kInt64 && types[0] != DType::kInt32)) {
    return errors::InvalidArgument("RangeDataset (node '", ctx.node().name(),
                                   "') produces one int64 or int32 component");
  }
  return SetOutputDataset(ctx,
                          std::make_shared<RangeDataset>(ctx.node(), start, stop, step, types[0]));
}

FS_REGISTER_OP(OpBuilder("RangeDataset")
                   .Input("start", "int64")
                   .Input("stop", "int64")
                   .Input("step", "int64")
                   .Output("handle", "variant")
                   .RequiredAttr("output_types", AttrType::kTypeList)
                   .RequiredAttr("output_shapes", AttrType::kShapeList)
                   .Attr("metadata", "")
                   .Stateful()
                   .Shape(shape_fns::Scalar)
                   .Kernel("CPU", RangeDatasetKernel)
                   .NotDifferentiable()
                   .Doc("The integers start, start + step, ... up to (not including) stop "
                        "(Dataset.range)."));

// --- RandomDataset --------------------------------------------------------------------------

class RandomDataset final : public DatasetBase {
 public:
  RandomDataset(const Node& node, uint64_t seed)
      : DatasetBase("RandomDataset", node.name(), {DType::kInt64}, {PartialShape(Dims{})}),
        seed_(seed) {}

  std::unique_ptr<IteratorBase> MakeIterator() const override {
    return std::make_unique<Iterator>(seed_);
  }
  int64_t Cardinality() const override { return kInfiniteCardinality; }

 private:
  // Every iterator of one dataset draws the same sequence (a seeded pipeline repeats).
  class Iterator final : public IteratorBase {
   public:
    explicit Iterator(uint64_t seed) : random_(seed) {}
    Status GetNext(KernelContext&, Element* out, bool* end) override {
      Tensor value;
      FS_RETURN_IF_ERROR(AllocateHost(DType::kInt64, TensorShape{}, &value));
      *value.data<int64_t>() = static_cast<int64_t>(random_());
      *out = {value};
      *end = false;
      return Status::OK();
    }

   private:
    std::mt19937_64 random_;
  };

  uint64_t seed_;
};

Status RandomDatasetKernel(KernelContext& ctx) {
  int64_t seed = 0, seed2 = 0;
  FS_RETURN_IF_ERROR(ScalarInt64Input(ctx, 0, "seed", &seed));
  FS_RETURN_IF_ERROR(ScalarInt64Input(ctx, 1, "seed2", &seed2));
  // No seed at all: a fresh random one, as TF does.
  uint64_t mixed = static_cast<uint64_t>(seed) * 0x100000001b3ull ^ static_cast<uint64_t>(seed2);
  if (seed == 0 && seed2 == 0) mixed = std::random_device()();
  return SetOutputDataset(ctx, std::make_shared<RandomDataset>(ctx.node(), mixed));
}

FS_REGISTER_OP(OpBuilder("RandomDataset")
                   .Input("seed", "int64")
                   .Input("seed2", "int64")
                   .Output("handle", "variant")
                   .RequiredAttr("output_types", AttrType::kTypeList)
                   .RequiredAttr("output_shapes", AttrType::kShapeList)
                   .Attr("metadata", "")
                   .Stateful()
                   .Shape(shape_fns::Scalar)
                   .Kernel("CPU", RandomDatasetKernel)
                   .NotDifferentiable()
                   .Doc("Endless pseudo-random int64 values drawn from seed and seed2 "
                        "(Dataset.random)."));

}  // namespace
}  // namespace flowstone::data
