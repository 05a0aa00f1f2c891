"""Random tensors: random_normal, random_uniform, truncated_normal, and TensorFlow's seed rules.

Each random op carries two seeds. With neither a graph-level seed (tf.set_random_seed) nor an
op seed, both are 0 and every session draws different numbers; otherwise a fresh session replays
the same sequence, and every run of the op draws the next numbers of it.

Executing eagerly, as in TensorFlow 2: with a global seed, each call without an op seed takes the
next op seed of a counter, and each call draws the next numbers of its seeds' sequence; setting
the seed again (tf.random.set_seed) restarts both, so a program replays. The common samplers then
run as their stateless ops, fed the seeds and the call's number as a tensor, so that these calls
share one cached op instead of making one per seed.
"""

import threading

import numpy as np

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.framework.tensor_shape import TensorShape

__all__ = ["random_normal", "random_uniform", "truncated_normal", "get_seed"]

DEFAULT_GRAPH_SEED = 87654321
_MAXINT32 = 2**31 - 1


def _truncate_seed(seed):
    return seed % _MAXINT32  # seeds must fit the C++ side's 32-bit conventions


class _EagerSeeds(threading.local):
    """The op seeds and per-seed call counts of eager random calls since the seed was set."""

    def __init__(self):
        self.next_op_seed = 0
        self.calls = {}  # (seed, seed2) -> calls so far

    def op_seed(self):
        self.next_op_seed += 1
        return self.next_op_seed

    def stream(self, seeds):
        """The [key, call] seed tensor value of the next call with `seeds`."""
        call = self.calls.get(seeds, 0)
        self.calls[seeds] = call + 1
        key = (seeds[0] * 0x9E3779B1 + seeds[1]) % (2**63 - 1)
        return np.array([key, call], dtype=np.int64)


_eager_seeds = _EagerSeeds()


def reset_eager_seeds():
    """Restarts the eager random sequences (setting the global seed does)."""
    _eager_seeds.__init__()


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
            op_seed = _eager_seeds.op_seed() if _ops.executing_eagerly() else graph._last_id
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


def _sample(stateful_op, stateless_op, shape, extra_inputs, attrs, op_seed, name=None):
    """One random op's output: `stateful_op` with seed attrs, or, executing eagerly with seeds,
    `stateless_op` fed the seeds' next stream (see the module's docstring)."""
    seeds = get_seed(op_seed)
    exact = {"name": name, "exact_name": True} if name else {}
    if seeds[0] is not None and _ops.executing_eagerly():
        stream = _ops.convert_to_tensor(_eager_seeds.stream(seeds), name="seed")
        return _ops.apply_op(stateless_op, [shape, stream] + extra_inputs, attrs,
                             **exact).outputs[0]
    attrs = dict(attrs, seed=seeds[0] or 0, seed2=seeds[1] or 0)
    return _ops.apply_op(stateful_op, [shape] + extra_inputs, attrs, **exact).outputs[0]


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
        rnd = _sample("RandomStandardNormal", "StatelessRandomNormal", shape_tensor, [],
                      {"dtype": dtype}, seed)
        return _scale_and_shift(rnd, stddev_tensor, mean_tensor, scope.rstrip("/"))


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=_dtypes.float32, seed=None, name=None):
    """Normal values redrawn until within two standard deviations of the mean."""
    dtype = _dtypes.as_dtype(dtype)
    with _ops.name_scope(name, "truncated_normal", [shape, mean, stddev]) as scope:
        shape_tensor = _shape_tensor(shape)
        mean_tensor = _ops.convert_to_tensor(mean, dtype=dtype, name="mean")
        stddev_tensor = _ops.convert_to_tensor(stddev, dtype=dtype, name="stddev")
        rnd = _sample("TruncatedNormal", "StatelessTruncatedNormal", shape_tensor, [],
                      {"dtype": dtype}, seed)
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
        if dtype.is_integer:
            return _sample("RandomUniformInt", "StatelessRandomUniformInt", shape_tensor,
                           [min_tensor, max_tensor], {}, seed, name=scope.rstrip("/"))
        rnd = _sample("RandomUniform", "StatelessRandomUniform", shape_tensor, [],
                      {"dtype": dtype}, seed)
        width = _ops.apply_op("Sub", [max_tensor, min_tensor], name="sub").outputs[0]
        return _scale_and_shift(rnd, width, min_tensor, scope.rstrip("/"))
