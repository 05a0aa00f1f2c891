// ParseSingleExample: the dense features (tf.io.FixedLenFeature) of one serialized
// tf.train.Example, read with the protobuf classes of proto/example.proto (TensorFlow's field
// numbers, so TensorFlow's records parse). Sparse features need SparseTensor, which Flowstone
// does not have yet: num_sparse must be 0.
#include <algorithm>

#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "proto/example.pb.h"

namespace flowstone {
namespace {

const std::vector<DType> kFeatureTypes = {DType::kFloat32, DType::kInt64, DType::kString};

const char* FeatureTypeName(DType dtype) {
  return dtype == DType::kFloat32 ? "float" : dtype == DType::kInt64 ? "int64" : "string";
}

const char* KindName(const proto::Feature& feature) {
  switch (feature.kind_case()) {
    case proto::Feature::kFloatList:
      return "float";
    case proto::Feature::kInt64List:
      return "int64";
    case proto::Feature::kBytesList:
      return "string";
    default:
      return "none";
  }
}

int64_t ValueCount(const proto::Feature& feature) {
  switch (feature.kind_case()) {
    case proto::Feature::kFloatList:
      return feature.float_list().value_size();
    case proto::Feature::kInt64List:
      return feature.int64_list().value_size();
    case proto::Feature::kBytesList:
      return feature.bytes_list().value_size();
    default:
      return 0;
  }
}

// Copies a feature's values into `out` (of the expected dtype and element count).
void CopyValues(const proto::Feature& feature, Tensor* out) {
  switch (feature.kind_case()) {
    case proto::Feature::kFloatList:
      std::copy(feature.float_list().value().begin(), feature.float_list().value().end(),
                out->data<float>());
      break;
    case proto::Feature::kInt64List:
      std::copy(feature.int64_list().value().begin(), feature.int64_list().value().end(),
                out->data<int64_t>());
      break;
    default:
      std::copy(feature.bytes_list().value().begin(), feature.bytes_list().value().end(),
                out->data<std::string>());
  }
}

class ParseSingleExampleKernel final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  Status Init() override {
    const AttrMap& attrs = node().attrs();
    FS_RETURN_IF_ERROR(attrs.Get("dense_keys", &dense_keys_));
    FS_RETURN_IF_ERROR(attrs.Get("dense_shapes", &dense_shapes_));
    std::vector<DType> types;
    FS_RETURN_IF_ERROR(attrs.Get("Tdense", &types));
    for (DType t : types) {
      if (std::find(kFeatureTypes.begin(), kFeatureTypes.end(), t) == kFeatureTypes.end()) {
        return errors::InvalidArgument(
            "ParseSingleExample: features are float32, int64 or "
            "string, got ",
            DTypeName(t));
      }
    }
    if (attrs.GetOr<int64_t>("num_sparse", 0) != 0) {
      return errors::Unimplemented(
          "ParseSingleExample: sparse features (tf.io.VarLenFeature) need SparseTensor, which "
          "Flowstone does not have yet; use tf.io.FixedLenFeature");
    }
    for (const PartialShape& shape : dense_shapes_) {
      if (!shape.IsFullyDefined()) {
        return errors::Unimplemented("ParseSingleExample: dense shape ", shape.ToString(),
                                     " is not fully defined (FixedLenSequenceFeature is not in "
                                     "Flowstone yet)");
      }
    }
    return Status::OK();
  }

  Status Compute(KernelContext& ctx) override {
    const Tensor& serialized = ctx.input(0);
    if (serialized.rank() != 0) {
      return errors::InvalidArgument("serialized must be a scalar, got shape ",
                                     serialized.shape().ToString());
    }
    proto::Example example;
    if (!example.ParseFromString(*serialized.data<std::string>())) {
      return errors::InvalidArgument("Could not parse example input, value: '",
                                     serialized.data<std::string>()->substr(0, 64), "'");
    }
    const auto& features = example.features().feature();
    for (size_t i = 0; i < dense_keys_.size(); ++i) {
      const std::string& key = dense_keys_[i];
      const int output = static_cast<int>(i);
      const DType dtype = ctx.output_type(output);
      TensorShape shape(dense_shapes_[i].ToVector());
      const Tensor& fallback = ctx.input(1 + output);
      auto found = features.find(key);
      if (found == features.end()) {
        if (fallback.num_elements() == 0) {
          return errors::InvalidArgument("Feature: ", key, " (data type: ", FeatureTypeName(dtype),
                                         ") is required but could not be found.");
        }
        if (fallback.num_elements() != shape.num_elements()) {
          return errors::InvalidArgument("Key: ", key, ". default_value has ",
                                         fallback.num_elements(), " values but the shape ",
                                         shape.ToString(), " has ", shape.num_elements());
        }
        ctx.SetOutput(output, fallback.Reshaped(shape));
        continue;
      }
      const proto::Feature& feature = found->second;
      if (std::string(KindName(feature)) != FeatureTypeName(dtype)) {
        return errors::InvalidArgument("Key: ", key,
                                       ".  Data types don't match. Data type: ", KindName(feature),
                                       " but expected type: ", FeatureTypeName(dtype));
      }
      if (ValueCount(feature) != shape.num_elements()) {
        return errors::InvalidArgument(
            "Key: ", key, ".  Can't parse serialized Example: ", ValueCount(feature),
            " values, but the shape ", shape.ToString(), " needs ", shape.num_elements());
      }
      Tensor* out;
      FS_RETURN_IF_ERROR(ctx.AllocateOutput(output, shape, &out));
      CopyValues(feature, out);
    }
    return Status::OK();
  }

 private:
  std::vector<std::string> dense_keys_;
  std::vector<PartialShape> dense_shapes_;
};

Status ParseSingleExampleShape(InferenceContext& ctx) {
  std::vector<PartialShape> shapes;
  FS_RETURN_IF_ERROR(ctx.GetAttr("dense_shapes", &shapes));
  if (static_cast<int>(shapes.size()) != ctx.num_outputs()) {
    return errors::InvalidArgument("ParseSingleExample: ", shapes.size(), " dense_shapes for ",
                                   ctx.num_outputs(),
                                   " dense outputs (only dense features are "
                                   "supported)");
  }
  for (int i = 0; i < ctx.num_outputs(); ++i) ctx.set_output(i, shapes[i]);
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("ParseSingleExample")
                   .Input("serialized", "string")
                   .InputTypeList("dense_defaults", "Tdense")
                   .OutputTypeList("dense_values", "Tdense")
                   .Attr("num_sparse", 0)
                   .Attr("sparse_keys", AttrValue(std::vector<std::string>{}))
                   .RequiredAttr("dense_keys", AttrType::kStringList)
                   .Attr("sparse_types", AttrValue(std::vector<DType>{}))
                   .RequiredAttr("dense_shapes", AttrType::kShapeList)
                   .Shape(ParseSingleExampleShape)
                   .KernelClass<ParseSingleExampleKernel>("CPU")
                   .NotDifferentiable()
                   .Doc("The dense features of one serialized tf.train.Example (float32, int64 or "
                        "string, of fixed shapes; missing ones take dense_defaults)."));

}  // namespace
}  // namespace flowstone
