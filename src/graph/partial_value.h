// Partial values of small integer tensors while a graph is built, as TensorFlow's
// constant_value_as_shape infers them: enough to give `tf.reshape(x, [tf.shape(x)[0], 2, 2])` the
// static shape [?,2,2] although the first entry is only known at run time.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "flowstone/graph.h"

namespace flowstone {

// A scalar or 1-D integer tensor whose elements are each known or not.
struct PartialIntValue {
  bool scalar = false;
  std::vector<std::optional<int64_t>> elements;
};

// Evaluates `e` from the ops that produce it: Const, Shape (of a partially known shape),
// Identity, Cast between integer types, Pack of scalars, ConcatV2 of vectors, and Slice or
// StridedSlice of a vector with known bounds. Returns false when not even the number of elements
// is known this way.
bool EvaluatePartialIntValue(const Endpoint& e, PartialIntValue* out);

}  // namespace flowstone
