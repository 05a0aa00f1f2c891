#include "function_call.h"

namespace flowstone {

Status FunctionCaller::Call(KernelContext& ctx, std::vector<Tensor>& args,
                            std::vector<Tensor>* rets, const std::vector<Tensor>* destinations) {
  FunctionRuntime* runtime = ctx.functions();
  if (runtime == nullptr) {
    return errors::FailedPrecondition("function '", name_,
                                      "' can only be called inside a session run");
  }
  const CompiledFunction* compiled = compiled_.load(std::memory_order_acquire);
  if (compiled == nullptr) {
    // Instantiate returns the session's one compiled copy, so a race here is harmless.
    FS_RETURN_IF_ERROR(runtime->Instantiate(name_, &compiled));
    compiled_.store(compiled, std::memory_order_release);
  }
  return runtime->Run(*compiled, args, rets, ctx, destinations);
}

namespace {
std::string TypeList(const std::vector<DType>& types) {
  std::string out = "[";
  for (size_t i = 0; i < types.size(); ++i) out += StrCat(i ? ", " : "", DTypeName(types[i]));
  return out + "]";
}

Status WithPyType(Status s, const char* py_type) {
  s.SetPayload("py_type", py_type);
  return s;
}
}  // namespace

Status CheckCallSignature(const InferenceContext& ctx, const std::string& attr,
                          const std::vector<DType>& arg_types, const std::vector<DType>* ret_types,
                          const FunctionDef** out) {
  FunctionRef ref;
  FS_RETURN_IF_ERROR(ctx.GetAttr(attr, &ref));
  const FunctionDef* fn = ctx.library() ? ctx.library()->Find(ref.name) : nullptr;
  if (fn == nullptr) {
    return WithPyType(errors::NotFound("Function '", ref.name, "' (attr '", attr, "' of ",
                                       ctx.op_type(), ") is not in the graph's library"),
                      "ValueError");
  }
  std::vector<DType> takes = fn->arg_types();
  if (takes.size() != arg_types.size()) {
    return WithPyType(
        errors::InvalidArgument(fn->Describe(), " (attr '", attr, "') takes ", takes.size(),
                                " inputs, but ", ctx.op_type(), " passes ", arg_types.size()),
        "ValueError");
  }
  if (takes != arg_types) {
    return WithPyType(
        errors::InvalidArgument(fn->Describe(), " (attr '", attr, "') takes inputs of types ",
                                TypeList(takes), ", but ", ctx.op_type(), " passes ",
                                TypeList(arg_types)),
        "TypeError");
  }
  if (ret_types != nullptr) {
    std::vector<DType> gives = fn->ret_types();
    if (gives.size() != ret_types->size()) {
      return WithPyType(
          errors::InvalidArgument(fn->Describe(), " (attr '", attr, "') returns ", gives.size(),
                                  " outputs, but ", ctx.op_type(), " expects ", ret_types->size()),
          "ValueError");
    }
    if (gives != *ret_types) {
      return WithPyType(errors::InvalidArgument(fn->Describe(), " (attr '", attr,
                                                "') returns types ", TypeList(gives), ", but ",
                                                ctx.op_type(), " expects ", TypeList(*ret_types)),
                        "TypeError");
    }
  }
  *out = fn;
  return Status::OK();
}

std::vector<PartialShape> ReturnShapes(const FunctionDef& function) {
  std::vector<PartialShape> out;
  for (const Endpoint& e : function.rets) out.push_back(e.node->output_shape(e.index));
  return out;
}

PartialShape MostSpecificCompatibleShape(const PartialShape& a, const PartialShape& b) {
  if (!a.known_rank() || !b.known_rank() || a.rank() != b.rank()) return PartialShape::Unknown();
  std::vector<int64_t> dims(a.rank());
  for (int i = 0; i < a.rank(); ++i) dims[i] = a.dim(i) == b.dim(i) ? a.dim(i) : -1;
  return PartialShape(dims);
}

Status ToBool(const Tensor& t, bool* out) {
  if (t.shape().rank() != 0) {
    *out = t.num_elements() > 0;
    return Status::OK();
  }
  switch (t.dtype()) {
    case DType::kBool:
      *out = *t.data<bool>();
      return Status::OK();
    case DType::kFloat32:
      *out = *t.data<float>() != 0;
      return Status::OK();
    case DType::kFloat64:
      *out = *t.data<double>() != 0;
      return Status::OK();
    case DType::kInt32:
      *out = *t.data<int32_t>() != 0;
      return Status::OK();
    case DType::kInt64:
      *out = *t.data<int64_t>() != 0;
      return Status::OK();
    default:
      return errors::InvalidArgument("a condition of dtype ", DTypeName(t.dtype()),
                                     " has no truth value; use bool or a number");
  }
}

Status FunctionAttr(const Node& node, const std::string& attr, std::string* name) {
  FunctionRef ref;
  FS_RETURN_IF_ERROR(node.attrs().Get(attr, &ref));
  *name = ref.name;
  return Status::OK();
}

}  // namespace flowstone
