// ParseSequenceExampleV2: tf.io.parse_sequence_example and parse_single_sequence_example over
// serialized tf.train.SequenceExamples (a scalar or a vector of them). The context is parsed as an
// Example's features (example_parser.h); each feature list is a list of steps:
//   - a dense one (FixedLenSequenceFeature) gives batch_shape + [longest, shape...], each step
//     holding exactly shape's values, shorter lists padded with zeros, and its lengths;
//   - a sparse one (VarLenFeature) gives SparseTensor pieces with indices
//     [record (in a batch), step, value] and dense_shape [batch..., longest, most values].
#include <algorithm>

#include "example_parser.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"

namespace flowstone {
namespace {

using example::CheckKind;
using example::CopyValues;
using example::ValueCount;

struct SequenceConfig {
  std::vector<DType> context_sparse_types, context_dense_types;
  std::vector<PartialShape> context_dense_shapes;
  std::vector<DType> list_sparse_types, list_dense_types;
  std::vector<PartialShape> list_dense_shapes;
};

// The output indices of the op's lists, in TensorFlow's order.
struct OutputLayout {
  int context_sparse_indices, context_sparse_values, context_sparse_shapes, context_dense;
  int list_sparse_indices, list_sparse_values, list_sparse_shapes, list_dense, list_lengths;

  explicit OutputLayout(const SequenceConfig& c) {
    const int cs = static_cast<int>(c.context_sparse_types.size());
    const int ls = static_cast<int>(c.list_sparse_types.size());
    const int ld = static_cast<int>(c.list_dense_types.size());
    context_sparse_indices = 0;
    context_sparse_values = cs;
    context_sparse_shapes = 2 * cs;
    context_dense = 3 * cs;
    // The context's ragged outputs (none) come between.
    list_sparse_indices = context_dense + static_cast<int>(c.context_dense_types.size());
    list_sparse_values = list_sparse_indices + ls;
    list_sparse_shapes = list_sparse_values + ls;
    list_dense = list_sparse_shapes + ls;
    list_lengths = list_dense + ld;
  }
};

Status ReadConfig(const AttrMap& attrs, SequenceConfig* c) {
  FS_RETURN_IF_ERROR(attrs.Get("context_sparse_types", &c->context_sparse_types));
  FS_RETURN_IF_ERROR(attrs.Get("Tcontext_dense", &c->context_dense_types));
  FS_RETURN_IF_ERROR(attrs.Get("context_dense_shapes", &c->context_dense_shapes));
  FS_RETURN_IF_ERROR(attrs.Get("feature_list_sparse_types", &c->list_sparse_types));
  FS_RETURN_IF_ERROR(attrs.Get("feature_list_dense_types", &c->list_dense_types));
  FS_RETURN_IF_ERROR(attrs.Get("feature_list_dense_shapes", &c->list_dense_shapes));
  for (const char* ragged : {"context_ragged_value_types", "feature_list_ragged_value_types"}) {
    if (!attrs.GetOr<std::vector<DType>>(ragged, {}).empty()) {
      return errors::Unimplemented(
          "ParseSequenceExampleV2: ragged features (tf.io.RaggedFeature) are not in Flowstone; "
          "parse them as tf.io.VarLenFeature (a SparseTensor)");
    }
  }
  for (const auto* types : {&c->context_sparse_types, &c->context_dense_types,
                            &c->list_sparse_types, &c->list_dense_types}) {
    FS_RETURN_IF_ERROR(example::CheckFeatureTypes("ParseSequenceExampleV2", *types));
  }
  FS_RETURN_IF_ERROR(example::CheckDenseShapes("ParseSequenceExampleV2", c->context_dense_shapes));
  for (const PartialShape& shape : c->list_dense_shapes) {
    if (!shape.IsFullyDefined()) {
      return errors::InvalidArgument(
          "ParseSequenceExampleV2: the shape of a step of a dense "
          "feature list must be fully defined, got ",
          shape.ToString());
    }
  }
  if (c->context_dense_shapes.size() != c->context_dense_types.size() ||
      c->list_dense_shapes.size() != c->list_dense_types.size()) {
    return errors::InvalidArgument(
        "ParseSequenceExampleV2: dense shapes and types disagree in "
        "length");
  }
  return Status::OK();
}

// The steps of feature list `key` in each record (null where the record lacks it).
std::vector<const proto::FeatureList*> FindLists(const std::vector<proto::SequenceExample>& records,
                                                 const std::string& key) {
  std::vector<const proto::FeatureList*> found(records.size(), nullptr);
  for (size_t b = 0; b < records.size(); ++b) {
    const auto& lists = records[b].feature_lists().feature_list();
    auto it = lists.find(key);
    if (it != lists.end()) found[b] = &it->second;
  }
  return found;
}

Status WriteDenseList(const std::string& key, DType dtype, const PartialShape& shape,
                      const std::vector<const proto::FeatureList*>& found, bool missing_is_empty,
                      const std::vector<int64_t>& batch_shape, KernelContext& ctx, int out_index,
                      int lengths_index) {
  const int64_t row = shape.num_elements();
  int64_t longest = 0;
  for (const proto::FeatureList* list : found) {
    if (list == nullptr) {
      if (!missing_is_empty) {
        return errors::InvalidArgument("Name: <unknown>, Feature list '", key,
                                       "' is required but could not be found.  Did you mean to "
                                       "include it in feature_list_dense_missing_assumed_empty "
                                       "or feature_list_dense_defaults?");
      }
      continue;
    }
    for (int s = 0; s < list->feature_size(); ++s) {
      const proto::Feature& step = list->feature(s);
      FS_RETURN_IF_ERROR(CheckKind(step, dtype, key));
      if (ValueCount(step) != row) {
        return errors::InvalidArgument("Name: <unknown>, Key: ", key, ", Index: ", s,
                                       ".  Number of values != expected.  values size: ",
                                       ValueCount(step), " but output shape: ", shape.ToString());
      }
    }
    longest = std::max<int64_t>(longest, list->feature_size());
  }
  std::vector<int64_t> dims = batch_shape;
  dims.push_back(longest);
  for (int64_t d : shape.ToVector()) dims.push_back(d);
  Tensor *out, *lengths;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(out_index, TensorShape(dims), &out));
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(lengths_index, TensorShape(batch_shape), &lengths));
  const Tensor zero = Tensor::Host(dtype, TensorShape({0}));
  for (size_t b = 0; b < found.size(); ++b) {
    const int64_t base = static_cast<int64_t>(b) * longest * row;
    const int64_t steps = found[b] ? found[b]->feature_size() : 0;
    for (int64_t s = 0; s < steps; ++s) CopyValues(found[b]->feature(s), out, base + s * row);
    example::FillPadding(zero, out, base + steps * row, (longest - steps) * row);
    lengths->data<int64_t>()[b] = steps;
  }
  return Status::OK();
}

