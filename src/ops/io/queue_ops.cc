// Queue ops (TF1's input queues): FIFOQueueV2, RandomShuffleQueueV2, PaddingFIFOQueueV2 and
// PriorityQueueV2 make
// a queue in the session on first run and output its handle; QueueEnqueue(Many)V2,
// QueueDequeue(Many|UpTo)V2, QueueCloseV2, QueueSizeV2 and QueueIsClosedV2 act on it.
#include <algorithm>
#include <chrono>
#include <cstring>

#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "flowstone/variant.h"
#include "ops/io/queue.h"
#include "ops/resource_slot.h"

namespace flowstone::io {

namespace {

std::vector<int64_t> RowDims(const Tensor& batch) {
  std::vector<int64_t> dims = batch.shape().dims().ToVector();
  dims.erase(dims.begin());
  return dims;
}

// Row `i` of a batch (dimension 0), copied out.
Tensor Row(const Tensor& batch, int64_t i) {
  Tensor row = Tensor::Host(batch.dtype(), TensorShape(RowDims(batch)));
  const int64_t n = row.num_elements();
  const char* src = static_cast<const char*>(batch.raw_data()) + i * n * DTypeSize(batch.dtype());
  CopyElements(batch.dtype(), src, row.raw_data(), n);
  return row;
}

}  // namespace

QueueResource::QueueResource(Options options) : o_(std::move(options)) {
  if (o_.seed == 0 && o_.seed2 == 0) {
    rng_.seed(std::random_device{}());
  } else {
    rng_.seed(o_.seed * 0x9E3779B97F4A7C15ULL ^ o_.seed2);
  }
}

const char* QueueResource::KindName() const {
  switch (o_.kind) {
    case Kind::kRandomShuffle:
      return "RandomShuffleQueue";
    case Kind::kPadding:
      return "PaddingFIFOQueue";
    case Kind::kPriority:
      return "PriorityQueue";
    default:
      return "FIFOQueue";
  }
}

Status QueueResource::CheckTuple(const QueueTuple& tuple, bool many) const {
  if (tuple.size() != o_.dtypes.size()) {
    return errors::InvalidArgument(KindName(), " '", o_.name, "' has ", o_.dtypes.size(),
                                   " components but ", tuple.size(), " were enqueued");
  }
  for (size_t c = 0; c < tuple.size(); ++c) {
    const Tensor& t = tuple[c];
    if (t.dtype() != o_.dtypes[c]) {
      return errors::InvalidArgument(KindName(), " '", o_.name, "': component ", c, " expects ",
                                     DTypeName(o_.dtypes[c]), " but got ", DTypeName(t.dtype()));
    }
    if (many && (t.rank() == 0 || t.dim(0) != tuple[0].dim(0))) {
      return errors::InvalidArgument(
          "EnqueueMany on ", KindName(), " '", o_.name,
          "' needs every component batched along a first dimension of one size; component ", c,
          " has shape ", t.shape().ToString());
    }
    if (o_.shapes.empty()) continue;
    TensorShape element = many ? TensorShape(RowDims(t)) : t.shape();
    if (!o_.shapes[c].IsCompatibleWith(element)) {
      return errors::InvalidArgument("Shape mismatch in tuple component ", c, " of ", KindName(),
                                     " '", o_.name, "'. Expected ", o_.shapes[c].ToString(),
                                     ", got ", element.ToString());
    }
  }
  return Status::OK();
}

// The cancellation token has no list of waiters to wake, so a waiting kernel polls it between
// short waits; enqueues, dequeues and close wake waiters at once through cv_.
template <typename Ready>
Status QueueResource::Wait(std::unique_lock<std::mutex>& lock, KernelContext& ctx, Ready ready) {
  while (!ready()) {
    FS_RETURN_IF_ERROR(ctx.CheckCancelled());
    cv_.wait_for(lock, std::chrono::milliseconds(20));
  }
  return Status::OK();
}

Status QueueResource::Enqueue(KernelContext& ctx, const QueueTuple& tuple, bool many) {
  FS_RETURN_IF_ERROR(CheckTuple(tuple, many));
  const int64_t rows = many ? tuple[0].dim(0) : 1;
  std::unique_lock<std::mutex> lock(mu_);
  if (closed_) return errors::Cancelled(KindName(), " '", o_.name, "' is closed.");
  // An enqueue already waiting when the queue closes still completes, unless the close cancelled
  // pending enqueues (as TF's QueueCloseV2).
  for (int64_t r = 0; r < rows; ++r) {
    FS_RETURN_IF_ERROR(Wait(lock, ctx, [&] {
      return enqueues_cancelled_ || o_.capacity < 0 ||
             static_cast<int64_t>(elements_.size()) < o_.capacity;
    }));
    if (enqueues_cancelled_) {
      return errors::Cancelled("Enqueue on ", KindName(), " '", o_.name,
                               "' was cancelled: the queue was closed with "
                               "cancel_pending_enqueues");
    }
    QueueTuple element;
    for (const Tensor& t : tuple) element.push_back(many ? Row(t, r) : t);
    Insert(std::move(element));
    cv_.notify_all();
  }
  return Status::OK();
}

int64_t QueueResource::Available() const {
  const int64_t size = static_cast<int64_t>(elements_.size());
  if (o_.kind != Kind::kRandomShuffle || closed_) return size;
  return std::max<int64_t>(0, size - o_.min_after_dequeue);
}

void QueueResource::Insert(QueueTuple element) {
  if (o_.kind != Kind::kPriority) {
    elements_.push_back(std::move(element));
    return;
  }
  // After every element of a lower or equal priority, so that equal priorities stay in order.
  const int64_t priority = element[0].data<int64_t>()[0];
  auto position =
      std::upper_bound(elements_.begin(), elements_.end(), priority,
                       [](int64_t p, const QueueTuple& e) { return p < e[0].data<int64_t>()[0]; });
  elements_.insert(position, std::move(element));
}

QueueTuple QueueResource::TakeOne() {
  size_t index = 0;
  if (o_.kind == Kind::kRandomShuffle) {
    index = std::uniform_int_distribution<size_t>(0, elements_.size() - 1)(rng_);
    std::swap(elements_[index], elements_.front());
  }
  QueueTuple out = std::move(elements_.front());
  elements_.pop_front();
  return out;
}

Status QueueResource::Dequeue(KernelContext& ctx, int64_t n, bool up_to, QueueTuple* out) {
  const int64_t want = n < 0 ? 1 : n;
  std::vector<QueueTuple> rows;
  {
    std::unique_lock<std::mutex> lock(mu_);
    FS_RETURN_IF_ERROR(Wait(lock, ctx, [&] { return closed_ || Available() >= want; }));
    int64_t take = want;
    if (Available() < want) {
      const int64_t size = static_cast<int64_t>(elements_.size());
      if (!up_to || size == 0) {
        return errors::OutOfRange(KindName(), " '", o_.name,
                                  "' is closed and has insufficient elements (requested ", want,
                                  ", current size ", size, ")");
      }
      take = size;
    }
    for (int64_t i = 0; i < take; ++i) rows.push_back(TakeOne());
    cv_.notify_all();
  }
  if (n < 0) {
    *out = std::move(rows[0]);
    return Status::OK();
  }
  return Batch(rows, out);
}

// Stacks rows into one batch per component; a padding queue pads each row to the largest shape
// in the batch (with zeros, or empty strings).
Status QueueResource::Batch(std::vector<QueueTuple>& rows, QueueTuple* out) const {
  out->clear();
  for (size_t c = 0; c < o_.dtypes.size(); ++c) {
    const DType dtype = o_.dtypes[c];
    std::vector<int64_t> dims;
    if (rows.empty()) {
      if (!o_.shapes.empty() && o_.shapes[c].IsFullyDefined()) dims = o_.shapes[c].ToVector();
      if (!o_.shapes.empty() && !o_.shapes[c].IsFullyDefined()) {
        for (int64_t d : o_.shapes[c].ToVector()) dims.push_back(std::max<int64_t>(d, 0));
      }
    } else {
      dims = rows[0][c].shape().dims().ToVector();
      for (const QueueTuple& row : rows) {
        const Tensor& t = row[c];
        if (o_.kind == Kind::kPadding && t.rank() == static_cast<int>(dims.size())) {
          for (int d = 0; d < t.rank(); ++d) dims[d] = std::max(dims[d], t.dim(d));
        } else if (t.shape().dims().ToVector() != dims) {
          return errors::InvalidArgument(
              "Dequeuing a batch from ", KindName(), " '", o_.name, "': component ", c,
              " has shapes ", rows[0][c].shape().ToString(), " and ", t.shape().ToString(),
              "; give the queue shapes, or use a PaddingFIFOQueue for elements of varying shape");
        }
      }
    }
    std::vector<int64_t> batch_dims = dims;
    batch_dims.insert(batch_dims.begin(), static_cast<int64_t>(rows.size()));
    Tensor batch = Tensor::Host(dtype, TensorShape(batch_dims));
    if (!HoldsObjects(dtype)) std::memset(batch.raw_data(), 0, batch.bytes());
    const TensorShape row_shape(dims);
    const int64_t row_elements = row_shape.num_elements();
    char* base = static_cast<char*>(batch.raw_data());
    const size_t size = DTypeSize(dtype);
    for (size_t r = 0; r < rows.size(); ++r) {
      const Tensor& t = rows[r][c];
      char* dst = base + r * row_elements * size;
      if (t.shape().dims().ToVector() == dims) {
        CopyElements(dtype, t.raw_data(), dst, row_elements);
        continue;
      }
      // Padded: copy the row's innermost runs into place, one run per index of the outer dims.
      const int rank = t.rank();
      const int64_t inner = rank == 0 ? 1 : t.dim(rank - 1);
      const int64_t runs = inner == 0 ? 0 : t.num_elements() / inner;
      for (int64_t run = 0; run < runs; ++run) {
        int64_t rest = run, offset = 0, stride = inner == 0 ? 0 : dims[rank - 1];
        for (int d = rank - 2; d >= 0; --d) {
          offset += (rest % t.dim(d)) * stride;
          rest /= t.dim(d);
          stride *= dims[d];
        }
        CopyElements(dtype, static_cast<const char*>(t.raw_data()) + run * inner * size,
                     dst + offset * size, inner);
      }
    }
    out->push_back(std::move(batch));
  }
  return Status::OK();
}

void QueueResource::Close(bool cancel_pending_enqueues) {
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  enqueues_cancelled_ = enqueues_cancelled_ || cancel_pending_enqueues;
  cv_.notify_all();
}

int64_t QueueResource::Size() {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(elements_.size());
}

bool QueueResource::IsClosed() {
  std::lock_guard<std::mutex> lock(mu_);
  return closed_;
}

namespace {

// The slot's value: a scalar variant holding the queue (shared, never copied).
class QueueHolder final : public VariantValue {
 public:
  explicit QueueHolder(std::shared_ptr<QueueResource> queue) : queue_(std::move(queue)) {}
  std::string TypeName() const override { return "tensorflow::QueueInterface"; }
  std::string DebugString() const override {
    return std::string("<") + queue_->KindName() + " " + queue_->options().name + ">";
  }
  std::unique_ptr<VariantValue> Clone() const override {
    return std::make_unique<QueueHolder>(queue_);
  }
  const std::shared_ptr<QueueResource>& queue() const { return queue_; }

