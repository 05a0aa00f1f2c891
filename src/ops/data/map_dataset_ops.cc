// Datasets that run a user function per element: MapDataset, ParallelMapDatasetV2, FilterDataset,
// FlatMapDataset and InterleaveDataset. The function is a graph function of the graph's library
// (Python traces it once); each call runs its compiled plan in C++, with no Python per element.
#include <algorithm>
#include <thread>

#include "dataset.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "user_function.h"

namespace flowstone::data {
namespace {

// --- MapDataset, ParallelMapDatasetV2 -------------------------------------------------------

class MapDataset final : public DatasetBase {
 public:
  MapDataset(const char* op, const Node& node, DatasetPtr input, std::unique_ptr<UserFunction> fn,
             int64_t parallel_calls, bool preserve_cardinality, std::vector<DType> types,
             std::vector<PartialShape> shapes)
      : DatasetBase(op, node.name(), std::move(types), std::move(shapes)),
        input_(std::move(input)),
        fn_(std::move(fn)),
        parallel_calls_(std::max<int64_t>(parallel_calls, 1)),
        preserve_cardinality_(preserve_cardinality) {}

  std::unique_ptr<IteratorBase> MakeIterator() const override {
    return std::make_unique<Iterator>(std::static_pointer_cast<const MapDataset>(self()));
  }
  // Dataset.map promises one output per input (preserve_cardinality); a map that may end early
  // (from_generator's) does not.
  int64_t Cardinality() const override {
    return preserve_cardinality_ ? input_->Cardinality() : kUnknownCardinality;
  }

 private:
  // Maps blocks of up to parallel_calls elements at once, one thread per call, and hands the
  // results out in input order, so the output is deterministic whatever the parallelism.
  class Iterator final : public IteratorBase {
   public:
    explicit Iterator(std::shared_ptr<const MapDataset> dataset)
        : dataset_(std::move(dataset)), input_(dataset_->input_->MakeIterator()) {}

    Status GetNext(KernelContext& ctx, Element* out, bool* end) override {
      if (!ended_ && next_ == results_.size()) FS_RETURN_IF_ERROR(MapBlock(ctx));
      *end = ended_ || next_ == results_.size();
      if (*end) return Status::OK();
      const size_t i = next_++;
      // OutOfRange from the function ends the dataset, as in TF (a tf.py_func raising
      // StopIteration: Dataset.from_generator's end), unless the map promised to keep its
      // input's cardinality: then it is an error, as TF makes it.
      if (statuses_[i].code() == Code::kOutOfRange && dataset_->preserve_cardinality_) {
        return dataset_->Annotate(errors::InvalidArgument(
            "Function invocation produced OutOfRangeError: ", statuses_[i].message()));
      }
      if (statuses_[i].code() == Code::kOutOfRange) {
        ended_ = *end = true;
        return Status::OK();
      }
      if (!statuses_[i].ok()) return statuses_[i];
      *out = std::move(results_[i]);
      return Status::OK();
    }

   private:
    Status MapBlock(KernelContext& ctx) {
      std::vector<Element> inputs;
      bool end = false;
      while (!end && static_cast<int64_t>(inputs.size()) < dataset_->parallel_calls_) {
        Element element;
        FS_RETURN_IF_ERROR(input_->GetNext(ctx, &element, &end));
        if (!end) inputs.push_back(std::move(element));
      }
      results_.assign(inputs.size(), Element());
      statuses_.assign(inputs.size(), Status::OK());
      next_ = 0;
      auto map_one = [&](size_t i) {
        Status s = dataset_->fn_->Call(ctx, inputs[i], &results_[i]);
        if (s.ok()) s = CheckElement(*dataset_, results_[i]);
        statuses_[i] = dataset_->Annotate(s);
      };
      std::vector<std::thread> threads;
      for (size_t i = 1; i < inputs.size(); ++i) threads.emplace_back(map_one, i);
      if (!inputs.empty()) map_one(0);
      for (std::thread& t : threads) t.join();
      return Status::OK();
    }

    std::shared_ptr<const MapDataset> dataset_;
    std::unique_ptr<IteratorBase> input_;
    std::vector<Element> results_;
    std::vector<Status> statuses_;
    size_t next_ = 0;
    bool ended_ = false;
  };

