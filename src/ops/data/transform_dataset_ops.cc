// Datasets that rearrange another dataset's elements without user functions: RepeatDataset,
// TakeDataset, SkipDataset, ShardDataset, BatchDatasetV2, ShuffleDataset, ZipDataset and
// ConcatenateDataset. (PrefetchDataset, which runs a thread, has its own file.)
#include <algorithm>
#include <atomic>
#include <random>

#include "dataset.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "map_dataset.h"

namespace flowstone::data {
namespace {

// A dataset over one input dataset; `Self` is the derived class, whose iterator is
// `Self::Iterator`, constructed from the dataset.
template <typename Self>
class UnaryDataset : public DatasetBase {
 public:
  UnaryDataset(const char* op, const Node& node, DatasetPtr input)
      : DatasetBase(op, node.name(), input->output_types(), input->output_shapes()),
        input_(std::move(input)) {}
  UnaryDataset(const char* op, const Node& node, DatasetPtr input, std::vector<DType> types,
               std::vector<PartialShape> shapes)
      : DatasetBase(op, node.name(), std::move(types), std::move(shapes)),
        input_(std::move(input)) {}

  std::unique_ptr<IteratorBase> MakeIterator() const override {
    return std::make_unique<typename Self::Iterator>(std::static_pointer_cast<const Self>(self()));
  }
  const DatasetPtr& input() const { return input_; }

 private:
  DatasetPtr input_;
};

// An iterator over a UnaryDataset, holding the input's iterator.
template <typename D>
class UnaryIterator : public IteratorBase {
 public:
  explicit UnaryIterator(std::shared_ptr<const D> dataset)
      : dataset_(std::move(dataset)), input_(dataset_->input()->MakeIterator()) {}

 protected:
  std::shared_ptr<const D> dataset_;
  std::unique_ptr<IteratorBase> input_;
};

// Registers a dataset op of one input dataset and some int64/bool scalar inputs.
OpBuilder UnaryDatasetOp(const char* name, const std::vector<const char*>& int64_inputs) {
  OpBuilder b(name);
  b.Input("input_dataset", "variant");
  for (const char* input : int64_inputs) b.Input(input, "int64");
  b.Output("handle", "variant")
      .RequiredAttr("output_types", AttrType::kTypeList)
      .RequiredAttr("output_shapes", AttrType::kShapeList)
      .Attr("metadata", "")
      .Stateful()
      .Shape(shape_fns::Scalar)
      .NotDifferentiable();
  return b;
}

// --- RepeatDataset --------------------------------------------------------------------------

class RepeatDataset final : public UnaryDataset<RepeatDataset> {
 public:
  RepeatDataset(const Node& node, DatasetPtr input, int64_t count)
      : UnaryDataset("RepeatDataset", node, std::move(input)), count_(count) {}

  int64_t Cardinality() const override {
    const int64_t n = input()->Cardinality();
    if (count_ < 0) return n == 0 ? 0 : kInfiniteCardinality;
    if (count_ == 0) return 0;
    if (n < 0) return n;
    return count_ * n;
  }

  class Iterator final : public UnaryIterator<RepeatDataset> {
   public:
    using UnaryIterator::UnaryIterator;
    Status GetNext(KernelContext& ctx, Element* out, bool* end) override {
      const int64_t count = dataset_->count_;
      while (count < 0 || epoch_ < count) {
        FS_RETURN_IF_ERROR(input_->GetNext(ctx, out, end));
        if (!*end) {
          produced_in_epoch_ = true;
          return Status::OK();
        }
        // An empty input repeated forever is still empty (TF ends it the same way).
        if (!produced_in_epoch_) break;
        ++epoch_;
        produced_in_epoch_ = false;
        input_ = dataset_->input()->MakeIterator();
      }
      *end = true;
      return Status::OK();
    }

   private:
    int64_t epoch_ = 0;
    bool produced_in_epoch_ = false;
  };

