// Iterator ops: IteratorV2 (a named iterator slot), MakeIterator (its initializer),
// OneShotIterator (a slot initialized on first use from a dataset_factory function),
// IteratorGetNext, which raises OutOfRange "End of sequence" after the last element, and the
// string handles of feedable iterators (IteratorToStringHandle, IteratorFromStringHandle).
#include <cstring>
#include <mutex>

#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "iterator_resource.h"
#include "ops/control_flow/function_call.h"
#include "ops/resource_slot.h"

namespace flowstone::data {

Status IteratorResource::GetNext(KernelContext& ctx, Element* out) {
  std::lock_guard<std::mutex> lock(mu_);
  bool end = false;
  FS_RETURN_IF_ERROR(iterator_->GetNext(ctx, out, &end));
  if (end) return errors::OutOfRange("End of sequence");
  return Status::OK();
}

namespace {

// The slot's value: a scalar variant holding the iterator.
class IteratorHolder final : public VariantValue {
 public:
  explicit IteratorHolder(std::shared_ptr<IteratorResource> iterator)
      : iterator_(std::move(iterator)) {}
  std::string TypeName() const override { return "tensorflow::data::IteratorResource"; }
  std::string DebugString() const override {
    return "<iterator over " + iterator_->dataset().op() + ">";
  }
  // Shares the iterator: a slot's value is only ever replaced, never changed in place.
  std::unique_ptr<VariantValue> Clone() const override {
    return std::make_unique<IteratorHolder>(iterator_);
  }
  const std::shared_ptr<IteratorResource>& iterator() const { return iterator_; }

 private:
  std::shared_ptr<IteratorResource> iterator_;
};

}  // namespace

Var* IteratorSlot(KernelContext& ctx, const std::string& name) {
  return ctx.resources()->LookupOrCreateVar("iterator:" + name, DType::kVariant,
                                            PartialShape(Dims{}));
}

Status IteratorInSlot(Var* slot, std::shared_ptr<IteratorResource>* out) {
  std::lock_guard<std::mutex> lock(slot->mu());
  const IteratorHolder* holder = HeldInSlot<IteratorHolder>(slot);
  if (holder == nullptr) {
    return errors::FailedPrecondition(
        "GetNext() failed because the iterator has not been initialized. Ensure that you have "
        "run the initializer operation for this iterator before getting the next element.");
  }
  *out = holder->iterator();
  return Status::OK();
}

void ResetSlot(Var* slot, DatasetPtr dataset) {
  auto iterator = std::make_shared<IteratorResource>(std::move(dataset));
  Tensor value = Tensor::Host(DType::kVariant, TensorShape{});
  value.data<Variant>()[0] = Variant(std::make_shared<IteratorHolder>(std::move(iterator)));
  std::lock_guard<std::mutex> lock(slot->mu());
  slot->value() = std::move(value);
}

namespace {

std::string SlotName(const Node& node) {
  std::string shared = node.attrs().GetOr<std::string>("shared_name", "");
  return shared.empty() ? node.name() : shared;
}

Status OutputHandle(KernelContext& ctx, Var* slot) {
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{}, &out));
  std::memcpy(out->raw_data(), &slot, sizeof(slot));
  return Status::OK();
}

// --- IteratorV2 -----------------------------------------------------------------------------

Status IteratorKernel(KernelContext& ctx) {
  return OutputHandle(ctx, IteratorSlot(ctx, SlotName(ctx.node())));
}

FS_REGISTER_OP(OpBuilder("IteratorV2")
                   .Output("handle", "resource")
                   .Attr("shared_name", "")
                   .Attr("container", "")
                   .RequiredAttr("output_types", AttrType::kTypeList)
                   .RequiredAttr("output_shapes", AttrType::kShapeList)
                   .Stateful()
                   .Shape(shape_fns::Scalar)
                   .Kernel("CPU", IteratorKernel)
                   .NotDifferentiable()
                   .Doc("A handle to an iterator owned by the session; MakeIterator starts it."));

// --- MakeIterator ---------------------------------------------------------------------------

Status MakeIteratorKernel(KernelContext& ctx) {
  DatasetPtr dataset;
  FS_RETURN_IF_ERROR(GetInputDataset(ctx, 0, &dataset));
  ResetSlot(VarFromHandle(ctx.input(1)), std::move(dataset));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("MakeIterator")
                   .Input("dataset", "variant")
                   .Input("iterator", "resource")
                   .Stateful()
                   .Shape(shape_fns::NoOutputs)
                   .Kernel("CPU", MakeIteratorKernel)
                   .NotDifferentiable()
                   .Doc("(Re)starts an iterator at the beginning of `dataset` (the iterator's "
                        "initializer)."));

