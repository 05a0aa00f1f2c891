"""tf.linalg.expm: the matrix exponential by scaling and squaring with the degree-13 Padé
approximant (Higham, 2005), composed from matmul, matrix_solve and a while loop, so its gradient
comes from those ops."""

import math

from flowstone.framework import ops as _ops
from flowstone.ops import (array_ops, control_flow_ops, linalg_ops, math_ops, matmul_ops,
                           reduction_ops)
from flowstone.util.tf_export import tf_export

# The Padé(13, 13) coefficients, and the 1-norm up to which it is accurate to double precision.
_PADE_13 = [64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
            129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
            40840800.0, 960960.0, 16380.0, 182.0, 1.0]
_THETA_13 = 5.371920351148152


@tf_export("linalg.expm")
def expm(input, name=None):  # noqa: A002 - TensorFlow's name
    """exp(A) for each square matrix A [..., N, N]: A is scaled by 2^-s so its 1-norm is at most
    theta_13, exponentiated by the Padé approximant, and squared s times."""
    with _ops.name_scope(name, "matrix_exponential"):
        a = _ops.convert_to_tensor(input, name="input")
        if a.shape.ndims is not None and a.shape.ndims < 2:
            raise ValueError(f"tf.linalg.expm needs a matrix or a batch of them, got shape "
                             f"{a.shape}")
        one_norm = reduction_ops.reduce_max(reduction_ops.reduce_sum(math_ops.abs(a), axis=-2),
                                            axis=-1)
        squarings = math_ops.maximum(math_ops.ceil(math_ops.divide(
            math_ops.log(math_ops.divide(one_norm, _THETA_13)), math.log(2.0))), 0.0)
        scale = math_ops.pow(_ops.constant(2.0, dtype=a.dtype), math_ops.negative(squarings))
        a = math_ops.multiply(a, array_ops.expand_dims(array_ops.expand_dims(scale, -1), -1))
        identity = linalg_ops.matrix_diag(array_ops.ones_like(linalg_ops.matrix_diag_part(a)))
        a2 = matmul_ops.matmul(a, a)
        a4 = matmul_ops.matmul(a2, a2)
        a6 = matmul_ops.matmul(a4, a2)
        b = _PADE_13

        def poly(c13, c11, c9, c7, c5, c3, c1):
            inner = matmul_ops.matmul(a6, c13 * a6 + c11 * a4 + c9 * a2)
            return inner + c7 * a6 + c5 * a4 + c3 * a2 + c1 * identity
        u = matmul_ops.matmul(a, poly(b[13], b[11], b[9], b[7], b[5], b[3], b[1]))
        v = poly(b[12], b[10], b[8], b[6], b[4], b[2], b[0])
        result = linalg_ops.matrix_solve(v - u, v + u)
        # Square each matrix as often as its own scaling asks (the batch shares one loop).
        most = reduction_ops.reduce_max(squarings)
        column = array_ops.expand_dims(array_ops.expand_dims(squarings, -1), -1)

        def square(i, r):
            # A select, not a blend: a finished matrix's further squares may overflow.
            still_squaring = math_ops.less(array_ops.zeros_like(r) + i, column)
            return i + 1.0, math_ops.where(still_squaring, matmul_ops.matmul(r, r), r)
        _, result = control_flow_ops.while_loop(lambda i, r: math_ops.less(i, most), square,
                                                [_ops.constant(0.0, dtype=a.dtype), result])
        return result
