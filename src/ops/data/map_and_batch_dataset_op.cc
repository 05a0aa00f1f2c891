// The fused iterator of a parallel map followed by a batch (TensorFlow's map_and_batch_fusion,
// which TF applies to every pipeline by default): the map's workers write each result straight
// into its row of a batch tensor allocated once per batch, so there is no per-element tensor kept
// until the batch is full and no stacking copy on the consumer's thread. In the image pipeline
// benchmark that copy (38 MB per batch of 64 images) ran on the one thread that also fed the
// workers, and the workers ran dry while it did (bench/RESULTS.md). When the batch is allocated
// before a call starts (the map's output shapes are static, or an earlier call of the batch has
// ended), the call's rows are its function's destinations: the kernel computing a component
// writes it in the batch, and nothing is copied.
//
// Results are those of map then batch, in input order whatever the parallelism. On an error
// the fused iterator behaves as TensorFlow's MapAndBatch does: the batch holding the failing
// element gives the error (the first failing element's), and the next batch starts at the next
// multiple of batch_size (unfused, it would start right after the failing element).
#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

#include "dataset.h"
#include "flowstone/inline_parallel_for.h"
#include "flowstone/thread_pool.h"
#include "map_dataset.h"
#include "user_function.h"

namespace flowstone::data {
namespace {

class MapAndBatchIterator final : public IteratorBase {
 public:
  MapAndBatchIterator(std::shared_ptr<const MapDataset> map,
                      std::shared_ptr<const DatasetBase> batch, int64_t batch_size,
                      bool drop_remainder)
      : map_(std::move(map)),
        batch_(std::move(batch)),
        batch_size_(batch_size),
        drop_remainder_(drop_remainder),
        // Enough whole batches for kCallsAheadPerWorker calls per worker, and at least two, so
        // the workers run the next batch's calls while the consumer takes a finished one.
        max_batches_(std::max<int64_t>(
            2, (kCallsAheadPerWorker * map_->parallel_calls() + batch_size - 1) / batch_size)),
        static_shapes_(std::all_of(map_->output_shapes().begin(), map_->output_shapes().end(),
                                   [](const PartialShape& s) { return s.IsFullyDefined(); })),
        input_(map_->input()->MakeIterator()) {}

  ~MapAndBatchIterator() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    // A call still running (an endless loop, a blocked py_func) stops at its next check.
    cancellation_.Cancel(errors::Cancelled("The iterator of ", map_->op(), " '", map_->node(),
                                           "' (fused with ", batch_->op(), " '", batch_->node(),
                                           "') was destroyed"));
    work_.notify_all();
    for (std::thread& t : workers_) t.join();
  }

  Status GetNext(KernelContext& ctx, Element* out, bool* end) override {
    *end = ended_;
    if (ended_) return Status::OK();
    if (workers_.empty()) {
      KernelContext::Params params = BackgroundCallParams(ctx);
      params.cancellation = &cancellation_;
      for (int64_t i = 0; i < map_->parallel_calls(); ++i) {
        workers_.emplace_back([this, params] { Work(params); });
      }
    }
    StartBatches(ctx);
    std::unique_lock<std::mutex> lock(mu_);
    if (batches_.empty()) {  // the input ended
      ended_ = *end = true;
      return Status::OK();
    }
    FS_RETURN_IF_ERROR(
        WaitUnlessCancelled(ctx, done_, lock, [&] { return batches_.front()->pending == 0; }));
    std::unique_ptr<Batch> batch = std::move(batches_.front());
    batches_.pop_front();
    lock.unlock();
    return Finish(batch.get(), out, end);
  }

 private:
  // One batch: its rows' calls write into `components`, allocated as the batch starts when the
  // map's output shapes are static, else by the batch's first call to end.
  struct Batch {
    explicit Batch(int64_t size) : statuses(size), shapes(size) {}
    int64_t rows = 0;     // input elements read into it
    int64_t pending = 0;  // calls not yet done
    std::vector<Tensor> components;
    std::vector<Status> statuses;                  // per row: the call's (or the input's) error
    std::vector<std::vector<TensorShape>> shapes;  // per row, each component's shape
    int64_t input_failed_row = -1;                 // a row whose status is the input's error
  };

  // A call waiting for a worker: the row `row` of `batch`.
  struct Call {
    Batch* batch;
    int64_t row;
    Element input;
  };

