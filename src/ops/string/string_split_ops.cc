// StringSplit and StringSplitV2 (tf.compat.v1.string_split, tf.strings.split): a vector of
// strings split into tokens, returned as a SparseTensor (indices [N, 2], values [N], shape
// [batch, most tokens in a row]). StringSplit splits at any byte of `delimiter` (every byte when
// it is empty), optionally dropping empty tokens; StringSplitV2 follows Python's str.split: at
// each occurrence of `sep`, or at runs of ASCII whitespace when `sep` is empty, at most
// `maxsplit` times. Neither is differentiable.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/array_util.h"

namespace flowstone {
namespace {

using Tokens = std::vector<std::string_view>;

bool IsAsciiSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

// TensorFlow 1's StringSplit: each byte of `delimiters` ends a token.
Tokens SplitAtAnyOf(std::string_view text, std::string_view delimiters, bool skip_empty) {
  Tokens tokens;
  if (text.empty()) return tokens;
  if (delimiters.empty()) {
    for (size_t i = 0; i < text.size(); ++i) tokens.push_back(text.substr(i, 1));
    return tokens;
  }
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || delimiters.find(text[i]) != std::string_view::npos) {
      if (i > start || !skip_empty) tokens.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  return tokens;
}

// Python's bytes.split(sep, maxsplit), and for an empty `sep` TensorFlow's version of
// bytes.split(None, maxsplit): after `maxsplit` tokens the rest of the string (from the next
// non-space) is one more token, even when empty ("abc" with maxsplit=1 gives "abc" and "").
Tokens SplitLikePython(std::string_view text, std::string_view sep, int64_t maxsplit) {
  Tokens tokens;
  if (sep.empty()) {
    auto skip_spaces = [&](size_t i) {
      while (i < text.size() && IsAsciiSpace(text[i])) ++i;
      return i;
    };
    size_t i = skip_spaces(0);
    for (int64_t splits = 0; maxsplit < 0 || splits < maxsplit; ++splits) {
      if (i == text.size()) return tokens;
      size_t j = i;
      while (j < text.size() && !IsAsciiSpace(text[j])) ++j;
      tokens.push_back(text.substr(i, j - i));
      i = skip_spaces(j);
    }
    tokens.push_back(text.substr(i));
    return tokens;
  }
  size_t start = 0;
  while (maxsplit < 0 || static_cast<int64_t>(tokens.size()) < maxsplit) {
    const size_t at = text.find(sep, start);
    if (at == std::string_view::npos) break;
    tokens.push_back(text.substr(start, at - start));
    start = at + sep.size();
  }
  tokens.push_back(text.substr(start));
  return tokens;
}

// The rows' tokens as the three tensors of a SparseTensor.
Status WriteSparse(KernelContext& ctx, const std::vector<Tokens>& rows) {
  int64_t total = 0, widest = 0;
  for (const Tokens& row : rows) {
    total += static_cast<int64_t>(row.size());
    widest = std::max(widest, static_cast<int64_t>(row.size()));
  }
  Tensor *indices, *values, *shape;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{total, 2}, &indices));
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(1, TensorShape{total}, &values));
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(2, TensorShape{2}, &shape));
  int64_t n = 0;
  for (size_t r = 0; r < rows.size(); ++r) {
    for (size_t j = 0; j < rows[r].size(); ++j, ++n) {
      indices->data<int64_t>()[2 * n] = static_cast<int64_t>(r);
      indices->data<int64_t>()[2 * n + 1] = static_cast<int64_t>(j);
      values->data<std::string>()[n].assign(rows[r][j].data(), rows[r][j].size());
    }
  }
  shape->data<int64_t>()[0] = static_cast<int64_t>(rows.size());
  shape->data<int64_t>()[1] = widest;
  return Status::OK();
}

Status CheckInputVector(const Tensor& input) {
  if (input.rank() != 1) {
    return errors::InvalidArgument("input must be a vector, got shape: ", input.shape().ToString());
  }
  return Status::OK();
}

Status StringSplitKernel(KernelContext& ctx) {
  const Tensor& input = ctx.input(0);
  FS_RETURN_IF_ERROR(CheckInputVector(input));
  std::string delimiters;
  FS_RETURN_IF_ERROR(array_util::ScalarString(ctx.input(1), "delimiter", &delimiters));
  const bool skip_empty = ctx.attrs().GetOr<bool>("skip_empty", true);
  std::vector<Tokens> rows;
  for (int64_t i = 0; i < input.num_elements(); ++i) {
    rows.push_back(SplitAtAnyOf(input.data<std::string>()[i], delimiters, skip_empty));
  }
  return WriteSparse(ctx, rows);
}

Status StringSplitV2Kernel(KernelContext& ctx) {
  const Tensor& input = ctx.input(0);
  FS_RETURN_IF_ERROR(CheckInputVector(input));
  std::string sep;
  FS_RETURN_IF_ERROR(array_util::ScalarString(ctx.input(1), "sep", &sep));
  const int64_t maxsplit = ctx.attrs().GetOr<int64_t>("maxsplit", -1);
  std::vector<Tokens> rows;
  for (int64_t i = 0; i < input.num_elements(); ++i) {
    rows.push_back(SplitLikePython(input.data<std::string>()[i], sep, maxsplit));
  }
  return WriteSparse(ctx, rows);
}

Status StringSplitShape(InferenceContext& ctx) {
  PartialShape unused;
  FS_RETURN_IF_ERROR(ctx.WithRank(0, 1, &unused));
  FS_RETURN_IF_ERROR(ctx.WithRank(1, 0, &unused));
  ctx.set_output(0, PartialShape({-1, 2}));
  ctx.set_output(1, PartialShape({-1}));
  ctx.set_output(2, PartialShape({2}));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("StringSplit")
                   .Input("input", "string")
                   .Input("delimiter", "string")
                   .Output("indices", "int64")
                   .Output("values", "string")
                   .Output("shape", "int64")
                   .Attr("skip_empty", true)
                   .Shape(StringSplitShape)
                   .Kernel("CPU", StringSplitKernel)
                   .NotDifferentiable()
                   .Doc("Each string split at any byte of delimiter (at every byte when it is "
                        "empty), as a SparseTensor of tokens (tf.compat.v1.string_split)."));

FS_REGISTER_OP(OpBuilder("StringSplitV2")
                   .Input("input", "string")
                   .Input("sep", "string")
                   .Output("indices", "int64")
                   .Output("values", "string")
                   .Output("shape", "int64")
                   .Attr("maxsplit", -1)
                   .Shape(StringSplitShape)
                   .Kernel("CPU", StringSplitV2Kernel)
                   .NotDifferentiable()
                   .Doc("Each string split as Python's str.split(sep, maxsplit) does (at ASCII "
                        "whitespace runs for an empty sep), as a SparseTensor of tokens."));

}  // namespace
}  // namespace flowstone