// --- OneShotIterator ------------------------------------------------------------------------

class OneShotIteratorKernel final : public OpKernel {
 public:
  explicit OneShotIteratorKernel(const Node& node) : OpKernel(node) {}
  Status Init() override {
    std::string factory;
    FS_RETURN_IF_ERROR(FunctionAttr(node(), "dataset_factory", &factory));
    factory_ = std::make_unique<FunctionCaller>(factory);
    return Status::OK();
  }

  Status Compute(KernelContext& ctx) override {
    Var* slot = IteratorSlot(ctx, SlotName(node()));
    std::lock_guard<std::mutex> lock(mu_);
    bool initialized;
    {
      std::lock_guard<std::mutex> slot_lock(slot->mu());
      initialized = slot->initialized();
    }
    if (!initialized) {
      std::vector<Tensor> args, rets;
      FS_RETURN_IF_ERROR(factory_->Call(ctx, args, &rets));
      const DatasetVariant* dataset = nullptr;
      if (rets.size() == 1 && rets[0].dtype() == DType::kVariant && rets[0].num_elements() == 1) {
        dataset = rets[0].data<Variant>()[0].get<DatasetVariant>();
      }
      if (dataset == nullptr) {
        return errors::InvalidArgument("The dataset_factory of OneShotIterator '", node().name(),
                                       "' must return a single dataset");
      }
      ResetSlot(slot, dataset->dataset());
    }
    return OutputHandle(ctx, slot);
  }

 private:
  std::unique_ptr<FunctionCaller> factory_;
  std::mutex mu_;  // one initialization per session
};

FS_REGISTER_OP(OpBuilder("OneShotIterator")
                   .Output("handle", "resource")
                   .RequiredAttr("dataset_factory", AttrType::kFunc)
                   .RequiredAttr("output_types", AttrType::kTypeList)
                   .RequiredAttr("output_shapes", AttrType::kShapeList)
                   .Attr("container", "")
                   .Attr("shared_name", "")
                   .Stateful()
                   .Shape(shape_fns::Scalar)
                   .KernelClass<OneShotIteratorKernel>("CPU")
                   .NotDifferentiable()
                   .Doc("An iterator that starts itself on first use over the dataset its "
                        "dataset_factory function builds (make_one_shot_iterator)."));

// --- IteratorGetNext ------------------------------------------------------------------------

Status IteratorGetNextShape(InferenceContext& ctx) {
  std::vector<PartialShape> shapes;
  FS_RETURN_IF_ERROR(ctx.GetAttr("output_shapes", &shapes));
  if (static_cast<int>(shapes.size()) != ctx.num_outputs()) {
    return errors::InvalidArgument("IteratorGetNext has ", ctx.num_outputs(), " output_types but ",
                                   shapes.size(), " output_shapes");
  }
  for (int i = 0; i < ctx.num_outputs(); ++i) ctx.set_output(i, shapes[i]);
  return Status::OK();
}

Status IteratorGetNextKernel(KernelContext& ctx) {
  std::shared_ptr<IteratorResource> iterator;
  FS_RETURN_IF_ERROR(IteratorInSlot(VarFromHandle(ctx.input(0)), &iterator));
  Element element;
  FS_RETURN_IF_ERROR(iterator->GetNext(ctx, &element));
  if (static_cast<int>(element.size()) != ctx.num_outputs()) {
    return errors::InvalidArgument("IteratorGetNext '", ctx.node().name(), "' expects ",
                                   ctx.num_outputs(), " components, but the iterator's dataset (",
                                   iterator->dataset().op(), ") produced ", element.size());
  }
  for (int i = 0; i < ctx.num_outputs(); ++i) {
    if (element[i].dtype() != ctx.output_type(i)) {
      return errors::InvalidArgument("IteratorGetNext '", ctx.node().name(), "': component ", i,
                                     " has dtype ", DTypeName(element[i].dtype()),
                                     " but the iterator declares ", DTypeName(ctx.output_type(i)));
    }
    ctx.SetOutput(i, std::move(element[i]));
  }
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("IteratorGetNext")
                   .Input("iterator", "resource")
                   .OutputTypeList("components", "output_types")
                   .RequiredAttr("output_shapes", AttrType::kShapeList)
                   .Stateful()
                   .Shape(IteratorGetNextShape)
                   .Kernel("CPU", IteratorGetNextKernel)
                   .NotDifferentiable()
                   .Doc("The iterator's next element; OutOfRange \"End of sequence\" after the "
                        "last one."));