 private:
  std::shared_ptr<QueueResource> queue_;
};

}  // namespace

Status QueueFromHandle(const Tensor& handle, std::shared_ptr<QueueResource>* out) {
  Var* slot = VarFromHandle(handle);
  std::lock_guard<std::mutex> lock(slot->mu());
  const QueueHolder* holder = HeldInSlot<QueueHolder>(slot);
  if (holder == nullptr) {
    return errors::FailedPrecondition("The resource '", slot->name(), "' is not a queue");
  }
  *out = holder->queue();
  return Status::OK();
}

namespace {

// --- FIFOQueueV2, RandomShuffleQueueV2, PaddingFIFOQueueV2 ----------------------------------

class QueueOpKernel final : public OpKernel {
 public:
  QueueOpKernel(const Node& node, QueueResource::Kind kind) : OpKernel(node), kind_(kind) {}

  Status Compute(KernelContext& ctx) override {
    const AttrMap& attrs = node().attrs();
    std::string shared = attrs.GetOr<std::string>("shared_name", "");
    QueueResource::Options o;
    o.name = shared.empty() ? node().name() : shared;
    o.kind = kind_;
    FS_RETURN_IF_ERROR(attrs.Get("component_types", &o.dtypes));
    o.shapes = attrs.GetOr<std::vector<PartialShape>>("shapes", {});
    if (kind_ == QueueResource::Kind::kPriority) {
      // TensorFlow's PriorityQueueV2: the int64 scalar priority comes before the components.
      if (o.shapes.size() != o.dtypes.size()) {
        return errors::InvalidArgument(node().type(), " '", node().name(), "': shapes has ",
                                       o.shapes.size(), " entries but component_types has ",
                                       o.dtypes.size(),
                                       "; a PriorityQueue needs a shape for "
                                       "every component");
      }
      o.dtypes.insert(o.dtypes.begin(), DType::kInt64);
      o.shapes.insert(o.shapes.begin(), PartialShape(Dims{}));
    }
    o.capacity = attrs.GetOr<int64_t>("capacity", -1);
    o.min_after_dequeue = attrs.GetOr<int64_t>("min_after_dequeue", 0);
    o.seed = static_cast<uint64_t>(attrs.GetOr<int64_t>("seed", 0));
    o.seed2 = static_cast<uint64_t>(attrs.GetOr<int64_t>("seed2", 0));
    if (!o.shapes.empty() && o.shapes.size() != o.dtypes.size()) {
      return errors::InvalidArgument(node().type(), " '", node().name(), "': shapes has ",
                                     o.shapes.size(), " entries but component_types has ",
                                     o.dtypes.size(), "; give one shape per component");
    }
    if (kind_ != QueueResource::Kind::kPadding) {
      for (const PartialShape& s : o.shapes) {
        if (!s.IsFullyDefined()) {
          return errors::InvalidArgument(node().type(), " '", node().name(), "': shape ",
                                         s.ToString(),
                                         " is not fully defined; use a PaddingFIFOQueue");
        }
      }
    }
    Var* slot = ctx.resources()->LookupOrCreateVar("queue:" + o.name, DType::kVariant,
                                                   PartialShape(Dims{}));
    {
      std::lock_guard<std::mutex> lock(slot->mu());
      if (!slot->initialized()) {
        Tensor value = Tensor::Host(DType::kVariant, TensorShape{});
        value.data<Variant>()[0] =
            Variant(std::make_shared<QueueHolder>(std::make_shared<QueueResource>(std::move(o))));
        slot->value() = std::move(value);
      }
    }
    Tensor* out;
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{}, &out));
    std::memcpy(out->raw_data(), &slot, sizeof(slot));
    return Status::OK();
  }