Status WriteSparseList(const std::string& key, DType dtype,
                       const std::vector<const proto::FeatureList*>& found,
                       const std::vector<int64_t>& batch_shape, KernelContext& ctx, int indices_out,
                       int values_out, int shape_out) {
  const int rank = static_cast<int>(batch_shape.size());
  int64_t total = 0, longest = 0, most = 0;
  for (const proto::FeatureList* list : found) {
    if (list == nullptr) continue;
    longest = std::max<int64_t>(longest, list->feature_size());
    for (const proto::Feature& step : list->feature()) {
      FS_RETURN_IF_ERROR(CheckKind(step, dtype, key));
      total += ValueCount(step);
      most = std::max(most, ValueCount(step));
    }
  }
  Tensor *indices, *values, *shape;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(indices_out, TensorShape({total, rank + 2}), &indices));
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(values_out, TensorShape({total}), &values));
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(shape_out, TensorShape({rank + 2}), &shape));
  int64_t* index = indices->data<int64_t>();
  int64_t offset = 0;
  for (size_t b = 0; b < found.size(); ++b) {
    if (found[b] == nullptr) continue;
    for (int s = 0; s < found[b]->feature_size(); ++s) {
      const proto::Feature& step = found[b]->feature(s);
      CopyValues(step, values, offset);
      for (int64_t j = 0; j < ValueCount(step); ++j) {
        if (rank == 1) *index++ = static_cast<int64_t>(b);
        *index++ = s;
        *index++ = j;
      }
      offset += ValueCount(step);
    }
  }
  int64_t* dims = shape->data<int64_t>();
  for (int i = 0; i < rank; ++i) dims[i] = batch_shape[i];
  dims[rank] = longest;
  dims[rank + 1] = most;
  return Status::OK();
}

