// Horovod's collectives as graph ops (horovod.tensorflow.mpi_ops): HorovodAllreduce,
// HorovodGroupedAllreduce, HorovodAllgather, HorovodBroadcast, HorovodAlltoall, and the
// HorovodRank/Size/LocalRank/LocalSize scalars. A kernel hands its tensors to the collectives'
// background thread (runtime/collectives/controller.cc) and blocks until every rank has
// submitted them and the operation ran. The ops are Collective(): a plan holding one runs one
// node at a time in plan order, which is the same on every rank, so a rank never waits in one
// collective while its peers wait in another. Gradients are Horovod's.
//
// HorovodAllreduceStart / HorovodAllreduceDone split an allreduce in two so that it overlaps
// with the backward pass, as Horovod's asynchronous ops do: Start submits the tensor and returns
// at once, Done waits for the result. The plan runs each Start as soon as its input exists
// (IsEarlyCollectiveOpType), while the gradients of earlier layers are still being computed.
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>

#include "flowstone/collectives.h"
#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "flowstone/variant.h"
#include "ops/distributed/horovod_kernels.h"

namespace flowstone {
namespace {

const std::vector<DType> kCollectiveTypes = {DType::kFloat32, DType::kFloat64, DType::kInt32,
                                             DType::kInt64, DType::kFloat16};

// Submitted collectives, completed by the background thread.
struct CollectiveWaiter {
  std::mutex mu;
  std::condition_variable cv;
  size_t remaining = 0;
  Status status;
  std::vector<CollectiveResult> results;
};

// Hands `requests` to the background thread; the returned waiter completes when all ran.
std::shared_ptr<CollectiveWaiter> SubmitCollectives(KernelContext& ctx,
                                                    std::vector<CollectiveRequest> requests) {
  // A tensor in a device's own memory (a GPU) is reduced there, by the device's collectives.
  Device* device = ctx.device()->host_memory() ? nullptr : ctx.device();
  for (CollectiveRequest& q : requests) q.device = device;
  auto waiter = std::make_shared<CollectiveWaiter>();
  waiter->remaining = requests.size();
  waiter->results.resize(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    EnqueueCollective(std::move(requests[i]),
                      [waiter, i](const Status& s, CollectiveResult result) {
                        std::lock_guard<std::mutex> lock(waiter->mu);
                        if (!s.ok() && waiter->status.ok()) waiter->status = s;
                        waiter->results[i] = std::move(result);
                        if (--waiter->remaining == 0) waiter->cv.notify_all();
                      });
  }
  return waiter;
}

// Waits for `waiter`; a cancelled run stops waiting (the background thread still finishes the
// collectives, which the other ranks need, into the shared state).
Status AwaitCollectives(KernelContext& ctx, CollectiveWaiter& waiter,
                        std::vector<CollectiveResult>* results) {
  std::unique_lock<std::mutex> lock(waiter.mu);
  while (waiter.remaining > 0) {
    waiter.cv.wait_for(lock, std::chrono::milliseconds(50));
    FS_RETURN_IF_ERROR(ctx.CheckCancelled());
  }
  FS_RETURN_IF_ERROR(waiter.status);
  *results = waiter.results;
  return Status::OK();
}

Status RunCollectives(KernelContext& ctx, std::vector<CollectiveRequest> requests,
                      std::vector<CollectiveResult>* results) {
  std::shared_ptr<CollectiveWaiter> waiter = SubmitCollectives(ctx, std::move(requests));
  return AwaitCollectives(ctx, *waiter, results);
}

// What HorovodAllreduceStart hands to HorovodAllreduceDone: the submitted allreduce.
class PendingAllreduce final : public VariantValue {
 public:
  explicit PendingAllreduce(std::shared_ptr<CollectiveWaiter> waiter)
      : waiter_(std::move(waiter)) {}
  std::string TypeName() const override { return "flowstone::PendingAllreduce"; }
  std::string DebugString() const override { return "<a submitted allreduce>"; }
  std::unique_ptr<VariantValue> Clone() const override {
    return std::make_unique<PendingAllreduce>(waiter_);
  }
  CollectiveWaiter& waiter() const { return *waiter_; }