  // Reads whole batches of input elements, queueing a call per element, until max_batches_ are
  // queued, running or waiting to be taken. An input error ends its batch (which will give it
  // unless an earlier row failed), and the next request reads on.
  void StartBatches(KernelContext& ctx) {
    while (!input_ended_) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (static_cast<int64_t>(batches_.size()) >= max_batches_) return;
      }
      auto batch = std::make_unique<Batch>(batch_size_);
      if (static_shapes_) {
        std::vector<TensorShape> shapes;
        for (const PartialShape& shape : map_->output_shapes()) {
          shapes.push_back(shape.ToTensorShape());
        }
        // Out of memory, the batch stays unallocated (Allocate sets nothing then): its first
        // call to end tries again and reports the error.
        Status allocated = Allocate(batch.get(), map_->output_types(), shapes);
        if (!allocated.ok()) batch->components.clear();
      }
      std::vector<Call> calls;
      bool failed = false;
      while (batch->rows < batch_size_) {
        Element element;
        bool end = false;
        Status s = input_->GetNext(ctx, &element, &end);
        if (!s.ok()) {
          batch->input_failed_row = batch->rows;
          batch->statuses[batch->rows++] = std::move(s);
          failed = true;
          break;
        }
        if (end) {
          input_ended_ = true;
          break;
        }
        calls.push_back(Call{batch.get(), batch->rows++, std::move(element)});
      }
      if (batch->rows == 0) return;
      batch->pending = static_cast<int64_t>(calls.size());
      {
        std::lock_guard<std::mutex> lock(mu_);
        for (Call& call : calls) queue_.push_back(std::move(call));
        batches_.push_back(std::move(batch));
      }
      work_.notify_all();
      if (failed) return;
    }
  }

  // A worker: runs the oldest queued call, until the iterator goes.
  void Work(KernelContext::Params params) {
    KernelContext ctx(params);
    // Workers that keep every core busy run their kernels unsplit.
    std::optional<InlineParallelForScope> inline_kernels;
    if (map_->parallel_calls() >= NumSchedulableCpus()) inline_kernels.emplace();
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      work_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      Call call = std::move(queue_.front());
      queue_.pop_front();
      std::vector<Tensor> rows = Rows(*call.batch, call.row);
      lock.unlock();
      Element result;
      Status s = map_->MapOne(ctx, call.input, &result, &rows);
      call.input.clear();
      if (s.ok()) s = Store(call.batch, call.row, rows, result);
      // Let go of the batch's memory before it is handed out, so that a fetch of it need not copy.
      rows.clear();
      result.clear();
      lock.lock();
      if (!s.ok()) call.batch->statuses[call.row] = std::move(s);
      // Only the oldest batch's end can be waited for.
      if (--call.batch->pending == 0 && batches_.front().get() == call.batch) done_.notify_one();
    }
  }

  // Allocates the batch's components: rows of `shapes`.
  Status Allocate(Batch* batch, const std::vector<DType>& types,
                  const std::vector<TensorShape>& shapes) {
    std::vector<Tensor> components(types.size());
    for (size_t c = 0; c < types.size(); ++c) {
      Dims dims = shapes[c].dims();
      dims.insert(0, batch_size_);
      FS_RETURN_IF_ERROR(AllocateHost(types[c], TensorShape(dims), &components[c]));
    }
    batch->components = std::move(components);
    return Status::OK();
  }

  // Row `row` of each component of the batch, as the destinations of the row's call: none (an
  // empty tensor) before the batch is allocated, for strings and variants (constructed objects
  // that a kernel's output would not expect), and for a row whose address is not aligned as a
  // kernel's output is (kTensorAlignment). Called under mu_.
  static std::vector<Tensor> Rows(const Batch& batch, int64_t row) {
    std::vector<Tensor> rows(batch.components.size());
    for (size_t c = 0; c < rows.size(); ++c) {
      const Tensor& whole = batch.components[c];
      if (HoldsObjects(whole.dtype()) || whole.num_elements() == 0) continue;
      const size_t row_bytes = whole.bytes() / static_cast<size_t>(whole.dim(0));
      if ((row * row_bytes) % kTensorAlignment == 0) rows[c] = whole.SubSlice(row);
    }
    return rows;
  }

  // Puts a call's result into its row of the batch: nothing to do for a component computed in its
  // destination, else a copy, after allocating the batch's components on the first result. A
  // result whose shape differs from the batch's is not copied: its shape is recorded, and Finish
  // reports the batch's first difference in row order.
  Status Store(Batch* batch, int64_t row, const std::vector<Tensor>& rows, const Element& result) {
    batch->shapes[row].clear();
    for (const Tensor& t : result) batch->shapes[row].push_back(t.shape());
    std::vector<bool> copy(result.size());
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (batch->components.empty()) {
        std::vector<DType> types;
        for (const Tensor& t : result) types.push_back(t.dtype());
        FS_RETURN_IF_ERROR(Allocate(batch, types, batch->shapes[row]));
      }
      for (size_t c = 0; c < result.size(); ++c) {
        const bool in_place =
            c < rows.size() && rows[c].initialized() && result[c].raw_data() == rows[c].raw_data();
        copy[c] = !in_place && IsRowOf(result[c].shape(), batch->components[c].shape());
      }
    }
    // Rows are disjoint, so the copies need no lock.
    for (size_t c = 0; c < result.size(); ++c) {
      if (!copy[c]) continue;
      const Tensor& t = result[c];
      const size_t row_bytes = static_cast<size_t>(t.num_elements()) * DTypeSize(t.dtype());
      CopyElements(t.dtype(), t.raw_data(),
                   static_cast<char*>(batch->components[c].raw_data()) + row * row_bytes,
                   t.num_elements());
    }
    return Status::OK();
  }

  // Whether `row` is the shape of one row of `whole`.
  static bool IsRowOf(const TensorShape& row, const TensorShape& whole) {
    if (whole.rank() != row.rank() + 1) return false;
    for (int i = 0; i < row.rank(); ++i) {
      if (row.dim(i) != whole.dim(i + 1)) return false;
    }
    return true;
  }

  // The finished batch as the output element: its first error in row order, else its first
  // difference in shape (as BatchDatasetV2 reports it), else the batch (the rows read, when the
  // input ended before a whole one).
  Status Finish(Batch* batch, Element* out, bool* end) {
    *end = false;
    int64_t rows = batch->rows;
    for (int64_t r = 0; r < batch->rows; ++r) {
      if (batch->statuses[r].ok()) continue;
      if (r == batch->input_failed_row) return batch->statuses[r];
      Element none;
      bool map_ended = false;
      FS_RETURN_IF_ERROR(map_->Deliver(std::move(batch->statuses[r]), &none, &none, &map_ended));
      // The function ended the map (OutOfRange without preserve_cardinality): the rows before
      // this one are the last batch, and the calls queued for later ones are dropped.
      rows = r;
      ended_ = true;
      std::lock_guard<std::mutex> lock(mu_);
      queue_.clear();
      break;
    }
    if (rows == 0 || (rows < batch_size_ && drop_remainder_)) {
      ended_ = *end = true;
      return Status::OK();
    }
    const auto& first = batch->shapes[0];
    for (size_t c = 0; c < first.size(); ++c) {
      for (int64_t r = 1; r < rows; ++r) {
        if (batch->shapes[r][c] != first[c]) {
          return batch_->Annotate(errors::InvalidArgument(
              "Cannot batch tensors with different shapes in component ", c,
              ". First element had shape ", first[c].ToString(), " and element ", r, " had shape ",
              batch->shapes[r][c].ToString(),
              ". Use padded_batch, or make the elements one shape."));
        }
      }
    }
    if (rows == batch_size_) {
      *out = std::move(batch->components);
      return Status::OK();
    }
    out->resize(batch->components.size());
    for (size_t c = 0; c < batch->components.size(); ++c) {
      const Tensor& whole = batch->components[c];
      Dims dims = whole.shape().dims();
      dims[0] = rows;
      FS_RETURN_IF_ERROR(AllocateHost(whole.dtype(), TensorShape(dims), &(*out)[c]));
      CopyElements(whole.dtype(), whole.raw_data(), (*out)[c].raw_data(), (*out)[c].num_elements());
    }
    return Status::OK();
  }

  std::shared_ptr<const MapDataset> map_;
  std::shared_ptr<const DatasetBase> batch_;
  const int64_t batch_size_;
  const bool drop_remainder_;
  const int64_t max_batches_;
  // Whether the map's output shapes are all known, so batches are allocated as they start.
  const bool static_shapes_;
  std::unique_ptr<IteratorBase> input_;  // the map's input, read by the consumer's thread only
  bool input_ended_ = false;
  bool ended_ = false;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable work_;                // a call was queued, or the iterator is going
  std::condition_variable done_;                // the oldest batch is done
  std::deque<std::unique_ptr<Batch>> batches_;  // in input order, each until it is taken
  std::deque<Call> queue_;                      // calls not yet started, in input order
  bool stopping_ = false;
  CancellationToken cancellation_;  // the workers' calls stop with the iterator
};

}  // namespace