class ParseSequenceExampleV2Kernel final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  Status Init() override { return ReadConfig(node().attrs(), &config_); }

  // Inputs: serialized, debug_name, context sparse/dense/ragged keys, feature list
  // sparse/dense/ragged keys, feature_list_dense_missing_assumed_empty, context defaults.
  Status Compute(KernelContext& ctx) override {
    const Tensor& serialized = ctx.input(0);
    if (serialized.rank() > 1) {
      return errors::InvalidArgument(
          "serialized must be a scalar or a vector of records, got "
          "shape ",
          serialized.shape().ToString());
    }
    std::vector<std::string> context_sparse, context_dense, list_sparse, list_dense, assumed;
    FS_RETURN_IF_ERROR(example::KeysInput(ctx, 2, "context_sparse_keys", &context_sparse));
    FS_RETURN_IF_ERROR(example::KeysInput(ctx, 3, "context_dense_keys", &context_dense));
    FS_RETURN_IF_ERROR(example::KeysInput(ctx, 5, "feature_list_sparse_keys", &list_sparse));
    FS_RETURN_IF_ERROR(example::KeysInput(ctx, 6, "feature_list_dense_keys", &list_dense));
    if (context_sparse.size() != config_.context_sparse_types.size() ||
        context_dense.size() != config_.context_dense_types.size() ||
        list_sparse.size() != config_.list_sparse_types.size() ||
        list_dense.size() != config_.list_dense_types.size()) {
      return errors::InvalidArgument(
          "ParseSequenceExampleV2: the numbers of keys and of types "
          "disagree");
    }
    const Tensor& missing = ctx.input(8);
    if (missing.num_elements() != static_cast<int64_t>(list_dense.size())) {
      return errors::InvalidArgument("feature_list_dense_missing_assumed_empty has ",
                                     missing.num_elements(), " entries for ", list_dense.size(),
                                     " dense feature lists");
    }
    const std::vector<int64_t> batch_shape = serialized.shape().ToVector();
    std::vector<proto::SequenceExample> records(serialized.num_elements());
    for (size_t b = 0; b < records.size(); ++b) {
      const std::string& bytes = serialized.data<std::string>()[b];
      if (!records[b].ParseFromString(bytes)) {
        return errors::InvalidArgument("Could not parse example input, value: '",
                                       bytes.substr(0, 64), "' (record ", b,
                                       " is not a serialized tf.train.SequenceExample)");
      }
    }
    auto find_context = [&](const std::string& key) {
      std::vector<const proto::Feature*> found(records.size(), nullptr);
      for (size_t b = 0; b < records.size(); ++b) {
        const auto& features = records[b].context().feature();
        auto it = features.find(key);
        if (it != features.end()) found[b] = &it->second;
      }
      return found;
    };
    const OutputLayout out(config_);
    for (size_t i = 0; i < context_sparse.size(); ++i) {
      const int k = static_cast<int>(i);
      FS_RETURN_IF_ERROR(example::WriteSparse(
          context_sparse[i], config_.context_sparse_types[i], find_context(context_sparse[i]),
          batch_shape, ctx, out.context_sparse_indices + k, out.context_sparse_values + k,
          out.context_sparse_shapes + k));
    }
    for (size_t i = 0; i < context_dense.size(); ++i) {
      const int k = static_cast<int>(i);
      FS_RETURN_IF_ERROR(example::WriteDense(context_dense[i], config_.context_dense_types[i],
                                             config_.context_dense_shapes[i],
                                             find_context(context_dense[i]), batch_shape,
                                             ctx.input(9 + k), ctx, out.context_dense + k));
    }
    for (size_t i = 0; i < list_sparse.size(); ++i) {
      const int k = static_cast<int>(i);
      FS_RETURN_IF_ERROR(WriteSparseList(list_sparse[i], config_.list_sparse_types[i],
                                         FindLists(records, list_sparse[i]), batch_shape, ctx,
                                         out.list_sparse_indices + k, out.list_sparse_values + k,
                                         out.list_sparse_shapes + k));
    }
    for (size_t i = 0; i < list_dense.size(); ++i) {
      const int k = static_cast<int>(i);
      FS_RETURN_IF_ERROR(
          WriteDenseList(list_dense[i], config_.list_dense_types[i], config_.list_dense_shapes[i],
                         FindLists(records, list_dense[i]), missing.data<bool>()[i], batch_shape,
                         ctx, out.list_dense + k, out.list_lengths + k));
    }
    return Status::OK();
  }

 private:
  SequenceConfig config_;
};

