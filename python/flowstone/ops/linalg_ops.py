"""tf.linalg: band and diagonal ops, eye, trace, adjoint, cross, and the LAPACK-backed
factorizations and solves (inv, det, slogdet, logdet, cholesky, solve, triangular_solve,
cholesky_solve, qr, svd, eigh, eigvalsh), with their TF1 top-level names (tf.matrix_inverse,
tf.cholesky, ...)."""

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.ops import array_ops as _array
from flowstone.ops import math_ops as _math
from flowstone.ops import reduction_ops as _reduction
from flowstone.util.tf_export import tf_export


def _op(op_type, inputs, attrs=None, name=None, outputs=1):
    """Adds one op named `name` (or after its type) and returns its first `outputs` outputs."""
    op = _ops.apply_op(op_type, inputs, attrs, name=name or op_type)
    return op.outputs[0] if outputs == 1 else tuple(op.outputs[:outputs])


def _index_scalar(value, name):
    """A band bound as an int64 scalar (the op's default index type)."""
    if isinstance(value, _ops.Tensor):
        return value
    return _ops.constant(value, dtype=_dtypes.int64, name=name)


@tf_export("linalg.band_part", "matrix_band_part")
def matrix_band_part(input, num_lower, num_upper, name=None):  # noqa: A002
    """Keeps num_lower subdiagonals and num_upper superdiagonals of each innermost matrix (a
    negative count keeps the whole triangle) and zeroes the rest."""
    with _ops.name_scope(name, "MatrixBandPart", [input, num_lower, num_upper]) as scope:
        inputs = [_ops.convert_to_tensor(input, name="input"),
                  _index_scalar(num_lower, "num_lower"), _index_scalar(num_upper, "num_upper")]
        return _ops.apply_op("MatrixBandPart", inputs, name=scope.rstrip("/"),
                             exact_name=True).outputs[0]


def _only_main_diagonal(fn_name, k, extra):
    """The main-diagonal forms are implemented; TF2's k, num_rows, ... offsets are not."""
    if k != 0 or any(extra):
        raise NotImplementedError(
            f"tf.linalg.{fn_name} supports only the main diagonal (k=0) and default padding and "
            "sizes; use matrix_band_part or gather for other diagonals.")


@tf_export("linalg.diag", "matrix_diag")
def matrix_diag(diagonal, name="diag", k=0, num_rows=-1, num_cols=-1, padding_value=0,
                align="RIGHT_LEFT"):
    """Square matrices [..., K, K] with `diagonal` [..., K] on their main diagonals."""
    _only_main_diagonal("diag", k, [num_rows != -1, num_cols != -1, padding_value != 0])
    return _op("MatrixDiag", [_ops.convert_to_tensor(diagonal, name="diagonal")], name=name)


@tf_export("linalg.diag_part", "matrix_diag_part")
def matrix_diag_part(input, name="diag_part", k=0, padding_value=0,  # noqa: A002
                     align="RIGHT_LEFT"):
    """The main diagonals [..., min(M, N)] of matrices [..., M, N]."""
    _only_main_diagonal("diag_part", k, [padding_value != 0])
    return _op("MatrixDiagPart", [_ops.convert_to_tensor(input, name="input")], name=name)


@tf_export("linalg.set_diag", "matrix_set_diag")
def matrix_set_diag(input, diagonal, name="set_diag", k=0, align="RIGHT_LEFT"):  # noqa: A002
    """The matrices with their main diagonals replaced by `diagonal`."""
    _only_main_diagonal("set_diag", k, [])
    inputs = [_ops.convert_to_tensor(input, name="input"),
              _ops.convert_to_tensor(diagonal, name="diagonal")]
    return _op("MatrixSetDiag", inputs, name=name)


@tf_export("linalg.tensor_diag", "diag")
def tensor_diag(diagonal, name=None):
    """A tensor of shape D + D holding `diagonal` (shape D) on its diagonal."""
    return _op("Diag", [_ops.convert_to_tensor(diagonal, name="diagonal")], name=name)


@tf_export("linalg.tensor_diag_part", "diag_part")
def tensor_diag_part(input, name=None):  # noqa: A002
    """The diagonal (shape D) of a tensor of shape D + D."""
    return _op("DiagPart", [_ops.convert_to_tensor(input, name="input")], name=name)


