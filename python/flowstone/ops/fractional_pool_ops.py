"""tf.nn.fractional_max_pool and tf.nn.fractional_avg_pool on the FractionalMaxPool and
FractionalAvgPool ops (src/ops/nn/fractional_pool_ops.cc)."""

from flowstone.framework import ops as _ops
from flowstone.util.tf_export import tf_export


def _fractional_pool(op_type, value, pooling_ratio, pseudo_random, overlapping, deterministic,
                     seed, seed2, name):
    value = _ops.convert_to_tensor(value, name="value")
    ratio = [float(r) for r in pooling_ratio]
    op = _ops.apply_op(op_type, [value], {
        "pooling_ratio": ratio, "pseudo_random": bool(pseudo_random),
        "overlapping": bool(overlapping), "deterministic": bool(deterministic),
        "seed": int(seed), "seed2": int(seed2)}, name=name or op_type)
    return tuple(op.outputs)


@tf_export("nn.fractional_max_pool")
def fractional_max_pool(value, pooling_ratio, pseudo_random=False, overlapping=False,
                        deterministic=False, seed=0, seed2=0, name=None):
    """Max pooling of an NHWC image's rows and columns by non-integer ratios (pooling_ratio,
    [1.0, rows, cols, 1.0]): (output, row_pooling_sequence, col_pooling_sequence), the
    sequences being the region boundaries drawn. With deterministic=True the regions are a
    function of (seed, seed2); otherwise seed and seed2 must be 0 and each run draws anew."""
    return _fractional_pool("FractionalMaxPool", value, pooling_ratio, pseudo_random,
                            overlapping, deterministic, seed, seed2, name)


@tf_export("nn.fractional_avg_pool")
def fractional_avg_pool(value, pooling_ratio, pseudo_random=False, overlapping=False,
                        deterministic=False, seed=0, seed2=0, name=None):
    """tf.nn.fractional_max_pool's regions, averaged."""
    return _fractional_pool("FractionalAvgPool", value, pooling_ratio, pseudo_random,
                            overlapping, deterministic, seed, seed2, name)
