"""tf.linalg.tridiagonal_matmul and tridiagonal_solve, composed from array and linalg ops (so
their gradients come from those ops), and tf.linalg.l2_normalize, TensorFlow's alias of
tf.nn.l2_normalize."""

from flowstone.framework import ops as _ops
from flowstone.ops import array_ops, linalg_ops, math_ops, nn_impl
from flowstone.util.tf_export import export_value, tf_export

export_value("linalg.l2_normalize", nn_impl.l2_normalize)

_FORMATS = ("compact", "sequence", "matrix")


def _compact_diagonals(diagonals, diagonals_format):
    """(superdiagonal, main diagonal, subdiagonal), each [..., M]; the superdiagonal's last
    and the subdiagonal's first element are padding, as in TensorFlow's compact format."""
    if diagonals_format not in _FORMATS:
        raise ValueError(f"Unrecognized diagonals_format: {diagonals_format}")
    if diagonals_format == "sequence":
        if not isinstance(diagonals, (list, tuple)) or len(diagonals) != 3:
            raise ValueError("Expected diagonals to be a sequence of length 3.")
        return tuple(_ops.convert_to_tensor(d) for d in diagonals)
    diagonals = _ops.convert_to_tensor(diagonals, name="diagonals")
    if diagonals_format == "compact":
        return diagonals[..., 0, :], diagonals[..., 1, :], diagonals[..., 2, :]
    return (array_ops.pad(linalg_ops.matrix_diag_part(diagonals[..., :-1, 1:]),
                          _last_axis_padding(diagonals, 0, 1)),
            linalg_ops.matrix_diag_part(diagonals),
            array_ops.pad(linalg_ops.matrix_diag_part(diagonals[..., 1:, :-1]),
                          _last_axis_padding(diagonals, 1, 0)))


def _last_axis_padding(t, before, after, extra_axes=1):
    """Paddings for a tensor of rank(t) - extra_axes that pad only its last axis."""
    rank = t.shape.ndims - extra_axes
    return [[0, 0]] * (rank - 1) + [[before, after]]


def _dense(superdiag, maindiag, subdiag):
    """The [..., M, M] matrix with those three diagonals."""
    rank = maindiag.shape.ndims
    batch = [[0, 0]] * (rank - 1)
    upper = array_ops.pad(linalg_ops.matrix_diag(superdiag[..., :-1]), batch + [[0, 1], [1, 0]])
    lower = array_ops.pad(linalg_ops.matrix_diag(subdiag[..., 1:]), batch + [[1, 0], [0, 1]])
    return math_ops.add(math_ops.add(upper, linalg_ops.matrix_diag(maindiag)), lower)


@tf_export("linalg.tridiagonal_matmul")
def tridiagonal_matmul(diagonals, rhs, diagonals_format="compact", name=None):
    """A @ rhs for the tridiagonal A given by `diagonals` ("compact" [..., 3, M], "sequence"
    of three [..., M], or a full "matrix" [..., M, M] of which only the three diagonals
    count); rhs is [..., M, N]."""
    with _ops.name_scope(name, "tridiagonal_matmul"):
        superdiag, maindiag, subdiag = _compact_diagonals(diagonals, diagonals_format)
        rhs = _ops.convert_to_tensor(rhs, name="rhs")
        # row i: superdiag[i] * rhs[i + 1] + maindiag[i] * rhs[i] + subdiag[i] * rhs[i - 1]
        pad_rows = [[0, 0]] * (rhs.shape.ndims - 2)
        below = array_ops.pad(rhs[..., 1:, :], pad_rows + [[0, 1], [0, 0]])
        above = array_ops.pad(rhs[..., :-1, :], pad_rows + [[1, 0], [0, 0]])
        column = lambda d: array_ops.expand_dims(d, -1)  # noqa: E731
        return math_ops.add_n([math_ops.multiply(column(superdiag), below),
                               math_ops.multiply(column(maindiag), rhs),
                               math_ops.multiply(column(subdiag), above)])


@tf_export("linalg.tridiagonal_solve")
def tridiagonal_solve(diagonals, rhs, diagonals_format="compact", transpose_rhs=False,
                      conjugate_rhs=False, name=None, partial_pivoting=True,
                      perturb_singular=False):
    """X with A @ X = rhs for the tridiagonal A given by `diagonals` (formats as in
    tridiagonal_matmul). Solved by LU with partial pivoting on the dense matrix (TensorFlow's
    Thomas algorithm without pivoting is not offered; see docs/COMPAT.md). A rhs of rank one
    less than the matrix is a vector."""
    if perturb_singular:
        raise NotImplementedError("tridiagonal_solve(perturb_singular=True) is not supported: "
                                  "a singular system raises InvalidArgumentError")
    with _ops.name_scope(name, "tridiagonal_solve"):
        matrix = _dense(*_compact_diagonals(diagonals, diagonals_format))
        rhs = _ops.convert_to_tensor(rhs, name="rhs")
        is_vector = rhs.shape.ndims == matrix.shape.ndims - 1
        if is_vector:
            rhs = array_ops.expand_dims(rhs, -1)
        elif transpose_rhs:
            rhs = linalg_ops.matrix_transpose(rhs, conjugate=conjugate_rhs)
        solution = linalg_ops.matrix_solve(matrix, rhs)
        return array_ops.squeeze(solution, axis=[-1]) if is_vector else solution