 private:
  QueueResource::Kind kind_;
};

struct QueueRow {
  const char* name;
  QueueResource::Kind kind;
  const char* doc;
};

const QueueRow kQueues[] = {
    {"FIFOQueueV2", QueueResource::Kind::kFifo, "A queue that produces elements in FIFO order."},
    {"RandomShuffleQueueV2", QueueResource::Kind::kRandomShuffle,
     "A queue that dequeues elements in a random order, keeping min_after_dequeue while open."},
    {"PaddingFIFOQueueV2", QueueResource::Kind::kPadding,
     "A FIFO queue whose dequeue_many pads elements of varying shape to the batch's largest."},
    {"PriorityQueueV2", QueueResource::Kind::kPriority,
     "A queue of (int64 priority, components...) tuples that dequeues the lowest priority "
     "first."},
};

// TensorFlow's op defs give component_types a minimum length of 1: a queue of empty tuples has
// no first dimension for EnqueueMany to batch along.
Status QueueShape(InferenceContext& ctx) {
  std::vector<DType> dtypes;
  FS_RETURN_IF_ERROR(ctx.GetAttr("component_types", &dtypes));
  // A priority queue's tuples always hold the priority, so its own components may be none.
  if (dtypes.empty() && ctx.op_type() != "PriorityQueueV2") {
    return errors::InvalidArgument("Attr 'component_types' of '", ctx.op_type(),
                                   "' Op passed list of length 0 less than minimum 1.");
  }
  return shape_fns::Scalar(ctx);
}

