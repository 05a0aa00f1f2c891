"""Matrix multiplication: tf.matmul."""

from flowstone.framework import ops as _ops

__all__ = ["matmul"]


def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False,
           a_is_sparse=False, b_is_sparse=False, name=None):
    """op(a) @ op(b), op transposing (or, for these real dtypes, adjoining) when asked.

    Rank-2 operands use MatMul; higher ranks (or unknown ones) use BatchMatMulV2, whose leading
    batch dimensions broadcast. The sparsity hints are accepted and ignored: the dense kernel
    serves every case.
    """
    if transpose_a and adjoint_a:
        raise ValueError("Only one of transpose_a and adjoint_a can be True.")
    if transpose_b and adjoint_b:
        raise ValueError("Only one of transpose_b and adjoint_b can be True.")
    with _ops.name_scope(name, "MatMul", [a, b]) as scope:
        a = _ops.convert_to_tensor(a, name="a")
        b = _ops.convert_to_tensor(b, name="b", preferred_dtype=a.dtype)
        # Real matrices: the adjoint is the transpose.
        transpose_a = bool(transpose_a or adjoint_a)
        transpose_b = bool(transpose_b or adjoint_b)
        a_rank, b_rank = a.shape.rank, b.shape.rank
        if a_rank is None or b_rank is None or a_rank > 2 or b_rank > 2:
            op_type, attrs = "BatchMatMulV2", {"adj_x": transpose_a, "adj_y": transpose_b}
        else:
            op_type, attrs = "MatMul", {"transpose_a": transpose_a, "transpose_b": transpose_b}
        # The op takes the scope's own name ("MatMul", "MatMul_1", ...), as in TensorFlow.
        return _ops.apply_op(op_type, [a, b], attrs, name=scope.rstrip("/"),
                             exact_name=True).outputs[0]