@tf_export("eye", "linalg.eye")
def eye(num_rows, num_columns=None, batch_shape=None, dtype=_dtypes.float32, name=None):
    """Identity matrices [*batch_shape, num_rows, num_columns] (square by default)."""
    with _ops.name_scope(name, "eye", [num_rows, num_columns, batch_shape]):
        dtype = _dtypes.as_dtype(dtype)
        batch = list(batch_shape or [])
        sizes = [num_rows, num_columns]
        if any(isinstance(v, _ops.Tensor) for v in sizes + batch):
            raise NotImplementedError("tf.eye needs Python integers for its sizes and batch shape")
        num_columns = num_rows if num_columns is None else num_columns
        ones = _array.ones(batch + [min(num_rows, num_columns)], dtype=dtype)
        if num_rows == num_columns:
            return _op("MatrixDiag", [ones], name="diag")
        zeros = _array.zeros(batch + [num_rows, num_columns], dtype=dtype)
        return _op("MatrixSetDiag", [zeros, ones], name="set_diag")


@tf_export("linalg.trace", "trace")
def trace(x, name=None):
    """The sum of each innermost matrix's main diagonal."""
    with _ops.name_scope(name, "Trace", [x]) as scope:
        x = _ops.convert_to_tensor(x, name="x")
        diagonals = _op("MatrixDiagPart", [x])
        last_axis = _ops.constant([-1], dtype=_dtypes.int32)
        return _ops.apply_op("Sum", [diagonals, last_axis], {"keep_dims": False},
                             name=scope.rstrip("/"), exact_name=True).outputs[0]


@tf_export("linalg.matrix_transpose", "linalg.transpose", "matrix_transpose")
def matrix_transpose(a, name="matrix_transpose", conjugate=False):
    """Swaps the last two dimensions; with `conjugate`, complex elements are conjugated too
    (the adjoint)."""
    with _ops.name_scope(name, values=[a]):
        a = _ops.convert_to_tensor(a, name="a")
        rank = a.shape.rank
        if rank is not None:
            if rank < 2:
                raise ValueError("Argument 'a' should be a (batch) matrix with rank >= 2.  "
                                 f"Received: {a}")
            perm = list(range(rank - 2)) + [rank - 1, rank - 2]
        else:
            a_rank = _array.rank(a)
            perm = _array.concat([_array.range(a_rank - 2), [a_rank - 1, a_rank - 2]], axis=0)
        return _array.transpose(a, perm=perm, conjugate=conjugate)


@tf_export("linalg.adjoint")
def adjoint(matrix, name=None):
    """The conjugate transpose of the last two dimensions."""
    with _ops.name_scope(name, "adjoint", [matrix]):
        matrix = _ops.convert_to_tensor(matrix, name="matrix")
        return matrix_transpose(matrix, conjugate=True)


@tf_export("linalg.cross", "cross")
def cross(a, b, name=None):
    """Cross products of 3-vectors along the last dimension."""
    a = _ops.convert_to_tensor(a, name="a")
    b = _ops.convert_to_tensor(b, name="b", dtype=a.dtype)
    return _op("Cross", [a, b], name=name)


@tf_export("linalg.inv", "matrix_inverse")
def matrix_inverse(input, adjoint=False, name=None):  # noqa: A002
    """Inverses of square matrices (of their adjoints with adjoint=True); a singular matrix is an
    InvalidArgumentError."""
    return _op("MatrixInverse", [_ops.convert_to_tensor(input, name="input")],
               {"adjoint": bool(adjoint)}, name=name)


@tf_export("linalg.det", "matrix_determinant")
def matrix_determinant(input, name=None):  # noqa: A002
    """Determinants of square matrices."""
    return _op("MatrixDeterminant", [_ops.convert_to_tensor(input, name="input")], name=name)


@tf_export("linalg.slogdet")
def slogdet(input, name=None):  # noqa: A002
    """(sign, log |det|) of square matrices: the log-determinant without overflow."""
    return _op("LogMatrixDeterminant", [_ops.convert_to_tensor(input, name="input")], name=name,
               outputs=2)


