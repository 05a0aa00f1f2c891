"""More tf.linalg.LinearOperators, as thin compositions over the LinearOperator base
(linear_operator.py): Householder, Kronecker, BlockDiag, LowRankUpdate, Permutation, Toeplitz,
Tridiag and Circulant; and tf.linalg.eigh_tridiagonal, which TensorFlow composes in Python too.
Each operator gives its shape and dense matrix; matmul, solve and determinants use the structure
where it is simple (a reflection is its own inverse, a block-diagonal determinant is the product
of the blocks') and the dense matrix otherwise."""

import numpy as np

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.framework.tensor_shape import TensorShape
from flowstone.ops import (array_ops, complex_ops, fft_ops, linalg_ops, math_ops, matmul_ops,
                           partition_ops, reduction_ops, tridiagonal_ops)
from flowstone.ops.linear_operator import LinearOperator, _dim, _matrix_transpose
from flowstone.util.tf_export import tf_export


@tf_export("linalg.LinearOperatorHouseholder")
class LinearOperatorHouseholder(LinearOperator):
    """The reflection I - 2 v v^T / (v^T v) across the hyperplane orthogonal to
    `reflection_axis` v [..., N]: symmetric, orthogonal, its own inverse, determinant -1."""

    def __init__(self, reflection_axis, is_non_singular=None, is_self_adjoint=None,
                 is_positive_definite=None, is_square=None, name="LinearOperatorHouseholder"):
        self._axis = _ops.convert_to_tensor(reflection_axis, name="reflection_axis")
        if is_self_adjoint is False:
            raise ValueError("A Householder operator is always self adjoint.")
        if is_non_singular is False:
            raise ValueError("A Householder operator is always non-singular.")
        if is_positive_definite is True:
            raise ValueError("A Householder operator is always non-positive definite.")
        if is_square is False:
            raise ValueError("A Householder operator is always square.")
        super().__init__(self._axis.dtype, None, True, True, is_positive_definite, True, name,
                         dict(reflection_axis=reflection_axis))

    reflection_axis = property(lambda self: self._axis)

    def _shape(self):
        shape = self._axis.shape
        return TensorShape(None) if shape.ndims is None else shape.concatenate([shape[-1]])

    def _unit(self):
        return math_ops.divide(self._axis, math_ops.sqrt(reduction_ops.reduce_sum(
            math_ops.square(self._axis), axis=-1, keepdims=True)))

    def _to_dense(self):
        u = array_ops.expand_dims(self._unit(), -1)
        eye = linalg_ops.matrix_diag(array_ops.ones_like(self._axis))
        return math_ops.subtract(eye, math_ops.multiply(
            2.0, matmul_ops.matmul(u, u, transpose_b=True)))

    def _matmul(self, x, adjoint, adjoint_arg):
        if adjoint_arg:
            x = _matrix_transpose(x, conjugate=True)
        u = array_ops.expand_dims(self._unit(), -1)
        return math_ops.subtract(x, math_ops.multiply(
            2.0, matmul_ops.matmul(u, matmul_ops.matmul(u, x, transpose_a=True))))

    def _solve(self, rhs, adjoint, adjoint_arg):
        return self._matmul(rhs, adjoint, adjoint_arg)

    def _determinant(self):
        return -array_ops.ones_like(self._axis[..., 0])

    def _log_abs_determinant(self):
        return array_ops.zeros_like(self._axis[..., 0])

    def _trace(self):
        return math_ops.cast(array_ops.shape(self._axis)[-1] - 2, self.dtype) + \
            array_ops.zeros_like(self._axis[..., 0])


def _dense_kron(a, b):
    """kron(a, b) of [..., m, n] and [..., p, q]: [..., m p, n q]."""
    prod = math_ops.multiply(a[..., :, None, :, None], b[..., None, :, None, :])
    sa, sb = array_ops.shape(a), array_ops.shape(b)
    shape = array_ops.concat([sa[:-2], [sa[-2] * sb[-2], sa[-1] * sb[-1]]], axis=0)
    return array_ops.reshape(prod, shape)


def _static_product(shapes, axis):
    dims = [_dim(s[axis]) for s in shapes]
    return None if any(d is None for d in dims) else int(np.prod(dims))


class _CompositeOperator(LinearOperator):
    """An operator built from a list of operators of one dtype and batch shape."""

    def __init__(self, operators, is_non_singular, is_self_adjoint, is_positive_definite,
                 is_square, name, parameters):
        operators = list(operators)
        if not operators:
            raise ValueError(f"Expected a non-empty list of operators. Found: {operators}")
        dtypes = {op.dtype for op in operators}
        if len(dtypes) > 1:
            raise TypeError(f"Expected every operation in `operators` to have the same dtype. "
                            f"Found {[op.dtype.name for op in operators]}")
        self._operators = operators
        super().__init__(operators[0].dtype, None, is_non_singular, is_self_adjoint,
                         is_positive_definite, is_square, name, parameters)

    operators = property(lambda self: list(self._operators))

    def _batch(self):
        return self._operators[0].shape[:-2]