std::unique_ptr<IteratorBase> MakeMapAndBatchIterator(const DatasetPtr& input,
                                                      std::shared_ptr<const DatasetBase> batch,
                                                      int64_t batch_size, bool drop_remainder) {
  auto map = std::dynamic_pointer_cast<const MapDataset>(input);
  if (map == nullptr || map->parallel_calls() == 1) return nullptr;
  return std::make_unique<MapAndBatchIterator>(std::move(map), std::move(batch), batch_size,
                                               drop_remainder);
}

namespace {

// --- MapAndBatchDataset ----------------------------------------------------------------------

// TensorFlow's fused op (tf.data.experimental.map_and_batch, and what its graphs carry): the same
// iterator as a batch over a parallel map, with num_parallel_calls workers (one included).
class MapAndBatchDataset final : public DatasetBase {
 public:
  MapAndBatchDataset(const Node& node, std::shared_ptr<const MapDataset> map, int64_t batch_size,
                     bool drop_remainder, std::vector<PartialShape> shapes)
      : DatasetBase("MapAndBatchDataset", node.name(), map->output_types(), std::move(shapes)),
        map_(std::move(map)),
        batch_size_(batch_size),
        drop_remainder_(drop_remainder) {}

  std::unique_ptr<IteratorBase> MakeIterator() const override {
    return std::make_unique<MapAndBatchIterator>(map_, self(), batch_size_, drop_remainder_);
  }
  int64_t Cardinality() const override {
    return BatchedCardinality(map_->Cardinality(), batch_size_, drop_remainder_);
  }