 private:
  std::shared_ptr<CollectiveWaiter> waiter_;
};

Status AllreduceRequest(KernelContext& ctx, const Tensor& input, std::string name,
                        CollectiveRequest* q) {
  const int64_t op = ctx.attrs().GetOr<int64_t>("reduce_op", 1);
  if (op == static_cast<int64_t>(ReduceOp::kAdasum)) {
    return errors::Unimplemented(ctx.node().type(),
                                 ": op=hvd.Adasum is not implemented in Flowstone; use hvd.Average "
                                 "or hvd.Sum");
  }
  if (op != static_cast<int64_t>(ReduceOp::kAverage) && op != static_cast<int64_t>(ReduceOp::kSum))
    return errors::InvalidArgument(ctx.node().type(), ": unknown reduce_op ", op);
  q->name = std::move(name);
  q->kind = CollectiveKind::kAllreduce;
  q->reduce_op = static_cast<ReduceOp>(op);
  q->prescale = ctx.attrs().GetOr<double>("prescale_factor", 1.0);
  q->postscale = ctx.attrs().GetOr<double>("postscale_factor", 1.0);
  q->input = input;
  return Status::OK();
}

}  // namespace

Status HorovodAllreduceKernel(KernelContext& ctx) {
  std::vector<CollectiveRequest> q(1);
  FS_RETURN_IF_ERROR(AllreduceRequest(ctx, ctx.input(0), ctx.node().name(), &q[0]));
  std::vector<CollectiveResult> results;
  FS_RETURN_IF_ERROR(RunCollectives(ctx, std::move(q), &results));
  ctx.SetOutput(0, std::move(results[0].output));
  return Status::OK();
}

Status HorovodAllreduceStartKernel(KernelContext& ctx) {
  std::vector<CollectiveRequest> q(1);
  FS_RETURN_IF_ERROR(AllreduceRequest(ctx, ctx.input(0), ctx.node().name(), &q[0]));
  Tensor handle = Tensor::Host(DType::kVariant, TensorShape{});
  handle.data<Variant>()[0] =
      Variant(std::make_shared<PendingAllreduce>(SubmitCollectives(ctx, std::move(q))));
  ctx.SetOutput(0, std::move(handle));
  return Status::OK();
}

Status HorovodAllreduceDoneKernel(KernelContext& ctx) {
  const Tensor& handle = ctx.input(0);
  const PendingAllreduce* pending = handle.dtype() == DType::kVariant && handle.num_elements() == 1
                                        ? handle.data<Variant>()[0].get<PendingAllreduce>()
                                        : nullptr;
  if (pending == nullptr) {
    return errors::InvalidArgument(
        "HorovodAllreduceDone needs the handle a HorovodAllreduceStart returned; got a ",
        DTypeName(handle.dtype()), " tensor of shape ", handle.shape().ToString());
  }
  std::vector<CollectiveResult> results;
  FS_RETURN_IF_ERROR(AwaitCollectives(ctx, pending->waiter(), &results));
  const Tensor& like = ctx.input(1);
  if (results[0].output.dtype() != like.dtype() || results[0].output.shape() != like.shape()) {
    return errors::InvalidArgument(
        "HorovodAllreduceDone: the reduced tensor (", DTypeName(results[0].output.dtype()), " ",
        results[0].output.shape().ToString(), ") does not match `like` (", DTypeName(like.dtype()),
        " ", like.shape().ToString(), ")");
  }
  ctx.SetOutput(0, std::move(results[0].output));
  return Status::OK();
}

// All tensors of the group are submitted at once, so they are negotiated in one cycle and fused.
Status HorovodGroupedAllreduceKernel(KernelContext& ctx) {
  std::vector<CollectiveRequest> q(ctx.num_inputs());
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    FS_RETURN_IF_ERROR(
        AllreduceRequest(ctx, ctx.input(i), StrCat(ctx.node().name(), "/", i), &q[i]));
  }
  std::vector<CollectiveResult> results;
  FS_RETURN_IF_ERROR(RunCollectives(ctx, std::move(q), &results));
  for (int i = 0; i < ctx.num_outputs(); ++i) ctx.SetOutput(i, std::move(results[i].output));
  return Status::OK();
}

Status HorovodAllgatherKernel(KernelContext& ctx) {
  if (ctx.input(0).rank() == 0) {
    return errors::InvalidArgument("HorovodAllgather needs a tensor of rank 1 or more (it ",
                                   "concatenates along the first dimension); got a scalar. ",
                                   "Reshape it to [1] first");
  }
  std::vector<CollectiveRequest> q(1);
  q[0].name = ctx.node().name();
  q[0].kind = CollectiveKind::kAllgather;
  q[0].input = ctx.input(0);
  std::vector<CollectiveResult> results;
  FS_RETURN_IF_ERROR(RunCollectives(ctx, std::move(q), &results));
  ctx.SetOutput(0, std::move(results[0].output));
  return Status::OK();
}

