"""tf.linalg.LinearOperator and its common subclasses: a matrix (or a batch of them) known by
its structure, so that matmul, solve and determinants use that structure. The structured
operations are compositions of the linalg ops; anything a subclass does not specialize falls back
to its dense matrix. Real dtypes only, as the linalg kernels (docs/COMPAT.md)."""

from flowstone.framework import ops as _ops
from flowstone.framework.tensor_shape import TensorShape
from flowstone.ops import (array_ops, linalg_ops, math_functions, math_ops, matmul_ops,
                           reduction_ops)
from flowstone.util.tf_export import tf_export


def _dim(dimension):
    """A static dimension as an int or None (TensorShape items may be Dimensions or ints)."""
    return getattr(dimension, "value", dimension)


def _matrix_transpose(x, conjugate):
    return linalg_ops.matrix_transpose(x, conjugate=conjugate)


@tf_export("linalg.LinearOperator")
class LinearOperator:
    """Base class. A subclass defines _shape() and _to_dense(), and may specialize _matmul,
    _solve, _determinant, _log_abs_determinant, _diag_part and _trace."""

    def __init__(self, dtype, graph_parents=None, is_non_singular=None, is_self_adjoint=None,
                 is_positive_definite=None, is_square=None, name=None, parameters=None):
        if is_positive_definite:
            if is_non_singular is False:
                raise ValueError("A positive definite matrix is always non-singular.")
            is_non_singular = True
        if is_non_singular and is_square is False:
            raise ValueError("A non-singular matrix is always square.")
        if is_non_singular:
            is_square = True
        if is_self_adjoint:
            if is_square is False:
                raise ValueError("A self-adjoint matrix is always square.")
            is_square = True
        self._dtype = dtype
        self._is_non_singular = is_non_singular
        self._is_self_adjoint = is_self_adjoint
        self._is_positive_definite = is_positive_definite
        self._is_square = is_square
        self._name = name or type(self).__name__
        self._parameters = dict(parameters or {})
        self._graph_parents = list(graph_parents or [])

    # --- description ---------------------------------------------------------------------------
    @property
    def dtype(self):
        return self._dtype

    @property
    def name(self):
        return self._name

    @property
    def parameters(self):
        return dict(self._parameters)

    @property
    def graph_parents(self):
        return list(self._graph_parents)

    is_non_singular = property(lambda self: self._is_non_singular)
    is_self_adjoint = property(lambda self: self._is_self_adjoint)
    is_positive_definite = property(lambda self: self._is_positive_definite)

    @property
    def is_square(self):
        if self._is_square is None:
            rows, cols = _dim(self.shape[-2]), _dim(self.shape[-1])
            if rows is not None and cols is not None:
                return rows == cols
        return self._is_square

    @property
    def shape(self):
        """The static TensorShape: batch dimensions, then [rows, columns]."""
        return self._shape()

    def shape_tensor(self, name="shape_tensor"):
        with _ops.name_scope(name):
            return array_ops.shape(self.to_dense())

    @property
    def batch_shape(self):
        return self.shape[:-2]

    def batch_shape_tensor(self, name="batch_shape_tensor"):
        return self.shape_tensor(name)[:-2]

    @property
    def tensor_rank(self):
        return self.shape.ndims

    @property
    def domain_dimension(self):
        return self.shape[-1]

    @property
    def range_dimension(self):
        return self.shape[-2]

    def domain_dimension_tensor(self, name="domain_dimension_tensor"):
        return self.shape_tensor(name)[-1]

    def range_dimension_tensor(self, name="range_dimension_tensor"):
        return self.shape_tensor(name)[-2]

    def _name_scope(self, method):
        return _ops.name_scope(f"{self._name}/{method}")

    # --- operations ----------------------------------------------------------------------------
    def to_dense(self, name="to_dense"):
        """The operator as a dense matrix (batch)."""
        with self._name_scope(name):
            return self._to_dense()

    def matmul(self, x, adjoint=False, adjoint_arg=False, name="matmul"):
        """op(A) @ op(x), where op is the adjoint when asked. `x` may be another operator."""
        if isinstance(x, LinearOperator):
            left = self.adjoint() if adjoint else self
            right = x.adjoint() if adjoint_arg else x
            return LinearOperatorComposition([left, right])
        with self._name_scope(name):
            return self._matmul(_ops.convert_to_tensor(x, dtype=self.dtype), adjoint,
                                adjoint_arg)

    def matvec(self, x, adjoint=False, name="matvec"):
        with self._name_scope(name):
            x = _ops.convert_to_tensor(x, dtype=self.dtype)
            return array_ops.squeeze(self._matmul(array_ops.expand_dims(x, -1), adjoint, False),
                                     axis=[-1])

    def solve(self, rhs, adjoint=False, adjoint_arg=False, name="solve"):
        """X with op(A) @ X = op(rhs). Raises NotImplementedError for a singular operator."""
        if self.is_non_singular is False:
            raise NotImplementedError("Exact solve not implemented for an operator that is "
                                      "expected to be singular.")
        if self.is_square is False:
            raise NotImplementedError("Exact solve not implemented for an operator that is "
                                      "expected to not be square.")
        if isinstance(rhs, LinearOperator):
            left = (self.adjoint() if adjoint else self).inverse()
            return LinearOperatorComposition([left, rhs.adjoint() if adjoint_arg else rhs])
        with self._name_scope(name):
            return self._solve(_ops.convert_to_tensor(rhs, dtype=self.dtype), adjoint,
                               adjoint_arg)

    def solvevec(self, rhs, adjoint=False, name="solve"):
        with self._name_scope(name):
            rhs = _ops.convert_to_tensor(rhs, dtype=self.dtype)
            return array_ops.squeeze(
                self._solve(array_ops.expand_dims(rhs, -1), adjoint, False), axis=[-1])

    def _check_square(self, what):
        if self.is_square is False:
            raise NotImplementedError(f"{what} not implemented for an operator that is "
                                      "expected to not be square.")

    def determinant(self, name="det"):
        self._check_square("Determinant")
        with self._name_scope(name):
            return self._determinant()

    def log_abs_determinant(self, name="log_abs_det"):
        self._check_square("Determinant")
        with self._name_scope(name):
            return self._log_abs_determinant()

    def trace(self, name="trace"):
        with self._name_scope(name):
            return self._trace()

    def diag_part(self, name="diag_part"):
        with self._name_scope(name):
            return self._diag_part()

    def add_to_tensor(self, x, name="add_to_tensor"):
        with self._name_scope(name):
            return math_ops.add(self._to_dense(), _ops.convert_to_tensor(x, dtype=self.dtype))

    def cholesky(self, name="cholesky"):
        if not (self.is_self_adjoint and self.is_positive_definite):
            raise ValueError("Cholesky decomposition is only defined for self-adjoint positive "
                             "definite operators.")
        with self._name_scope(name):
            return LinearOperatorLowerTriangular(linalg_ops.cholesky(self._to_dense()),
                                                 is_non_singular=True, is_square=True)

    def adjoint(self, name="adjoint"):
        if self.is_self_adjoint:
            return self
        return LinearOperatorAdjoint(self)

    H = property(adjoint)

    def inverse(self, name="inverse"):
        if self.is_square is False:
            raise ValueError("Cannot take the Inverse: This operator represents a non square "
                             "matrix.")
        if self.is_non_singular is False:
            raise ValueError("Cannot take the Inverse: This operator represents a singular "
                             "matrix.")
        return LinearOperatorInversion(self)

    # --- defaults from the dense matrix --------------------------------------------------------
    def _matmul(self, x, adjoint, adjoint_arg):
        return matmul_ops.matmul(self._to_dense(), x, adjoint_a=adjoint, adjoint_b=adjoint_arg)

    def _solve(self, rhs, adjoint, adjoint_arg):
        if adjoint_arg:
            rhs = _matrix_transpose(rhs, conjugate=True)
        return linalg_ops.matrix_solve(self._to_dense(), rhs, adjoint=adjoint)

    def _determinant(self):
        return linalg_ops.matrix_determinant(self._to_dense())

    def _log_abs_determinant(self):
        return linalg_ops.slogdet(self._to_dense())[1]

    def _diag_part(self):
        return linalg_ops.matrix_diag_part(self._to_dense())

    def _trace(self):
        return reduction_ops.reduce_sum(self._diag_part(), axis=-1)


