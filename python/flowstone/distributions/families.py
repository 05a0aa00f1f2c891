"""The distributions of TF1's tf.distributions, with TensorFlow's parameters, formulas and
reparameterization: Normal, Uniform, Laplace, Exponential, Gamma, Beta, StudentT (continuous),
Bernoulli, Categorical, Multinomial (discrete), Dirichlet and DirichletMultinomial."""

import math

import numpy as np

import flowstone as tf
from flowstone.distributions.distribution import (FULLY_REPARAMETERIZED, NOT_REPARAMETERIZED,
                                                  Distribution)
from flowstone.util.tf_export import tf_export


def _broadcast_static(*tensors):
    shape = tf.TensorShape([])
    for t in tensors:
        shape = tf.broadcast_static_shape(shape, t.shape)
    return shape


def _broadcast_dynamic(*tensors):
    shape = tf.constant([], dtype=tf.int32)
    for t in tensors:
        shape = tf.broadcast_dynamic_shape(shape, tf.shape(t))
    return shape


def _params(names, values, dtype=None):
    """The parameters as tensors of one float dtype (the first given decides it)."""
    out = []
    for name, value in zip(names, values):
        tensor = tf.convert_to_tensor(value, name=name, dtype=dtype)
        dtype = dtype or tensor.dtype
        out.append(tensor)
    return out


class _ScalarFamily(Distribution):
    """A family whose batch shape is its parameters' broadcast shape and whose events are
    scalars."""

    _param_names = ()
    _public_param_names = None  # the constructor's parameters, when they differ (Exponential)

    def __init__(self, values, dtype_or_none, reparameterization, validate_args, allow_nan_stats,
                 parameters, name):
        with tf.name_scope(name + "/"):
            self._p = _params(self._param_names, values, dtype_or_none)
        super().__init__(self._p[0].dtype, reparameterization, validate_args, allow_nan_stats,
                         parameters, self._p, name)

    def _batch_shape(self):
        return _broadcast_static(*self._p)

    def _batch_shape_tensor(self):
        return _broadcast_dynamic(*self._p)

    def _full_shape(self, n):
        return tf.concat([[n], self.batch_shape_tensor()], 0)

    def _ones(self):
        return tf.ones(self.batch_shape_tensor(), dtype=self.dtype)

    @classmethod
    def param_shapes(cls, sample_shape, name="DistributionParamShapes"):
        """Every parameter has the sample's shape."""
        shape = tf.convert_to_tensor(sample_shape, dtype=tf.int32, name="sample_shape")
        return {name: shape for name in cls._public_param_names or cls._param_names}

    @classmethod
    def param_static_shapes(cls, sample_shape):
        return {name: tf.TensorShape(sample_shape)
                for name in cls._public_param_names or cls._param_names}


@tf_export("distributions.Normal")
class Normal(_ScalarFamily):
    _param_names = ("loc", "scale")

    def __init__(self, loc, scale, validate_args=False, allow_nan_stats=True, name="Normal"):
        super().__init__([loc, scale], None, FULLY_REPARAMETERIZED, validate_args,
                         allow_nan_stats, dict(locals()), name)

    loc = property(lambda self: self._p[0])
    scale = property(lambda self: self._p[1])

    def _z(self, x):
        return (x - self.loc) / self.scale

    def _sample_n(self, n, seed=None):
        noise = tf.random_normal(self._full_shape(n), dtype=self.dtype, seed=seed)
        return noise * self.scale + self.loc

    def _log_prob(self, x):
        return -0.5 * tf.square(self._z(x)) - tf.log(self.scale) - 0.5 * math.log(2 * math.pi)

    def _cdf(self, x):
        return 0.5 * tf.erfc(-self._z(x) / math.sqrt(2.0))

    def _survival_function(self, x):
        return 0.5 * tf.erfc(self._z(x) / math.sqrt(2.0))

    def _quantile(self, p):
        return self.loc + self.scale * math.sqrt(2.0) * tf.math.erfinv(2.0 * p - 1.0)

    def _entropy(self):
        return 0.5 * math.log(2.0 * math.pi * math.e) + tf.log(self.scale) * self._ones()

    def _mean(self):
        return self.loc * self._ones()

    _mode = _mean

    def _stddev(self):
        return self.scale * self._ones()