Status HorovodBroadcastKernel(KernelContext& ctx) {
  std::vector<CollectiveRequest> q(1);
  q[0].name = ctx.node().name();
  q[0].kind = CollectiveKind::kBroadcast;
  q[0].root = static_cast<int>(ctx.attrs().GetOr<int64_t>("root_rank", 0));
  q[0].input = ctx.input(0);
  std::vector<CollectiveResult> results;
  FS_RETURN_IF_ERROR(RunCollectives(ctx, std::move(q), &results));
  ctx.SetOutput(0, std::move(results[0].output));
  return Status::OK();
}

namespace {

Status AlltoallKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& splits = ctx.input(1);
  CollectiveTopology topology;
  FS_RETURN_IF_ERROR(GetCollectiveTopology(&topology));
  if (x.rank() == 0) {
    return errors::InvalidArgument("HorovodAlltoall needs a tensor of rank 1 or more; got a ",
                                   "scalar");
  }
  std::vector<CollectiveRequest> q(1);
  if (splits.num_elements() == 0) {
    // No splits: the first dimension is divided evenly among the ranks.
    if (x.dim(0) % topology.size != 0) {
      return errors::InvalidArgument("HorovodAlltoall without splits needs the first dimension (",
                                     x.dim(0), ") to divide evenly by the number of ranks (",
                                     topology.size, "); pass splits");
    }
    q[0].splits.assign(topology.size, x.dim(0) / topology.size);
  } else {
    int64_t total = 0;
    for (int64_t i = 0; i < splits.num_elements(); ++i) {
      const int64_t s = splits.data<int32_t>()[i];
      if (s < 0) return errors::InvalidArgument("HorovodAlltoall: splits must not be negative");
      q[0].splits.push_back(s);
      total += s;
    }
    if (total != x.dim(0)) {
      return errors::InvalidArgument("HorovodAlltoall: splits sum to ", total,
                                     " but the tensor's first dimension is ", x.dim(0));
    }
  }
  q[0].name = ctx.node().name();
  q[0].kind = CollectiveKind::kAlltoall;
  q[0].input = x;
  std::vector<CollectiveResult> results;
  FS_RETURN_IF_ERROR(RunCollectives(ctx, std::move(q), &results));
  ctx.SetOutput(0, std::move(results[0].output));
  std::vector<int32_t> received(results[0].received_splits.begin(),
                                results[0].received_splits.end());
  ctx.SetOutput(1, Tensor::FromVector(received, {static_cast<int64_t>(received.size())}));
  return Status::OK();
}

// Shapes: unchanged for allreduce and broadcast; the first dimension unknown for allgather and
// alltoall.
Status FirstDimUnknown(InferenceContext& ctx) {
  PartialShape in = ctx.input(0);
  if (!in.known_rank()) {
    ctx.set_output(0, PartialShape::Unknown());
  } else if (in.rank() == 0) {
    return errors::InvalidArgument(ctx.op_type(),
                                   " needs a tensor of rank 1 or more; got a scalar");
  } else {
    std::vector<int64_t> dims = in.ToVector();
    dims[0] = PartialShape::kUnknownDim;
    ctx.set_output(0, PartialShape(dims));
  }
  for (int i = 1; i < ctx.num_outputs(); ++i) ctx.set_output(i, PartialShape::UnknownOfRank(1));
  return Status::OK();
}

Status GroupedUnchanged(InferenceContext& ctx) {
  for (int i = 0; i < ctx.num_inputs(); ++i) ctx.set_output(i, ctx.input(i));
  return Status::OK();
}

AttrMap AllreduceAttrs(const AttrMap& from) {
  AttrMap attrs;
  attrs.Set("reduce_op", from.GetOr<int64_t>("reduce_op", 1));
  attrs.Set("prescale_factor", from.GetOr<double>("prescale_factor", 1.0));
  attrs.Set("postscale_factor", from.GetOr<double>("postscale_factor", 1.0));
  return attrs;
}

// The gradient of an allreduce is the same allreduce of the gradient.
Status AllreduceGrad(GradientContext& ctx) {
  ctx.SetInputGrad(0,
                   ctx.Op("HorovodAllreduce", {ctx.output_grad(0)}, AllreduceAttrs(ctx.attrs())));
  return ctx.status();
}

Status GroupedAllreduceGrad(GradientContext& ctx) {
  std::vector<Endpoint> grads;
  for (int i = 0; i < ctx.num_outputs(); ++i) grads.push_back(ctx.output_grad(i));
  Node* reduced = ctx.AddNode("HorovodGroupedAllreduce", grads, AllreduceAttrs(ctx.attrs()));
  for (int i = 0; reduced != nullptr && i < ctx.num_inputs(); ++i)
    ctx.SetInputGrad(i, Endpoint{reduced, i});
  return ctx.status();
}