 private:
  int64_t count_;
};

Status RepeatKernel(KernelContext& ctx) {
  DatasetPtr input;
  FS_RETURN_IF_ERROR(GetInputDataset(ctx, 0, &input));
  int64_t count = 0;
  FS_RETURN_IF_ERROR(ScalarInt64Input(ctx, 1, "count", &count));
  return SetOutputDataset(ctx, std::make_shared<RepeatDataset>(ctx.node(), input, count));
}

FS_REGISTER_OP(UnaryDatasetOp("RepeatDataset", {"count"})
                   .Kernel("CPU", RepeatKernel)
                   .Doc("The input `count` times over (forever when count is -1)."));

// --- TakeDataset, SkipDataset ---------------------------------------------------------------

class TakeDataset final : public UnaryDataset<TakeDataset> {
 public:
  TakeDataset(const Node& node, DatasetPtr input, int64_t count)
      : UnaryDataset("TakeDataset", node, std::move(input)), count_(count) {}

  int64_t Cardinality() const override {
    const int64_t n = input()->Cardinality();
    if (n == kUnknownCardinality) return n;
    if (count_ < 0) return n;
    if (n == kInfiniteCardinality) return count_;
    return std::min(n, count_);
  }

  class Iterator final : public UnaryIterator<TakeDataset> {
   public:
    using UnaryIterator::UnaryIterator;
    Status GetNext(KernelContext& ctx, Element* out, bool* end) override {
      if (dataset_->count_ >= 0 && taken_ >= dataset_->count_) {
        *end = true;
        return Status::OK();
      }
      FS_RETURN_IF_ERROR(input_->GetNext(ctx, out, end));
      if (!*end) ++taken_;
      return Status::OK();
    }

   private:
    int64_t taken_ = 0;
  };

 private:
  int64_t count_;
};

class SkipDataset final : public UnaryDataset<SkipDataset> {
 public:
  SkipDataset(const Node& node, DatasetPtr input, int64_t count)
      : UnaryDataset("SkipDataset", node, std::move(input)), count_(count) {}

  int64_t Cardinality() const override {
    const int64_t n = input()->Cardinality();
    if (n < 0) return n;
    return count_ < 0 ? 0 : std::max<int64_t>(0, n - count_);
  }

  class Iterator final : public UnaryIterator<SkipDataset> {
   public:
    using UnaryIterator::UnaryIterator;
    Status GetNext(KernelContext& ctx, Element* out, bool* end) override {
      // count -1 skips everything.
      while (dataset_->count_ < 0 || skipped_ < dataset_->count_) {
        FS_RETURN_IF_ERROR(input_->GetNext(ctx, out, end));
        if (*end) return Status::OK();
        ++skipped_;
      }
      return input_->GetNext(ctx, out, end);
    }

   private:
    int64_t skipped_ = 0;
  };

 private:
  int64_t count_;
};

template <typename D>
Status CountKernel(KernelContext& ctx) {
  DatasetPtr input;
  FS_RETURN_IF_ERROR(GetInputDataset(ctx, 0, &input));
  int64_t count = 0;
  FS_RETURN_IF_ERROR(ScalarInt64Input(ctx, 1, "count", &count));
  return SetOutputDataset(ctx, std::make_shared<D>(ctx.node(), input, count));
}

FS_REGISTER_OP(UnaryDatasetOp("TakeDataset", {"count"})
                   .Kernel("CPU", CountKernel<TakeDataset>)
                   .Doc("The first `count` elements of the input (all when count is -1)."));
FS_REGISTER_OP(UnaryDatasetOp("SkipDataset", {"count"})
                   .Kernel("CPU", CountKernel<SkipDataset>)
                   .Doc("The input without its first `count` elements (none when -1)."));

// --- ShardDataset ---------------------------------------------------------------------------

class ShardDataset final : public UnaryDataset<ShardDataset> {
 public:
  ShardDataset(const Node& node, DatasetPtr input, int64_t num_shards, int64_t index)
      : UnaryDataset("ShardDataset", node, std::move(input)),
        num_shards_(num_shards),
        index_(index) {}

