"""tf.random's parameterized samplers (gamma, Poisson, binomial, truncated normal; the C++ ops in
src/ops/random/distribution_ops.cc), seed splitting (fold_in, split), and tf.random.Generator,
whose state is an int64 variable [counter_lo, counter_hi, key] that RngReadAndSkip advances
atomically before each draw by a stateless op, as TensorFlow's Generator composes it."""

import enum

import numpy as np

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.ops import array_composites, array_ops, manip_ops, math_ops, random_ops
from flowstone.ops import stateless_random_ops as _stateless
from flowstone.util.tf_export import tf_export


def _shape(shape):
    return random_ops._shape_tensor(shape)


def _tiny(dtype):
    return np.finfo(dtype.as_numpy_dtype).tiny


def _broadcast_alpha(alpha, beta):
    """alpha broadcast against beta; a constant shape when both shapes are known, so the
    sample's static shape is known too."""
    if alpha.shape.is_fully_defined() and beta.shape.is_fully_defined():
        shape = np.broadcast_shapes(tuple(alpha.shape.as_list()), tuple(beta.shape.as_list()))
        if list(shape) == alpha.shape.as_list():
            return alpha
        return manip_ops.broadcast_to(alpha, list(shape))
    shape = array_composites.broadcast_dynamic_shape(array_ops.shape(alpha), array_ops.shape(beta))
    return manip_ops.broadcast_to(alpha, shape)


@tf_export("random.gamma", "random_gamma")
def random_gamma(shape, alpha, beta=None, dtype=_dtypes.float32, seed=None, name=None):
    """Gamma(alpha, beta) samples (beta is the rate), of shape `shape` followed by the
    broadcast shape of alpha and beta. Differentiable with respect to alpha and beta."""
    dtype = _dtypes.as_dtype(dtype)
    with _ops.name_scope(name, "random_gamma", [shape, alpha, beta]):
        shape = _shape(shape)
        alpha = _ops.convert_to_tensor(alpha, dtype=dtype, name="alpha")
        beta = _ops.convert_to_tensor(beta if beta is not None else 1, dtype=dtype, name="beta")
        alpha_broadcast = _broadcast_alpha(alpha, beta)
        sample = _ops.apply_op("RandomGamma", [shape, alpha_broadcast],
                               random_ops._seed_attrs(seed)).outputs[0]
        # Samples so small they round to 0 would have no gradient: TensorFlow clamps them too.
        return math_ops.maximum(_tiny(dtype), math_ops.divide(sample, beta))


@tf_export("random.poisson", "random_poisson")
def random_poisson(lam, shape, dtype=_dtypes.float32, seed=None, name=None):
    """Poisson(lam) samples of shape `shape` followed by lam's shape (TensorFlow 1's argument
    order: lam first)."""
    with _ops.name_scope(name, "random_poisson", [lam, shape]):
        shape = _shape(shape)
        lam = _ops.convert_to_tensor(lam, name="lam", dtype=None if isinstance(
            lam, _ops.Tensor) else _dtypes.float32)
        return _ops.apply_op("RandomPoissonV2", [shape, lam],
                             dict(random_ops._seed_attrs(seed),
                                  dtype=_dtypes.as_dtype(dtype))).outputs[0]


@tf_export("random.stateless_gamma")
def stateless_random_gamma(shape, seed, alpha, beta=None, dtype=_dtypes.float32, name=None):
    """Gamma(alpha, beta) samples of shape `shape` (alpha and beta broadcast to it), a pure
    function of shape, seed, alpha and beta."""
    dtype = _dtypes.as_dtype(dtype)
    with _ops.name_scope(name, "stateless_random_gamma", [shape, seed, alpha, beta]):
        shape = _shape(shape)
        alpha = _ops.convert_to_tensor(alpha, dtype=dtype, name="alpha")
        beta = _ops.convert_to_tensor(beta if beta is not None else 1, dtype=dtype, name="beta")
        alpha_broadcast = _broadcast_alpha(alpha, beta)
        sample = _ops.apply_op("StatelessRandomGammaV2",
                               [shape, _stateless._seed(seed), alpha_broadcast]).outputs[0]
        return math_ops.maximum(_tiny(dtype), math_ops.divide(sample, beta))


@tf_export("random.stateless_poisson")
def stateless_random_poisson(shape, seed, lam, dtype=_dtypes.int32, name=None):
    """Poisson(lam) samples of shape `shape` (lam broadcast to it), a pure function of shape,
    seed and lam."""
    with _ops.name_scope(name, "stateless_random_poisson", [shape, seed, lam]):
        lam = _ops.convert_to_tensor(lam, name="lam", dtype=None if isinstance(
            lam, _ops.Tensor) else _dtypes.float32)
        return _ops.apply_op("StatelessRandomPoisson", [_shape(shape), _stateless._seed(seed), lam],
                             {"dtype": _dtypes.as_dtype(dtype)}).outputs[0]