Endpoint Int32Vector(GradientContext& ctx, std::vector<int32_t> values) {
  const int64_t n = static_cast<int64_t>(values.size());
  return ctx.Const(Tensor::FromVector(values, {n}));
}

// The gathered tensor's gradient summed over the ranks, then this rank's rows of it.
Status AllgatherGrad(GradientContext& ctx) {
  const Endpoint x = ctx.input(0);
  AttrMap sum;
  sum.Set("reduce_op", static_cast<int64_t>(ReduceOp::kSum));
  const Endpoint summed = ctx.Op("HorovodAllreduce", {ctx.output_grad(0)}, sum);
  const Endpoint shape = ctx.Shape(x);
  const Endpoint first = ctx.Op("Slice", {shape, Int32Vector(ctx, {0}), Int32Vector(ctx, {1})});
  const Endpoint sizes = ctx.Op("HorovodAllgather", {first});
  const Endpoint rank = ctx.Op("Reshape", {ctx.Op("HorovodRank", {}), Int32Vector(ctx, {1})});
  const Endpoint before = ctx.Op("Slice", {sizes, Int32Vector(ctx, {0}), rank});
  const Endpoint offset = ctx.Op("Sum", {before, Int32Vector(ctx, {0})}, {}, 0);
  const Endpoint rest = ctx.Op("Slice", {shape, Int32Vector(ctx, {1}), Int32Vector(ctx, {-1})});
  const Endpoint begin =
      ctx.Op("ConcatV2", {ctx.Op("Reshape", {offset, Int32Vector(ctx, {1})}),
                          ctx.Op("ZerosLike", {rest}), ctx.Const(Tensor::Scalar<int32_t>(0))});
  ctx.SetInputGrad(0, ctx.Op("Slice", {summed, begin, shape}));
  return ctx.status();
}

// Every rank's gradient summed; only the root's tensor reached the output, so the others get 0.
Status BroadcastGrad(GradientContext& ctx) {
  AttrMap sum;
  sum.Set("reduce_op", static_cast<int64_t>(ReduceOp::kSum));
  const Endpoint summed = ctx.Op("HorovodAllreduce", {ctx.output_grad(0)}, sum);
  const Tensor root =
      Tensor::Scalar<int32_t>(static_cast<int32_t>(ctx.attrs().GetOr<int64_t>("root_rank", 0)));
  AttrMap cast;
  cast.Set("DstT", ctx.input_type(0));
  const Endpoint is_root =
      ctx.Op("Cast", {ctx.Op("Equal", {ctx.Op("HorovodRank", {}), ctx.Const(root)})}, cast);
  ctx.SetInputGrad(0, ctx.Op("Mul", {summed, is_root}));
  return ctx.status();
}

// Rows went out by `splits` and came back by received_splits: the gradient goes the other way.
Status AlltoallGrad(GradientContext& ctx) {
  Node* back = ctx.AddNode("HorovodAlltoall", {ctx.output_grad(0), ctx.output(1)});
  if (back != nullptr) ctx.SetInputGrad(0, Endpoint{back, 0});
  return ctx.status();
}

FS_REGISTER_OP(OpBuilder("HorovodAllreduce")
                   .Input("tensor", "T")
                   .Output("sum", "T")
                   .TypeAttr("T", kCollectiveTypes)
                   .Attr("reduce_op", 1)
                   .Attr("prescale_factor", 1.0f)
                   .Attr("postscale_factor", 1.0f)
                   .Shape(shape_fns::Unchanged)
                   .Stateful()
                   .Kernel("CPU", HorovodAllreduceKernel)
                   .Gradient(AllreduceGrad)
                   .Doc("Reduces the tensor across ranks: reduce_op 0 = Average, 1 = Sum "
                        "(2 = Adasum, unimplemented)."));

Status LikeSecondInput(InferenceContext& ctx) {
  ctx.set_output(0, ctx.input(1));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("HorovodAllreduceStart")
                   .Input("tensor", "T")
                   .Output("handle", "variant")
                   .TypeAttr("T", kCollectiveTypes)
                   .Attr("reduce_op", 1)
                   .Attr("prescale_factor", 1.0f)
                   .Attr("postscale_factor", 1.0f)
                   .Shape(shape_fns::Scalar)
                   .Stateful()
                   .Kernel("CPU", HorovodAllreduceStartKernel)
                   .NotDifferentiable()
                   .Doc("Submits the tensor's allreduce (as HorovodAllreduce) and returns at "
                        "once; HorovodAllreduceDone waits for the result. DistributedOptimizer's "
                        "gradients, which are not differentiated again."));

