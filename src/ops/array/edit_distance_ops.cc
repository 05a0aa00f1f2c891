// EditDistance: the Levenshtein distance between sequences held in two SparseTensors. The
// sequences are the entries grouped by all but their last index (in index order); the result has
// one distance per group position, of shape max(hypothesis_shape, truth_shape)[:-1], optionally
// divided by the truth's length.
#include <algorithm>
#include <limits>
#include <map>
#include <vector>

#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"

namespace flowstone {
namespace {

using Group = std::vector<int64_t>;  // an entry's index without its last component

// Reads one SparseTensor (inputs first..first+2) into sequences keyed by group, after checking
// its parts' shapes and that every index lies inside its dense shape.
template <typename T>
Status ReadSequences(KernelContext& ctx, int first, const char* which,
                     std::map<Group, std::vector<std::pair<int64_t, T>>>* sequences,
                     std::vector<int64_t>* shape) {
  const Tensor& indices = ctx.input(first);
  const Tensor& values = ctx.input(first + 1);
  const Tensor& dense_shape = ctx.input(first + 2);
  if (indices.shape().rank() != 2 || values.shape().rank() != 1 ||
      dense_shape.shape().rank() != 1 || indices.shape().dim(0) != values.shape().dim(0) ||
      indices.shape().dim(1) != dense_shape.shape().dim(0)) {
    return errors::InvalidArgument(
        "EditDistance: ", which, " must be a SparseTensor: indices [N, rank], values [N] and ",
        "shape [rank]; got shapes ", indices.shape().ToString(), ", ", values.shape().ToString(),
        " and ", dense_shape.shape().ToString());
  }
  const int64_t rank = dense_shape.num_elements();
  if (rank < 1) {
    return errors::InvalidArgument("EditDistance: ", which, " must have rank at least 1");
  }
  shape->assign(dense_shape.data<int64_t>(), dense_shape.data<int64_t>() + rank);
  int64_t elements = 1;
  for (int64_t d = 0; d < rank; ++d) {
    if ((*shape)[d] < 0 || __builtin_mul_overflow(elements, (*shape)[d], &elements)) {
      return errors::InvalidArgument("EditDistance: ", which, " shape has dimension ", d, " = ",
                                     (*shape)[d], ": dimensions must be non-negative and their ",
                                     "product fit in int64");
    }
  }
  for (int64_t i = 0; i < values.num_elements(); ++i) {
    const int64_t* index = indices.data<int64_t>() + i * rank;
    for (int64_t d = 0; d < rank; ++d) {
      if (index[d] < 0 || index[d] >= (*shape)[d]) {
        return errors::InvalidArgument("EditDistance: ", which, " index ", i, " has ", index[d],
                                       " in dimension ", d, ", outside [0, ", (*shape)[d], ")");
      }
    }
    (*sequences)[Group(index, index + rank - 1)].emplace_back(index[rank - 1], values.data<T>()[i]);
  }
  for (auto& [group, sequence] : *sequences) std::sort(sequence.begin(), sequence.end());
  return Status::OK();
}

template <typename T>
int64_t Levenshtein(const std::vector<std::pair<int64_t, T>>& a,
                    const std::vector<std::pair<int64_t, T>>& b) {
  std::vector<int64_t> previous(b.size() + 1), current(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) previous[j] = static_cast<int64_t>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    current[0] = static_cast<int64_t>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      const int64_t substitute = previous[j - 1] + (a[i - 1].second == b[j - 1].second ? 0 : 1);
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, substitute});
    }
    std::swap(previous, current);
  }
  return previous[b.size()];
}

Status EditDistanceKernel(KernelContext& ctx) {
  const bool normalize = ctx.attrs().GetOr<bool>("normalize", true);
  return DispatchDType<int32_t, int64_t>(
      ctx.input(1).dtype(), "EditDistance", [&]<typename T>() -> Status {
        std::map<Group, std::vector<std::pair<int64_t, T>>> hypothesis, truth;
        std::vector<int64_t> hypothesis_shape, truth_shape;
        FS_RETURN_IF_ERROR(ReadSequences<T>(ctx, 0, "hypothesis", &hypothesis, &hypothesis_shape));
        FS_RETURN_IF_ERROR(ReadSequences<T>(ctx, 3, "truth", &truth, &truth_shape));
        if (hypothesis_shape.size() != truth_shape.size()) {
          return errors::InvalidArgument("EditDistance: hypothesis and truth must have the same ",
                                         "rank; got ", hypothesis_shape.size(), " and ",
                                         truth_shape.size());
        }
        std::vector<int64_t> out_dims;
        for (size_t d = 0; d + 1 < truth_shape.size(); ++d) {
          out_dims.push_back(std::max(hypothesis_shape[d], truth_shape[d]));
        }
        Tensor* output;
        FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape(out_dims), &output));
        float* out = output->data<float>();
        std::fill(out, out + output->num_elements(), 0.0f);
        auto position = [&](const Group& group) {
          int64_t flat = 0;
          for (size_t d = 0; d < group.size(); ++d) flat = flat * out_dims[d] + group[d];
          return flat;
        };
        const std::vector<std::pair<int64_t, T>> empty;
        std::map<Group, char> groups;
        for (const auto& [group, seq] : hypothesis) groups[group] = 1;
        for (const auto& [group, seq] : truth) groups[group] = 1;
        for (const auto& [group, unused] : groups) {
          auto h = hypothesis.find(group);
          auto t = truth.find(group);
          const auto& hyp = h == hypothesis.end() ? empty : h->second;
          const auto& tru = t == truth.end() ? empty : t->second;
          const double distance = static_cast<double>(Levenshtein(hyp, tru));
          double value = distance;
          if (normalize) {
            value = tru.empty() ? std::numeric_limits<double>::infinity()
                                : distance / static_cast<double>(tru.size());
          }
          out[position(group)] = static_cast<float>(value);
        }
        return Status::OK();
      });
}

Status EditDistanceShape(InferenceContext& ctx) {
  // The output's shape depends on the shape inputs' values.
  PartialShape shape;
  if (ctx.InputAsShape(2, &shape).ok() && shape.known_rank() && shape.rank() >= 1) {
    ctx.set_output(0, PartialShape::UnknownOfRank(shape.rank() - 1));
  } else {
    ctx.set_output(0, PartialShape::Unknown());
  }
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("EditDistance")
                   .Input("hypothesis_indices", "int64")
                   .Input("hypothesis_values", "T")
                   .Input("hypothesis_shape", "int64")
                   .Input("truth_indices", "int64")
                   .Input("truth_values", "T")
                   .Input("truth_shape", "int64")
                   .Output("output", "float32")
                   .TypeAttr("T", {DType::kInt32, DType::kInt64})
                   .Attr("normalize", true)
                   .Shape(EditDistanceShape)
                   .Kernel("CPU", EditDistanceKernel)
                   .NotDifferentiable()
                   .Doc("Levenshtein distances between the sequences of two SparseTensors, "
                        "optionally divided by the truth sequences' lengths."));

}  // namespace
}  // namespace flowstone
