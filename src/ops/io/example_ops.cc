// tf.train.Example parsing: ParseExampleV2 (tf.io.parse_example, a batch of records) and
// ParseSingleExample (one record), read with the protobuf classes of proto/example.proto
// (TensorFlow's field numbers, so TensorFlow's records parse). Both ops share one parser:
//   - sparse features (tf.io.VarLenFeature): per feature, indices [n, batch_rank + 1], values [n]
//     and dense_shape [batch..., longest list], the pieces of a SparseTensor;
//   - dense features (tf.io.FixedLenFeature): batch_shape + shape, a missing feature taking its
//     default;
//   - dense features with an unknown major dimension (tf.io.FixedLenSequenceFeature with
//     allow_missing=True): batch_shape + [longest, shape[1:]...], shorter ones padded with the
//     default (one element) or zeros;
//   - ragged features (tf.io.RaggedFeature, ParseExampleV2 only): all records' values and the
//     row splits of the batch, which Python makes a RaggedTensor (with any partitions).
// The value helpers (example_parser.h) also serve ParseSequenceExampleV2
// (sequence_example_ops.cc).
#include <algorithm>

#include "example_parser.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"

namespace flowstone {
namespace {

// What one parse op asks for: the keys, types and (dense) shapes of its features.
struct ParseConfig {
  std::vector<std::string> sparse_keys;
  std::vector<DType> sparse_types;
  std::vector<std::string> dense_keys;
  std::vector<DType> dense_types;
  std::vector<PartialShape> dense_shapes;
  std::vector<std::string> ragged_keys;  // ParseExampleV2 only (tf.io.RaggedFeature)
  std::vector<DType> ragged_types;
  std::vector<DType> ragged_split_types;
};

Status ReadTypesAndShapes(const char* op, const AttrMap& attrs, ParseConfig* config) {
  FS_RETURN_IF_ERROR(attrs.Get("Tdense", &config->dense_types));
  FS_RETURN_IF_ERROR(attrs.Get("dense_shapes", &config->dense_shapes));
  FS_RETURN_IF_ERROR(attrs.Get("sparse_types", &config->sparse_types));
  FS_RETURN_IF_ERROR(example::CheckFeatureTypes(op, config->dense_types));
  FS_RETURN_IF_ERROR(example::CheckFeatureTypes(op, config->sparse_types));
  if (config->dense_shapes.size() != config->dense_types.size()) {
    return errors::InvalidArgument(op, ": ", config->dense_shapes.size(), " dense_shapes for ",
                                   config->dense_types.size(), " Tdense types");
  }
  return example::CheckDenseShapes(op, config->dense_shapes);
}

// The features of one record: key -> Feature, or an error naming the record.
Status ParseRecord(const std::string& serialized, int64_t index, proto::Example* out) {
  if (!out->ParseFromString(serialized)) {
    return errors::InvalidArgument("Could not parse example input, value: '",
                                   serialized.substr(0, 64), "' (record ", index,
                                   " of the batch is not a serialized tf.train.Example)");
  }
  return Status::OK();
}

// Writes a ragged feature (tf.io.RaggedFeature) of a batch: every record's values one after
// another into output `values_out`, and where each record's start into `splits_out` (int32 or
// int64, batch + 1 entries); a missing feature is an empty row.
Status WriteRagged(const std::string& key, DType dtype,
                   const std::vector<const proto::Feature*>& found, KernelContext& ctx,
                   int values_out, int splits_out) {
  std::vector<int64_t> splits{0};
  for (const proto::Feature* feature : found) {
    int64_t count = 0;
    if (feature != nullptr) {
      FS_RETURN_IF_ERROR(example::CheckKind(*feature, dtype, key));
      count = example::ValueCount(*feature);
    }
    splits.push_back(splits.back() + count);
  }
  Tensor *values, *row_splits;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(values_out, TensorShape{splits.back()}, &values));
  for (size_t b = 0; b < found.size(); ++b) {
    if (found[b] != nullptr) example::CopyValues(*found[b], values, splits[b]);
  }
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(
      splits_out, TensorShape{static_cast<int64_t>(splits.size())}, &row_splits));
  for (size_t b = 0; b < splits.size(); ++b) {
    if (row_splits->dtype() == DType::kInt32) {
      row_splits->data<int32_t>()[b] = static_cast<int32_t>(splits[b]);
    } else {
      row_splits->data<int64_t>()[b] = splits[b];
    }
  }
  return Status::OK();
}

