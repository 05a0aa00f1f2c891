// TensorFlow 2's summary writer ops (tf.summary.create_file_writer and the writes of tf.summary
// in eager mode, in tf.function and in TF1 graphs): SummaryWriter makes a writer resource,
// CreateSummaryFileWriter opens its event file, WriteSummary / WriteScalarSummary /
// WriteRawProtoSummary add events at a step, FlushSummaryWriter and CloseSummaryWriter end them.
// The writer lives in the session's (or the eager context's) ResourceMgr under
// "summary_writer:<shared_name or node name>", and writes through io::EventFileWriter, the
// background writer of tf.summary.FileWriter, so the files are TensorBoard's.
#include <chrono>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>

#include "flowstone/graph_def.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "flowstone/variant.h"
#include "io/events_writer.h"
#include "io/file_util.h"
#include "ops/resource_slot.h"
#include "proto/event.pb.h"
#include "proto/summary.pb.h"
#include "proto/tensor.pb.h"

namespace flowstone {
namespace {

// One writer: its event file once CreateSummaryFileWriter ran.
class SummaryWriterResource {
 public:
  explicit SummaryWriterResource(std::string name) : name_(std::move(name)) {}

  Status Open(const std::string& logdir, int max_queue, double flush_secs,
              const std::string& suffix) {
    std::lock_guard<std::mutex> lock(mu_);
    if (writer_ != nullptr && logdir == logdir_) return Status::OK();  // already open there
    if (writer_ != nullptr) FS_RETURN_IF_ERROR(writer_->Close());
    writer_.reset();
    FS_RETURN_IF_ERROR(io::EventFileWriter::Open(logdir, max_queue, flush_secs, suffix, &writer_));
    logdir_ = logdir;
    return Status::OK();
  }

  Status Add(proto::Event event) {
    std::lock_guard<std::mutex> lock(mu_);
    if (writer_ == nullptr) {
      return errors::FailedPrecondition(
          "Summary writer '", name_, "' has no event file yet: run its init op first (in a TF1 ",
          "graph, tf.compat.v1.summary.initialize() or sess.run(writer.init()))");
    }
    event.set_wall_time(
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
    return writer_->Add(event.SerializeAsString());
  }

  Status Flush() {
    std::lock_guard<std::mutex> lock(mu_);
    return writer_ == nullptr ? Status::OK() : writer_->Flush();
  }

  Status Close() {
    std::lock_guard<std::mutex> lock(mu_);
    if (writer_ == nullptr) return Status::OK();
    Status status = writer_->Close();
    writer_.reset();
    logdir_.clear();
    return status;
  }

 private:
  const std::string name_;
  std::mutex mu_;
  std::unique_ptr<io::EventFileWriter> writer_;
  std::string logdir_;
};

class WriterHolder final : public VariantValue {
 public:
  explicit WriterHolder(std::shared_ptr<SummaryWriterResource> writer)
      : writer_(std::move(writer)) {}
  std::string TypeName() const override { return "tensorflow::SummaryWriterInterface"; }
  std::string DebugString() const override { return "<SummaryWriter>"; }
  std::unique_ptr<VariantValue> Clone() const override {
    return std::make_unique<WriterHolder>(writer_);
  }
  const std::shared_ptr<SummaryWriterResource>& writer() const { return writer_; }