@tf_export("distributions.Uniform")
class Uniform(_ScalarFamily):
    _param_names = ("low", "high")

    def __init__(self, low=0.0, high=1.0, validate_args=False, allow_nan_stats=True,
                 name="Uniform"):
        super().__init__([low, high], None, FULLY_REPARAMETERIZED, validate_args,
                         allow_nan_stats, dict(locals()), name)

    low = property(lambda self: self._p[0])
    high = property(lambda self: self._p[1])

    def range(self, name="range"):
        return self.high - self.low

    def _sample_n(self, n, seed=None):
        u = tf.random_uniform(self._full_shape(n), dtype=self.dtype, seed=seed)
        return self.low + self.range() * u

    def _prob(self, x):
        inside = tf.logical_and(x >= self.low, x < self.high)
        density = self._ones() / self.range()
        return tf.where(inside, density + tf.zeros_like(x), tf.zeros_like(density + x))

    def _cdf(self, x):
        return tf.clip_by_value((x - self.low) / self.range(), 0.0, 1.0)

    def _entropy(self):
        return tf.log(self.range()) * self._ones()

    def _mean(self):
        return (self.low + self.high) / 2.0 * self._ones()

    def _variance(self):
        return tf.square(self.range()) / 12.0 * self._ones()


@tf_export("distributions.Laplace")
class Laplace(_ScalarFamily):
    _param_names = ("loc", "scale")

    def __init__(self, loc, scale, validate_args=False, allow_nan_stats=True, name="Laplace"):
        super().__init__([loc, scale], None, FULLY_REPARAMETERIZED, validate_args,
                         allow_nan_stats, dict(locals()), name)

    loc = property(lambda self: self._p[0])
    scale = property(lambda self: self._p[1])

    def _sample_n(self, n, seed=None):
        tiny = np.finfo(self.dtype.as_numpy_dtype).tiny
        u = tf.random_uniform(self._full_shape(n), minval=np.nextafter(-1.0, 0.0) + tiny,
                              maxval=1.0, dtype=self.dtype, seed=seed)
        return self.loc - self.scale * tf.sign(u) * tf.log1p(-tf.abs(u))

    def _log_prob(self, x):
        return -math.log(2.0) - tf.log(self.scale) - tf.abs(x - self.loc) / self.scale

    def _cdf(self, x):
        z = (x - self.loc) / self.scale
        return 0.5 - 0.5 * tf.sign(z) * tf.expm1(-tf.abs(z))

    def _entropy(self):
        return (math.log(2.0) + 1.0 + tf.log(self.scale)) * self._ones()

    def _mean(self):
        return self.loc * self._ones()

    _mode = _mean

    def _stddev(self):
        return math.sqrt(2.0) * self.scale * self._ones()


@tf_export("distributions.Gamma")
class Gamma(_ScalarFamily):
    _param_names = ("concentration", "rate")

    def __init__(self, concentration, rate, validate_args=False, allow_nan_stats=True,
                 name="Gamma"):
        super().__init__([concentration, rate], None, FULLY_REPARAMETERIZED, validate_args,
                         allow_nan_stats, dict(locals()), name)

    concentration = property(lambda self: self._p[0])
    rate = property(lambda self: self._p[1])

    def _sample_n(self, n, seed=None):
        return tf.random.gamma([n], alpha=self.concentration * self._ones(), beta=self.rate,
                               dtype=self.dtype, seed=seed)

    def _log_prob(self, x):
        a, b = self.concentration, self.rate
        return (a - 1.0) * tf.log(x) - b * x + a * tf.log(b) - tf.lgamma(a)

    def _cdf(self, x):
        return tf.math.igamma(self.concentration, self.rate * x)

    def _entropy(self):
        a, b = self.concentration, self.rate
        return a - tf.log(b) + tf.lgamma(a) + (1.0 - a) * tf.digamma(a)

    def _mean(self):
        return self.concentration / self.rate * self._ones()

    def _variance(self):
        return self.concentration / tf.square(self.rate) * self._ones()

    def _mode(self):
        mode = (self.concentration - 1.0) / self.rate * self._ones()
        return self._nan_where(self.concentration * self._ones() < 1.0, mode,
                               "mode not defined when any concentration <= 1")


