"""tf.linalg.lu (the C++ Lu op, src/ops/linalg/lu_ops.cc) and what TensorFlow composes on its
outputs: lu_solve, lu_reconstruct and lu_matrix_inverse; and tf.linalg.sqrtm and logm
(MatrixSquareRoot, MatrixLogarithm). The row permutation p is applied as the matrix P with
P[i, p[i]] = 1 (so P @ A = L @ U), which serves batches as well as single matrices."""

import collections

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.ops import array_ops, linalg_ops, matmul_ops
from flowstone.util.tf_export import tf_export

Lu = collections.namedtuple("Lu", ["lu", "p"])


@tf_export("linalg.lu")
def lu(input, output_idx_type=_dtypes.int32, name=None):  # noqa: A002 - TensorFlow's name
    """The LU factorization with partial pivoting of square matrices [..., N, N]: (lu, p) with
    input[..., p, :] = L @ U, L unit lower triangular below lu's diagonal, U upper triangular."""
    input = _ops.convert_to_tensor(input, name="input")  # noqa: A001
    op = _ops.apply_op("Lu", [input], {"output_idx_type": _dtypes.as_dtype(output_idx_type)},
                       name=name or "Lu")
    return Lu(op.outputs[0], op.outputs[1])


def _factors(lower_upper):
    diag = linalg_ops.matrix_diag_part(lower_upper)
    lower = linalg_ops.matrix_set_diag(linalg_ops.matrix_band_part(lower_upper, -1, 0),
                                       array_ops.ones_like(diag))
    return lower, linalg_ops.matrix_band_part(lower_upper, 0, -1)


def _permutation_matrix(perm, like):
    depth = array_ops.shape(like)[-1]
    return array_ops.one_hot(perm, depth, dtype=like.dtype)


@tf_export("linalg.lu_reconstruct")
def lu_reconstruct(lower_upper, perm, validate_args=False, name=None):
    """The matrix whose LU factorization is (lower_upper, perm): P^T @ L @ U."""
    del validate_args
    with _ops.name_scope(name, "lu_reconstruct", [lower_upper, perm]):
        lower_upper = _ops.convert_to_tensor(lower_upper, name="lower_upper")
        perm = _ops.convert_to_tensor(perm, name="perm")
        lower, upper = _factors(lower_upper)
        return matmul_ops.matmul(_permutation_matrix(perm, lower_upper),
                                 matmul_ops.matmul(lower, upper), transpose_a=True)


@tf_export("linalg.lu_solve")
def lu_solve(lower_upper, perm, rhs, validate_args=False, name=None):
    """X with A @ X = rhs, for A given by its LU factorization (lower_upper, perm)."""
    del validate_args
    with _ops.name_scope(name, "lu_solve", [lower_upper, perm, rhs]):
        lower_upper = _ops.convert_to_tensor(lower_upper, name="lower_upper")
        perm = _ops.convert_to_tensor(perm, name="perm")
        rhs = _ops.convert_to_tensor(rhs, name="rhs", dtype=lower_upper.dtype)
        lower, upper = _factors(lower_upper)
        permuted = matmul_ops.matmul(_permutation_matrix(perm, lower_upper), rhs)
        y = linalg_ops.matrix_triangular_solve(lower, permuted, lower=True)
        return linalg_ops.matrix_triangular_solve(upper, y, lower=False)


@tf_export("linalg.lu_matrix_inverse")
def lu_matrix_inverse(lower_upper, perm, validate_args=False, name=None):
    """The inverse of the matrix whose LU factorization is (lower_upper, perm)."""
    with _ops.name_scope(name, "lu_matrix_inverse", [lower_upper, perm]):
        lower_upper = _ops.convert_to_tensor(lower_upper, name="lower_upper")
        eye = linalg_ops.matrix_diag(array_ops.ones_like(linalg_ops.matrix_diag_part(lower_upper)))
        return lu_solve(lower_upper, perm, eye, validate_args)


@tf_export("linalg.sqrtm", "matrix_square_root")
def matrix_square_root(input, name=None):  # noqa: A002
    """The principal square root of each square matrix [..., N, N]."""
    input = _ops.convert_to_tensor(input, name="input")  # noqa: A001
    return _ops.apply_op("MatrixSquareRoot", [input], name=name or "MatrixSquareRoot").outputs[0]


@tf_export("linalg.logm")
def matrix_logarithm(input, name=None):  # noqa: A002
    """The principal logarithm of each complex square matrix [..., N, N]."""
    input = _ops.convert_to_tensor(input, name="input")  # noqa: A001
    return _ops.apply_op("MatrixLogarithm", [input], name=name or "MatrixLogarithm").outputs[0]
