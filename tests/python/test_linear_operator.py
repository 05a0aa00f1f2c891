"""tf.linalg.LinearOperator* against numpy on the dense matrices they stand for, and the
tridiagonal matmul/solve against numpy with finite-difference gradients. (The values were also
compared with TensorFlow's when this was written.)"""

import numpy as np
import pytest

import flowstone as tf
from gradient_check import check_gradients

RNG = np.random.default_rng(3)
A = RNG.normal(size=(2, 3, 3)) + 3 * np.eye(3)
DIAG = RNG.uniform(1.0, 2.0, size=(2, 3))
X = RNG.normal(size=(2, 3, 2))
LO = tf.linalg


def _operators():
    full = LO.LinearOperatorFullMatrix(A)
    diag = LO.LinearOperatorDiag(DIAG)
    tril = LO.LinearOperatorLowerTriangular(A)
    scaled = LO.LinearOperatorScaledIdentity(3, np.array([2.0, 3.0]))
    identity = LO.LinearOperatorIdentity(3, batch_shape=[2], dtype=tf.float64)
    dense = {
        "full": A, "diag": np.stack([np.diag(d) for d in DIAG]), "tril": np.tril(A),
        "scaled": np.array([2.0, 3.0])[:, None, None] * np.eye(3), "identity": np.tile(
            np.eye(3), (2, 1, 1)),
    }
    dense["composition"] = A @ dense["diag"]
    dense["adjoint"] = np.swapaxes(np.tril(A), -1, -2)
    dense["inversion"] = np.linalg.inv(A)
    return {
        "full": full, "diag": diag, "tril": tril, "scaled": scaled, "identity": identity,
        "composition": LO.LinearOperatorComposition([full, diag]),
        "adjoint": LO.LinearOperatorAdjoint(tril), "inversion": LO.LinearOperatorInversion(full),
    }, dense


@pytest.mark.parametrize("kind", ["full", "diag", "tril", "scaled", "identity", "composition",
                                  "adjoint", "inversion"])
def test_operator_matches_its_dense_matrix(kind):
    operators, dense = _operators()
    op, m = operators[kind], dense[kind]
    assert op.shape.as_list() == [2, 3, 3]
    assert op.batch_shape.as_list() == [2] and op.tensor_rank == 3 and op.is_square
    adjoint = np.swapaxes(m, -1, -2)
    checks = [
        (op.to_dense(), m),
        (op.matmul(X), m @ X),
        (op.matmul(X, adjoint=True), adjoint @ X),
        (op.matmul(np.swapaxes(X, -1, -2), adjoint_arg=True), m @ X),
        (op.matvec(X[..., 0]), (m @ X[..., :1])[..., 0]),
        (op.solve(X), np.linalg.solve(m, X)),
        (op.solve(X, adjoint=True), np.linalg.solve(adjoint, X)),
        (op.solvevec(X[..., 0]), np.linalg.solve(m, X[..., :1])[..., 0]),
        (op.determinant(), np.linalg.det(m)),
        (op.log_abs_determinant(), np.log(np.abs(np.linalg.det(m)))),
        (op.trace(), np.trace(m, axis1=-2, axis2=-1)),
        (op.diag_part(), np.diagonal(m, axis1=-2, axis2=-1)),
        (op.add_to_tensor(X[..., :1]), m + X[..., :1]),
        (op.adjoint().to_dense(), adjoint),
        (op.inverse().to_dense(), np.linalg.inv(m)),
    ]
    with tf.Session() as sess:
        got = sess.run([c[0] for c in checks])
    for value, (_, want) in zip(got, checks):
        np.testing.assert_allclose(value, want, rtol=1e-10, atol=1e-12)


def test_operator_matmul_of_operators_composes():
    operators, dense = _operators()
    product = operators["full"].matmul(operators["diag"])
    assert isinstance(product, LO.LinearOperatorComposition)
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(product.to_dense()), dense["composition"],
                                   rtol=1e-12)