FS_REGISTER_OP(OpBuilder("HorovodAllreduceDone")
                   .Input("handle", "variant")
                   .Input("like", "T")
                   .Output("sum", "T")
                   .TypeAttr("T", kCollectiveTypes)
                   .Shape(LikeSecondInput)
                   .Stateful()
                   .Kernel("CPU", HorovodAllreduceDoneKernel)
                   .NotDifferentiable()
                   .Doc("Waits for the allreduce HorovodAllreduceStart submitted; `like` is the "
                        "tensor submitted (the result has its dtype and shape)."));

FS_REGISTER_OP(
    OpBuilder("HorovodGroupedAllreduce")
        .InputList("tensors", "T", "num_tensors")
        .OutputList("sums", "T", "num_tensors")
        .TypeAttr("T", kCollectiveTypes)
        .Attr("reduce_op", 1)
        .Attr("prescale_factor", 1.0f)
        .Attr("postscale_factor", 1.0f)
        .Shape(GroupedUnchanged)
        .Stateful()
        .Kernel("CPU", HorovodGroupedAllreduceKernel)
        .Gradient(GroupedAllreduceGrad)
        .Doc("Allreduces a list of tensors negotiated together (hvd.grouped_allreduce)."));

FS_REGISTER_OP(OpBuilder("HorovodAllgather")
                   .Input("tensor", "T")
                   .Output("output", "T")
                   .TypeAttr("T", kCollectiveTypes)
                   .Shape(FirstDimUnknown)
                   .Stateful()
                   .Kernel("CPU", HorovodAllgatherKernel)
                   .Gradient(AllgatherGrad)
                   .Doc("Concatenates the ranks' tensors along the first dimension."));

FS_REGISTER_OP(OpBuilder("HorovodBroadcast")
                   .Input("tensor", "T")
                   .Output("output", "T")
                   .TypeAttr("T", kCollectiveTypes)
                   .RequiredAttr("root_rank", AttrType::kInt)
                   .Shape(shape_fns::Unchanged)
                   .Stateful()
                   .Kernel("CPU", HorovodBroadcastKernel)
                   .Gradient(BroadcastGrad)
                   .Doc("The root rank's tensor, on every rank."));

FS_REGISTER_OP(OpBuilder("HorovodAlltoall")
                   .Input("tensor", "T")
                   .Input("splits", "int32")
                   .Output("output", "T")
                   .Output("received_splits", "int32")
                   .TypeAttr("T", kCollectiveTypes)
                   .Shape(FirstDimUnknown)
                   .Stateful()
                   .Kernel("CPU", AlltoallKernel)
                   .Gradient(AlltoallGrad)
                   .Doc("Sends splits[r] rows of the tensor to rank r and concatenates the rows "
                        "received, in rank order."));

const bool kCollectiveTypesRegistered = [] {
  for (const char* type :
       {"HorovodAllreduce", "HorovodGroupedAllreduce", "HorovodAllgather", "HorovodBroadcast",
        "HorovodAlltoall", "HorovodAllreduceStart", "HorovodAllreduceDone"}) {
    RegisterCollectiveOpType(type);
  }
  RegisterEarlyCollectiveOpType("HorovodAllreduceStart");
  return true;
}();

// HorovodRank and friends: the process's place in the job, as int32 scalars.
struct TopologyRow {
  const char* op;
  int CollectiveTopology::* field;
};
constexpr TopologyRow kTopologyOps[] = {
    {"HorovodRank", &CollectiveTopology::rank},
    {"HorovodSize", &CollectiveTopology::size},
    {"HorovodLocalRank", &CollectiveTopology::local_rank},
    {"HorovodLocalSize", &CollectiveTopology::local_size},
};

const bool kTopologyOpsRegistered = [] {
  for (const TopologyRow& row : kTopologyOps) {
    auto field = row.field;
    OpRegistrar registrar(OpBuilder(row.op)
                              .Output("value", "int32")
                              .Shape(shape_fns::Scalar)
                              .Stateful()  // known only after hvd.init(), so never constant-folded
                              .Kernel("CPU",
                                      [field](KernelContext& ctx) {
                                        CollectiveTopology t;
                                        FS_RETURN_IF_ERROR(GetCollectiveTopology(&t));
                                        ctx.SetOutput(0, Tensor::Scalar<int32_t>(t.*field));
                                        return Status::OK();
                                      })
                              .NotDifferentiable());
  }
  return true;
}();

}  // namespace
}  // namespace flowstone
