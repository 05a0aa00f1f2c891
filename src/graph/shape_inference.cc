#include "flowstone/shape_inference.h"

#include <algorithm>

#include "partial_value.h"

namespace flowstone {

InferenceContext::InferenceContext(const std::string& op_type, const std::string& node_name,
                                   const AttrMap& attrs, std::vector<PartialShape> input_shapes,
                                   std::vector<DType> input_types,
                                   std::vector<const Tensor*> input_values,
                                   std::vector<DType> output_types,
                                   std::vector<Endpoint> input_sources)
    : op_type_(op_type),
      node_name_(node_name),
      attrs_(attrs),
      input_shapes_(std::move(input_shapes)),
      input_types_(std::move(input_types)),
      input_values_(std::move(input_values)),
      output_types_(std::move(output_types)),
      output_shapes_(output_types_.size()),
      input_sources_(std::move(input_sources)) {}

Status InferenceContext::InputAsShape(int i, PartialShape* out) const {
  std::vector<std::optional<int64_t>> entries;
  PartialIntValue partial;
  if (const Tensor* value = input_value(i)) {
    if (value->rank() > 1) {
      return errors::InvalidArgument("Shape must be at most rank 1 but is rank ", value->rank());
    }
    for (int64_t k = 0; k < value->num_elements(); ++k) entries.push_back(value->ElementAsInt64(k));
  } else if (i < static_cast<int>(input_sources_.size()) &&
             EvaluatePartialIntValue(input_sources_[i], &partial) && !partial.scalar) {
    entries = std::move(partial.elements);
  } else {
    const PartialShape& s = input(i);
    if (s.known_rank() && s.rank() == 1 && s.dim(0) >= 0) {
      *out = PartialShape::UnknownOfRank(static_cast<int>(s.dim(0)));
    } else {
      *out = PartialShape::Unknown();
    }
    return Status::OK();
  }
  std::vector<int64_t> dims;
  for (const std::optional<int64_t>& d : entries) {
    if (d && *d < -1) return errors::InvalidArgument("Dimension ", *d, " must be >= -1");
    dims.push_back(d ? *d : PartialShape::kUnknownDim);
  }
  *out = PartialShape(dims);
  return Status::OK();
}

Status InferenceContext::WithRank(int i, int rank, PartialShape* out) const {
  const PartialShape& s = input(i);
  if (!s.known_rank()) {
    *out = PartialShape::UnknownOfRank(rank);
    return Status::OK();
  }
  if (s.rank() != rank) {
    return errors::InvalidArgument("Shape must be rank ", rank, " but is rank ", s.rank());
  }
  *out = s;
  return Status::OK();
}

Status InferenceContext::WithRankAtLeast(int i, int rank) const {
  const PartialShape& s = input(i);
  if (s.known_rank() && s.rank() < rank) {
    return errors::InvalidArgument("Shape must be at least rank ", rank, " but is rank ", s.rank());
  }
  return Status::OK();
}

Status InferenceContext::MergeDim(int64_t a, int64_t b, int64_t* out) const {
  if (a >= 0 && b >= 0 && a != b) {
    return errors::InvalidArgument("Dimensions must be equal, but are ", a, " and ", b);
  }
  *out = a >= 0 ? a : b;
  return Status::OK();
}

Status BroadcastShapes(const PartialShape& a, const PartialShape& b, PartialShape* out) {
  if (!a.known_rank() || !b.known_rank()) {
    *out = PartialShape::Unknown();
    return Status::OK();
  }
  int rank = std::max(a.rank(), b.rank());
  std::vector<int64_t> dims(rank);
  for (int i = 0; i < rank; ++i) {
    int ia = a.rank() - rank + i;
    int ib = b.rank() - rank + i;
    int64_t da = ia >= 0 ? a.dim(ia) : 1;
    int64_t db = ib >= 0 ? b.dim(ib) : 1;
    if (da == 1) {
      dims[i] = db;
    } else if (db == 1) {
      dims[i] = da;
    } else if (da < 0 || db < 0) {
      // One side unknown: the result is the known one unless it is 1 (handled above).
      dims[i] = da < 0 ? db : da;
    } else if (da == db) {
      dims[i] = da;
    } else {
      return errors::InvalidArgument("Incompatible shapes: ", a.ToString(), " vs. ", b.ToString());
    }
  }
  *out = PartialShape(dims);
  return Status::OK();
}

Status BroadcastShapes(const TensorShape& a, const TensorShape& b, TensorShape* out) {
  // Runs once per elementwise kernel call, so it stays allocation-free for common ranks.
  if (a == b) {
    *out = a;
    return Status::OK();
  }
  const int rank = std::max(a.rank(), b.rank());
  Dims dims;
  dims.resize(rank);
  for (int i = 0; i < rank; ++i) {
    const int ia = a.rank() - rank + i;
    const int ib = b.rank() - rank + i;
    const int64_t da = ia >= 0 ? a.dim(ia) : 1;
    const int64_t db = ib >= 0 ? b.dim(ib) : 1;
    if (da != db && da != 1 && db != 1) {
      return errors::InvalidArgument("Incompatible shapes: ", a.ToString(), " vs. ", b.ToString());
    }
    dims[i] = da == 1 ? db : da;
  }
  *out = TensorShape(dims);
  return Status::OK();
}

namespace shape_fns {

Status Unchanged(InferenceContext& ctx) {
  ctx.set_output(0, ctx.input(0));
  return Status::OK();
}

Status Scalar(InferenceContext& ctx) {
  ctx.set_output(0, PartialShape(std::vector<int64_t>{}));
  return Status::OK();
}

Status Broadcast(InferenceContext& ctx) {
  PartialShape out;
  FS_RETURN_IF_ERROR(BroadcastShapes(ctx.input(0), ctx.input(1), &out));
  ctx.set_output(0, out);
  return Status::OK();
}

Status NoOutputs(InferenceContext&) { return Status::OK(); }

}  // namespace shape_fns
}  // namespace flowstone
