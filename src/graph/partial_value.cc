#include "partial_value.h"

#include <algorithm>

namespace flowstone {
namespace {

// Shape arguments are built by short chains of ops; a deeper chain is not worth following.
constexpr int kMaxDepth = 16;

bool IsIndexType(DType t) { return t == DType::kInt32 || t == DType::kInt64; }

bool Evaluate(const Endpoint& e, int depth, PartialIntValue* out);

// A 1-D value whose elements are all known, such as a slice's begin argument.
bool KnownVector(const Endpoint& e, int depth, std::vector<int64_t>* out) {
  PartialIntValue v;
  if (!Evaluate(e, depth, &v) || v.scalar) return false;
  out->clear();
  for (const std::optional<int64_t>& x : v.elements) {
    if (!x) return false;
    out->push_back(*x);
  }
  return true;
}

bool FromConst(const Node& node, PartialIntValue* out) {
  const AttrValue* attr = node.attrs().Find("value");
  const Tensor* t = attr ? std::get_if<Tensor>(attr) : nullptr;
  if (t == nullptr || t->rank() > 1) return false;
  out->scalar = t->rank() == 0;
  for (int64_t k = 0; k < t->num_elements(); ++k) out->elements.push_back(t->ElementAsInt64(k));
  return true;
}

bool FromShape(const Node& node, PartialIntValue* out) {
  const Endpoint& in = node.input(0);
  const PartialShape& shape = in.node->output_shape(in.index);
  if (!shape.known_rank()) return false;
  for (int64_t d : shape.dims()) {
    out->elements.push_back(d >= 0 ? std::optional<int64_t>(d) : std::nullopt);
  }
  return true;
}

// Pack of scalars (its output is then 1-D): each element is known where its scalar is.
bool FromPack(const Node& node, int depth, PartialIntValue* out) {
  if (node.output_shape(0).rank() != 1) return false;
  for (const Endpoint& in : node.inputs()) {
    PartialIntValue v;
    const bool known = Evaluate(in, depth, &v) && v.scalar;
    out->elements.push_back(known ? v.elements[0] : std::nullopt);
  }
  return true;
}

// ConcatV2 of vectors; an input whose value is unknown still contributes its length.
bool FromConcat(const Node& node, int depth, PartialIntValue* out) {
  const int n = node.num_inputs() - 1;
  PartialIntValue axis;
  if (!Evaluate(node.input(n), depth, &axis) || axis.elements.size() != 1 || !axis.elements[0] ||
      (*axis.elements[0] != 0 && *axis.elements[0] != -1)) {
    return false;
  }
  for (int i = 0; i < n; ++i) {
    PartialIntValue v;
    if (Evaluate(node.input(i), depth, &v) && !v.scalar) {
      out->elements.insert(out->elements.end(), v.elements.begin(), v.elements.end());
      continue;
    }
    const Endpoint& in = node.input(i);
    const PartialShape& shape = in.node->output_shape(in.index);
    if (shape.rank() != 1 || shape.dim(0) < 0) return false;
    out->elements.insert(out->elements.end(), shape.dim(0), std::nullopt);
  }
  return true;
}

bool FromSlice(const Node& node, int depth, PartialIntValue* out) {
  PartialIntValue in;
  std::vector<int64_t> begin, size;
  if (!Evaluate(node.input(0), depth, &in) || in.scalar ||
      !KnownVector(node.input(1), depth, &begin) || !KnownVector(node.input(2), depth, &size) ||
      begin.size() != 1 || size.size() != 1) {
    return false;
  }
  const int64_t n = static_cast<int64_t>(in.elements.size());
  const int64_t b = begin[0];
  const int64_t count = size[0] == -1 ? n - b : size[0];
  if (b < 0 || b > n || count < 0 || count > n - b) return false;
  out->elements.assign(in.elements.begin() + b, in.elements.begin() + b + count);
  return true;
}

// StridedSlice of a vector by one spec entry with known bounds: a single index (shrink) or a
// Python range with numpy's clamping.
bool FromStridedSlice(const Node& node, int depth, PartialIntValue* out) {
  const AttrMap& attrs = node.attrs();
  if (attrs.GetOr<int64_t>("ellipsis_mask", 0) != 0 ||
      attrs.GetOr<int64_t>("new_axis_mask", 0) != 0) {
    return false;
  }
  PartialIntValue in;
  std::vector<int64_t> begin, end, strides;
  if (!Evaluate(node.input(0), depth, &in) || in.scalar ||
      !KnownVector(node.input(1), depth, &begin) || !KnownVector(node.input(2), depth, &end) ||
      !KnownVector(node.input(3), depth, &strides) || begin.size() != 1 || end.size() != 1 ||
      strides.size() != 1 || strides[0] == 0) {
    return false;
  }
  const int64_t n = static_cast<int64_t>(in.elements.size());
  const int64_t stride = strides[0];
  if ((attrs.GetOr<int64_t>("shrink_axis_mask", 0) & 1) != 0) {
    const int64_t index = begin[0] < 0 ? begin[0] + n : begin[0];
    if (index < 0 || index >= n) return false;
    out->scalar = true;
    out->elements = {in.elements[index]};
    return true;
  }
  // Valid positions are [0, n] going forward and [-1, n - 1] going backward.
  const int64_t lo = stride > 0 ? 0 : -1;
  const int64_t hi = stride > 0 ? n : n - 1;
  auto bound = [&](int64_t x, bool masked, bool is_begin) {
    if (masked) return (stride > 0) == is_begin ? lo : hi;
    return std::clamp(x < 0 ? x + n : x, lo, hi);
  };
  const int64_t b = bound(begin[0], (attrs.GetOr<int64_t>("begin_mask", 0) & 1) != 0, true);
  const int64_t e = bound(end[0], (attrs.GetOr<int64_t>("end_mask", 0) & 1) != 0, false);
  for (int64_t i = b; stride > 0 ? i < e : i > e; i += stride) {
    out->elements.push_back(in.elements[i]);
  }
  return true;
}

bool Evaluate(const Endpoint& e, int depth, PartialIntValue* out) {
  *out = PartialIntValue();
  if (depth > kMaxDepth || !IsIndexType(e.node->output_type(e.index))) return false;
  const Node& node = *e.node;
  const std::string& type = node.type();
  ++depth;
  if (type == "Const") return FromConst(node, out);
  if (type == "Shape") return FromShape(node, out);
  if (type == "Pack") return FromPack(node, depth, out);
  if (type == "ConcatV2") return FromConcat(node, depth, out);
  if (type == "Slice") return FromSlice(node, depth, out);
  if (type == "StridedSlice") return FromStridedSlice(node, depth, out);
  if (type == "Identity" || (type == "Cast" && IsIndexType(node.input_type(0)))) {
    return Evaluate(node.input(0), depth, out);
  }
  return false;
}

}  // namespace

bool EvaluatePartialIntValue(const Endpoint& e, PartialIntValue* out) {
  return Evaluate(e, 0, out);
}

}  // namespace flowstone