  int64_t Cardinality() const override {
    const int64_t n = input()->Cardinality();
    if (n < 0) return n;
    return n / num_shards_ + (index_ < n % num_shards_ ? 1 : 0);
  }

  class Iterator final : public UnaryIterator<ShardDataset> {
   public:
    using UnaryIterator::UnaryIterator;
    Status GetNext(KernelContext& ctx, Element* out, bool* end) override {
      while (true) {
        FS_RETURN_IF_ERROR(input_->GetNext(ctx, out, end));
        if (*end) return Status::OK();
        if (position_++ % dataset_->num_shards_ == dataset_->index_) return Status::OK();
      }
    }

   private:
    int64_t position_ = 0;
  };

 private:
  int64_t num_shards_, index_;
};

Status ShardKernel(KernelContext& ctx) {
  DatasetPtr input;
  FS_RETURN_IF_ERROR(GetInputDataset(ctx, 0, &input));
  int64_t num_shards = 0, index = 0;
  FS_RETURN_IF_ERROR(ScalarInt64Input(ctx, 1, "num_shards", &num_shards));
  FS_RETURN_IF_ERROR(ScalarInt64Input(ctx, 2, "index", &index));
  if (num_shards <= 0) {
    return errors::InvalidArgument("Number of shards must be greater than zero (currently ",
                                   "num_shards = ", num_shards, ").");
  }
  if (index < 0 || index >= num_shards) {
    return errors::InvalidArgument("Index must be between 0 and ", num_shards - 1,
                                   " (currently index = ", index, ").");
  }
  return SetOutputDataset(ctx,
                          std::make_shared<ShardDataset>(ctx.node(), input, num_shards, index));
}

FS_REGISTER_OP(UnaryDatasetOp("ShardDataset", {"num_shards", "index"})
                   .Attr("require_non_empty", false)
                   .Kernel("CPU", ShardKernel)
                   .Doc("Every num_shards-th element of the input, starting at `index`."));

// --- BatchDatasetV2 -------------------------------------------------------------------------

class BatchDataset final : public UnaryDataset<BatchDataset> {
 public:
  BatchDataset(const Node& node, DatasetPtr input, int64_t batch_size, bool drop_remainder,
               std::vector<PartialShape> shapes)
      : UnaryDataset("BatchDatasetV2", node, input, input->output_types(), std::move(shapes)),
        batch_size_(batch_size),
        drop_remainder_(drop_remainder) {}

  int64_t Cardinality() const override {
    return BatchedCardinality(input()->Cardinality(), batch_size_, drop_remainder_);
  }

  // Over a parallel map, the map's calls fill the batch directly (map_dataset.h), as TF's
  // default map_and_batch_fusion makes them.
  std::unique_ptr<IteratorBase> MakeIterator() const override {
    if (auto fused = MakeMapAndBatchIterator(input(), self(), batch_size_, drop_remainder_)) {
      return fused;
    }
    return UnaryDataset::MakeIterator();
  }

  class Iterator final : public UnaryIterator<BatchDataset> {
   public:
    using UnaryIterator::UnaryIterator;
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
        std::vector<Tensor> component;
        for (size_t r = 0; r < rows.size(); ++r) {
          if (rows[r][c].shape() != rows[0][c].shape()) {
            return dataset_->Annotate(errors::InvalidArgument(
                "Cannot batch tensors with different shapes in component ", c,
                ". First element had shape ", rows[0][c].shape().ToString(), " and element ", r,
                " had shape ", rows[r][c].shape().ToString(),
                ". Use padded_batch, or make the elements one shape."));
          }
          component.push_back(std::move(rows[r][c]));
        }
        FS_RETURN_IF_ERROR(StackRows(component, &(*out)[c]));
      }
      return Status::OK();
    }
  };