const bool kQueuesRegistered = [] {
  for (const QueueRow& row : kQueues) {
    OpBuilder b(row.name);
    b.Output("handle", "resource")
        .RequiredAttr("component_types", AttrType::kTypeList)
        .Attr("shapes", AttrValue(std::vector<PartialShape>{}))
        .Attr("capacity", -1)
        .Attr("container", "")
        .Attr("shared_name", "");
    if (row.kind == QueueResource::Kind::kRandomShuffle) {
      b.Attr("min_after_dequeue", 0).Attr("seed", 0).Attr("seed2", 0);
    }
    const QueueResource::Kind kind = row.kind;
    b.Stateful()
        .Shape(QueueShape)
        .KernelFactory("CPU",
                       [kind](const Node& node, std::unique_ptr<OpKernel>* out) {
                         *out = std::make_unique<QueueOpKernel>(node, kind);
                         return Status::OK();
                       })
        .NotDifferentiable()
        .Doc(row.doc);
    OpRegistrar registrar(b);
  }
  return true;
}();

// --- Enqueue, dequeue, close, size ----------------------------------------------------------

Status GetQueue(KernelContext& ctx, std::shared_ptr<QueueResource>* out) {
  return QueueFromHandle(ctx.input(0), out);
}

template <bool kMany>
Status EnqueueKernel(KernelContext& ctx) {
  std::shared_ptr<QueueResource> queue;
  FS_RETURN_IF_ERROR(GetQueue(ctx, &queue));
  QueueTuple tuple;
  for (int i = 1; i < ctx.num_inputs(); ++i) tuple.push_back(ctx.input(i));
  return queue->Enqueue(ctx, tuple, kMany);
}