// Parses `serialized` (a scalar or a vector of records) into the op's outputs: the sparse
// indices, values and shapes, then the dense values. Dense defaults start at input
// `defaults_input`.
Status ParseInto(KernelContext& ctx, const ParseConfig& config, const Tensor& serialized,
                 int defaults_input) {
  if (serialized.rank() > 1) {
    return errors::InvalidArgument("serialized must be a scalar or a vector of records, got shape ",
                                   serialized.shape().ToString());
  }
  std::vector<int64_t> batch_shape = serialized.shape().ToVector();
  const int64_t batch = serialized.num_elements();
  std::vector<proto::Example> records(batch);
  for (int64_t b = 0; b < batch; ++b) {
    FS_RETURN_IF_ERROR(ParseRecord(serialized.data<std::string>()[b], b, &records[b]));
  }
  auto find_all = [&](const std::string& key) {
    std::vector<const proto::Feature*> found(batch, nullptr);
    for (int64_t b = 0; b < batch; ++b) {
      const auto& features = records[b].features().feature();
      auto it = features.find(key);
      if (it != features.end()) found[b] = &it->second;
    }
    return found;
  };
  const int num_sparse = static_cast<int>(config.sparse_keys.size());
  for (int i = 0; i < num_sparse; ++i) {
    FS_RETURN_IF_ERROR(example::WriteSparse(config.sparse_keys[i], config.sparse_types[i],
                                            find_all(config.sparse_keys[i]), batch_shape, ctx, i,
                                            num_sparse + i, 2 * num_sparse + i));
  }
  for (size_t i = 0; i < config.dense_keys.size(); ++i) {
    FS_RETURN_IF_ERROR(example::WriteDense(config.dense_keys[i], config.dense_types[i],
                                           config.dense_shapes[i], find_all(config.dense_keys[i]),
                                           batch_shape,
                                           ctx.input(defaults_input + static_cast<int>(i)), ctx,
                                           3 * num_sparse + static_cast<int>(i)));
  }
  const int first_ragged = 3 * num_sparse + static_cast<int>(config.dense_keys.size());
  const int num_ragged = static_cast<int>(config.ragged_keys.size());
  for (int i = 0; i < num_ragged; ++i) {
    FS_RETURN_IF_ERROR(WriteRagged(config.ragged_keys[i], config.ragged_types[i],
                                   find_all(config.ragged_keys[i]), ctx, first_ragged + i,
                                   first_ragged + num_ragged + i));
  }
  return Status::OK();
}

