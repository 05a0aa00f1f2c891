"""Random tensors: random_normal, random_uniform, truncated_normal, and TensorFlow's seed rules.

Each random op carries two seeds. With neither a graph-level seed (tf.set_random_seed) nor an
op seed, both are 0 and every session draws different numbers; otherwise a fresh session replays
the same sequence, and every run of the op draws the next numbers of it.
"""

import numpy as np

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.framework.tensor_shape import TensorShape

__all__ = ["random_normal", "random_uniform", "truncated_normal", "get_seed"]

DEFAULT_GRAPH_SEED = 87654321
_MAXINT32 = 2**31 - 1


def _truncate_seed(seed):
    return seed % _MAXINT32  # seeds must fit the C++ side's 32-bit conventions


def get_seed(op_seed):
    """The (graph seed, op seed) pair a random op uses, by TensorFlow's rules:

    * no graph seed, no op seed: (None, None), a different sequence in every session;
    * graph seed only: the op seed is the number of ops in the graph so far, so ops differ from
      each other but the whole program is reproducible;
    * op seed only: the graph seed is DEFAULT_GRAPH_SEED;
    * both: both, as given.
    (0, 0) would mean "nondeterministic" to the kernels, so it becomes (0, 2**31 - 1).
    """
    graph = _ops.get_default_graph()
    graph_seed = graph.seed
    if graph_seed is not None:
        if op_seed is None:
            op_seed = graph._last_id
        seeds = _truncate_seed(graph_seed), _truncate_seed(op_seed)
    elif op_seed is not None:
        seeds = DEFAULT_GRAPH_SEED, _truncate_seed(op_seed)
    else:
        seeds = None, None
    if seeds == (0, 0):
        return 0, _MAXINT32
    return seeds


def _shape_tensor(shape):
    """A 1-D int32 (int64 when a dimension needs it) tensor from a shape-like value."""
    if isinstance(shape, _ops.Tensor):
        return shape
    if isinstance(shape, TensorShape):
        shape = shape.as_list()
    if isinstance(shape, (list, tuple)) and any(isinstance(d, _ops.Tensor) for d in shape):
        from flowstone.ops import array_ops
        return array_ops._index_tensor(shape)
    if np.size(shape) == 0:
        return _ops.constant(np.zeros([0], dtype=np.int32), name="shape")
    return _ops.convert_to_tensor(shape, name="shape")


def _seed_attrs(op_seed):
    seed, seed2 = get_seed(op_seed)
    return {"seed": seed or 0, "seed2": seed2 or 0}


def _scale_and_shift(rnd, scale, shift, name):
    """rnd * scale + shift with the graph's broadcasting ops, as TensorFlow builds it."""
    scaled = _ops.apply_op("Mul", [rnd, scale], name="mul").outputs[0]
    return _ops.apply_op("AddV2", [scaled, shift], name=name, exact_name=True).outputs[0]


def random_normal(shape, mean=0.0, stddev=1.0, dtype=_dtypes.float32, seed=None, name=None):
    """Normal values with the given mean and standard deviation."""
    dtype = _dtypes.as_dtype(dtype)
    with _ops.name_scope(name, "random_normal", [shape, mean, stddev]) as scope:
        shape_tensor = _shape_tensor(shape)
        mean_tensor = _ops.convert_to_tensor(mean, dtype=dtype, name="mean")
        stddev_tensor = _ops.convert_to_tensor(stddev, dtype=dtype, name="stddev")
        attrs = dict(_seed_attrs(seed), dtype=dtype)
        rnd = _ops.apply_op("RandomStandardNormal", [shape_tensor], attrs).outputs[0]
        return _scale_and_shift(rnd, stddev_tensor, mean_tensor, scope.rstrip("/"))


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=_dtypes.float32, seed=None, name=None):
    """Normal values redrawn until within two standard deviations of the mean."""
    dtype = _dtypes.as_dtype(dtype)
    with _ops.name_scope(name, "truncated_normal", [shape, mean, stddev]) as scope:
        shape_tensor = _shape_tensor(shape)
        mean_tensor = _ops.convert_to_tensor(mean, dtype=dtype, name="mean")
        stddev_tensor = _ops.convert_to_tensor(stddev, dtype=dtype, name="stddev")
        attrs = dict(_seed_attrs(seed), dtype=dtype)
        rnd = _ops.apply_op("TruncatedNormal", [shape_tensor], attrs).outputs[0]
        return _scale_and_shift(rnd, stddev_tensor, mean_tensor, scope.rstrip("/"))


def random_uniform(shape, minval=0, maxval=None, dtype=_dtypes.float32, seed=None, name=None):
    """Uniform values in [minval, maxval) (maxval defaults to 1 for floats; integer dtypes
    must give it)."""
    dtype = _dtypes.as_dtype(dtype)
    if dtype not in (_dtypes.float32, _dtypes.float64, _dtypes.int32, _dtypes.int64):
        raise ValueError(f"Invalid dtype {dtype!r}: random_uniform makes float32, float64, int32 "
                         "or int64 values")
    if maxval is None:
        if dtype.is_integer:
            raise ValueError(f"Must specify maxval for integer dtype {dtype!r}")
        maxval = 1
    with _ops.name_scope(name, "random_uniform", [shape, minval, maxval]) as scope:
        shape_tensor = _shape_tensor(shape)
        min_tensor = _ops.convert_to_tensor(minval, dtype=dtype, name="min")
        max_tensor = _ops.convert_to_tensor(maxval, dtype=dtype, name="max")
        seed_attrs = _seed_attrs(seed)
        if dtype.is_integer:
            return _ops.apply_op("RandomUniformInt", [shape_tensor, min_tensor, max_tensor],
                                 seed_attrs, name=scope.rstrip("/"), exact_name=True).outputs[0]
        rnd = _ops.apply_op("RandomUniform", [shape_tensor],
                            dict(seed_attrs, dtype=dtype)).outputs[0]
        width = _ops.apply_op("Sub", [max_tensor, min_tensor], name="sub").outputs[0]
        return _scale_and_shift(rnd, width, min_tensor, scope.rstrip("/"))