  DatasetPtr input_;
  std::unique_ptr<UserFunction> fn_;
  int64_t parallel_calls_;
  bool preserve_cardinality_;
};

template <bool kParallel>
Status MapKernel(KernelContext& ctx) {
  DatasetPtr input;
  FS_RETURN_IF_ERROR(GetInputDataset(ctx, 0, &input));
  int64_t parallel_calls = 1;
  int captured_end = ctx.num_inputs();
  if (kParallel) {
    // ParallelMapDatasetV2's num_parallel_calls is its last input.
    captured_end = ctx.num_inputs() - 1;
    FS_RETURN_IF_ERROR(
        ScalarInt64Input(ctx, ctx.num_inputs() - 1, "num_parallel_calls", &parallel_calls));
    if (parallel_calls == -1) {  // AUTOTUNE: one call per core
      parallel_calls = std::max<int64_t>(1, std::thread::hardware_concurrency());
    } else if (parallel_calls <= 0) {
      return errors::InvalidArgument("num_parallel_calls must be positive or AUTOTUNE (-1), got ",
                                     parallel_calls);
    }
  }
  std::unique_ptr<UserFunction> fn;
  FS_RETURN_IF_ERROR(ReadUserFunction(ctx, "f", captured_end, &fn));
  std::vector<DType> types;
  std::vector<PartialShape> shapes;
  FS_RETURN_IF_ERROR(ElementSpecAttrs(ctx.node(), &types, &shapes));
  return SetOutputDataset(
      ctx, std::make_shared<MapDataset>(kParallel ? "ParallelMapDatasetV2" : "MapDataset",
                                        ctx.node(), input, std::move(fn), parallel_calls,
                                        ctx.attrs().GetOr<bool>("preserve_cardinality", false),
                                        std::move(types), std::move(shapes)));
}

FS_REGISTER_OP(FunctionDatasetOp("MapDataset", "f", {})
                   .Attr("use_inter_op_parallelism", true)
                   .Attr("preserve_cardinality", false)
                   .Kernel("CPU", MapKernel<false>)
                   .Doc("f applied to each element of the input (Dataset.map)."));

FS_REGISTER_OP(FunctionDatasetOp("ParallelMapDatasetV2", "f", {"num_parallel_calls"})
                   .Attr("use_inter_op_parallelism", true)
                   .Attr("deterministic", "default")
                   .Attr("preserve_cardinality", false)
                   .Kernel("CPU", MapKernel<true>)
                   .Doc("f applied to num_parallel_calls elements at a time, in input order "
                        "(Dataset.map with num_parallel_calls)."));

// --- FilterDataset --------------------------------------------------------------------------

class FilterDataset final : public DatasetBase {
 public:
  FilterDataset(const Node& node, DatasetPtr input, std::unique_ptr<UserFunction> predicate)
      : DatasetBase("FilterDataset", node.name(), input->output_types(), input->output_shapes()),
        input_(std::move(input)),
        predicate_(std::move(predicate)) {}

  std::unique_ptr<IteratorBase> MakeIterator() const override {
    return std::make_unique<Iterator>(std::static_pointer_cast<const FilterDataset>(self()));
  }

 private:
  class Iterator final : public IteratorBase {
   public:
    explicit Iterator(std::shared_ptr<const FilterDataset> dataset)
        : dataset_(std::move(dataset)), input_(dataset_->input_->MakeIterator()) {}

    Status GetNext(KernelContext& ctx, Element* out, bool* end) override {
      while (true) {
        FS_RETURN_IF_ERROR(input_->GetNext(ctx, out, end));
        if (*end) return Status::OK();
        Element kept;
        FS_RETURN_IF_ERROR(dataset_->Annotate(dataset_->predicate_->Call(ctx, *out, &kept)));
        if (kept.size() != 1 || kept[0].dtype() != DType::kBool || kept[0].num_elements() != 1 ||
            kept[0].rank() != 0) {
          return dataset_->Annotate(errors::InvalidArgument(
              "Filter predicate `predicate` must return a scalar bool, got ",
              kept.empty() ? std::string("nothing") : kept[0].DebugString()));
        }
        if (*kept[0].data<bool>()) return Status::OK();
      }
    }

   private:
    std::shared_ptr<const FilterDataset> dataset_;
    std::unique_ptr<IteratorBase> input_;
  };

  DatasetPtr input_;
  std::unique_ptr<UserFunction> predicate_;
};

Status FilterKernel(KernelContext& ctx) {
  DatasetPtr input;
  FS_RETURN_IF_ERROR(GetInputDataset(ctx, 0, &input));
  std::unique_ptr<UserFunction> predicate;
  FS_RETURN_IF_ERROR(ReadUserFunction(ctx, "predicate", ctx.num_inputs(), &predicate));
  return SetOutputDataset(ctx,
                          std::make_shared<FilterDataset>(ctx.node(), input, std::move(predicate)));
}

FS_REGISTER_OP(FunctionDatasetOp("FilterDataset", "predicate", {})
                   .Kernel("CPU", FilterKernel)
                   .Doc("The elements of the input for which `predicate` returns true."));

// --- FlatMapDataset, InterleaveDataset ------------------------------------------------------

// f maps each input element to a dataset; the output takes block_length elements from each of
// up to cycle_length of those datasets in turn (FlatMap: one at a time, to its end).
class InterleaveDataset final : public DatasetBase {
 public:
  InterleaveDataset(const char* op, const Node& node, DatasetPtr input,
                    std::unique_ptr<UserFunction> fn, int64_t cycle_length, int64_t block_length,
                    std::vector<DType> types, std::vector<PartialShape> shapes)
      : DatasetBase(op, node.name(), std::move(types), std::move(shapes)),
        input_(std::move(input)),
        fn_(std::move(fn)),
        cycle_length_(cycle_length),
        block_length_(block_length) {}

  std::unique_ptr<IteratorBase> MakeIterator() const override {
    return std::make_unique<Iterator>(std::static_pointer_cast<const InterleaveDataset>(self()));
  }

