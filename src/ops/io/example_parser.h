// The value helpers shared by the tf.train.Example parsers (example_ops.cc) and the
// tf.train.SequenceExample parser (sequence_example_ops.cc): reading a Feature's values into an
// output tensor, padding, and writing a sparse feature as SparseTensor pieces.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "flowstone/kernel.h"
#include "flowstone/status.h"
#include "flowstone/tensor.h"
#include "proto/example.pb.h"

namespace flowstone::example {

// "float", "int64" or "string": the names TensorFlow's parse errors use.
const char* FeatureTypeName(DType dtype);
// The list a Feature holds, by the same names ("none" when it holds none).
const char* KindName(const proto::Feature& feature);
// How many values a Feature holds.
int64_t ValueCount(const proto::Feature& feature);

// InvalidArgument naming `key` when `feature` holds values of another type than `dtype`.
Status CheckKind(const proto::Feature& feature, DType dtype, const std::string& key);
// InvalidArgument unless every type is float32, int64 or string (what a Feature can hold).
Status CheckFeatureTypes(const char* op, const std::vector<DType>& types);

// InvalidArgument unless each dense shape is known but for (at most) its first dimension.
Status CheckDenseShapes(const char* op, const std::vector<PartialShape>& shapes);

// Copies the values of `feature` into `out` (of the feature's dtype) from element `offset` on.
void CopyValues(const proto::Feature& feature, Tensor* out, int64_t offset);
// Sets `count` elements of `out` from `offset` on to the one element of `value`, or to zero
// ("" for strings) when `value` is empty.
void FillPadding(const Tensor& value, Tensor* out, int64_t offset, int64_t count);

// Writes the sparse feature `key` of a batch (`found[b]` the feature of record b, or null where it
// is missing; InvalidArgument where it holds another type than `dtype`) as SparseTensor pieces into
// outputs `indices_out` ([n, rank + 1]: the record's index in the batch, when batch_shape is a
// vector, then the value's), `values_out` ([n]) and `shape_out` ([rank + 1]: batch_shape, then the
// longest list).
Status WriteSparse(const std::string& key, DType dtype,
                   const std::vector<const proto::Feature*>& found,
                   const std::vector<int64_t>& batch_shape, KernelContext& ctx, int indices_out,
                   int values_out, int shape_out);

// The keys of the 1-D string input `index` (named `name` in errors).
Status KeysInput(KernelContext& ctx, int index, const char* name, std::vector<std::string>* out);

// Writes one dense feature of a batch into output `out_index`: batch_shape + shape, a missing
// feature taking `fallback` (its default: empty when the feature is required). A shape whose
// first dimension is unknown (a FixedLenSequenceFeature's) takes the longest record's, the
// others padded with `fallback`'s one element (or zeros).
Status WriteDense(const std::string& key, DType dtype, const PartialShape& shape,
                  const std::vector<const proto::Feature*>& found,
                  const std::vector<int64_t>& batch_shape, const Tensor& fallback,
                  KernelContext& ctx, int out_index);

}  // namespace flowstone::example