 private:
  int64_t batch_size_;
  bool drop_remainder_;
};

Status BatchKernel(KernelContext& ctx) {
  DatasetPtr input;
  FS_RETURN_IF_ERROR(GetInputDataset(ctx, 0, &input));
  int64_t batch_size = 0;
  bool drop_remainder = false;
  FS_RETURN_IF_ERROR(ScalarInt64Input(ctx, 1, "batch_size", &batch_size));
  FS_RETURN_IF_ERROR(ScalarBoolInput(ctx, 2, "drop_remainder", &drop_remainder));
  if (batch_size <= 0) {
    return errors::InvalidArgument("Batch size must be greater than zero.");
  }
  std::vector<PartialShape> shapes;
  FS_RETURN_IF_ERROR(ctx.attrs().Get("output_shapes", &shapes));
  return SetOutputDataset(
      ctx, std::make_shared<BatchDataset>(ctx.node(), input, batch_size, drop_remainder, shapes));
}

FS_REGISTER_OP(OpBuilder("BatchDatasetV2")
                   .Input("input_dataset", "variant")
                   .Input("batch_size", "int64")
                   .Input("drop_remainder", "bool")
                   .Output("handle", "variant")
                   .Attr("parallel_copy", false)
                   .RequiredAttr("output_types", AttrType::kTypeList)
                   .RequiredAttr("output_shapes", AttrType::kShapeList)
                   .Attr("metadata", "")
                   .Stateful()
                   .Shape(shape_fns::Scalar)
                   .Kernel("CPU", BatchKernel)
                   .NotDifferentiable()
                   .Doc("Consecutive elements stacked into batches of batch_size (the last one "
                        "smaller unless drop_remainder)."));

// --- ShuffleDataset -------------------------------------------------------------------------

class ShuffleDataset final : public UnaryDataset<ShuffleDataset> {
 public:
  ShuffleDataset(const Node& node, DatasetPtr input, int64_t buffer_size, uint64_t seed,
                 bool reshuffle)
      : UnaryDataset("ShuffleDataset", node, std::move(input)),
        buffer_size_(buffer_size),
        seed_(seed),
        reshuffle_(reshuffle) {}

  int64_t Cardinality() const override { return input()->Cardinality(); }

  class Iterator final : public UnaryIterator<ShuffleDataset> {
   public:
    explicit Iterator(std::shared_ptr<const ShuffleDataset> dataset)
        : UnaryIterator(dataset), random_(dataset->NextIteratorSeed()) {}

    // Keeps a buffer of up to buffer_size elements and hands out a random one, refilling from
    // the input; memory stays bounded by the buffer whatever the input's length.
    Status GetNext(KernelContext& ctx, Element* out, bool* end) override {
      while (!input_done_ && static_cast<int64_t>(buffer_.size()) < dataset_->buffer_size_) {
        Element element;
        FS_RETURN_IF_ERROR(input_->GetNext(ctx, &element, &input_done_));
        if (!input_done_) buffer_.push_back(std::move(element));
      }
      *end = buffer_.empty();
      if (*end) return Status::OK();
      std::uniform_int_distribution<size_t> pick(0, buffer_.size() - 1);
      const size_t i = pick(random_);
      *out = std::move(buffer_[i]);
      buffer_[i] = std::move(buffer_.back());
      buffer_.pop_back();
      return Status::OK();
    }

   private:
    std::mt19937_64 random_;
    std::vector<Element> buffer_;
    bool input_done_ = false;
  };

 private:
  // Each iterator's seed: the dataset's, advanced per iterator when reshuffling each iteration,
  // so epochs differ yet a seeded pipeline repeats exactly.
  uint64_t NextIteratorSeed() const {
    const uint64_t n = reshuffle_ ? iterators_made_.fetch_add(1) : 0;
    return seed_ + 0x9e3779b97f4a7c15ull * n;
  }