 private:
  class Iterator final : public IteratorBase {
   public:
    explicit Iterator(std::shared_ptr<const InterleaveDataset> dataset)
        : dataset_(std::move(dataset)),
          input_(dataset_->input_->MakeIterator()),
          cycle_(static_cast<size_t>(dataset_->cycle_length_)) {}

    Status GetNext(KernelContext& ctx, Element* out, bool* end) override {
      while (true) {
        if (input_done_ && std::all_of(cycle_.begin(), cycle_.end(),
                                       [](const auto& it) { return it == nullptr; })) {
          *end = true;
          return Status::OK();
        }
        std::unique_ptr<IteratorBase>& slot = cycle_[index_];
        if (slot == nullptr && !input_done_) FS_RETURN_IF_ERROR(OpenNext(ctx, &slot));
        if (slot != nullptr) {
          bool slot_end = false;
          FS_RETURN_IF_ERROR(slot->GetNext(ctx, out, &slot_end));
          if (!slot_end) {
            FS_RETURN_IF_ERROR(dataset_->Annotate(CheckElement(*dataset_, *out)));
            if (++taken_in_block_ == dataset_->block_length_) Advance();
            *end = false;
            return Status::OK();
          }
          slot.reset();
        }
        Advance();
      }
    }

   private:
    void Advance() {
      taken_in_block_ = 0;
      index_ = (index_ + 1) % cycle_.size();
    }

    // Opens the dataset f returns for the next input element (none when the input is done).
    Status OpenNext(KernelContext& ctx, std::unique_ptr<IteratorBase>* slot) {
      Element element;
      FS_RETURN_IF_ERROR(input_->GetNext(ctx, &element, &input_done_));
      if (input_done_) return Status::OK();
      Element result;
      FS_RETURN_IF_ERROR(dataset_->Annotate(dataset_->fn_->Call(ctx, element, &result)));
      const DatasetVariant* inner = nullptr;
      if (result.size() == 1 && result[0].dtype() == DType::kVariant &&
          result[0].num_elements() == 1) {
        inner = result[0].data<Variant>()[0].get<DatasetVariant>();
      }
      if (inner == nullptr) {
        return dataset_->Annotate(errors::InvalidArgument("The function of ", dataset_->op(),
                                                          " must return a single dataset."));
      }
      *slot = inner->dataset()->MakeIterator();
      return Status::OK();
    }

    std::shared_ptr<const InterleaveDataset> dataset_;
    std::unique_ptr<IteratorBase> input_;
    bool input_done_ = false;
    std::vector<std::unique_ptr<IteratorBase>> cycle_;
    size_t index_ = 0;
    int64_t taken_in_block_ = 0;
  };

  DatasetPtr input_;
  std::unique_ptr<UserFunction> fn_;
  int64_t cycle_length_, block_length_;
};

template <bool kInterleave>
Status InterleaveKernel(KernelContext& ctx) {
  DatasetPtr input;
  FS_RETURN_IF_ERROR(GetInputDataset(ctx, 0, &input));
  int64_t cycle_length = 1, block_length = 1;
  int captured_end = ctx.num_inputs();
  if (kInterleave) {
    captured_end = ctx.num_inputs() - 2;
    FS_RETURN_IF_ERROR(ScalarInt64Input(ctx, captured_end, "cycle_length", &cycle_length));
    FS_RETURN_IF_ERROR(ScalarInt64Input(ctx, captured_end + 1, "block_length", &block_length));
    if (cycle_length == -1) {  // AUTOTUNE
      cycle_length = std::max<int64_t>(1, std::thread::hardware_concurrency());
    }
    if (cycle_length <= 0) {
      return errors::InvalidArgument("cycle_length must be greater than zero.");
    }
    if (block_length <= 0) {
      return errors::InvalidArgument("block_length must be greater than zero.");
    }
  }
  std::unique_ptr<UserFunction> fn;
  FS_RETURN_IF_ERROR(ReadUserFunction(ctx, "f", captured_end, &fn));
  std::vector<DType> types;
  std::vector<PartialShape> shapes;
  FS_RETURN_IF_ERROR(ElementSpecAttrs(ctx.node(), &types, &shapes));
  return SetOutputDataset(
      ctx, std::make_shared<InterleaveDataset>(kInterleave ? "InterleaveDataset" : "FlatMapDataset",
                                               ctx.node(), input, std::move(fn), cycle_length,
                                               block_length, std::move(types), std::move(shapes)));
}

FS_REGISTER_OP(FunctionDatasetOp("FlatMapDataset", "f", {})
                   .Kernel("CPU", InterleaveKernel<false>)
                   .Doc("The elements of the datasets f returns for each input element, one "
                        "dataset after another (Dataset.flat_map)."));

FS_REGISTER_OP(FunctionDatasetOp("InterleaveDataset", "f", {"cycle_length", "block_length"})
                   .Kernel("CPU", InterleaveKernel<true>)
                   .Doc("block_length elements at a time from each of cycle_length of the "
                        "datasets f returns (Dataset.interleave)."));

}  // namespace
}  // namespace flowstone::data