def test_hints_and_their_errors():
    assert LO.LinearOperatorDiag(DIAG).is_self_adjoint
    assert LO.LinearOperatorIdentity(2).is_positive_definite
    assert LO.LinearOperatorFullMatrix(A, is_positive_definite=True).is_non_singular
    with pytest.raises(ValueError, match="A positive definite matrix is always non-singular"):
        LO.LinearOperatorFullMatrix(A, is_positive_definite=True, is_non_singular=False)
    with pytest.raises(ValueError, match=r"is_square=True, but got num_rows\(3\) != "):
        LO.LinearOperatorZeros(3, 2)
    with pytest.raises(ValueError, match="A self-adjoint matrix is always square"):
        LO.LinearOperatorZeros(3, 2, is_square=False)
    zeros = LO.LinearOperatorZeros(3, 2, is_square=False, is_self_adjoint=False,
                                   dtype=tf.float64)
    assert zeros.shape.as_list() == [3, 2]
    with pytest.raises(NotImplementedError, match="expected to be singular"):
        zeros.solve(np.ones((3, 1)))
    with pytest.raises(ValueError, match="singular matrix"):
        LO.LinearOperatorZeros(3).inverse()
    with pytest.raises(TypeError, match="same dtype"):
        LO.LinearOperatorComposition([LO.LinearOperatorIdentity(3),
                                      LO.LinearOperatorFullMatrix(A[0])])
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        LO.LinearOperatorFullMatrix(np.ones(3))
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(zeros.matmul(np.ones((2, 4)))), np.zeros((3, 4)))


def _tridiagonal(compact):
    sup, main, sub = compact[..., 0, :], compact[..., 1, :], compact[..., 2, :]
    return (np.stack([np.diag(s[:-1], 1) for s in sup]) + np.stack([np.diag(m) for m in main]) +
            np.stack([np.diag(s[1:], -1) for s in sub]))


COMPACT = RNG.normal(size=(2, 3, 4))
COMPACT[:, 1] += 4.0
RHS = RNG.normal(size=(2, 4, 3))


def test_tridiagonal_matmul_and_solve_formats():
    dense = _tridiagonal(COMPACT)
    sequence = [COMPACT[:, 0], COMPACT[:, 1], COMPACT[:, 2]]
    checks = [
        (LO.tridiagonal_matmul(COMPACT, RHS), dense @ RHS),
        (LO.tridiagonal_matmul(sequence, RHS, diagonals_format="sequence"), dense @ RHS),
        (LO.tridiagonal_matmul(dense + np.triu(np.ones((4, 4)), 2), RHS,
                               diagonals_format="matrix"), dense @ RHS),
        (LO.tridiagonal_solve(COMPACT, RHS), np.linalg.solve(dense, RHS)),
        (LO.tridiagonal_solve(COMPACT, RHS[..., 0]), np.linalg.solve(dense, RHS[..., :1])[..., 0]),
        (LO.tridiagonal_solve(COMPACT, np.swapaxes(RHS, -1, -2), transpose_rhs=True),
         np.linalg.solve(dense, RHS)),
        (LO.l2_normalize(RHS, axis=-1), RHS / np.linalg.norm(RHS, axis=-1, keepdims=True)),
    ]
    with tf.Session() as sess:
        got = sess.run([c[0] for c in checks])
    for value, (_, want) in zip(got, checks):
        np.testing.assert_allclose(value, want, rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="Unrecognized diagonals_format: banded"):
        LO.tridiagonal_matmul(COMPACT, RHS, diagonals_format="banded")


def test_tridiagonal_gradients():
    check_gradients(lambda d, r: LO.tridiagonal_matmul(d, r), [COMPACT, RHS], wrt=[0, 1])
    check_gradients(lambda d, r: LO.tridiagonal_solve(d, r), [COMPACT, RHS], wrt=[0, 1],
                    rtol=1e-5)