@tf_export("linalg.LinearOperatorFullMatrix")
class LinearOperatorFullMatrix(LinearOperator):
    """A dense matrix `[..., M, N]`."""

    def __init__(self, matrix, is_non_singular=None, is_self_adjoint=None,
                 is_positive_definite=None, is_square=None, name="LinearOperatorFullMatrix"):
        self._matrix = _ops.convert_to_tensor(matrix, name="matrix")
        if self._matrix.shape.ndims is not None and self._matrix.shape.ndims < 2:
            raise ValueError(f"Argument matrix must have at least 2 dimensions.  Found: "
                             f"{self._matrix}")
        super().__init__(self._matrix.dtype, None, is_non_singular, is_self_adjoint,
                         is_positive_definite, is_square, name, dict(matrix=matrix))

    def _shape(self):
        return self._matrix.shape

    def _to_dense(self):
        return self._matrix


@tf_export("linalg.LinearOperatorLowerTriangular")
class LinearOperatorLowerTriangular(LinearOperator):
    """The lower triangle of `tril` (the rest is ignored); solves by substitution and takes the
    determinant from the diagonal."""

    def __init__(self, tril, is_non_singular=None, is_self_adjoint=None,
                 is_positive_definite=None, is_square=None, name="LinearOperatorLowerTriangular"):
        if is_square is False:
            raise ValueError("Only square lower triangular operators supported at this time.")
        tril = _ops.convert_to_tensor(tril, name="tril")
        self._tril = linalg_ops.matrix_band_part(tril, -1, 0)
        super().__init__(tril.dtype, None, is_non_singular, is_self_adjoint,
                         is_positive_definite, True, name, dict(tril=tril))

    def _shape(self):
        return self._tril.shape

    def _to_dense(self):
        return self._tril

    def _solve(self, rhs, adjoint, adjoint_arg):
        if adjoint_arg:
            rhs = _matrix_transpose(rhs, conjugate=True)
        return linalg_ops.matrix_triangular_solve(self._tril, rhs, lower=True, adjoint=adjoint)

    def _diag_part(self):
        return linalg_ops.matrix_diag_part(self._tril)

    def _determinant(self):
        return reduction_ops.reduce_prod(self._diag_part(), axis=-1)

    def _log_abs_determinant(self):
        return reduction_ops.reduce_sum(math_ops.log(math_ops.abs(self._diag_part())), axis=-1)


