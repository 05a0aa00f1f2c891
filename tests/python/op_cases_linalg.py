"""Conformance cases (see op_cases.py) for tf.linalg's ops: band and diagonal ops, Cross, and the
LAPACK-backed factorizations and solves. Only outputs whose values are unique are compared here
(singular and eigen vectors are checked up to sign in test_linalg_ops.py, as are the gradients
that need a symmetric or sign-invariant loss)."""

import numpy as np

from op_cases import Case, rand

_RNG = np.random.default_rng(21)


def _well_conditioned(*batch_and_n, dtype=np.float64):
    """Random matrices with a strong diagonal, so inverses and solves are accurate."""
    *batch, n = batch_and_n
    a = _RNG.uniform(-1, 1, size=(*batch, n, n)) + 3 * np.eye(n)
    return a.astype(dtype)


def _spd(*batch_and_n):
    *batch, n = batch_and_n
    x = _RNG.uniform(-1, 1, size=(*batch, n, n))
    return x @ np.swapaxes(x, -1, -2) + n * np.eye(n)


def _symmetric(*batch_and_n):
    *batch, n = batch_and_n
    x = _RNG.uniform(-1, 1, size=(*batch, n, n))
    return x + np.swapaxes(x, -1, -2)


def _band(x, lower, upper):
    m, n = x.shape[-2:]
    i, j = np.ogrid[:m, :n]
    keep = ((lower < 0) | (i - j <= lower)) & ((upper < 0) | (j - i <= upper))
    return np.where(keep, x, 0)


def _matrix_diag(d):
    out = np.zeros(d.shape + d.shape[-1:], d.dtype)
    idx = np.arange(d.shape[-1])
    out[..., idx, idx] = d
    return out


def _set_diag(x, d):
    out = x.copy()
    k = min(x.shape[-2:])
    idx = np.arange(k)
    out[..., idx, idx] = d
    return out


def _t(x):
    return np.swapaxes(x, -1, -2)


def _lower_solve(a, b, lower=True, adjoint=False):
    tri = np.tril(a) if lower else np.triu(a)
    return np.linalg.solve(_t(tri) if adjoint else tri, b)


def _slogdet(a):
    sign, logabs = np.linalg.slogdet(a)
    return sign, logabs


def _eigvalsh_lower(a):
    lower = np.tril(a)
    return np.linalg.eigvalsh(lower + _t(np.tril(a, -1)))


_TRIANGULAR = _well_conditioned(2, 3)
_SINGULAR = np.array([[1.0, 2.0], [2.0, 4.0]])

