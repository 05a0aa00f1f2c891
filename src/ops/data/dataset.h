// tf.data in C++: a dataset is an immutable description of a sequence of elements (each a tuple of
// tensors), held by a scalar variant tensor so that dataset ops compose in the graph like any
// other op. An iterator walks one dataset; user functions (Dataset.map's) are graph functions run
// through the session's FunctionRuntime, never through Python.
//
// GetNext is the one "next element" entry point: the IteratorGetNext kernel calls it, and eager
// iteration (`for x in dataset`) is meant to call the same function (see iterator_resource.h).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "flowstone/kernel.h"
#include "flowstone/status.h"
#include "flowstone/tensor.h"
#include "flowstone/variant.h"

namespace flowstone::data {

// One element of a dataset: its components, in the order of the dataset's output_types.
using Element = std::vector<Tensor>;

// Walks one dataset. Not thread-safe: its owner (an IteratorResource) serializes calls.
class IteratorBase {
 public:
  virtual ~IteratorBase() = default;
  // Produces the next element into *out, or sets *end = true when there is none (and keeps doing
  // so). `ctx` is the kernel context that user functions are called through.
  virtual Status GetNext(KernelContext& ctx, Element* out, bool* end) = 0;
};

// Dataset.cardinality()'s values for a dataset without end and one whose length is not known
// without running it (TF's kInfiniteCardinality and kUnknownCardinality).
inline constexpr int64_t kInfiniteCardinality = -1;
inline constexpr int64_t kUnknownCardinality = -2;

class DatasetBase;
using DatasetPtr = std::shared_ptr<const DatasetBase>;

class DatasetBase : public std::enable_shared_from_this<DatasetBase> {
 public:
  // `op` is the dataset op's type and `node` its node name, for messages.
  DatasetBase(std::string op, std::string node, std::vector<DType> types,
              std::vector<PartialShape> shapes)
      : op_(std::move(op)),
        node_(std::move(node)),
        types_(std::move(types)),
        shapes_(std::move(shapes)) {}
  virtual ~DatasetBase() = default;

  const std::string& op() const { return op_; }
  const std::string& node() const { return node_; }
  const std::vector<DType>& output_types() const { return types_; }
  const std::vector<PartialShape>& output_shapes() const { return shapes_; }

  // A new iterator at the start of this dataset. The iterator keeps the dataset alive.
  virtual std::unique_ptr<IteratorBase> MakeIterator() const = 0;

  // The number of elements, known without running the pipeline: kInfiniteCardinality,
  // kUnknownCardinality (the default: a filter, a file) or a count, TF's value for each dataset.
  virtual int64_t Cardinality() const { return kUnknownCardinality; }

  // `s` with the transformation that failed appended, as TF names it in pipeline errors:
  // "...\n\t [[in MapDataset 'MapDataset_1']]". OK stays OK; OutOfRange keeps its message.
  Status Annotate(const Status& s) const;

 protected:
  DatasetPtr self() const { return shared_from_this(); }

 private:
  std::string op_;
  std::string node_;
  std::vector<DType> types_;
  std::vector<PartialShape> shapes_;
};

// The value of a dataset's variant tensor. Datasets are immutable, so copies share one.
class DatasetVariant final : public VariantValue {
 public:
  explicit DatasetVariant(DatasetPtr dataset) : dataset_(std::move(dataset)) {}
  std::string TypeName() const override { return "tensorflow::data::DatasetBase"; }
  std::string DebugString() const override { return "<" + dataset_->op() + ">"; }
  std::unique_ptr<VariantValue> Clone() const override {
    return std::make_unique<DatasetVariant>(dataset_);
  }
  const DatasetPtr& dataset() const { return dataset_; }

 private:
  DatasetPtr dataset_;
};

// The dataset held by input `index` of a kernel (a scalar variant), or InvalidArgument naming
// the op and input.
Status GetInputDataset(KernelContext& ctx, int index, DatasetPtr* out);
// Outputs `dataset` as the scalar variant at output 0.
Status SetOutputDataset(KernelContext& ctx, DatasetPtr dataset);

// The output_types / output_shapes attrs every dataset op has.
Status ElementSpecAttrs(const Node& node, std::vector<DType>* types,
                        std::vector<PartialShape>* shapes);

// The cardinality of batches of `batch_size` over an input of cardinality `n` (BatchDatasetV2's and
// PaddedBatchDatasetV2's).
inline int64_t BatchedCardinality(int64_t n, int64_t batch_size, bool drop_remainder) {
  if (n < 0) return n;
  return n / batch_size + (n % batch_size == 0 || drop_remainder ? 0 : 1);
}

// Reads a scalar int64 input (a count, a size) named `name` for messages.
Status ScalarInt64Input(KernelContext& ctx, int index, const char* name, int64_t* out);
// Reads a scalar bool input.
Status ScalarBoolInput(KernelContext& ctx, int index, const char* name, bool* out);
// Reads a num_parallel_calls input: a positive count, or AUTOTUNE (-1), which is one call per
// core.
Status ParallelCallsInput(KernelContext& ctx, int index, int64_t* out);

// Checks that an element matches the declared types (and shapes, where known) of `dataset`;
// an element a user function returned with another dtype is InvalidArgument naming both.
Status CheckElement(const DatasetBase& dataset, const Element& element);

// Row `index` of `t` along its first dimension, as a new host tensor.
Status SliceRow(const Tensor& t, int64_t index, Tensor* out);
// Stacks `rows` (tensors of one dtype and shape) along a new first dimension.
Status StackRows(const std::vector<Tensor>& rows, Tensor* out);
// A host tensor, or ResourceExhausted naming the shape.
Status AllocateHost(DType dtype, const TensorShape& shape, Tensor* out);

// What a user function called on a pipeline's own thread (prefetch's, parallel map's workers)
// reads from the context of the request that started the thread: its device, session resources,
// step and function runtime. Node, inputs and outputs stay unset.
inline KernelContext::Params BackgroundCallParams(const KernelContext& ctx) {
  KernelContext::Params params;
  params.device = ctx.device();
  params.resources = ctx.resources();
  params.step_id = ctx.step_id();
  params.functions = ctx.functions();
  params.report_allocations_on_oom = ctx.report_allocations_on_oom();
  return params;
}

// Waits on `changed` until `ready()` while the consumer's run goes on: a pipeline thread cannot
// wake the consumer when its run is cancelled (Session::Close, a deadline), so the wait checks
// the run's cancellation every 20 ms and returns its status.
template <typename Ready>
Status WaitUnlessCancelled(const KernelContext& ctx, std::condition_variable& changed,
                           std::unique_lock<std::mutex>& lock, Ready ready) {
  while (!changed.wait_for(lock, std::chrono::milliseconds(20), ready)) {
    FS_RETURN_IF_ERROR(ctx.CheckCancelled());
  }
  return Status::OK();
}

}  // namespace flowstone::data