 private:
  std::shared_ptr<const MapDataset> map_;
  int64_t batch_size_;
  bool drop_remainder_;
};

// A batch's shape without its batch dimension: the shape of one call's result.
PartialShape RowShape(const PartialShape& batch) {
  if (!batch.known_rank() || batch.rank() == 0) return PartialShape::Unknown();
  std::vector<int64_t> dims = batch.ToVector();
  dims.erase(dims.begin());
  return PartialShape(dims);
}

Status MapAndBatchKernel(KernelContext& ctx) {
  DatasetPtr input;
  FS_RETURN_IF_ERROR(GetInputDataset(ctx, 0, &input));
  // Inputs: the dataset, the captured arguments, then batch_size, num_parallel_calls and
  // drop_remainder.
  const int n = ctx.num_inputs();
  int64_t batch_size = 0, parallel_calls = 0;
  bool drop_remainder = false;
  FS_RETURN_IF_ERROR(ScalarInt64Input(ctx, n - 3, "batch_size", &batch_size));
  FS_RETURN_IF_ERROR(ScalarBoolInput(ctx, n - 1, "drop_remainder", &drop_remainder));
  if (batch_size <= 0) {
    return errors::InvalidArgument("batch_size must be greater than zero, got ", batch_size);
  }
  FS_RETURN_IF_ERROR(ParallelCallsInput(ctx, n - 2, &parallel_calls));
  std::unique_ptr<UserFunction> fn;
  FS_RETURN_IF_ERROR(ReadUserFunction(ctx, "f", n - 3, &fn));
  std::vector<DType> types;
  std::vector<PartialShape> shapes;
  FS_RETURN_IF_ERROR(ElementSpecAttrs(ctx.node(), &types, &shapes));
  std::vector<PartialShape> row_shapes;
  for (const PartialShape& shape : shapes) row_shapes.push_back(RowShape(shape));
  auto map = std::make_shared<MapDataset>("MapAndBatchDataset", ctx.node(), input, std::move(fn),
                                          parallel_calls,
                                          ctx.attrs().GetOr<bool>("preserve_cardinality", false),
                                          std::move(types), std::move(row_shapes));
  return SetOutputDataset(
      ctx, std::make_shared<MapAndBatchDataset>(ctx.node(), std::move(map), batch_size,
                                                drop_remainder, std::move(shapes)));
}

FS_REGISTER_OP(FunctionDatasetOp("MapAndBatchDataset", "f", {"batch_size", "num_parallel_calls"})
                   .Input("drop_remainder", "bool")
                   .Attr("preserve_cardinality", false)
                   .Kernel("CPU", MapAndBatchKernel)
                   .Doc("f applied to num_parallel_calls elements at a time, the results stacked "
                        "into batches of batch_size (tf.data.experimental.map_and_batch)."));

}  // namespace

}  // namespace flowstone::data
