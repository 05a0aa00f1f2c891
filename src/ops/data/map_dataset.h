// MapDataset (Dataset.map, with or without num_parallel_calls), shared by its own op file
// (map_dataset_ops.cc) and the fused map-and-batch iterator (map_and_batch_dataset_op.cc), which
// runs a parallel map's calls and writes each result straight into its batch.
#pragma once

#include <algorithm>
#include <memory>
#include <vector>

#include "dataset.h"
#include "user_function.h"

namespace flowstone::data {

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

  std::unique_ptr<IteratorBase> MakeIterator() const override;
  // Dataset.map promises one output per input (preserve_cardinality); a map that may end early
  // (from_generator's) does not.
  int64_t Cardinality() const override {
    return preserve_cardinality_ ? input_->Cardinality() : kUnknownCardinality;
  }

  const DatasetPtr& input() const { return input_; }
  // The number of calls run at once (1: on the consumer's thread).
  int64_t parallel_calls() const { return parallel_calls_; }

  // One call of the function, checked against the declared element spec and annotated; result
  // components are written into `destinations` where given (see UserFunction::Call).
  Status MapOne(KernelContext& ctx, const Element& input, Element* result,
                const std::vector<Tensor>* destinations = nullptr) const {
    Status s = fn_->Call(ctx, input, result, destinations);
    if (s.ok()) s = CheckElement(*this, *result);
    return Annotate(s);
  }

  // The element a call's status and result stand for: OutOfRange from the function ends the
  // dataset, as in TF (a tf.py_func raising StopIteration: Dataset.from_generator's end), unless
  // the map promised to keep its input's cardinality: then it is an error, as TF makes it.
  Status Deliver(Status status, Element* result, Element* out, bool* end) const {
    *end = false;
    if (status.code() == Code::kOutOfRange && preserve_cardinality_) {
      return Annotate(errors::InvalidArgument("Function invocation produced OutOfRangeError: ",
                                              status.message()));
    }
    if (status.code() == Code::kOutOfRange) {
      *end = true;
      return Status::OK();
    }
    if (!status.ok()) return status;
    *out = std::move(*result);
    return Status::OK();
  }

 private:
  class Iterator;
  class ParallelIterator;

  DatasetPtr input_;
  std::unique_ptr<UserFunction> fn_;
  int64_t parallel_calls_;
  bool preserve_cardinality_;
};

// Calls queued, running or done but not yet taken, per worker of a parallel map. With one per
// worker, a worker that finished a call idled until the consumer took the oldest one (calls vary:
// JPEG sizes), and 2 workers kept 1.6 of 2 cores busy in the image pipeline benchmark; with 4,
// 1.8 (bench/RESULTS.md). Bounds the elements held ahead to 4 x num_parallel_calls.
inline constexpr int64_t kCallsAheadPerWorker = 4;

// The iterator of `batch` (a BatchDatasetV2 of batch_size over `input`) when `input` is a
// parallel map: the map's calls write their results straight into the batch (TensorFlow's
// map_and_batch_fusion, see map_and_batch_dataset_op.cc); null for any other input.
std::unique_ptr<IteratorBase> MakeMapAndBatchIterator(const DatasetPtr& input,
                                                      std::shared_ptr<const DatasetBase> batch,
                                                      int64_t batch_size, bool drop_remainder);

}  // namespace flowstone::data