@tf_export("linalg.logdet")
def logdet(matrix, name=None):
    """log det of symmetric positive definite matrices, 2 * sum(log(diag(cholesky)))."""
    with _ops.name_scope(name, "logdet", [matrix]):
        chol = _op("Cholesky", [_ops.convert_to_tensor(matrix, name="matrix")])
        log_diagonal = _math.log(_op("MatrixDiagPart", [chol]))
        return 2.0 * _reduction.reduce_sum(log_diagonal, axis=[-1])


@tf_export("linalg.cholesky", "cholesky")
def cholesky(input, name=None):  # noqa: A002
    """Lower-triangular L with L L^T = input, from its lower triangle; a matrix that is not
    positive definite is an InvalidArgumentError."""
    return _op("Cholesky", [_ops.convert_to_tensor(input, name="input")], name=name)


@tf_export("linalg.solve", "matrix_solve")
def matrix_solve(matrix, rhs, adjoint=False, name=None):
    """X with matrix @ X = rhs (adjoint(matrix) @ X = rhs with adjoint=True)."""
    matrix = _ops.convert_to_tensor(matrix, name="matrix")
    rhs = _ops.convert_to_tensor(rhs, name="rhs", dtype=matrix.dtype)
    return _op("MatrixSolve", [matrix, rhs], {"adjoint": bool(adjoint)}, name=name)


@tf_export("linalg.triangular_solve", "matrix_triangular_solve")
def matrix_triangular_solve(matrix, rhs, lower=True, adjoint=False, name=None):
    """X with op(matrix) @ X = rhs, reading only matrix's lower (or upper) triangle."""
    matrix = _ops.convert_to_tensor(matrix, name="matrix")
    rhs = _ops.convert_to_tensor(rhs, name="rhs", dtype=matrix.dtype)
    return _op("MatrixTriangularSolve", [matrix, rhs],
               {"lower": bool(lower), "adjoint": bool(adjoint)}, name=name)


@tf_export("linalg.cholesky_solve", "cholesky_solve")
def cholesky_solve(chol, rhs, name=None):
    """X with A X = rhs, given A's Cholesky factor: two triangular solves."""
    with _ops.name_scope(name, "cholesky_solve", [chol, rhs]):
        y = matrix_triangular_solve(chol, rhs, lower=True, adjoint=False)
        return matrix_triangular_solve(chol, y, lower=True, adjoint=True)


@tf_export("linalg.qr", "qr")
def qr(input, full_matrices=False, name=None):  # noqa: A002
    """(q, r) with input = q @ r, q orthonormal columns and r upper triangular."""
    return _op("Qr", [_ops.convert_to_tensor(input, name="input")],
               {"full_matrices": bool(full_matrices)}, name=name, outputs=2)


@tf_export("linalg.svd", "svd")
def svd(tensor, full_matrices=False, compute_uv=True, name=None):
    """Singular values s (descending), and with compute_uv the vectors: tensor = u diag(s) v^T.
    Returns s, or (s, u, v)."""
    with _ops.name_scope(name, "svd", [tensor]):
        tensor = _ops.convert_to_tensor(tensor, name="tensor")
        s, u, v = _op("Svd", [tensor], {"compute_uv": bool(compute_uv),
                                         "full_matrices": bool(full_matrices)}, outputs=3)
        return (s, u, v) if compute_uv else s


@tf_export("linalg.eigh", "self_adjoint_eig")
def self_adjoint_eig(tensor, name=None):
    """(e, v): eigenvalues ascending and eigenvectors (columns) of symmetric matrices, from their
    lower triangles."""
    return _op("SelfAdjointEigV2", [_ops.convert_to_tensor(tensor, name="tensor")],
               {"compute_v": True}, name=name, outputs=2)


@tf_export("linalg.eigvalsh", "self_adjoint_eigvals")
def self_adjoint_eigvals(tensor, name=None):
    """Eigenvalues (ascending) of symmetric matrices."""
    return _op("SelfAdjointEigV2", [_ops.convert_to_tensor(tensor, name="tensor")],
               {"compute_v": False}, name=name, outputs=2)[0]