CASES = [
    Case("MatrixBandPart", [rand(2, 4, 5), np.array(1, np.int64), np.array(2, np.int64)],
         lambda x, lo, up: _band(x, 1, 2), grad=[0]),
    Case("MatrixBandPart", [rand(3, 3), np.array(-1, np.int32), np.array(0, np.int32)],
         lambda x, lo, up: np.tril(x), grad=[0]),
    Case("MatrixBandPart", [rand(3, 4) > 0, np.array(0, np.int64), np.array(-1, np.int64)],
         lambda x, lo, up: np.triu(x)),
    Case("MatrixDiag", [rand(2, 3)], _matrix_diag, grad=[0]),
    Case("MatrixDiag", [np.arange(3, dtype=np.int32)], _matrix_diag),
    Case("MatrixDiagPart", [rand(2, 3, 4)], lambda x: np.diagonal(x, axis1=-2, axis2=-1),
         grad=[0]),
    Case("MatrixSetDiag", [rand(2, 4, 3), rand(2, 3)], _set_diag, grad=[0, 1]),
    Case("Diag", [rand(2, 3)], lambda d: np.diag(d.ravel()).reshape(2, 3, 2, 3), grad=[0]),
    Case("DiagPart", [rand(2, 3, 2, 3)],
         lambda x: np.diag(x.reshape(6, 6)).reshape(2, 3), grad=[0]),
    Case("Cross", [rand(2, 3), rand(2, 3)], np.cross, grad=[0, 1]),
    Case("Cross", [np.array([[1, 2, 3]], np.int32), np.array([[4, 5, 6]], np.int32)], np.cross),
    Case("MatrixInverse", [_well_conditioned(2, 3)], np.linalg.inv, grad=[0]),
    Case("MatrixInverse", [_well_conditioned(4)], lambda a: np.linalg.inv(a.T),
         attrs={"adjoint": True}, grad=[0]),
    Case("MatrixInverse", [_well_conditioned(3, dtype=np.float32)], np.linalg.inv, rtol=1e-5),
    Case("MatrixDeterminant", [_well_conditioned(2, 3)], np.linalg.det, grad=[0]),
    Case("MatrixDeterminant", [_SINGULAR], np.linalg.det),
    Case("MatrixDeterminant", [np.array([[0.0, 1.0], [1.0, 0.0]], np.float32)],
         lambda a: np.float32(-1.0)),
    Case("LogMatrixDeterminant", [rand(2, 3, 3)], _slogdet, outputs=2, grad=[0]),
    Case("LogMatrixDeterminant", [_SINGULAR], lambda a: (0.0, -np.inf), outputs=2),
    Case("Cholesky", [_spd(2, 4)], np.linalg.cholesky),
    # Only the lower triangle is read.
    Case("Cholesky", [np.tril(_spd(3)) + np.triu(np.full((3, 3), 9.0), 1)],
         lambda a: np.linalg.cholesky(np.tril(a) + _t(np.tril(a, -1)))),
    Case("Cholesky", [_spd(3).astype(np.float32)],
         lambda a: np.linalg.cholesky(a.astype(np.float64)).astype(np.float32), rtol=1e-5),
    Case("MatrixSolve", [_well_conditioned(2, 3), rand(2, 3, 2)], np.linalg.solve, grad=[0, 1]),
    Case("MatrixSolve", [_well_conditioned(3), rand(3, 4)], lambda a, b: np.linalg.solve(a.T, b),
         attrs={"adjoint": True}, grad=[0, 1]),
    Case("MatrixTriangularSolve", [_TRIANGULAR, rand(2, 3, 2)], _lower_solve, grad=[0, 1]),
    Case("MatrixTriangularSolve", [_TRIANGULAR, rand(2, 3, 2)],
         lambda a, b: _lower_solve(a, b, lower=False), attrs={"lower": False}, grad=[0, 1]),
    Case("MatrixTriangularSolve", [_TRIANGULAR, rand(2, 3, 1)],
         lambda a, b: _lower_solve(a, b, adjoint=True), attrs={"adjoint": True}, grad=[0, 1]),
    Case("MatrixTriangularSolve", [_TRIANGULAR, rand(2, 3, 1)],
         lambda a, b: _lower_solve(a, b, lower=False, adjoint=True),
         attrs={"lower": False, "adjoint": True}, grad=[0, 1]),
    # Q and R as numpy (the same Householder convention) gives them.
    Case("Qr", [rand(2, 4, 3)], lambda a: np.linalg.qr(a), outputs=2, grad=[0]),
    Case("Qr", [rand(3, 3)], lambda a: np.linalg.qr(a), outputs=2, grad=[0]),
    Case("Qr", [rand(2, 3)], lambda a: np.linalg.qr(a), outputs=2),
    Case("Qr", [rand(3, 2).astype(np.float32)], lambda a: np.linalg.qr(a), outputs=2, rtol=1e-5,
         atol=1e-6),
    Case("Qr", [rand(4, 2)], lambda a: np.linalg.qr(a, mode="complete"),
         attrs={"full_matrices": True}, outputs=2),
    # Singular values only: the vectors are unique up to sign.
    Case("Svd", [rand(2, 4, 3)], lambda a: np.linalg.svd(a, compute_uv=False), grad=[0]),
    Case("Svd", [rand(3, 5)], lambda a: np.linalg.svd(a, compute_uv=False),
         attrs={"compute_uv": False}, grad=[0]),
    Case("Svd", [rand(3, 3).astype(np.float32)],
         lambda a: np.linalg.svd(a, compute_uv=False), rtol=1e-5, atol=1e-6),
    Case("SelfAdjointEigV2", [_symmetric(2, 4)], np.linalg.eigvalsh, grad=[0]),
    Case("SelfAdjointEigV2", [_symmetric(3).astype(np.float32)], np.linalg.eigvalsh, rtol=1e-5,
         atol=1e-6),
    # Only the lower triangle is read.
    Case("SelfAdjointEigV2", [rand(3, 3)], _eigvalsh_lower, attrs={"compute_v": False},
         grad=[0]),
]