// The output shapes of both ops: sparse pieces of rank batch_rank + 1, dense ones batch_shape +
// their shape (the major dimension of a sequence feature unknown).
Status ParseShape(InferenceContext& ctx, const PartialShape& batch_shape) {
  int64_t num_sparse = 0;
  std::vector<PartialShape> shapes;
  FS_RETURN_IF_ERROR(ctx.GetAttr("num_sparse", &num_sparse));
  FS_RETURN_IF_ERROR(ctx.GetAttr("dense_shapes", &shapes));
  // The output lists are laid out by these lengths, so they must agree (as in TensorFlow): a
  // sparse_types shorter than num_sparse put the shapes past the node's outputs.
  std::vector<DType> sparse_types, dense_types;
  FS_RETURN_IF_ERROR(ctx.GetAttr("sparse_types", &sparse_types));
  FS_RETURN_IF_ERROR(ctx.GetAttr("Tdense", &dense_types));
  if (num_sparse != static_cast<int64_t>(sparse_types.size())) {
    return errors::InvalidArgument(ctx.op_type(), ": num_sparse (", num_sparse,
                                   ") must equal the length of sparse_types (", sparse_types.size(),
                                   ")");
  }
  if (shapes.size() != dense_types.size()) {
    return errors::InvalidArgument(ctx.op_type(), ": ", shapes.size(), " dense_shapes for ",
                                   dense_types.size(), " Tdense types");
  }
  const int64_t rank = batch_shape.known_rank() ? batch_shape.rank() : -1;
  for (int i = 0; i < num_sparse; ++i) {
    ctx.set_output(i, PartialShape({-1, rank < 0 ? -1 : rank + 1}));
    ctx.set_output(num_sparse + i, PartialShape({-1}));
    ctx.set_output(2 * num_sparse + i, PartialShape({rank < 0 ? -1 : rank + 1}));
  }
  // ParseExampleV2's ragged outputs (values and row splits) follow the dense ones.
  const int first_ragged = static_cast<int>(3 * num_sparse + shapes.size());
  for (int out = first_ragged; out < ctx.num_outputs(); ++out) {
    ctx.set_output(out, PartialShape({-1}));
  }
  for (int i = 0; i < static_cast<int>(shapes.size()); ++i) {
    const int out = static_cast<int>(3 * num_sparse) + i;
    if (out >= ctx.num_outputs()) break;
    if (!batch_shape.known_rank()) {
      ctx.set_output(out, PartialShape::Unknown());
      continue;
    }
    std::vector<int64_t> dims = batch_shape.ToVector();
    for (int64_t d : shapes[i].ToVector()) dims.push_back(d);
    ctx.set_output(out, PartialShape(dims));
  }
  return Status::OK();
}

class ParseExampleV2Kernel final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  Status Init() override {
    FS_RETURN_IF_ERROR(ReadTypesAndShapes("ParseExampleV2", node().attrs(), &config_));
    FS_RETURN_IF_ERROR(node().attrs().Get("ragged_value_types", &config_.ragged_types));
    FS_RETURN_IF_ERROR(node().attrs().Get("ragged_split_types", &config_.ragged_split_types));
    FS_RETURN_IF_ERROR(example::CheckFeatureTypes("ParseExampleV2", config_.ragged_types));
    for (DType split_type : config_.ragged_split_types) {
      if (split_type != DType::kInt32 && split_type != DType::kInt64) {
        return errors::InvalidArgument(
            "ParseExampleV2: ragged_split_types must be int32 or "
            "int64, got ",
            DTypeName(split_type));
      }
    }
    if (config_.ragged_types.size() != config_.ragged_split_types.size()) {
      return errors::InvalidArgument("ParseExampleV2: ", config_.ragged_types.size(),
                                     " ragged_value_types for ", config_.ragged_split_types.size(),
                                     " ragged_split_types");
    }
    return Status::OK();
  }

  Status Compute(KernelContext& ctx) override {
    ParseConfig config = config_;
    FS_RETURN_IF_ERROR(example::KeysInput(ctx, 2, "sparse_keys", &config.sparse_keys));
    FS_RETURN_IF_ERROR(example::KeysInput(ctx, 3, "dense_keys", &config.dense_keys));
    FS_RETURN_IF_ERROR(example::KeysInput(ctx, 4, "ragged_keys", &config.ragged_keys));
    if (config.ragged_keys.size() != config.ragged_types.size()) {
      return errors::InvalidArgument("ParseExampleV2: ", config.ragged_keys.size(),
                                     " ragged_keys for ", config.ragged_types.size(),
                                     " ragged_value_types");
    }
    if (config.sparse_keys.size() != config.sparse_types.size() ||
        config.dense_keys.size() != config.dense_types.size()) {
      return errors::InvalidArgument("ParseExampleV2: ", config.sparse_keys.size(),
                                     " sparse_keys for ", config.sparse_types.size(),
                                     " sparse_types and ", config.dense_keys.size(),
                                     " dense_keys for ", config.dense_types.size(), " Tdense");
    }
    return ParseInto(ctx, config, ctx.input(0), 5);
  }

 private:
  ParseConfig config_;
};

