// The value helpers shared by the Example and SequenceExample parsers (see example_parser.h).
#include "example_parser.h"

#include <algorithm>

namespace flowstone::example {

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

Status CheckKind(const proto::Feature& feature, DType dtype, const std::string& key) {
  // A Feature with no list set holds no values, of any type (as TensorFlow reads it).
  if (feature.kind_case() == proto::Feature::KIND_NOT_SET) return Status::OK();
  if (std::string(KindName(feature)) != FeatureTypeName(dtype)) {
    return errors::InvalidArgument("Key: ", key,
                                   ".  Data types don't match. Data type: ", KindName(feature),
                                   " but expected type: ", FeatureTypeName(dtype));
  }
  return Status::OK();
}

void CopyValues(const proto::Feature& feature, Tensor* out, int64_t offset) {
  switch (feature.kind_case()) {
    case proto::Feature::kFloatList:
      std::copy(feature.float_list().value().begin(), feature.float_list().value().end(),
                out->data<float>() + offset);
      break;
    case proto::Feature::kInt64List:
      std::copy(feature.int64_list().value().begin(), feature.int64_list().value().end(),
                out->data<int64_t>() + offset);
      break;
    case proto::Feature::kBytesList:
      std::copy(feature.bytes_list().value().begin(), feature.bytes_list().value().end(),
                out->data<std::string>() + offset);
      break;
    default:
      break;
  }
}

void FillPadding(const Tensor& value, Tensor* out, int64_t offset, int64_t count) {
  if (count <= 0) return;
  switch (out->dtype()) {
    case DType::kFloat32:
      std::fill_n(out->data<float>() + offset, count,
                  value.num_elements() ? *value.data<float>() : 0.0f);
      break;
    case DType::kInt64:
      std::fill_n(out->data<int64_t>() + offset, count,
                  value.num_elements() ? *value.data<int64_t>() : int64_t{0});
      break;
    default:
      std::fill_n(out->data<std::string>() + offset, count,
                  value.num_elements() ? *value.data<std::string>() : std::string());
  }
}

Status CheckFeatureTypes(const char* op, const std::vector<DType>& types) {
  for (DType t : types) {
    if (t != DType::kFloat32 && t != DType::kInt64 && t != DType::kString) {
      return errors::InvalidArgument(op, ": features are float32, int64 or string, got ",
                                     DTypeName(t));
    }
  }
  return Status::OK();
}

Status WriteSparse(const std::string& key, DType dtype,
                   const std::vector<const proto::Feature*>& found,
                   const std::vector<int64_t>& batch_shape, KernelContext& ctx, int indices_out,
                   int values_out, int shape_out) {
  const int rank = static_cast<int>(batch_shape.size());
  int64_t total = 0, longest = 0;
  for (const proto::Feature* f : found) {
    if (f) FS_RETURN_IF_ERROR(CheckKind(*f, dtype, key));
    const int64_t n = f ? ValueCount(*f) : 0;
    total += n;
    longest = std::max(longest, n);
  }
  Tensor *indices, *values, *shape;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(indices_out, TensorShape({total, rank + 1}), &indices));
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(values_out, TensorShape({total}), &values));
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(shape_out, TensorShape({rank + 1}), &shape));
  int64_t* index = indices->data<int64_t>();
  int64_t offset = 0;
  for (size_t b = 0; b < found.size(); ++b) {
    if (found[b] == nullptr) continue;
    const int64_t n = ValueCount(*found[b]);
    CopyValues(*found[b], values, offset);
    for (int64_t j = 0; j < n; ++j) {
      if (rank == 1) *index++ = static_cast<int64_t>(b);
      *index++ = j;
    }
    offset += n;
  }
  int64_t* dims = shape->data<int64_t>();
  for (int i = 0; i < rank; ++i) dims[i] = batch_shape[i];
  dims[rank] = longest;
  return Status::OK();
}

Status WriteDense(const std::string& key, DType dtype, const PartialShape& shape,
                  const std::vector<const proto::Feature*>& found,
                  const std::vector<int64_t>& batch_shape, const Tensor& fallback,
                  KernelContext& ctx, int out_index) {
  const bool variable = shape.rank() > 0 && shape.dim(0) < 0;
  int64_t row = 1;  // elements per step of the major dimension (variable) or in all (fixed)
  for (int d = variable ? 1 : 0; d < shape.rank(); ++d) row *= shape.dim(d);
  int64_t rows = variable ? 0 : 1;
  for (const proto::Feature* f : found) {
    if (f == nullptr) {
      if (!variable && fallback.num_elements() == 0) {
        return errors::InvalidArgument("Feature: ", key, " (data type: ", FeatureTypeName(dtype),
                                       ") is required but could not be found.");
      }
      continue;
    }
    FS_RETURN_IF_ERROR(CheckKind(*f, dtype, key));
    const int64_t n = ValueCount(*f);
    if (variable ? (row == 0 ? n != 0 : n % row != 0) : n != row) {
      return errors::InvalidArgument("Key: ", key, ".  Can't parse serialized Example: ", n,
                                     " values, but the shape ", shape.ToString(),
                                     variable ? " needs a multiple of " : " needs ", row);
    }
    if (variable && row > 0) rows = std::max(rows, n / row);
  }
  if (variable ? fallback.num_elements() > 1
               : fallback.num_elements() != 0 && fallback.num_elements() != row) {
    return errors::InvalidArgument("Key: ", key, ". default_value has ", fallback.num_elements(),
                                   " values but ",
                                   variable ? "a sequence feature pads with one value"
                                            : "the shape needs " + std::to_string(row));
  }
  std::vector<int64_t> dims = batch_shape;
  if (variable) dims.push_back(rows);
  for (int d = variable ? 1 : 0; d < shape.rank(); ++d) dims.push_back(shape.dim(d));
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(out_index, TensorShape(dims), &out));
  const int64_t per_record = rows * row;
  for (size_t b = 0; b < found.size(); ++b) {
    const int64_t offset = static_cast<int64_t>(b) * per_record;
    const int64_t n = found[b] ? ValueCount(*found[b]) : 0;
    if (found[b] != nullptr && n > 0) {
      CopyValues(*found[b], out, offset);
    } else if (!variable) {
      CopyElements(dtype, fallback.raw_data(),
                   static_cast<char*>(out->raw_data()) + offset * DTypeSize(dtype), row);
      continue;
    }
    if (variable) FillPadding(fallback, out, offset + n, per_record - n);
  }
  return Status::OK();
}

Status CheckDenseShapes(const char* op, const std::vector<PartialShape>& shapes) {
  for (const PartialShape& shape : shapes) {
    // Only the major dimension may be unknown (a FixedLenSequenceFeature's).
    for (int d = shape.known_rank() ? 1 : 0; d < std::max(shape.rank(), 1); ++d) {
      if (!shape.known_rank() || shape.dim(d) < 0) {
        return errors::InvalidArgument(op, ": dense shape ", shape.ToString(),
                                       " may have an unknown dimension only as its first; give "
                                       "the feature's shape after the first dimension");
      }
    }
  }
  return Status::OK();
}

Status KeysInput(KernelContext& ctx, int index, const char* name, std::vector<std::string>* out) {
  const Tensor& t = ctx.input(index);
  if (t.rank() > 1) {
    return errors::InvalidArgument(name, " must be a vector of keys, got shape ",
                                   t.shape().ToString());
  }
  out->assign(t.data<std::string>(), t.data<std::string>() + t.num_elements());
  return Status::OK();
}

}  // namespace flowstone::example