@tf_export("linalg.LinearOperatorDiag")
class LinearOperatorDiag(LinearOperator):
    """A diagonal matrix (batch) given by its diagonal `[..., N]`."""

    def __init__(self, diag, is_non_singular=None, is_self_adjoint=None,
                 is_positive_definite=None, is_square=None, name="LinearOperatorDiag"):
        self._diag = _ops.convert_to_tensor(diag, name="diag")
        if self._diag.shape.ndims is not None and self._diag.shape.ndims < 1:
            raise ValueError(f"Argument diag must have at least 1 dimension.  Found: "
                             f"{self._diag}")
        if is_square is False:
            raise ValueError("Only square diagonal operators currently supported.")
        if not self._diag.dtype.is_complex and is_self_adjoint is None:
            is_self_adjoint = True
        super().__init__(self._diag.dtype, None, is_non_singular, is_self_adjoint,
                         is_positive_definite, True, name, dict(diag=diag))

    def _shape(self):
        shape = self._diag.shape
        if shape.ndims is None:
            return TensorShape(None)
        return shape.concatenate([shape[-1]])

    def _to_dense(self):
        return linalg_ops.matrix_diag(self._diag)

    def _scaled_rows(self, x, adjoint, adjoint_arg):
        del adjoint  # a real diagonal is its own adjoint
        if adjoint_arg:
            x = _matrix_transpose(x, conjugate=True)
        return self._diag, x

    def _matmul(self, x, adjoint, adjoint_arg):
        diag, x = self._scaled_rows(x, adjoint, adjoint_arg)
        return math_ops.multiply(array_ops.expand_dims(diag, -1), x)

    def _solve(self, rhs, adjoint, adjoint_arg):
        diag, rhs = self._scaled_rows(rhs, adjoint, adjoint_arg)
        return math_ops.divide(rhs, array_ops.expand_dims(diag, -1))

    def _diag_part(self):
        return self._diag

    def _determinant(self):
        return reduction_ops.reduce_prod(self._diag, axis=-1)

    def _log_abs_determinant(self):
        return reduction_ops.reduce_sum(math_ops.log(math_ops.abs(self._diag)), axis=-1)