class ParseSingleExampleKernel final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  Status Init() override {
    FS_RETURN_IF_ERROR(ReadTypesAndShapes("ParseSingleExample", node().attrs(), &config_));
    FS_RETURN_IF_ERROR(node().attrs().Get("dense_keys", &config_.dense_keys));
    FS_RETURN_IF_ERROR(node().attrs().Get("sparse_keys", &config_.sparse_keys));
    if (config_.sparse_keys.size() != config_.sparse_types.size() ||
        config_.dense_keys.size() != config_.dense_types.size()) {
      return errors::InvalidArgument(
          "ParseSingleExample: sparse_keys, sparse_types, dense_keys "
          "and Tdense disagree in length");
    }
    return Status::OK();
  }

  Status Compute(KernelContext& ctx) override {
    const Tensor& serialized = ctx.input(0);
    if (serialized.rank() != 0) {
      return errors::InvalidArgument("serialized must be a scalar, got shape ",
                                     serialized.shape().ToString());
    }
    return ParseInto(ctx, config_, serialized, 1);
  }

 private:
  ParseConfig config_;
};

FS_REGISTER_OP(OpBuilder("ParseExampleV2")
                   .Input("serialized", "string")
                   .Input("names", "string")
                   .Input("sparse_keys", "string")
                   .Input("dense_keys", "string")
                   .Input("ragged_keys", "string")
                   .InputTypeList("dense_defaults", "Tdense")
                   .OutputList("sparse_indices", "int64", "num_sparse")
                   .OutputTypeList("sparse_values", "sparse_types")
                   .OutputList("sparse_shapes", "int64", "num_sparse")
                   .OutputTypeList("dense_values", "Tdense")
                   .OutputTypeList("ragged_values", "ragged_value_types")
                   .OutputTypeList("ragged_row_splits", "ragged_split_types")
                   .Attr("num_sparse", 0)
                   .Attr("sparse_types", AttrValue(std::vector<DType>{}))
                   .Attr("ragged_value_types", AttrValue(std::vector<DType>{}))
                   .Attr("ragged_split_types", AttrValue(std::vector<DType>{}))
                   .RequiredAttr("dense_shapes", AttrType::kShapeList)
                   .Shape([](InferenceContext& ctx) { return ParseShape(ctx, ctx.input(0)); })
                   .KernelClass<ParseExampleV2Kernel>("CPU")
                   .NotDifferentiable()
                   .Doc("tf.io.parse_example: the sparse (VarLenFeature) and dense "
                        "(FixedLenFeature, FixedLenSequenceFeature) features of a batch of "
                        "serialized tf.train.Examples."));

FS_REGISTER_OP(OpBuilder("ParseSingleExample")
                   .Input("serialized", "string")
                   .InputTypeList("dense_defaults", "Tdense")
                   .OutputList("sparse_indices", "int64", "num_sparse")
                   .OutputTypeList("sparse_values", "sparse_types")
                   .OutputList("sparse_shapes", "int64", "num_sparse")
                   .OutputTypeList("dense_values", "Tdense")
                   .Attr("num_sparse", 0)
                   .Attr("sparse_keys", AttrValue(std::vector<std::string>{}))
                   .RequiredAttr("dense_keys", AttrType::kStringList)
                   .Attr("sparse_types", AttrValue(std::vector<DType>{}))
                   .RequiredAttr("dense_shapes", AttrType::kShapeList)
                   .Shape([](InferenceContext& ctx) { return ParseShape(ctx, PartialShape({})); })
                   .KernelClass<ParseSingleExampleKernel>("CPU")
                   .NotDifferentiable()
                   .Doc("tf.io.parse_single_example: the sparse and dense features of one "
                        "serialized tf.train.Example."));

}  // namespace
}  // namespace flowstone