@tf_export("linalg.LinearOperatorKronecker")
class LinearOperatorKronecker(_CompositeOperator):
    """The Kronecker product of `operators` (left to right)."""

    def __init__(self, operators, is_non_singular=None, is_self_adjoint=None,
                 is_positive_definite=None, is_square=None, name=None):
        super().__init__(operators, is_non_singular, is_self_adjoint, is_positive_definite,
                         is_square, name or "_x_".join(op.name for op in operators),
                         dict(operators=operators))

    def _shape(self):
        shapes = [op.shape for op in self._operators]
        if any(s.ndims is None for s in shapes):
            return TensorShape(None)
        return self._batch().concatenate([_static_product(shapes, -2),
                                          _static_product(shapes, -1)])

    def _to_dense(self):
        dense = self._operators[0].to_dense()
        for op in self._operators[1:]:
            dense = _dense_kron(dense, op.to_dense())
        return dense


@tf_export("linalg.LinearOperatorBlockDiag")
class LinearOperatorBlockDiag(_CompositeOperator):
    """The block-diagonal matrix with `operators` (square) on its diagonal."""

    def __init__(self, operators, is_non_singular=None, is_self_adjoint=None,
                 is_positive_definite=None, is_square=True, name=None):
        if not is_square:
            raise ValueError(f"The block diagonal operator is always square. Found: "
                             f"is_square={is_square}")
        if any(op.is_square is False for op in operators):
            raise ValueError("Argument operators must all be square.")
        super().__init__(operators, is_non_singular, is_self_adjoint, is_positive_definite,
                         True, name or "_ds_".join(op.name for op in operators),
                         dict(operators=operators))

    def _shape(self):
        shapes = [op.shape for op in self._operators]
        if any(s.ndims is None for s in shapes):
            return TensorShape(None)
        dims = [_dim(s[-1]) for s in shapes]
        n = None if any(d is None for d in dims) else sum(dims)
        return self._batch().concatenate([n, n])

    def _sizes(self):
        return [array_ops.shape(op.to_dense())[-1] for op in self._operators]

    def _to_dense(self):
        sizes = self._sizes()
        total = math_ops.add_n(sizes)
        rows, before = [], 0
        for op, size in zip(self._operators, sizes):
            dense = op.to_dense()
            rank = dense.shape.ndims
            padding = [[0, 0]] * (rank - 1) + [[before, total - before - size]]
            rows.append(array_ops.pad(dense, array_ops.stack(
                [array_ops.stack(p) for p in padding])))
            before = before + size
        return array_ops.concat(rows, axis=-2)

    def _matmul(self, x, adjoint, adjoint_arg):
        if adjoint_arg:
            x = _matrix_transpose(x, conjugate=True)
        pieces = array_ops.split(x, self._sizes(), axis=-2)
        return array_ops.concat([op.matmul(p, adjoint=adjoint)
                                 for op, p in zip(self._operators, pieces)], axis=-2)

    def _solve(self, rhs, adjoint, adjoint_arg):
        if adjoint_arg:
            rhs = _matrix_transpose(rhs, conjugate=True)
        pieces = array_ops.split(rhs, self._sizes(), axis=-2)
        return array_ops.concat([op.solve(p, adjoint=adjoint)
                                 for op, p in zip(self._operators, pieces)], axis=-2)

    def _determinant(self):
        return reduction_ops.reduce_prod(
            array_ops.stack([op.determinant() for op in self._operators]), axis=0)

    def _log_abs_determinant(self):
        return math_ops.add_n([op.log_abs_determinant() for op in self._operators])

    def _diag_part(self):
        return array_ops.concat([op.diag_part() for op in self._operators], axis=-1)