def _batch_shape_list(batch_shape):
    return [] if batch_shape is None else [int(d) for d in batch_shape]


@tf_export("linalg.LinearOperatorScaledIdentity")
class LinearOperatorScaledIdentity(LinearOperator):
    """multiplier * I for an `[num_rows, num_rows]` identity; `multiplier` (a scalar or a batch
    of them) sets the batch shape and the dtype."""

    def __init__(self, num_rows, multiplier, is_non_singular=None, is_self_adjoint=None,
                 is_positive_definite=None, is_square=True, assert_proper_shapes=False,
                 name="LinearOperatorScaledIdentity"):
        if not is_square:
            raise ValueError("A ScaledIdentity operator is always square.")
        self._num_rows = int(num_rows)
        if self._num_rows < 0:
            raise ValueError(f"Argument num_rows must be non-negative.  Found: {num_rows}")
        self._multiplier = _ops.convert_to_tensor(multiplier, name="multiplier")
        if not self._multiplier.dtype.is_complex and is_self_adjoint is None:
            is_self_adjoint = True
        super().__init__(self._multiplier.dtype, None, is_non_singular, is_self_adjoint,
                         is_positive_definite, True, name,
                         dict(num_rows=num_rows, multiplier=multiplier))

    @property
    def multiplier(self):
        return self._multiplier

    def _shape(self):
        return self._multiplier.shape.concatenate([self._num_rows, self._num_rows])

    def _scale(self):
        """The multiplier broadcastable against `[..., rows, columns]`."""
        return array_ops.expand_dims(array_ops.expand_dims(self._multiplier, -1), -1)

    def _to_dense(self):
        return math_ops.multiply(self._scale(), linalg_ops.eye(self._num_rows, dtype=self.dtype))

    def _matmul(self, x, adjoint, adjoint_arg):
        if adjoint_arg:
            x = _matrix_transpose(x, conjugate=True)
        return math_ops.multiply(self._scale(), x)

    def _solve(self, rhs, adjoint, adjoint_arg):
        if adjoint_arg:
            rhs = _matrix_transpose(rhs, conjugate=True)
        return math_ops.divide(rhs, self._scale())

    def _diag_part(self):
        return math_ops.multiply(array_ops.expand_dims(self._multiplier, -1),
                                 array_ops.ones([self._num_rows], dtype=self.dtype))

    def _determinant(self):
        return math_ops.pow(self._multiplier,
                            _ops.constant(float(self._num_rows), dtype=self.dtype))

    def _log_abs_determinant(self):
        return math_ops.multiply(float(self._num_rows),
                                 math_ops.log(math_ops.abs(self._multiplier)))


@tf_export("linalg.LinearOperatorIdentity")
class LinearOperatorIdentity(LinearOperatorScaledIdentity):
    """The identity `[num_rows, num_rows]`, optionally repeated over `batch_shape`."""

    def __init__(self, num_rows, batch_shape=None, dtype=None, is_non_singular=True,
                 is_self_adjoint=True, is_positive_definite=True, is_square=True,
                 assert_proper_shapes=False, name="LinearOperatorIdentity"):
        from flowstone import dtypes as _dtypes
        if not is_non_singular or not is_self_adjoint or not is_positive_definite:
            raise ValueError("An identity operator is always non-singular, self-adjoint and "
                             "positive definite.")
        dtype = _dtypes.as_dtype(dtype or _dtypes.float32)
        multiplier = array_ops.ones(_batch_shape_list(batch_shape), dtype=dtype)
        super().__init__(num_rows, multiplier, True, True, True, is_square, assert_proper_shapes,
                         name)
        self._parameters = dict(num_rows=num_rows, batch_shape=batch_shape, dtype=dtype)


