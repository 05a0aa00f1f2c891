#include "ops/matmul_util.h"

#include <algorithm>

namespace flowstone {

Status PlanBatches(const TensorShape& x, const TensorShape& y, BatchPlan* plan) {
  int rank = std::max(x.rank(), y.rank()) - 2;
  auto batch_dim = [rank](const TensorShape& s, int i) {
    int j = i - (rank - (s.rank() - 2));
    return j >= 0 ? s.dim(j) : int64_t{1};
  };
  plan->out_dims.assign(rank, 1);
  for (int i = 0; i < rank; ++i) {
    int64_t dx = batch_dim(x, i), dy = batch_dim(y, i);
    if (dx != dy && dx != 1 && dy != 1) {
      return errors::InvalidArgument(
          "In[0] and In[1] must have compatible batch dimensions: ", x.ToString(), " vs. ",
          y.ToString(),
          ". Batch dimensions broadcast like numpy's: each pair must be equal or "
          "one of them 1");
    }
    plan->out_dims[i] = dx == 1 ? dy : dx;
  }
  int64_t batches = 1;
  for (int64_t d : plan->out_dims) batches *= d;
  plan->x_index.assign(batches, 0);
  plan->y_index.assign(batches, 0);
  // Walk the output batch index like an odometer, tracking the flat index into each operand
  // (a broadcast dimension does not advance its operand).
  std::vector<int64_t> counter(rank, 0);
  std::vector<int64_t> x_stride(rank), y_stride(rank);
  int64_t xs = 1, ys = 1;
  for (int i = rank - 1; i >= 0; --i) {
    int64_t dx = batch_dim(x, i), dy = batch_dim(y, i);
    x_stride[i] = dx == 1 ? 0 : xs;
    y_stride[i] = dy == 1 ? 0 : ys;
    xs *= dx;
    ys *= dy;
  }
  int64_t xi = 0, yi = 0;
  for (int64_t b = 0; b < batches; ++b) {
    plan->x_index[b] = xi;
    plan->y_index[b] = yi;
    for (int i = rank - 1; i >= 0; --i) {
      xi += x_stride[i];
      yi += y_stride[i];
      if (++counter[i] < plan->out_dims[i]) break;
      xi -= x_stride[i] * counter[i];
      yi -= y_stride[i] * counter[i];
      counter[i] = 0;
    }
  }
  return Status::OK();
}

Status PlanBatchMatMul(const TensorShape& x, const TensorShape& y, bool adj_x, bool adj_y,
                       BatchMatMulPlan* plan) {
  if (x.rank() < 2 || y.rank() < 2) {
    return errors::InvalidArgument(
        "BatchMatMulV2 needs inputs of rank >= 2 (matrices or batches of them), but got shapes ",
        x.ToString(), " and ", y.ToString());
  }
  const int rx = x.rank(), ry = y.rank();
  const MatrixDims op_x = Op(x.dim(rx - 2), x.dim(rx - 1), adj_x);
  const MatrixDims op_y = Op(y.dim(ry - 2), y.dim(ry - 1), adj_y);
  if (op_x.cols != op_y.rows) {
    return errors::InvalidArgument(
        "Matrix size-incompatible: In[0]: ", x.ToString(), ", In[1]: ", y.ToString(),
        " (adj_x=", adj_x, ", adj_y=", adj_y,
        "): the columns of each matrix of the first operand must equal the rows of each "
        "matrix of the second");
  }
  FS_RETURN_IF_ERROR(PlanBatches(x, y, &plan->batches));
  plan->m = op_x.rows;
  plan->n = op_y.cols;
  plan->k = op_x.cols;
  std::vector<int64_t> out_dims = plan->batches.out_dims;
  out_dims.push_back(plan->m);
  out_dims.push_back(plan->n);
  plan->out_shape = TensorShape(out_dims);
  return Status::OK();
}

}  // namespace flowstone