@tf_export("distributions.Exponential")
class Exponential(Gamma):
    """Gamma(1, rate)."""

    def __init__(self, rate, validate_args=False, allow_nan_stats=True, name="Exponential"):
        parameters = dict(locals())
        with tf.name_scope(name + "/"):
            rate = tf.convert_to_tensor(rate, name="rate")
        super().__init__(tf.ones_like(rate), rate, validate_args, allow_nan_stats, name)
        self._parameters = {k: v for k, v in parameters.items() if k not in ("self",
                                                                             "__class__")}

    _public_param_names = ("rate",)

    def _sample_n(self, n, seed=None):
        tiny = np.finfo(self.dtype.as_numpy_dtype).tiny
        u = tf.random_uniform(self._full_shape(n), minval=tiny, maxval=1.0, dtype=self.dtype,
                              seed=seed)
        return -tf.log(u) / self.rate

    def _cdf(self, x):
        return -tf.expm1(-self.rate * x)

    def _mode(self):
        return tf.zeros_like(self._ones())


@tf_export("distributions.Beta")
class Beta(_ScalarFamily):
    _param_names = ("concentration1", "concentration0")

    def __init__(self, concentration1=None, concentration0=None, validate_args=False,
                 allow_nan_stats=True, name="Beta"):
        super().__init__([concentration1, concentration0], None, FULLY_REPARAMETERIZED,
                         validate_args, allow_nan_stats, dict(locals()), name)

    concentration1 = property(lambda self: self._p[0])
    concentration0 = property(lambda self: self._p[1])

    @property
    def total_concentration(self):
        return self.concentration1 + self.concentration0

    def _sample_n(self, n, seed=None):
        a = self.concentration1 * self._ones()
        b = self.concentration0 * self._ones()
        ga = tf.random.gamma([n], alpha=a, dtype=self.dtype, seed=seed)
        gb = tf.random.gamma([n], alpha=b, dtype=self.dtype,
                             seed=None if seed is None else seed + 1)
        return ga / (ga + gb)

    def _log_prob(self, x):
        a, b = self.concentration1, self.concentration0
        return ((a - 1.0) * tf.log(x) + (b - 1.0) * tf.log1p(-x)
                - (tf.lgamma(a) + tf.lgamma(b) - tf.lgamma(a + b)))

    def _cdf(self, x):
        return tf.math.betainc(self.concentration1 * self._ones(),
                               self.concentration0 * self._ones(), x)

    def _entropy(self):
        a, b, t = self.concentration1, self.concentration0, self.total_concentration
        return ((tf.lgamma(a) + tf.lgamma(b) - tf.lgamma(t)) - (a - 1.0) * tf.digamma(a)
                - (b - 1.0) * tf.digamma(b) + (t - 2.0) * tf.digamma(t))

    def _mean(self):
        return self.concentration1 / self.total_concentration * self._ones()

    def _variance(self):
        t = self.total_concentration
        return self.concentration1 * self.concentration0 / (tf.square(t) * (t + 1.0))

    def _mode(self):
        mode = (self.concentration1 - 1.0) / (self.total_concentration - 2.0) * self._ones()
        undefined = tf.logical_or(self.concentration1 * self._ones() <= 1.0,
                                  self.concentration0 * self._ones() <= 1.0)
        return self._nan_where(undefined, mode, "Mode undefined for concentration1 <= 1 or "
                               "concentration0 <= 1.")