  int64_t buffer_size_;
  uint64_t seed_;
  bool reshuffle_;
  mutable std::atomic<uint64_t> iterators_made_{0};
};

Status ShuffleKernel(KernelContext& ctx) {
  DatasetPtr input;
  FS_RETURN_IF_ERROR(GetInputDataset(ctx, 0, &input));
  int64_t buffer_size = 0, seed = 0, seed2 = 0;
  FS_RETURN_IF_ERROR(ScalarInt64Input(ctx, 1, "buffer_size", &buffer_size));
  FS_RETURN_IF_ERROR(ScalarInt64Input(ctx, 2, "seed", &seed));
  FS_RETURN_IF_ERROR(ScalarInt64Input(ctx, 3, "seed2", &seed2));
  if (buffer_size <= 0) {
    return errors::InvalidArgument("buffer_size must be greater than zero.");
  }
  // No seed at all: a fresh random one, as TF does.
  uint64_t mixed = static_cast<uint64_t>(seed) * 0x100000001b3ull ^ static_cast<uint64_t>(seed2);
  if (seed == 0 && seed2 == 0) mixed = std::random_device()();
  const bool reshuffle = ctx.attrs().GetOr<bool>("reshuffle_each_iteration", true);
  return SetOutputDataset(
      ctx, std::make_shared<ShuffleDataset>(ctx.node(), input, buffer_size, mixed, reshuffle));
}

FS_REGISTER_OP(UnaryDatasetOp("ShuffleDataset", {"buffer_size", "seed", "seed2"})
                   .Attr("reshuffle_each_iteration", true)
                   .Kernel("CPU", ShuffleKernel)
                   .Doc("The input's elements in a random order drawn from a buffer of "
                        "buffer_size elements."));

// --- ZipDataset, ConcatenateDataset ---------------------------------------------------------

class ZipDataset final : public DatasetBase {
 public:
  ZipDataset(const Node& node, std::vector<DatasetPtr> inputs, std::vector<DType> types,
             std::vector<PartialShape> shapes)
      : DatasetBase("ZipDataset", node.name(), std::move(types), std::move(shapes)),
        inputs_(std::move(inputs)) {}

  std::unique_ptr<IteratorBase> MakeIterator() const override {
    return std::make_unique<Iterator>(std::static_pointer_cast<const ZipDataset>(self()));
  }

  // The shortest input's length; infinite only when every input is.
  int64_t Cardinality() const override {
    int64_t result = kInfiniteCardinality;
    for (const DatasetPtr& input : inputs_) {
      const int64_t n = input->Cardinality();
      if (n == kUnknownCardinality) return n;
      if (n != kInfiniteCardinality && (result == kInfiniteCardinality || n < result)) result = n;
    }
    return result;
  }

 private:
  class Iterator final : public IteratorBase {
   public:
    explicit Iterator(std::shared_ptr<const ZipDataset> dataset) : dataset_(std::move(dataset)) {
      for (const DatasetPtr& input : dataset_->inputs_) inputs_.push_back(input->MakeIterator());
    }
    // Ends with the shortest input.
    Status GetNext(KernelContext& ctx, Element* out, bool* end) override {
      out->clear();
      for (auto& input : inputs_) {
        Element part;
        FS_RETURN_IF_ERROR(input->GetNext(ctx, &part, end));
        if (*end) return Status::OK();
        for (Tensor& t : part) out->push_back(std::move(t));
      }
      return Status::OK();
    }

   private:
    std::shared_ptr<const ZipDataset> dataset_;
    std::vector<std::unique_ptr<IteratorBase>> inputs_;
  };

  std::vector<DatasetPtr> inputs_;
};