 private:
  std::shared_ptr<SummaryWriterResource> writer_;
};

Status WriterFromHandle(KernelContext& ctx, std::shared_ptr<SummaryWriterResource>* out) {
  Var* slot = VarFromHandle(ctx.input(0));
  std::lock_guard<std::mutex> lock(slot->mu());
  const WriterHolder* holder = HeldInSlot<WriterHolder>(slot);
  if (holder == nullptr) {
    return errors::FailedPrecondition("The resource '", slot->name(), "' given to ",
                                      ctx.node().type(), " is not a summary writer");
  }
  *out = holder->writer();
  return Status::OK();
}

Status ScalarInput(KernelContext& ctx, int index, const char* what) {
  if (ctx.input(index).rank() != 0) {
    return errors::InvalidArgument(ctx.node().type(), ": ", what, " must be a scalar, got shape ",
                                   ctx.input(index).shape().ToString());
  }
  return Status::OK();
}

Status NoOutputs(InferenceContext&) { return Status::OK(); }

// --- SummaryWriter, CreateSummaryFileWriter ---------------------------------------------------

Status SummaryWriterKernel(KernelContext& ctx) {
  std::string shared = ctx.attrs().GetOr<std::string>("shared_name", "");
  const std::string name = shared.empty() ? ctx.node().name() : shared;
  Var* slot = ctx.resources()->LookupOrCreateVar("summary_writer:" + name, DType::kVariant,
                                                 PartialShape(Dims{}));
  {
    std::lock_guard<std::mutex> lock(slot->mu());
    if (!slot->initialized()) {
      Tensor value = Tensor::Host(DType::kVariant, TensorShape{});
      value.data<Variant>()[0] =
          Variant(std::make_shared<WriterHolder>(std::make_shared<SummaryWriterResource>(name)));
      slot->value() = std::move(value);
    }
  }
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{}, &out));
  std::memcpy(out->raw_data(), &slot, sizeof(slot));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("SummaryWriter")
                   .Output("writer", "resource")
                   .Attr("shared_name", "")
                   .Attr("container", "")
                   .Stateful()
                   .Shape(shape_fns::Scalar)
                   .Kernel("CPU", SummaryWriterKernel)
                   .NotDifferentiable()
                   .Doc("A handle to a summary writer of the session."));

Status CreateSummaryFileWriterKernel(KernelContext& ctx) {
  for (int i = 1; i < 5; ++i) {
    FS_RETURN_IF_ERROR(ScalarInput(ctx, i,
                                   i == 1   ? "logdir"
                                   : i == 2 ? "max_queue"
                                   : i == 3 ? "flush_millis"
                                            : "filename_suffix"));
  }
  std::shared_ptr<SummaryWriterResource> writer;
  FS_RETURN_IF_ERROR(WriterFromHandle(ctx, &writer));
  const std::string& logdir = *ctx.input(1).data<std::string>();
  if (logdir.empty()) {
    return errors::InvalidArgument("CreateSummaryFileWriter: logdir must not be empty");
  }
  const int64_t max_queue = ctx.input(2).ElementAsInt64(0);
  const int64_t flush_millis = ctx.input(3).ElementAsInt64(0);
  if (max_queue < 0 || flush_millis < 0) {
    return errors::InvalidArgument("CreateSummaryFileWriter: max_queue (", max_queue,
                                   ") and flush_millis (", flush_millis, ") must not be negative");
  }
  std::error_code error;
  std::filesystem::create_directories(logdir, error);
  if (error) {
    return io::IoError("Cannot create the summary directory", logdir, error.value());
  }
  return writer->Open(logdir, static_cast<int>(std::max<int64_t>(max_queue, 1)),
                      flush_millis / 1000.0, *ctx.input(4).data<std::string>());
}

FS_REGISTER_OP(OpBuilder("CreateSummaryFileWriter")
                   .Input("writer", "resource")
                   .Input("logdir", "string")
                   .Input("max_queue", "int32")
                   .Input("flush_millis", "int32")
                   .Input("filename_suffix", "string")
                   .Stateful()
                   .Shape(NoOutputs)
                   .Kernel("CPU", CreateSummaryFileWriterKernel)
                   .NotDifferentiable()
                   .Doc("Opens the writer's event file in logdir (made if missing)."));

// --- the writes -------------------------------------------------------------------------------

Status StepEvent(KernelContext& ctx, proto::Event* event) {
  FS_RETURN_IF_ERROR(ScalarInput(ctx, 1, "step"));
  event->set_step(ctx.input(1).ElementAsInt64(0));
  return Status::OK();
}

Status WriteSummaryKernel(KernelContext& ctx) {
  FS_RETURN_IF_ERROR(ScalarInput(ctx, 3, "tag"));
  FS_RETURN_IF_ERROR(ScalarInput(ctx, 4, "summary_metadata"));
  std::shared_ptr<SummaryWriterResource> writer;
  FS_RETURN_IF_ERROR(WriterFromHandle(ctx, &writer));
  proto::Event event;
  FS_RETURN_IF_ERROR(StepEvent(ctx, &event));
  proto::Summary::Value* value = event.mutable_summary()->add_value();
  value->set_tag(*ctx.input(3).data<std::string>());
  if (!value->mutable_metadata()->ParseFromString(*ctx.input(4).data<std::string>())) {
    return errors::InvalidArgument("WriteSummary: summary_metadata of '", value->tag(),
                                   "' is not a serialized SummaryMetadata");
  }
  FS_RETURN_IF_ERROR(TensorToProto(ctx.input(2), value->mutable_tensor()));
  return writer->Add(std::move(event));
}

FS_REGISTER_OP(OpBuilder("WriteSummary")
                   .Input("writer", "resource")
                   .Input("step", "int64")
                   .Input("tensor", "T")
                   .Input("tag", "string")
                   .Input("summary_metadata", "string")
                   .TypeAttr("T")
                   .Stateful()
                   .Shape(NoOutputs)
                   .Kernel("CPU", WriteSummaryKernel)
                   .NotDifferentiable()
                   .Doc("Writes a tensor summary (TensorFlow 2's form) at a step."));

Status WriteScalarSummaryKernel(KernelContext& ctx) {
  FS_RETURN_IF_ERROR(ScalarInput(ctx, 2, "tag"));
  FS_RETURN_IF_ERROR(ScalarInput(ctx, 3, "value"));
  std::shared_ptr<SummaryWriterResource> writer;
  FS_RETURN_IF_ERROR(WriterFromHandle(ctx, &writer));
  proto::Event event;
  FS_RETURN_IF_ERROR(StepEvent(ctx, &event));
  proto::Summary::Value* value = event.mutable_summary()->add_value();
  value->set_tag(*ctx.input(2).data<std::string>());
  value->set_simple_value(static_cast<float>(ctx.input(3).ElementAsDouble(0)));
  return writer->Add(std::move(event));
}

FS_REGISTER_OP(OpBuilder("WriteScalarSummary")
                   .Input("writer", "resource")
                   .Input("step", "int64")
                   .Input("tag", "string")
                   .Input("value", "T")
                   .TypeAttr("T", {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64,
                                   DType::kUInt8, DType::kFloat16, DType::kBFloat16})
                   .Stateful()
                   .Shape(NoOutputs)
                   .Kernel("CPU", WriteScalarSummaryKernel)
                   .NotDifferentiable()
                   .Doc("Writes a simple_value scalar summary (tf.contrib.summary's form)."));

Status WriteRawProtoSummaryKernel(KernelContext& ctx) {
  std::shared_ptr<SummaryWriterResource> writer;
  FS_RETURN_IF_ERROR(WriterFromHandle(ctx, &writer));
  const Tensor& protos = ctx.input(2);
  for (int64_t i = 0; i < protos.num_elements(); ++i) {
    proto::Event event;
    FS_RETURN_IF_ERROR(StepEvent(ctx, &event));
    if (!event.mutable_summary()->ParseFromString(protos.data<std::string>()[i])) {
      return errors::InvalidArgument("WriteRawProtoSummary: element ", i,
                                     " is not a serialized Summary");
    }
    FS_RETURN_IF_ERROR(writer->Add(std::move(event)));
  }
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("WriteRawProtoSummary")
                   .Input("writer", "resource")
                   .Input("step", "int64")
                   .Input("tensor", "string")
                   .Stateful()
                   .Shape(NoOutputs)
                   .Kernel("CPU", WriteRawProtoSummaryKernel)
                   .NotDifferentiable()
                   .Doc("Writes serialized Summary protos (TF1 summary ops' outputs) at a step."));

// --- flush and close --------------------------------------------------------------------------

Status FlushSummaryWriterKernel(KernelContext& ctx) {
  std::shared_ptr<SummaryWriterResource> writer;
  FS_RETURN_IF_ERROR(WriterFromHandle(ctx, &writer));
  return writer->Flush();
}

Status CloseSummaryWriterKernel(KernelContext& ctx) {
  std::shared_ptr<SummaryWriterResource> writer;
  FS_RETURN_IF_ERROR(WriterFromHandle(ctx, &writer));
  return writer->Close();
}

FS_REGISTER_OP(OpBuilder("FlushSummaryWriter")
                   .Input("writer", "resource")
                   .Stateful()
                   .Shape(NoOutputs)
                   .Kernel("CPU", FlushSummaryWriterKernel)
                   .NotDifferentiable()
                   .Doc("Writes the writer's queued events to its file."));

FS_REGISTER_OP(OpBuilder("CloseSummaryWriter")
                   .Input("writer", "resource")
                   .Stateful()
                   .Shape(NoOutputs)
                   .Kernel("CPU", CloseSummaryWriterKernel)
                   .NotDifferentiable()
                   .Doc("Flushes and closes the writer's event file."));

}  // namespace
}  // namespace flowstone
