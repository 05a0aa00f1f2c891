"""tf.linalg functions that TensorFlow composes from the linalg ops: matvec, lstsq (its fast,
Cholesky-based path), pinv and matrix_rank (from the SVD) and normalize; and tf.linalg.matmul,
the same function as tf.matmul."""

import numpy as np

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.ops import array_ops as _array
from flowstone.ops import math_ops as _math
from flowstone.ops import reduction_ops as _reduction
from flowstone.ops.clip_ops import norm
from flowstone.ops.linalg_ops import cholesky, cholesky_solve, svd
from flowstone.ops.matmul_ops import matmul
from flowstone.util.tf_export import export_value, tf_export

export_value("linalg.matmul", matmul)


def _static_matrix_dims(t, fn_name, fallback):
    """(rows, cols) of t [..., M, N] known while building, or a ValueError naming `fallback`."""
    dims = t.shape.as_list() if t.shape.rank is not None else None
    if dims is None or len(dims) < 2 or dims[-2] is None or dims[-1] is None:
        raise ValueError(f"tf.linalg.{fn_name} needs the matrix dimensions known while building"
                         f"{fallback}; got shape {t.shape}")
    return dims[-2], dims[-1]


@tf_export("linalg.matvec")
def matvec(a, b, transpose_a=False, adjoint_a=False, a_is_sparse=False, b_is_sparse=False,
           name=None):
    """op(a) @ b for matrices a [..., M, N] and vectors b [..., N]."""
    with _ops.name_scope(name, "MatVec", [a, b]):
        column = _array.expand_dims(b, -1)
        product = matmul(a, column, transpose_a=transpose_a, adjoint_a=adjoint_a,
                         a_is_sparse=a_is_sparse, b_is_sparse=b_is_sparse)
        return _array.squeeze(product, axis=-1)


def _regularized_gramian_cholesky(matrix, l2_regularizer, first_kind):
    """cholesky(A^H A + l2 I) (first kind) or cholesky(A A^H + l2 I)."""
    gramian = matmul(matrix, matrix, adjoint_a=first_kind, adjoint_b=not first_kind)
    if isinstance(l2_regularizer, _ops.Tensor) or l2_regularizer != 0:
        identity = _ops.apply_op("MatrixDiag", [_array.ones_like(
            _ops.apply_op("MatrixDiagPart", [gramian]).outputs[0])]).outputs[0]
        gramian = gramian + _math.cast(l2_regularizer, matrix.dtype) * identity
    return cholesky(gramian)


@tf_export("linalg.lstsq", "matrix_solve_ls")
def lstsq(matrix, rhs, l2_regularizer=0.0, fast=True, name=None):
    """The least-squares solution X of matrix @ X = rhs (minimum norm when underdetermined),
    with an optional L2 regularizer, through the normal equations and a Cholesky factorization
    as TensorFlow's fast path does."""
    if not fast:
        raise NotImplementedError("tf.linalg.lstsq supports only fast=True (the Cholesky-based "
                                  "normal equations)")
    with _ops.name_scope(name, "matrix_solve_ls", [matrix, rhs, l2_regularizer]):
        matrix = _ops.convert_to_tensor(matrix, name="matrix")
        rhs = _ops.convert_to_tensor(rhs, name="rhs", dtype=matrix.dtype)
        rows, cols = _static_matrix_dims(matrix, "lstsq", "")
        if rows >= cols:  # overdetermined: (A^H A + l2) X = A^H B
            chol = _regularized_gramian_cholesky(matrix, l2_regularizer, first_kind=True)
            return cholesky_solve(chol, matmul(matrix, rhs, adjoint_a=True))
        chol = _regularized_gramian_cholesky(matrix, l2_regularizer, first_kind=False)
        return matmul(matrix, cholesky_solve(chol, rhs), adjoint_a=True)


@tf_export("linalg.pinv")
def pinv(a, rcond=None, validate_args=False, name=None):
    """The Moore-Penrose pseudo-inverse from the SVD; singular values below
    rcond * max(singular value) count as zero (rcond defaults to 10 * max(M, N) * eps)."""
    with _ops.name_scope(name or "pinv"):
        a = _ops.convert_to_tensor(a, name="a")
        dtype = a.dtype.as_numpy_dtype
        if rcond is None:
            rows, cols = _static_matrix_dims(a, "pinv", ", or an explicit rcond")
            rcond = 10.0 * max(rows, cols) * np.finfo(dtype).eps
        rcond = _ops.convert_to_tensor(rcond, dtype=a.dtype, name="rcond")
        s, u, v = svd(a, full_matrices=False, compute_uv=True)
        cutoff = rcond * _reduction.reduce_max(s, axis=-1)
        # Small singular values become inf, so that 1 / s is 0 without NaN gradients.
        s = _math.where(s > _array.expand_dims(cutoff, -1), s,
                        _ops.constant(np.inf, dtype=a.dtype))
        return matmul(v / _array.expand_dims(s, -2), u, adjoint_b=True)


@tf_export("linalg.matrix_rank")
def matrix_rank(a, tol=None, validate_args=False, name=None):
    """The number of singular values above tol (default eps * max(M, N) * max(singular
    value)), as int32."""
    with _ops.name_scope(name or "matrix_rank"):
        a = _ops.convert_to_tensor(a, name="a", preferred_dtype=_dtypes.float32)
        s = svd(a, compute_uv=False)
        if tol is None:
            rows, cols = _static_matrix_dims(a, "matrix_rank", ", or an explicit tol")
            eps = np.finfo(a.dtype.as_numpy_dtype).eps
            largest = _reduction.reduce_max(s, axis=-1, keepdims=True)
            tol = eps * max(rows, cols) * largest
        above = _math.cast(s > tol, _dtypes.int32)
        return _reduction.reduce_sum(above, axis=-1)


@tf_export("linalg.normalize")
def normalize(tensor, ord="euclidean", axis=None, name=None):  # noqa: A002
    """(tensor / norm, norm), the norm as tf.norm computes it, with its dimensions kept."""
    with _ops.name_scope(name, "normalize", [tensor]):
        tensor = _ops.convert_to_tensor(tensor)
        value = norm(tensor, ord, axis, keepdims=True)
        return tensor / value, value
