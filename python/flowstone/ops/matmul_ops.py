"""Matrix multiplication: tf.matmul."""

from flowstone.framework import ops as _ops

__all__ = ["matmul"]


def _conj(x):
    return _ops.apply_op("Conj", [x], None, name="Conj").outputs[0]


def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False,
           a_is_sparse=False, b_is_sparse=False, name=None):
    """op(a) @ op(b), op transposing or taking the adjoint (conjugate transpose) when asked.

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
        a_rank, b_rank = a.shape.rank, b.shape.rank
        if a_rank is None or b_rank is None or a_rank > 2 or b_rank > 2:
            # BatchMatMulV2's adj_x conjugates too: a plain transpose of a complex operand
            # conjugates it first, so that the two conjugations cancel (as TensorFlow does).
            if transpose_a and a.dtype.is_complex:
                a = _conj(a)
            if transpose_b and b.dtype.is_complex:
                b = _conj(b)
            op_type = "BatchMatMulV2"
            attrs = {"adj_x": bool(transpose_a or adjoint_a),
                     "adj_y": bool(transpose_b or adjoint_b)}
        else:
            # MatMul's transpose does not conjugate: an adjoint conjugates first.
            if adjoint_a and a.dtype.is_complex:
                a = _conj(a)
            if adjoint_b and b.dtype.is_complex:
                b = _conj(b)
            op_type = "MatMul"
            attrs = {"transpose_a": bool(transpose_a or adjoint_a),
                     "transpose_b": bool(transpose_b or adjoint_b)}
        # The op takes the scope's own name ("MatMul", "MatMul_1", ...), as in TensorFlow.
        return _ops.apply_op(op_type, [a, b], attrs, name=scope.rstrip("/"),
                             exact_name=True).outputs[0]