@tf_export("distributions.StudentT")
class StudentT(_ScalarFamily):
    _param_names = ("df", "loc", "scale")

    def __init__(self, df, loc, scale, validate_args=False, allow_nan_stats=True,
                 name="StudentT"):
        super().__init__([df, loc, scale], None, NOT_REPARAMETERIZED, validate_args,
                         allow_nan_stats, dict(locals()), name)

    df = property(lambda self: self._p[0])
    loc = property(lambda self: self._p[1])
    scale = property(lambda self: self._p[2])

    def _sample_n(self, n, seed=None):
        shape = self._full_shape(n)
        normal = tf.random_normal(shape, dtype=self.dtype, seed=seed)
        half_df = 0.5 * self.df * self._ones()
        gamma = tf.random.gamma([n], alpha=half_df, beta=half_df, dtype=self.dtype,
                                seed=None if seed is None else seed + 1)
        return self.loc + self.scale * normal * tf.rsqrt(gamma)

    def _log_prob(self, x):
        df = self.df
        z = (x - self.loc) / self.scale
        return (tf.lgamma(0.5 * (df + 1.0)) - tf.lgamma(0.5 * df)
                - 0.5 * tf.log(df * math.pi) - tf.log(tf.abs(self.scale))
                - 0.5 * (df + 1.0) * tf.log1p(tf.square(z) / df))

    def _cdf(self, x):
        z = (x - self.loc) / self.scale
        t = self.df / (self.df + tf.square(z))
        half = 0.5 * tf.math.betainc(0.5 * self.df * self._ones(), 0.5 * self._ones(), t)
        return tf.where(z < 0.0, half, 1.0 - half)

    def _entropy(self):
        df = self.df * self._ones()
        half = 0.5 * (df + 1.0)
        return (half * (tf.digamma(half) - tf.digamma(0.5 * df)) + 0.5 * tf.log(df)
                + tf.math.lbeta(tf.stack([0.5 * df, 0.5 * tf.ones_like(df)], -1))
                + tf.log(tf.abs(self.scale)))

    def _mean(self):
        mean = self.loc * self._ones()
        return self._nan_where(self.df * self._ones() <= 1.0, mean,
                               "mean not defined for components of df <= 1")

    def _variance(self):
        df = self.df * self._ones()
        var = tf.square(self.scale) * df / (df - 2.0)
        var = tf.where(df <= 2.0, tf.fill(tf.shape(var), tf.constant(np.inf, self.dtype)), var)
        return self._nan_where(df <= 1.0, var, "variance not defined for components of df <= 1")

    def _mode(self):
        return self.loc * self._ones()


# --- discrete ------------------------------------------------------------------------------------
def _logits_and_probs(logits, probs, multidimensional, name):
    if (logits is None) == (probs is None):
        raise ValueError("Must pass probs or logits, but not both.")
    with tf.name_scope(name + "/"):
        if probs is None:
            logits = tf.convert_to_tensor(logits, name="logits")
            probs = tf.nn.softmax(logits) if multidimensional else tf.sigmoid(logits)
        else:
            probs = tf.convert_to_tensor(probs, name="probs")
            logits = tf.log(probs) if multidimensional else tf.log(probs) - tf.log1p(-probs)
    return logits, probs


@tf_export("distributions.Bernoulli")
class Bernoulli(Distribution):
    def __init__(self, logits=None, probs=None, dtype=tf.int32, validate_args=False,
                 allow_nan_stats=True, name="Bernoulli"):
        parameters = dict(locals())
        self._logits, self._probs = _logits_and_probs(logits, probs, False, name)
        super().__init__(dtype, NOT_REPARAMETERIZED, validate_args, allow_nan_stats,
                         parameters, [self._logits, self._probs], name)

    logits = property(lambda self: self._logits)
    probs = property(lambda self: self._probs)

    def _batch_shape(self):
        return self._logits.shape

    def _batch_shape_tensor(self):
        return tf.shape(self._logits)

    def _value_dtype(self):
        return None  # an event may be given as any number type; it is cast

    def _sample_n(self, n, seed=None):
        shape = tf.concat([[n], self.batch_shape_tensor()], 0)
        u = tf.random_uniform(shape, dtype=self._probs.dtype, seed=seed)
        return tf.cast(u < self._probs, self.dtype)

    def _log_prob(self, x):
        x = tf.cast(x, self._logits.dtype)
        logits = self._logits * tf.ones_like(x)
        return -tf.nn.sigmoid_cross_entropy_with_logits(labels=x * tf.ones_like(logits),
                                                        logits=logits)

    def _entropy(self):
        return (-self._logits * (tf.sigmoid(self._logits) - 1.0)
                + tf.nn.softplus(-self._logits))

    def _mean(self):
        return tf.identity(self._probs)

    def _variance(self):
        return self._probs * (1.0 - self._probs)

    def _mode(self):
        return tf.cast(self._probs > 0.5, self.dtype)