// --- IteratorToStringHandle, IteratorFromStringHandle(V2) ------------------------------------
// A feedable iterator (Iterator.from_string_handle) reads the iterator whose string handle is
// fed to it, as TF1 programs switch between a training and a validation iterator. The string
// is the slot's name in the session ("iterator:<name>"), meaningful in that session only, as
// TensorFlow's serialized resource handles are.

constexpr char kSlotPrefix[] = "iterator:";

Status IteratorToStringHandleKernel(KernelContext& ctx) {
  const Var* slot = VarFromHandle(ctx.input(0));
  if (slot->name().rfind(kSlotPrefix, 0) != 0) {
    return errors::InvalidArgument("IteratorToStringHandle '", ctx.node().name(),
                                   "' was given a resource that is not an iterator (", slot->name(),
                                   ")");
  }
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{}, &out));
  out->data<std::string>()[0] = slot->name();
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("IteratorToStringHandle")
                   .Input("resource_handle", "resource")
                   .Output("string_handle", "string")
                   .Stateful()
                   .Shape(shape_fns::Scalar)
                   .Kernel("CPU", IteratorToStringHandleKernel)
                   .NotDifferentiable()
                   .Doc("The iterator's string handle, to feed to a feedable iterator "
                        "(Iterator.string_handle)."));

// Checks the declared component types against those of the iterator the slot holds (none
// declared: anything goes; an iterator not started yet: checked by IteratorGetNext).
Status CheckDeclaredTypes(KernelContext& ctx, Var* slot) {
  std::vector<DType> declared;
  FS_RETURN_IF_ERROR(ctx.attrs().Get("output_types", &declared));
  std::shared_ptr<IteratorResource> iterator;
  if (declared.empty() || !IteratorInSlot(slot, &iterator).ok()) return Status::OK();
  const std::vector<DType>& actual = iterator->dataset().output_types();
  if (declared.size() != actual.size()) {
    return errors::InvalidArgument("The iterator of the string handle fed to '", ctx.node().name(),
                                   "' has ", actual.size(), " components, but ", declared.size(),
                                   " output_types were declared (Iterator.from_string_handle)");
  }
  for (size_t i = 0; i < declared.size(); ++i) {
    if (declared[i] != actual[i]) {
      return errors::InvalidArgument("Data type mismatch at component ", i, ": expected ",
                                     DTypeName(declared[i]), " but got ", DTypeName(actual[i]),
                                     ", in the iterator of the string handle fed to '",
                                     ctx.node().name(), "'");
    }
  }
  return Status::OK();
}

Status IteratorFromStringHandleKernel(KernelContext& ctx) {
  const Tensor& handle = ctx.input(0);
  if (handle.dtype() != DType::kString || handle.num_elements() != 1) {
    return errors::InvalidArgument("string_handle must be a scalar string, got shape ",
                                   handle.shape().ToString());
  }
  const std::string& name = handle.data<std::string>()[0];
  if (name.rfind(kSlotPrefix, 0) != 0) {
    return errors::InvalidArgument("'", name, "' fed to ", ctx.node().type(), " '",
                                   ctx.node().name(),
                                   "' is not an iterator's string handle. Feed the value of "
                                   "sess.run(iterator.string_handle()) from the same session.");
  }
  Var* slot = ctx.resources()->LookupVar(name);
  if (slot == nullptr) {
    return errors::NotFound("No iterator with string handle '", name,
                            "' exists in this session (node '", ctx.node().name(),
                            "'). A string handle is valid only in the session that ran "
                            "iterator.string_handle().");
  }
  FS_RETURN_IF_ERROR(CheckDeclaredTypes(ctx, slot));
  return OutputHandle(ctx, slot);
}

// V1 and V2 differ only in how TensorFlow represents the handle; here both are slot handles.
OpBuilder IteratorFromStringHandleOp(const char* name) {
  OpBuilder b(name);
  b.Input("string_handle", "string")
      .Output("resource_handle", "resource")
      .Attr("output_types", AttrValue(std::vector<DType>{}))
      .Attr("output_shapes", AttrValue(std::vector<PartialShape>{}))
      .Stateful()
      .Shape(shape_fns::Scalar)
      .Kernel("CPU", IteratorFromStringHandleKernel)
      .NotDifferentiable()
      .Doc(
          "The iterator a string handle names (Iterator.from_string_handle: a feedable "
          "iterator).");
  return b;
}

FS_REGISTER_OP(IteratorFromStringHandleOp("IteratorFromStringHandle"));
FS_REGISTER_OP(IteratorFromStringHandleOp("IteratorFromStringHandleV2"));

}  // namespace
}  // namespace flowstone::data