@tf_export("linalg.LinearOperatorZeros")
class LinearOperatorZeros(LinearOperator):
    """The zero matrix `[num_rows, num_columns]`, optionally repeated over `batch_shape`."""

    def __init__(self, num_rows, num_columns=None, batch_shape=None, dtype=None,
                 is_non_singular=False, is_self_adjoint=True, is_positive_definite=False,
                 is_square=True, assert_proper_shapes=False, name="LinearOperatorZeros"):
        from flowstone import dtypes as _dtypes
        if is_non_singular or is_positive_definite:
            raise ValueError("A zeros operator is always singular and not positive definite.")
        num_columns = num_rows if num_columns is None else num_columns
        if is_square and num_rows != num_columns:
            raise ValueError(f"LinearOperatorZeros initialized as is_square=True, but got "
                             f"num_rows({num_rows}) != num_columns({num_columns})")
        self._dims = _batch_shape_list(batch_shape) + [int(num_rows), int(num_columns)]
        super().__init__(_dtypes.as_dtype(dtype or _dtypes.float32), None, False,
                         is_self_adjoint, False, is_square, name,
                         dict(num_rows=num_rows, num_columns=num_columns,
                              batch_shape=batch_shape, dtype=dtype))

    def _shape(self):
        return TensorShape(self._dims)

    def _to_dense(self):
        return array_ops.zeros(self._dims, dtype=self.dtype)

    def _matmul(self, x, adjoint, adjoint_arg):
        return math_ops.multiply(super()._matmul(x, adjoint, adjoint_arg), 0)


@tf_export("linalg.LinearOperatorComposition")
class LinearOperatorComposition(LinearOperator):
    """The product `operators[0] @ operators[1] @ ...`, applied right to left."""

    def __init__(self, operators, is_non_singular=None, is_self_adjoint=None,
                 is_positive_definite=None, is_square=None, name=None):
        operators = list(operators)
        if not operators:
            raise ValueError(f"Expected a non-empty list of operators. Found: {operators}")
        dtypes = {op.dtype for op in operators}
        if len(dtypes) > 1:
            raise TypeError("Expected all operators to have the same dtype.  Found "
                            f"{', '.join(sorted(d.name for d in dtypes))}")
        if all(op.is_non_singular for op in operators):
            if is_non_singular is False:
                raise ValueError("The composition of non-singular operators is always "
                                 "non-singular.")
            is_non_singular = True
        self._operators = operators
        super().__init__(operators[0].dtype, None, is_non_singular, is_self_adjoint,
                         is_positive_definite, is_square,
                         name or "_o_".join(op.name for op in operators),
                         dict(operators=operators))

    @property
    def operators(self):
        return list(self._operators)

    def _shape(self):
        batch = self._operators[0].batch_shape
        for op in self._operators[1:]:
            if batch.ndims is None or op.batch_shape.ndims is None:
                batch = TensorShape(None)
                break
            if op.batch_shape.ndims > batch.ndims:
                batch = op.batch_shape
        return batch.concatenate([self._operators[0].range_dimension,
                                  self._operators[-1].domain_dimension])

    def _to_dense(self):
        dense = self._operators[-1].to_dense()
        for op in reversed(self._operators[:-1]):
            dense = op.matmul(dense)
        return dense

    def _matmul(self, x, adjoint, adjoint_arg):
        order = self._operators if adjoint else list(reversed(self._operators))
        result = order[0].matmul(x, adjoint=adjoint, adjoint_arg=adjoint_arg)
        for op in order[1:]:
            result = op.matmul(result, adjoint=adjoint)
        return result

    def _solve(self, rhs, adjoint, adjoint_arg):
        order = list(reversed(self._operators)) if adjoint else self._operators
        result = order[0].solve(rhs, adjoint=adjoint, adjoint_arg=adjoint_arg)
        for op in order[1:]:
            result = op.solve(result, adjoint=adjoint)
        return result

    def _determinant(self):
        result = self._operators[0].determinant()
        for op in self._operators[1:]:
            result = math_ops.multiply(result, op.determinant())
        return result

    def _log_abs_determinant(self):
        result = self._operators[0].log_abs_determinant()
        for op in self._operators[1:]:
            result = math_ops.add(result, op.log_abs_determinant())
        return result