@tf_export("distributions.Categorical")
class Categorical(Distribution):
    def __init__(self, logits=None, probs=None, dtype=tf.int32, validate_args=False,
                 allow_nan_stats=True, name="Categorical"):
        parameters = dict(locals())
        self._logits, self._probs = _logits_and_probs(logits, probs, True, name)
        super().__init__(dtype, NOT_REPARAMETERIZED, validate_args, allow_nan_stats,
                         parameters, [self._logits, self._probs], name)

    logits = property(lambda self: self._logits)
    probs = property(lambda self: self._probs)

    @property
    def event_size(self):
        return tf.shape(self._logits)[-1]

    def _batch_shape(self):
        return self._logits.shape[:-1]

    def _batch_shape_tensor(self):
        return tf.shape(self._logits)[:-1]

    def _value_dtype(self):
        return None

    def _sample_n(self, n, seed=None):
        flat = tf.reshape(self._logits, [-1, self.event_size])
        draws = tf.random.categorical(flat, n, seed=seed, dtype=tf.int64)
        draws = tf.cast(tf.transpose(draws), self.dtype)
        return tf.reshape(draws, tf.concat([[n], self.batch_shape_tensor()], 0))

    def _log_prob(self, k):
        k = tf.cast(k, tf.int32)
        logits = self._logits
        # Broadcast the events against the batch, as TensorFlow does.
        logits = logits * tf.ones_like(tf.cast(k, logits.dtype))[..., None]
        k = k * tf.ones(tf.shape(logits)[:-1], tf.int32)
        return -tf.nn.sparse_softmax_cross_entropy_with_logits(labels=k, logits=logits)

    def _entropy(self):
        return -tf.reduce_sum(tf.nn.log_softmax(self._logits) * tf.nn.softmax(self._logits),
                              axis=-1)

    def _mode(self):
        return tf.cast(tf.argmax(self._logits, axis=-1), self.dtype)


@tf_export("distributions.Multinomial")
class Multinomial(Distribution):
    def __init__(self, total_count, logits=None, probs=None, validate_args=False,
                 allow_nan_stats=True, name="Multinomial"):
        parameters = dict(locals())
        self._logits, self._probs = _logits_and_probs(logits, probs, True, name)
        with tf.name_scope(name + "/"):
            self._total_count = tf.convert_to_tensor(total_count, name="total_count",
                                                     dtype=self._probs.dtype)
        super().__init__(self._probs.dtype, NOT_REPARAMETERIZED, validate_args,
                         allow_nan_stats, parameters, [self._total_count, self._logits], name)

    total_count = property(lambda self: self._total_count)
    logits = property(lambda self: self._logits)
    probs = property(lambda self: self._probs)

    def _batch_shape(self):
        return tf.broadcast_static_shape(self._total_count.shape, self._logits.shape[:-1])

    def _batch_shape_tensor(self):
        return tf.broadcast_dynamic_shape(tf.shape(self._total_count),
                                          tf.shape(self._logits)[:-1])

    def _event_shape(self):
        return self._logits.shape[-1:]

    def _event_shape_tensor(self):
        return tf.shape(self._logits)[-1:]

    def _sample_n(self, n, seed=None):
        """Counts of `total_count` categorical draws per sample (a static total count)."""
        total = tf.get_static_value(self._total_count)
        if total is None or np.ndim(total) != 0:
            raise NotImplementedError("Multinomial.sample needs a scalar total_count known "
                                      "when the graph is built.")
        k = self._logits.shape[-1]
        flat = tf.reshape(self._logits, [-1, k])
        draws = tf.random.categorical(flat, n * int(total), seed=seed)
        draws = tf.reshape(draws, [tf.shape(flat)[0], n, int(total)])
        counts = tf.reduce_sum(tf.one_hot(draws, k, dtype=self.dtype), axis=-2)
        counts = tf.transpose(counts, [1, 0, 2])
        return tf.reshape(counts, tf.concat([[n], self.batch_shape_tensor(), [k]], 0))

    def _log_prob(self, counts):
        log_normalizer = tf.lgamma(self._total_count + 1.0) - tf.reduce_sum(
            tf.lgamma(counts + 1.0), axis=-1)
        return tf.reduce_sum(counts * tf.nn.log_softmax(self._logits), axis=-1) + log_normalizer

    def _mean(self):
        return self._total_count[..., None] * self._probs

    def _variance(self):
        return self._total_count[..., None] * self._probs * (1.0 - self._probs)