@tf_export("linalg.LinearOperatorLowRankUpdate")
class LinearOperatorLowRankUpdate(LinearOperator):
    """base_operator + U diag(diag_update) V^T (V = U when not given, diag_update 1 when not
    given)."""

    def __init__(self, base_operator, u, diag_update=None, v=None, is_diag_update_positive=None,
                 is_non_singular=None, is_self_adjoint=None, is_positive_definite=None,
                 is_square=None, name="LinearOperatorLowRankUpdate"):
        self._base = base_operator
        self._u = _ops.convert_to_tensor(u, dtype=base_operator.dtype, name="u")
        self._v = self._u if v is None else _ops.convert_to_tensor(v, dtype=self._u.dtype,
                                                                   name="v")
        self._diag_update = (None if diag_update is None else
                             _ops.convert_to_tensor(diag_update, dtype=self._u.dtype,
                                                    name="diag_update"))
        if is_self_adjoint is None and v is None and base_operator.is_self_adjoint:
            is_self_adjoint = True
        super().__init__(base_operator.dtype, None, is_non_singular, is_self_adjoint,
                         is_positive_definite, is_square, name,
                         dict(base_operator=base_operator, u=u, diag_update=diag_update, v=v,
                              is_diag_update_positive=is_diag_update_positive))

    base_operator = property(lambda self: self._base)
    u = property(lambda self: self._u)
    v = property(lambda self: self._v)
    diag_update = property(lambda self: self._diag_update)

    def _shape(self):
        return self._base.shape

    def _to_dense(self):
        u = self._u
        if self._diag_update is not None:
            u = math_ops.multiply(u, array_ops.expand_dims(self._diag_update, -2))
        return math_ops.add(self._base.to_dense(), matmul_ops.matmul(u, self._v, adjoint_b=True))


@tf_export("linalg.LinearOperatorPermutation")
class LinearOperatorPermutation(LinearOperator):
    """The permutation matrix P with P[i, perm[i]] = 1, so (P @ x)[i] = x[perm[i]]."""

    def __init__(self, perm, dtype=_dtypes.float32, is_non_singular=None, is_self_adjoint=None,
                 is_positive_definite=None, is_square=None, name="LinearOperatorPermutation"):
        self._perm = _ops.convert_to_tensor(perm, name="perm")
        if not self._perm.dtype.is_integer:
            raise TypeError(f"Argument perm must have integer dtype. Found: {self._perm.dtype}")
        if is_non_singular is False:
            raise ValueError("A Permutation operator is always non-singular.")
        if is_square is False:
            raise ValueError("A Permutation operator is always square.")
        super().__init__(_dtypes.as_dtype(dtype), None, True, is_self_adjoint,
                         is_positive_definite, True, name, dict(perm=perm, dtype=dtype))

    perm = property(lambda self: self._perm)

    def _shape(self):
        shape = self._perm.shape
        return TensorShape(None) if shape.ndims is None else shape.concatenate([shape[-1]])

    def _to_dense(self):
        return array_ops.one_hot(self._perm, array_ops.shape(self._perm)[-1], dtype=self.dtype)

    def _matmul(self, x, adjoint, adjoint_arg):
        if adjoint_arg:
            x = _matrix_transpose(x, conjugate=True)
        return matmul_ops.matmul(self._to_dense(), x, adjoint_a=adjoint)

    def _solve(self, rhs, adjoint, adjoint_arg):
        # P is orthogonal: its inverse is its transpose.
        return self._matmul(rhs, not adjoint, adjoint_arg)


@tf_export("linalg.LinearOperatorToeplitz")
class LinearOperatorToeplitz(LinearOperator):
    """The Toeplitz matrix with first column `col` and first row `row` [..., N] (row[0] is
    ignored: the diagonal comes from col[0])."""

    def __init__(self, col, row, is_non_singular=None, is_self_adjoint=None,
                 is_positive_definite=None, is_square=None, name="LinearOperatorToeplitz"):
        self._col = _ops.convert_to_tensor(col, name="col")
        self._row = _ops.convert_to_tensor(row, dtype=self._col.dtype, name="row")
        super().__init__(self._col.dtype, None, is_non_singular, is_self_adjoint,
                         is_positive_definite, True, name, dict(col=col, row=row))

    col = property(lambda self: self._col)
    row = property(lambda self: self._row)

    def _shape(self):
        shape = self._col.shape
        return TensorShape(None) if shape.ndims is None else shape.concatenate([shape[-1]])

    def _to_dense(self):
        n = array_ops.shape(self._col)[-1]
        # T[i, j] = values[n - 1 + i - j] for values = reverse(row[1:]) ++ col.
        values = array_ops.concat([partition_ops.reverse(self._row[..., 1:], [-1]), self._col], -1)
        steps = array_ops.range(n)
        index = (n - 1) + array_ops.expand_dims(steps, 1) - array_ops.expand_dims(steps, 0)
        return array_ops.gather(values, index, axis=-1)


