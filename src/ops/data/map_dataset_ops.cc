// Datasets that run a user function per element: MapDataset, ParallelMapDatasetV2, FilterDataset,
// FlatMapDataset and InterleaveDataset. The function is a graph function of the graph's library
// (Python traces it once); each call runs its compiled plan in C++, with no Python per element.
#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

#include "dataset.h"
#include "flowstone/inline_parallel_for.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "flowstone/thread_pool.h"
#include "map_dataset.h"

namespace flowstone::data {

// --- MapDataset, ParallelMapDatasetV2 -------------------------------------------------------

// Dataset.map without num_parallel_calls: one call per element on the caller's thread.
class MapDataset::Iterator final : public IteratorBase {
 public:
  explicit Iterator(std::shared_ptr<const MapDataset> dataset)
      : dataset_(std::move(dataset)), input_(dataset_->input_->MakeIterator()) {}

  Status GetNext(KernelContext& ctx, Element* out, bool* end) override {
    *end = ended_;
    if (ended_) return Status::OK();
    Element input;
    FS_RETURN_IF_ERROR(input_->GetNext(ctx, &input, end));
    if (*end) return Status::OK();
    Element result;
    Status s = dataset_->MapOne(ctx, input, &result);
    s = dataset_->Deliver(std::move(s), &result, out, end);
    ended_ = *end;
    return s;
  }

 private:
  std::shared_ptr<const MapDataset> dataset_;
  std::unique_ptr<IteratorBase> input_;
  bool ended_ = false;
};

// Dataset.map with num_parallel_calls: parallel_calls worker threads, started with the first
// request and kept for the iterator's life, run the calls of up to kCallsAheadPerWorker x
// parallel_calls elements ahead of the consumer. The consumer's thread reads the input (in order)
// and hands the results out in input order, so the output is deterministic whatever the
// parallelism; the calls it starts keep running while the consumer works on what it was given.
class MapDataset::ParallelIterator final : public IteratorBase {
 public:
  explicit ParallelIterator(std::shared_ptr<const MapDataset> dataset)
      : dataset_(std::move(dataset)), input_(dataset_->input_->MakeIterator()) {}

  ~ParallelIterator() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    // A call still running (an endless loop, a blocked py_func) stops at its next check.
    cancellation_.Cancel(errors::Cancelled("The iterator of ", dataset_->op(), " '",
                                           dataset_->node(), "' was destroyed"));
    work_.notify_all();
    for (std::thread& t : workers_) t.join();
  }

  Status GetNext(KernelContext& ctx, Element* out, bool* end) override {
    *end = ended_;
    if (ended_) return Status::OK();
    if (workers_.empty()) {
      KernelContext::Params params = BackgroundCallParams(ctx);
      params.cancellation = &cancellation_;
      for (int64_t i = 0; i < dataset_->parallel_calls_; ++i) {
        workers_.emplace_back([this, params] { Work(params); });
      }
    }
    StartCalls(ctx);
    std::unique_lock<std::mutex> lock(mu_);
    if (calls_.empty()) {  // the input ended
      ended_ = *end = true;
      return Status::OK();
    }
    FS_RETURN_IF_ERROR(WaitUnlessCancelled(ctx, done_, lock, [&] { return calls_.front()->done; }));
    std::unique_ptr<Call> call = std::move(calls_.front());
    calls_.pop_front();
    if (started_ > 0) --started_;  // calls start in order: the first was taken if any was
    lock.unlock();
    if (call->input_failed) return call->status;
    Status s = dataset_->Deliver(std::move(call->status), &call->result, out, end);
    ended_ = *end;
    return s;
  }

 private:
  struct Call {
    Element input;
    Element result;
    Status status;
    bool done = false;
    bool input_failed = false;  // status is the input's error, passed on as it is
  };

  // Reads input elements until kCallsAheadPerWorker x parallel_calls calls are queued,
  // running or waiting to be taken. An input error takes its place among them, done at once,
  // so that it comes out in input order.
  void StartCalls(KernelContext& ctx) {
    while (!input_ended_) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (static_cast<int64_t>(calls_.size()) >= kCallsAheadPerWorker * dataset_->parallel_calls_)
          break;
      }
      auto call = std::make_unique<Call>();
      bool end = false;
      call->status = input_->GetNext(ctx, &call->input, &end);
      const bool failed = call->input_failed = call->done = !call->status.ok();
      if (!failed && end) {
        input_ended_ = true;
        break;
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        calls_.push_back(std::move(call));
      }
      if (failed) break;  // the next request reads on
      work_.notify_one();
    }
  }

  // A worker: runs the oldest call not yet started, until the iterator goes.
  void Work(KernelContext::Params params) {
    KernelContext ctx(params);
    // Workers that keep every core busy run their kernels unsplit.
    std::optional<InlineParallelForScope> inline_kernels;
    if (dataset_->parallel_calls_ >= NumSchedulableCpus()) inline_kernels.emplace();
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      work_.wait(lock, [&] { return stopping_ || started_ < calls_.size(); });
      if (stopping_) return;
      Call* call = calls_[started_++].get();  // calls_ owns it until it is done and taken
      if (call->input_failed) continue;
      lock.unlock();
      call->status = dataset_->MapOne(ctx, call->input, &call->result);
      call->input.clear();
      lock.lock();
      call->done = true;
      // Only the oldest call's end can be waited for.
      if (calls_.front().get() == call) done_.notify_one();
    }
  }

  std::shared_ptr<const MapDataset> dataset_;
  std::unique_ptr<IteratorBase> input_;  // read by the consumer's thread only
  bool input_ended_ = false;
  bool ended_ = false;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable work_;  // a call was queued, or the iterator is going
  std::condition_variable done_;  // the oldest call is done
  // The calls in input order: the first started_ are running or done, the rest wait for a
  // worker.
  std::deque<std::unique_ptr<Call>> calls_;
  size_t started_ = 0;
  bool stopping_ = false;
  CancellationToken cancellation_;  // the workers' calls stop with the iterator
};

std::unique_ptr<IteratorBase> MapDataset::MakeIterator() const {
  auto self = std::static_pointer_cast<const MapDataset>(this->self());
  if (parallel_calls_ == 1) return std::make_unique<Iterator>(std::move(self));
  return std::make_unique<ParallelIterator>(std::move(self));
}

namespace {

template <bool kParallel>
Status MapKernel(KernelContext& ctx) {
  DatasetPtr input;
  FS_RETURN_IF_ERROR(GetInputDataset(ctx, 0, &input));
  int64_t parallel_calls = 1;
  int captured_end = ctx.num_inputs();
  if (kParallel) {
    // ParallelMapDatasetV2's num_parallel_calls is its last input.
    captured_end = ctx.num_inputs() - 1;
    FS_RETURN_IF_ERROR(ParallelCallsInput(ctx, ctx.num_inputs() - 1, &parallel_calls));
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