enum class DequeueMode { kOne, kMany, kUpTo };

template <DequeueMode kMode>
Status DequeueKernel(KernelContext& ctx) {
  std::shared_ptr<QueueResource> queue;
  FS_RETURN_IF_ERROR(GetQueue(ctx, &queue));
  int64_t n = -1;
  if (kMode != DequeueMode::kOne) {
    const Tensor& count = ctx.input(1);
    if (count.rank() != 0) {
      return errors::InvalidArgument(ctx.node().type(), " '", ctx.node().name(),
                                     "': n must be a scalar, got shape ", count.shape().ToString());
    }
    n = count.ElementAsInt64(0);
    if (n < 0) {
      return errors::InvalidArgument(ctx.node().type(), " '", ctx.node().name(),
                                     "': n must be >= 0, got ", n);
    }
  }
  if (ctx.num_outputs() != static_cast<int>(queue->options().dtypes.size())) {
    return errors::InvalidArgument(ctx.node().type(), " '", ctx.node().name(), "' has ",
                                   ctx.num_outputs(), " outputs but queue '", queue->options().name,
                                   "' has ", queue->options().dtypes.size(), " components");
  }
  QueueTuple tuple;
  FS_RETURN_IF_ERROR(queue->Dequeue(ctx, n, kMode == DequeueMode::kUpTo, &tuple));
  for (int i = 0; i < ctx.num_outputs(); ++i) ctx.SetOutput(i, std::move(tuple[i]));
  return Status::OK();
}