@tf_export("distributions.Dirichlet")
class Dirichlet(Distribution):
    def __init__(self, concentration, validate_args=False, allow_nan_stats=True,
                 name="Dirichlet"):
        parameters = dict(locals())
        with tf.name_scope(name + "/"):
            self._concentration = tf.convert_to_tensor(concentration, name="concentration")
            self._total_concentration = tf.reduce_sum(self._concentration, -1)
        super().__init__(self._concentration.dtype, FULLY_REPARAMETERIZED, validate_args,
                         allow_nan_stats, parameters, [self._concentration], name)

    concentration = property(lambda self: self._concentration)
    total_concentration = property(lambda self: self._total_concentration)

    def _batch_shape(self):
        return self._concentration.shape[:-1]

    def _batch_shape_tensor(self):
        return tf.shape(self._concentration)[:-1]

    def _event_shape(self):
        return self._concentration.shape[-1:]

    def _event_shape_tensor(self):
        return tf.shape(self._concentration)[-1:]

    def _sample_n(self, n, seed=None):
        gamma = tf.random.gamma([n], alpha=self._concentration, dtype=self.dtype, seed=seed)
        return gamma / tf.reduce_sum(gamma, -1, keepdims=True)

    def _log_prob(self, x):
        return (tf.reduce_sum((self._concentration - 1.0) * tf.log(x), -1)
                - tf.math.lbeta(self._concentration))

    def _entropy(self):
        k = tf.cast(tf.shape(self._concentration)[-1], self.dtype)
        total = self._total_concentration
        return (tf.math.lbeta(self._concentration) + (total - k) * tf.digamma(total)
                - tf.reduce_sum((self._concentration - 1.0) * tf.digamma(self._concentration),
                                -1))

    def _mean(self):
        return self._concentration / self._total_concentration[..., None]

    def _variance(self):
        total = self._total_concentration[..., None]
        mean = self._concentration / total
        return mean * (1.0 - mean) / (total + 1.0)

    def _mode(self):
        k = tf.cast(tf.shape(self._concentration)[-1], self.dtype)
        mode = (self._concentration - 1.0) / (self._total_concentration[..., None] - k)
        undefined = tf.reduce_any(self._concentration <= 1.0, -1, keepdims=True)
        undefined = tf.logical_and(undefined, tf.ones_like(mode, tf.bool))
        return self._nan_where(undefined, mode, "Mode undefined when any concentration <= 1")


@tf_export("distributions.DirichletMultinomial")
class DirichletMultinomial(Distribution):
    def __init__(self, total_count, concentration, validate_args=False, allow_nan_stats=True,
                 name="DirichletMultinomial"):
        parameters = dict(locals())
        with tf.name_scope(name + "/"):
            self._concentration = tf.convert_to_tensor(concentration, name="concentration")
            self._total_count = tf.convert_to_tensor(total_count, name="total_count",
                                                     dtype=self._concentration.dtype)
            self._total_concentration = tf.reduce_sum(self._concentration, -1)
        super().__init__(self._concentration.dtype, NOT_REPARAMETERIZED, validate_args,
                         allow_nan_stats, parameters, [self._concentration, self._total_count],
                         name)

    total_count = property(lambda self: self._total_count)
    concentration = property(lambda self: self._concentration)
    total_concentration = property(lambda self: self._total_concentration)

    def _batch_shape(self):
        return tf.broadcast_static_shape(self._total_count.shape,
                                         self._concentration.shape[:-1])

    def _batch_shape_tensor(self):
        return tf.broadcast_dynamic_shape(tf.shape(self._total_count),
                                          tf.shape(self._concentration)[:-1])

    def _event_shape(self):
        return self._concentration.shape[-1:]

    def _event_shape_tensor(self):
        return tf.shape(self._concentration)[-1:]

    def _sample_n(self, n, seed=None):
        probs = Dirichlet(self._concentration).sample(n, seed=seed)
        return Multinomial(self._total_count, probs=probs).sample(
            seed=None if seed is None else seed + 1)

    def _log_prob(self, counts):
        n = self._total_count
        alpha = self._concentration
        return (tf.lgamma(n + 1.0) - tf.reduce_sum(tf.lgamma(counts + 1.0), -1)
                + tf.lgamma(self._total_concentration) - tf.lgamma(n + self._total_concentration)
                + tf.reduce_sum(tf.lgamma(counts + alpha) - tf.lgamma(alpha), -1))

    def _mean(self):
        return self._total_count[..., None] * self._concentration / (
            self._total_concentration[..., None])