Status ZipKernel(KernelContext& ctx) {
  std::vector<DatasetPtr> inputs(ctx.num_inputs());
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    FS_RETURN_IF_ERROR(GetInputDataset(ctx, i, &inputs[i]));
  }
  std::vector<DType> types;
  std::vector<PartialShape> shapes;
  for (const DatasetPtr& input : inputs) {
    types.insert(types.end(), input->output_types().begin(), input->output_types().end());
    shapes.insert(shapes.end(), input->output_shapes().begin(), input->output_shapes().end());
  }
  return SetOutputDataset(ctx, std::make_shared<ZipDataset>(ctx.node(), std::move(inputs),
                                                            std::move(types), std::move(shapes)));
}

// TensorFlow's op def gives N a minimum of 1: a zip of no datasets would never end.
Status ZipShape(InferenceContext& ctx) {
  if (ctx.num_inputs() == 0) {
    return errors::InvalidArgument("Attr 'N' of 'ZipDataset' Op passed 0 less than minimum 1.");
  }
  return shape_fns::Scalar(ctx);
}

FS_REGISTER_OP(OpBuilder("ZipDataset")
                   .InputList("input_datasets", "variant", "N")
                   .Output("handle", "variant")
                   .RequiredAttr("output_types", AttrType::kTypeList)
                   .RequiredAttr("output_shapes", AttrType::kShapeList)
                   .Attr("metadata", "")
                   .Stateful()
                   .Shape(ZipShape)
                   .Kernel("CPU", ZipKernel)
                   .NotDifferentiable()
                   .Doc("Tuples of one element of each input, until the shortest one ends."));

class ConcatenateDataset final : public UnaryDataset<ConcatenateDataset> {
 public:
  ConcatenateDataset(const Node& node, DatasetPtr input, DatasetPtr another,
                     std::vector<PartialShape> shapes)
      : UnaryDataset("ConcatenateDataset", node, input, input->output_types(), std::move(shapes)),
        another_(std::move(another)) {}

  int64_t Cardinality() const override {
    const int64_t a = input()->Cardinality(), b = another_->Cardinality();
    if (a == kInfiniteCardinality || b == kInfiniteCardinality) return kInfiniteCardinality;
    if (a == kUnknownCardinality || b == kUnknownCardinality) return kUnknownCardinality;
    return a + b;
  }

  class Iterator final : public UnaryIterator<ConcatenateDataset> {
   public:
    using UnaryIterator::UnaryIterator;
    Status GetNext(KernelContext& ctx, Element* out, bool* end) override {
      FS_RETURN_IF_ERROR(input_->GetNext(ctx, out, end));
      if (*end && !on_second_) {
        on_second_ = true;
        input_ = dataset_->another_->MakeIterator();
        return input_->GetNext(ctx, out, end);
      }
      return Status::OK();
    }

   private:
    bool on_second_ = false;
  };

 private:
  DatasetPtr another_;
};

Status ConcatenateKernel(KernelContext& ctx) {
  DatasetPtr input, another;
  FS_RETURN_IF_ERROR(GetInputDataset(ctx, 0, &input));
  FS_RETURN_IF_ERROR(GetInputDataset(ctx, 1, &another));
  if (input->output_types() != another->output_types()) {
    return errors::InvalidArgument(
        "input dataset and dataset to concatenate have different types of components");
  }
  std::vector<PartialShape> shapes;
  FS_RETURN_IF_ERROR(ctx.attrs().Get("output_shapes", &shapes));
  return SetOutputDataset(ctx,
                          std::make_shared<ConcatenateDataset>(ctx.node(), input, another, shapes));
}

FS_REGISTER_OP(OpBuilder("ConcatenateDataset")
                   .Input("input_dataset", "variant")
                   .Input("another_dataset", "variant")
                   .Output("handle", "variant")
                   .RequiredAttr("output_types", AttrType::kTypeList)
                   .RequiredAttr("output_shapes", AttrType::kShapeList)
                   .Attr("metadata", "")
                   .Stateful()
                   .Shape(shape_fns::Scalar)
                   .Kernel("CPU", ConcatenateKernel)
                   .NotDifferentiable()
                   .Doc("The elements of the input, then those of another_dataset."));

}  // namespace
}  // namespace flowstone::data