Status ParseSequenceExampleShape(InferenceContext& ctx) {
  SequenceConfig config;
  FS_RETURN_IF_ERROR(ReadConfig(ctx.attrs(), &config));
  const PartialShape& batch = ctx.input(0);
  const OutputLayout out(config);
  const int64_t rank = batch.known_rank() ? batch.rank() : -1;
  auto with_batch = [&](std::vector<int64_t> tail) {
    if (rank < 0) return PartialShape::Unknown();
    std::vector<int64_t> dims = batch.ToVector();
    dims.insert(dims.end(), tail.begin(), tail.end());
    return PartialShape(dims);
  };
  for (int i = 0; i < static_cast<int>(config.context_sparse_types.size()); ++i) {
    ctx.set_output(out.context_sparse_indices + i, PartialShape({-1, rank < 0 ? -1 : rank + 1}));
    ctx.set_output(out.context_sparse_values + i, PartialShape({-1}));
    ctx.set_output(out.context_sparse_shapes + i, PartialShape({rank < 0 ? -1 : rank + 1}));
  }
  for (int i = 0; i < static_cast<int>(config.context_dense_shapes.size()); ++i) {
    ctx.set_output(out.context_dense + i, with_batch(config.context_dense_shapes[i].ToVector()));
  }
  for (int i = 0; i < static_cast<int>(config.list_sparse_types.size()); ++i) {
    ctx.set_output(out.list_sparse_indices + i, PartialShape({-1, rank < 0 ? -1 : rank + 2}));
    ctx.set_output(out.list_sparse_values + i, PartialShape({-1}));
    ctx.set_output(out.list_sparse_shapes + i, PartialShape({rank < 0 ? -1 : rank + 2}));
  }
  for (int i = 0; i < static_cast<int>(config.list_dense_shapes.size()); ++i) {
    std::vector<int64_t> step = config.list_dense_shapes[i].ToVector();
    step.insert(step.begin(), -1);
    ctx.set_output(out.list_dense + i, with_batch(step));
    ctx.set_output(out.list_lengths + i, with_batch({}));
  }
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("ParseSequenceExampleV2")
                   .Input("serialized", "string")
                   .Input("debug_name", "string")
                   .Input("context_sparse_keys", "string")
                   .Input("context_dense_keys", "string")
                   .Input("context_ragged_keys", "string")
                   .Input("feature_list_sparse_keys", "string")
                   .Input("feature_list_dense_keys", "string")
                   .Input("feature_list_ragged_keys", "string")
                   .Input("feature_list_dense_missing_assumed_empty", "bool")
                   .InputTypeList("context_dense_defaults", "Tcontext_dense")
                   .OutputList("context_sparse_indices", "int64", "Ncontext_sparse")
                   .OutputTypeList("context_sparse_values", "context_sparse_types")
                   .OutputList("context_sparse_shapes", "int64", "Ncontext_sparse")
                   .OutputTypeList("context_dense_values", "Tcontext_dense")
                   .OutputTypeList("context_ragged_values", "context_ragged_value_types")
                   .OutputTypeList("context_ragged_row_splits", "context_ragged_split_types")
                   .OutputList("feature_list_sparse_indices", "int64", "Nfeature_list_sparse")
                   .OutputTypeList("feature_list_sparse_values", "feature_list_sparse_types")
                   .OutputList("feature_list_sparse_shapes", "int64", "Nfeature_list_sparse")
                   .OutputTypeList("feature_list_dense_values", "feature_list_dense_types")
                   .OutputList("feature_list_dense_lengths", "int64", "Nfeature_list_dense")
                   .OutputTypeList("feature_list_ragged_values", "feature_list_ragged_value_types")
                   .OutputTypeList("feature_list_ragged_outer_splits",
                                   "feature_list_ragged_split_types")
                   .OutputTypeList("feature_list_ragged_inner_splits",
                                   "feature_list_ragged_split_types")
                   .Attr("Ncontext_sparse", 0)
                   .Attr("context_sparse_types", AttrValue(std::vector<DType>{}))
                   .Attr("context_ragged_value_types", AttrValue(std::vector<DType>{}))
                   .Attr("context_ragged_split_types", AttrValue(std::vector<DType>{}))
                   .Attr("context_dense_shapes", AttrValue(std::vector<PartialShape>{}))
                   .Attr("Nfeature_list_sparse", 0)
                   .Attr("Nfeature_list_dense", 0)
                   .Attr("feature_list_dense_types", AttrValue(std::vector<DType>{}))
                   .Attr("feature_list_sparse_types", AttrValue(std::vector<DType>{}))
                   .Attr("feature_list_ragged_value_types", AttrValue(std::vector<DType>{}))
                   .Attr("feature_list_ragged_split_types", AttrValue(std::vector<DType>{}))
                   .Attr("feature_list_dense_shapes", AttrValue(std::vector<PartialShape>{}))
                   .Shape(ParseSequenceExampleShape)
                   .KernelClass<ParseSequenceExampleV2Kernel>("CPU")
                   .NotDifferentiable()
                   .Doc("tf.io.parse_sequence_example: the context features and the feature "
                        "lists (sparse or dense, with their lengths) of serialized "
                        "tf.train.SequenceExamples."));

}  // namespace
}  // namespace flowstone