@tf_export("linalg.LinearOperatorTridiag")
class LinearOperatorTridiag(LinearOperator):
    """A tridiagonal matrix given by its diagonals, in tf.linalg.tridiagonal_matmul's formats
    ("compact" [..., 3, N], "sequence" of three [..., N], or "matrix")."""

    def __init__(self, diagonals, diagonals_format="compact", is_non_singular=None,
                 is_self_adjoint=None, is_positive_definite=None, is_square=None,
                 name="LinearOperatorTridiag"):
        self._format = diagonals_format
        self._diagonals = diagonals
        self._super, self._main, self._sub = tridiagonal_ops._compact_diagonals(
            diagonals, diagonals_format)
        super().__init__(self._main.dtype, None, is_non_singular, is_self_adjoint,
                         is_positive_definite, True, name,
                         dict(diagonals=diagonals, diagonals_format=diagonals_format))

    diagonals = property(lambda self: self._diagonals)
    diagonals_format = property(lambda self: self._format)

    def _shape(self):
        shape = self._main.shape
        return TensorShape(None) if shape.ndims is None else shape.concatenate([shape[-1]])

    def _to_dense(self):
        return tridiagonal_ops._dense(self._super, self._main, self._sub)

    def _diag_part(self):
        return self._main


@tf_export("linalg.LinearOperatorCirculant")
class LinearOperatorCirculant(LinearOperator):
    """The circulant matrix with the given (complex) `spectrum` [..., N]: C = F^H diag(spectrum)
    F, whose first column is ifft(spectrum). Values are of `input_output_dtype` (complex64 by
    default; a real dtype keeps the real part, right for a Hermitian spectrum)."""

    def __init__(self, spectrum, input_output_dtype=_dtypes.complex64, is_non_singular=None,
                 is_self_adjoint=None, is_positive_definite=None, is_square=True,
                 name="LinearOperatorCirculant"):
        self._spectrum = _ops.convert_to_tensor(spectrum, name="spectrum")
        super().__init__(_dtypes.as_dtype(input_output_dtype), None, is_non_singular,
                         is_self_adjoint, is_positive_definite, True, name,
                         dict(spectrum=spectrum, input_output_dtype=input_output_dtype))

    spectrum = property(lambda self: self._spectrum)

    def _shape(self):
        shape = self._spectrum.shape
        return TensorShape(None) if shape.ndims is None else shape.concatenate([shape[-1]])

    def convolution_kernel(self, name="convolution_kernel"):
        """The first column, ifft(spectrum)."""
        with self._name_scope(name):
            spectrum = self._spectrum
            if not spectrum.dtype.is_complex:
                spectrum = math_ops.cast(spectrum, _dtypes.complex64 if spectrum.dtype ==
                                         _dtypes.float32 else _dtypes.complex128)
            return fft_ops.ifft(spectrum)

    def _to_dense(self):
        column = self.convolution_kernel()
        n = array_ops.shape(column)[-1]
        steps = array_ops.range(n)
        index = math_ops.floormod(array_ops.expand_dims(steps, 1) - array_ops.expand_dims(
            steps, 0), n)
        dense = array_ops.gather(column, index, axis=-1)
        if self.dtype.is_complex:
            return math_ops.cast(dense, self.dtype)
        return math_ops.cast(complex_ops.real(dense), self.dtype)


@tf_export("linalg.eigh_tridiagonal")
def eigh_tridiagonal(alpha, beta, eigvals_only=True, select="a", select_range=None, tol=None,
                     name=None):
    """Eigenvalues (ascending; and eigenvectors unless eigvals_only) of the symmetric
    tridiagonal matrix with diagonal `alpha` [n] and off-diagonal `beta` [n - 1]. select "a"
    keeps all, "v" those in the half-open range (lo, hi], "i" those with indices lo..hi. The
    dense matrix goes through SelfAdjointEigV2 (TensorFlow bisects; docs/COMPAT.md)."""
    del tol
    if select not in ("a", "v", "i"):
        raise ValueError(f"Invalid select: {select!r}; expected 'a', 'v' or 'i'")
    with _ops.name_scope(name, "eigh_tridiagonal", [alpha, beta]):
        alpha = _ops.convert_to_tensor(alpha, name="alpha")
        beta = _ops.convert_to_tensor(beta, dtype=alpha.dtype, name="beta")
        if alpha.dtype.is_complex:
            raise NotImplementedError("eigh_tridiagonal takes real diagonals in Flowstone")
        zero = array_ops.zeros_like(alpha[:1])
        dense = tridiagonal_ops._dense(array_ops.concat([beta, zero], 0), alpha,
                                       array_ops.concat([zero, beta], 0))
        values, vectors = linalg_ops.self_adjoint_eig(dense)
        if select == "i":
            lo, hi = select_range
            values, vectors = values[lo:hi + 1], vectors[:, lo:hi + 1]
        elif select == "v":
            lo, hi = select_range
            keep = math_ops.logical_and(math_ops.greater(values, lo),
                                        math_ops.less_equal(values, hi))
            values = partition_ops.boolean_mask(values, keep)
            vectors = partition_ops.boolean_mask(vectors, keep, axis=1)
        return values if eigvals_only else (values, vectors)