Status UnknownOutputs(InferenceContext& ctx) {
  for (int i = 0; i < ctx.num_outputs(); ++i) ctx.set_output(i, PartialShape::Unknown());
  return Status::OK();
}

// The ops that move tuples through a queue share the handle, the components, the timeout and
// their marks; dequeues of many take a count.
OpBuilder QueueTupleOp(const char* name, bool enqueue, bool counted) {
  OpBuilder builder(name);
  builder.Input("handle", "resource");
  if (counted) builder.Input("n", "int32");
  if (enqueue) {
    builder.InputTypeList("components", "Tcomponents").Shape(shape_fns::NoOutputs);
  } else {
    builder.OutputTypeList("components", "component_types").Shape(UnknownOutputs);
  }
  builder.Attr("timeout_ms", -1).Stateful().NotDifferentiable();
  return builder;
}

FS_REGISTER_OP(QueueTupleOp("QueueEnqueueV2", true, false)
                   .Kernel("CPU", EnqueueKernel<false>)
                   .Doc("Adds one tuple to a queue, blocking while it is full."));

FS_REGISTER_OP(QueueTupleOp("QueueEnqueueManyV2", true, false)
                   .Kernel("CPU", EnqueueKernel<true>)
                   .Doc("Adds the rows (dimension 0) of the components to a queue as tuples."));

FS_REGISTER_OP(QueueTupleOp("QueueDequeueV2", false, false)
                   .Kernel("CPU", DequeueKernel<DequeueMode::kOne>)
                   .Doc("Removes one tuple from a queue, blocking until there is one; "
                        "OutOfRange once the queue is closed and empty."));

FS_REGISTER_OP(QueueTupleOp("QueueDequeueManyV2", false, true)
                   .Kernel("CPU", DequeueKernel<DequeueMode::kMany>)
                   .Doc("Removes n tuples from a queue, stacked; OutOfRange once the queue is "
                        "closed with fewer than n."));

FS_REGISTER_OP(QueueTupleOp("QueueDequeueUpToV2", false, true)
                   .Kernel("CPU", DequeueKernel<DequeueMode::kUpTo>)
                   .Doc("Like QueueDequeueManyV2, but a closed queue gives what it has left."));

Status CloseKernel(KernelContext& ctx) {
  std::shared_ptr<QueueResource> queue;
  FS_RETURN_IF_ERROR(GetQueue(ctx, &queue));
  queue->Close(ctx.attrs().GetOr<bool>("cancel_pending_enqueues", false));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("QueueCloseV2")
                   .Input("handle", "resource")
                   .Attr("cancel_pending_enqueues", false)
                   .Stateful()
                   .Shape(shape_fns::NoOutputs)
                   .Kernel("CPU", CloseKernel)
                   .NotDifferentiable()
                   .Doc("Closes a queue: enqueues fail from now on, dequeues drain what is left."));

Status SizeKernel(KernelContext& ctx) {
  std::shared_ptr<QueueResource> queue;
  FS_RETURN_IF_ERROR(GetQueue(ctx, &queue));
  ctx.SetOutput(0, Tensor::Scalar<int32_t>(static_cast<int32_t>(queue->Size())));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("QueueSizeV2")
                   .Input("handle", "resource")
                   .Output("size", "int32")
                   .Stateful()
                   .Shape(shape_fns::Scalar)
                   .Kernel("CPU", SizeKernel)
                   .NotDifferentiable()
                   .Doc("The number of elements in a queue."));

Status IsClosedKernel(KernelContext& ctx) {
  std::shared_ptr<QueueResource> queue;
  FS_RETURN_IF_ERROR(GetQueue(ctx, &queue));
  ctx.SetOutput(0, Tensor::Scalar<bool>(queue->IsClosed()));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("QueueIsClosedV2")
                   .Input("handle", "resource")
                   .Output("is_closed", "bool")
                   .Stateful()
                   .Shape(shape_fns::Scalar)
                   .Kernel("CPU", IsClosedKernel)
                   .NotDifferentiable()
                   .Doc("Whether a queue is closed."));

}  // namespace
}  // namespace flowstone::io