@tf_export("random.stateless_binomial")
def stateless_random_binomial(shape, seed, counts, probs, output_dtype=_dtypes.int32, name=None):
    """Binomial(counts, probs) samples of shape `shape` (counts and probs broadcast to it), a
    pure function of the arguments."""
    with _ops.name_scope(name, "stateless_random_binomial", [shape, seed, counts, probs]):
        probs = _ops.convert_to_tensor(probs, name="probs", dtype=None if isinstance(
            probs, _ops.Tensor) else _dtypes.float32)
        counts = _ops.convert_to_tensor(counts, dtype=probs.dtype, name="counts")
        return _ops.apply_op("StatelessRandomBinomial",
                             [_shape(shape), _stateless._seed(seed), counts, probs],
                             {"dtype": _dtypes.as_dtype(output_dtype)}).outputs[0]


@tf_export("random.stateless_parameterized_truncated_normal")
def stateless_parameterized_truncated_normal(shape, seed, means=0.0, stddevs=1.0, minvals=-2.0,
                                             maxvals=2.0, name=None):
    """Normal(means, stddevs) samples restricted to [minvals, maxvals], of shape `shape` (the
    parameters broadcast to it), a pure function of the arguments."""
    with _ops.name_scope(name, "stateless_parameterized_truncated_normal",
                         [shape, means, stddevs, minvals, maxvals]):
        means = _ops.convert_to_tensor(means, name="means", dtype=None if isinstance(
            means, _ops.Tensor) else _dtypes.float32)
        params = [means] + [_ops.convert_to_tensor(v, dtype=means.dtype, name=n) for v, n in
                            ((stddevs, "stddevs"), (minvals, "minvals"), (maxvals, "maxvals"))]
        return _ops.apply_op("StatelessParameterizedTruncatedNormal",
                             [_shape(shape), _stateless._seed(seed)] + params).outputs[0]


def _full_int(shape, seed, dtype):
    return _ops.apply_op("StatelessRandomUniformFullInt", [_shape(shape), _stateless._seed(seed)],
                         {"dtype": _dtypes.as_dtype(dtype)}).outputs[0]


@tf_export("random.split", "random.experimental.stateless_split")
def split(seed, num=2, alg="auto_select"):
    """`num` new seeds ([num, 2]) derived from `seed`, each starting an independent stream."""
    del alg  # one generator (Philox) serves every algorithm name
    seed = _stateless._seed(seed)
    return _full_int([num, 2], seed, seed.dtype)


@tf_export("random.fold_in", "random.experimental.stateless_fold_in")
def fold_in(seed, data, alg="auto_select"):
    """A new seed from `seed` and an integer `data` (a step number, a replica id...)."""
    del alg
    data = _ops.convert_to_tensor(data)
    first = _full_int([], seed, data.dtype)
    return array_ops.stack([first, data])


# ---------------------------------------------------------------------------------------------
# tf.random.Generator

@tf_export("random.Algorithm", "random.experimental.Algorithm")
class Algorithm(enum.Enum):
    """The counter-based generators: Flowstone implements Philox (and auto_select picks it)."""
    PHILOX = 1
    THREEFRY = 2
    AUTO_SELECT = 3


_PHILOX_STATE_SIZE = 3


def _alg_id(alg):
    if alg is None or alg == "auto_select":
        return Algorithm.PHILOX.value
    if isinstance(alg, Algorithm):
        alg = alg.value
    if isinstance(alg, str):
        names = {"philox": 1, "threefry": 2, "auto_select": 3}
        if alg.lower() not in names:
            raise ValueError(f"Unsupported algorithm name: {alg}")
        alg = names[alg.lower()]
    if alg == Algorithm.THREEFRY.value:
        raise NotImplementedError("The ThreeFry algorithm is not in Flowstone; use Philox")
    if alg not in (1, 3):
        raise ValueError(f"Unsupported algorithm id: {alg}")
    return Algorithm.PHILOX.value


def _seed_words(seed):
    """An integer seed (any size) or a sequence of them as 64-bit words, lowest first."""
    if isinstance(seed, (int, np.integer)):
        seed = int(seed)
        if seed < 0:
            raise ValueError(f"seed must be non-negative, got {seed}")
        words = []
        while True:
            words.append(seed & (2**64 - 1))
            seed >>= 64
            if seed == 0:
                return words
    return [int(s) % 2**64 for s in np.asarray(seed).reshape([-1])]


@tf_export("random.create_rng_state", "random.experimental.create_rng_state")
def create_rng_state(seed, alg):
    """The initial state (an int64 numpy vector) of a Generator for `seed` and `alg`: the
    seed's 64-bit words, padded with zeros to the algorithm's state size (3 for Philox)."""
    _alg_id(alg)
    words = (_seed_words(seed) + [0] * _PHILOX_STATE_SIZE)[:_PHILOX_STATE_SIZE]
    return np.array(words, dtype=np.uint64).astype(np.int64)