@tf_export("linalg.LinearOperatorAdjoint")
class LinearOperatorAdjoint(LinearOperator):
    """The adjoint (conjugate transpose) of `operator`, without forming it."""

    def __init__(self, operator, is_non_singular=None, is_self_adjoint=None,
                 is_positive_definite=None, is_square=None, name=None):
        self._operator = operator
        super().__init__(operator.dtype, None,
                         operator.is_non_singular if is_non_singular is None else is_non_singular,
                         operator.is_self_adjoint if is_self_adjoint is None else is_self_adjoint,
                         operator.is_positive_definite if is_positive_definite is None
                         else is_positive_definite,
                         operator.is_square if is_square is None else is_square,
                         name or operator.name + "_adjoint", dict(operator=operator))

    @property
    def operator(self):
        return self._operator

    def _shape(self):
        shape = self._operator.shape
        return shape[:-2].concatenate([shape[-1], shape[-2]])

    def _to_dense(self):
        return _matrix_transpose(self._operator.to_dense(), conjugate=True)

    def _matmul(self, x, adjoint, adjoint_arg):
        return self._operator.matmul(x, adjoint=not adjoint, adjoint_arg=adjoint_arg)

    def _solve(self, rhs, adjoint, adjoint_arg):
        return self._operator.solve(rhs, adjoint=not adjoint, adjoint_arg=adjoint_arg)

    def _determinant(self):
        return self._operator.determinant()  # real operators only (see docs/COMPAT.md)

    def _log_abs_determinant(self):
        return self._operator.log_abs_determinant()

    def adjoint(self, name="adjoint"):
        return self._operator


@tf_export("linalg.LinearOperatorInversion")
class LinearOperatorInversion(LinearOperator):
    """The inverse of a square non-singular `operator`: matmul is its solve and solve its
    matmul."""

    def __init__(self, operator, is_non_singular=None, is_self_adjoint=None,
                 is_positive_definite=None, is_square=None, name=None):
        if operator.is_non_singular is False or is_non_singular is False:
            raise ValueError(f"operator and supplied hints must be non-singular; "
                             f"operator.is_non_singular={operator.is_non_singular}, "
                             f"is_non_singular={is_non_singular}")
        if operator.is_square is False or is_square is False:
            raise ValueError(f"operator and supplied hints must be square; "
                             f"operator.is_square={operator.is_square}, is_square={is_square}")
        self._operator = operator
        super().__init__(operator.dtype, None,
                         operator.is_non_singular if is_non_singular is None else is_non_singular,
                         operator.is_self_adjoint if is_self_adjoint is None else is_self_adjoint,
                         operator.is_positive_definite if is_positive_definite is None
                         else is_positive_definite, True,
                         name or operator.name + "_inv", dict(operator=operator))

    @property
    def operator(self):
        return self._operator

    def _shape(self):
        return self._operator.shape

    def _to_dense(self):
        return linalg_ops.matrix_inverse(self._operator.to_dense())

    def _matmul(self, x, adjoint, adjoint_arg):
        return self._operator.solve(x, adjoint=adjoint, adjoint_arg=adjoint_arg)

    def _solve(self, rhs, adjoint, adjoint_arg):
        return self._operator.matmul(rhs, adjoint=adjoint, adjoint_arg=adjoint_arg)

    def _determinant(self):
        return math_functions.reciprocal(self._operator.determinant())

    def _log_abs_determinant(self):
        return math_ops.negative(self._operator.log_abs_determinant())

    def inverse(self, name="inverse"):
        return self._operator