@tf_export("random.Generator", "random.experimental.Generator")
class Generator:
    """A random number generator whose state is a variable: each draw advances it, so
    successive draws (and successive session runs of a draw) differ, and a generator made from
    the same seed replays them."""

    @classmethod
    def from_seed(cls, seed, alg=None):
        return cls(state=create_rng_state(seed, alg or "auto_select"), alg=alg)

    @classmethod
    def from_state(cls, state, alg):
        return cls(state=state, alg=alg)

    @classmethod
    def from_key_counter(cls, key, counter, alg):
        counter = list(np.asarray(counter, dtype=np.int64).reshape([-1]))
        key = int(np.asarray(key).reshape([-1])[0])
        return cls(state=np.array(counter + [key], dtype=np.int64), alg=alg)

    @classmethod
    def from_non_deterministic_state(cls, alg=None):
        return cls.from_seed(int.from_bytes(np.random.bytes(16), "little"), alg)

    def __init__(self, copy_from=None, state=None, alg=None):
        if copy_from is not None:
            if state is not None or alg is not None:
                raise ValueError("When `copy_from` is given, `state` and `alg` must be None")
            self._alg = copy_from._alg
            state = copy_from._state_var.read_value()
        else:
            if state is None:
                raise ValueError("Generator needs `copy_from` or `state`")
            self._alg = _alg_id(alg)
        from flowstone.ops import variables
        self._state_var = variables.Variable(state, dtype=_dtypes.int64, trainable=False,
                                             name="StateVar")

    state = property(lambda self: self._state_var, doc="The state variable (int64 [3]).")
    algorithm = property(lambda self: self._alg, doc="The algorithm id (1: Philox).")
    key = property(lambda self: self._state_var[-1], doc="The Philox key (the state's last word).")

    def reset(self, state):
        return self._state_var.assign(_ops.convert_to_tensor(state, dtype=_dtypes.int64))

    def reset_from_seed(self, seed):
        return self.reset(create_rng_state(seed, self._alg))

    def skip(self, delta):
        """Advances the state as `delta` draws would."""
        return self._read_and_skip(delta)

    def _read_and_skip(self, delta=1):
        alg = _ops.convert_to_tensor(self._alg, dtype=_dtypes.int32, name="alg")
        delta = _ops.convert_to_tensor(delta, dtype=_dtypes.int64, name="delta")
        return _ops.apply_op("RngReadAndSkip", [self._state_var.handle, alg, delta]).outputs[0]

    def _next_seed(self):
        """The stateless seed [key, counter] of one draw; the state moves on atomically."""
        state = self._read_and_skip()
        return array_ops.stack([state[2], state[0]])

    def normal(self, shape, mean=0.0, stddev=1.0, dtype=_dtypes.float32, name=None):
        with _ops.name_scope(name, "stateful_normal"):
            return _stateless.stateless_normal(shape, self._next_seed(), mean, stddev, dtype)

    def uniform(self, shape, minval=0, maxval=None, dtype=_dtypes.float32, name=None):
        with _ops.name_scope(name, "stateful_uniform"):
            dtype = _dtypes.as_dtype(dtype)
            if dtype.is_integer and minval is None and maxval is None:
                return self.uniform_full_int(shape, dtype)
            return _stateless.stateless_uniform(shape, self._next_seed(), minval, maxval, dtype)

    def uniform_full_int(self, shape, dtype=_dtypes.int64, name=None):
        with _ops.name_scope(name, "stateful_uniform_full_int"):
            return _full_int(shape, self._next_seed(), dtype)

    def truncated_normal(self, shape, mean=0.0, stddev=1.0, dtype=_dtypes.float32, name=None):
        with _ops.name_scope(name, "truncated_normal"):
            return _stateless.stateless_truncated_normal(shape, self._next_seed(), mean, stddev,
                                                         dtype)

    def binomial(self, shape, counts, probs, dtype=_dtypes.int32, name=None):
        with _ops.name_scope(name, "binomial"):
            return stateless_random_binomial(shape, self._next_seed(), counts, probs, dtype)

    def make_seeds(self, count=1):
        """[2, count] int64 seeds for the stateless ops, each pair starting its own stream."""
        return array_ops.transpose(_full_int([count, 2], self._next_seed(), _dtypes.int64))

    def split(self, count=1):
        """`count` new Generators whose states are drawn from this one."""
        seeds = self.make_seeds(count)
        return [Generator(state=array_ops.concat([array_ops.zeros([2], _dtypes.int64),
                                                  seeds[:1, i]], 0), alg=self._alg)
                for i in range(count)]


_global_generator = None


@tf_export("random.get_global_generator", "random.experimental.get_global_generator")
def get_global_generator():
    """The process's Generator, made from a non-deterministic state on first use."""
    global _global_generator
    if _global_generator is None:
        with _ops.init_scope():
            _global_generator = Generator.from_non_deterministic_state()
    return _global_generator


@tf_export("random.set_global_generator", "random.experimental.set_global_generator")
def set_global_generator(generator):
    """Makes `generator` the one get_global_generator returns."""
    global _global_generator
    _global_generator = generator
