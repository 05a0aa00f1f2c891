"""tf.distributions.Distribution: TF1's base class. A family implements the `_` methods it has
(`_log_prob`, `_sample_n`, `_mean`, ...); the base derives the others (prob from log_prob,
stddev from variance, ...), shapes the samples, and raises NotImplementedError naming the
family and the method otherwise."""

import numpy as np

import flowstone as tf
from flowstone.util.tf_export import export_value, tf_export


@tf_export("distributions.ReparameterizationType")
class ReparameterizationType:
    """Whether samples are a differentiable function of the parameters."""

    def __init__(self, rep_type):
        self._rep_type = rep_type

    def __repr__(self):
        return f"<Reparameterization Type: {self._rep_type}>"

    def __eq__(self, other):
        return self is other


FULLY_REPARAMETERIZED = ReparameterizationType("FULLY_REPARAMETERIZED")
NOT_REPARAMETERIZED = ReparameterizationType("NOT_REPARAMETERIZED")


class Distribution:
    """A batch of distributions with parameters broadcast together (the batch shape) over
    events of `event_shape`."""

    def __init__(self, dtype, reparameterization_type, validate_args, allow_nan_stats,
                 parameters=None, graph_parents=None, name=None):
        self._dtype = dtype
        self._reparameterization_type = reparameterization_type
        self._validate_args = validate_args
        self._allow_nan_stats = allow_nan_stats
        self._parameters = dict(parameters or {})
        self._parameters.pop("self", None)
        self._parameters.pop("__class__", None)
        self._graph_parents = list(graph_parents or [])
        self._name = name or type(self).__name__

    # --- properties ---------------------------------------------------------------------------
    name = property(lambda self: self._name)
    dtype = property(lambda self: self._dtype)
    parameters = property(lambda self: dict(self._parameters))
    reparameterization_type = property(lambda self: self._reparameterization_type)
    allow_nan_stats = property(lambda self: self._allow_nan_stats)
    validate_args = property(lambda self: self._validate_args)

    @property
    def batch_shape(self):
        return tf.TensorShape(self._batch_shape())

    def batch_shape_tensor(self, name="batch_shape_tensor"):
        with tf.name_scope(self._name + "/" + name + "/"):
            shape = self.batch_shape
            if shape.is_fully_defined():
                return tf.constant(shape.as_list(), dtype=tf.int32)
            return self._batch_shape_tensor()

    @property
    def event_shape(self):
        return tf.TensorShape(self._event_shape())

    def event_shape_tensor(self, name="event_shape_tensor"):
        with tf.name_scope(self._name + "/" + name + "/"):
            shape = self.event_shape
            if shape.is_fully_defined():
                return tf.constant(shape.as_list(), dtype=tf.int32)
            return self._event_shape_tensor()

    def is_scalar_batch(self, name="is_scalar_batch"):
        return tf.constant(self.batch_shape.rank == 0) if self.batch_shape.rank is not None \
            else tf.equal(tf.size(self.batch_shape_tensor()), 0)

    def is_scalar_event(self, name="is_scalar_event"):
        return tf.constant(self.event_shape.rank == 0)

    def _event_shape(self):
        return []

    def _event_shape_tensor(self):
        return tf.constant([], dtype=tf.int32)

    # --- sampling -----------------------------------------------------------------------------
    def sample(self, sample_shape=(), seed=None, name="sample"):
        """Samples of shape sample_shape + batch_shape + event_shape."""
        with tf.name_scope(self._name + "/" + name + "/"):
            sample_shape = tf.convert_to_tensor(sample_shape, dtype=tf.int32,
                                                name="sample_shape")
            static = tf.get_static_value(sample_shape)
            if sample_shape.shape.rank == 0:
                sample_shape = tf.reshape(sample_shape, [1])
                static = None if static is None else [int(static)]
            n = tf.reduce_prod(sample_shape)
            samples = self._sample_n(n, seed)
            tail = tf.shape(samples)[1:]
            out = tf.reshape(samples, tf.concat([sample_shape, tail], 0))
            if static is not None and samples.shape.rank is not None:
                out.set_shape(tf.TensorShape(list(static)).concatenate(samples.shape[1:]))
            return out

    # --- derived methods ----------------------------------------------------------------------
    def _call(self, method, name, *args):
        with tf.name_scope(self._name + "/" + name + "/"):
            args = [tf.convert_to_tensor(a, dtype=self._value_dtype(), name="value")
                    for a in args]
            return method(*args)

    def _value_dtype(self):
        return self._dtype

    def log_prob(self, value, name="log_prob"):
        if _overrides(self, "_log_prob"):
            return self._call(self._log_prob, name, value)
        return self._call(lambda v: tf.log(self._prob(v)), name, value)

    def prob(self, value, name="prob"):
        if _overrides(self, "_prob"):
            return self._call(self._prob, name, value)
        return self._call(lambda v: tf.exp(self._log_prob(v)), name, value)

    def cdf(self, value, name="cdf"):
        if _overrides(self, "_cdf"):
            return self._call(self._cdf, name, value)
        return self._call(lambda v: tf.exp(self._log_cdf(v)), name, value)

    def log_cdf(self, value, name="log_cdf"):
        if _overrides(self, "_log_cdf"):
            return self._call(self._log_cdf, name, value)
        return self._call(lambda v: tf.log(self._cdf(v)), name, value)

    def survival_function(self, value, name="survival_function"):
        if _overrides(self, "_survival_function"):
            return self._call(self._survival_function, name, value)
        return self._call(lambda v: 1.0 - self._cdf(v), name, value)

    def log_survival_function(self, value, name="log_survival_function"):
        if _overrides(self, "_log_survival_function"):
            return self._call(self._log_survival_function, name, value)
        return self._call(lambda v: tf.log1p(-self._cdf(v)), name, value)

    def quantile(self, value, name="quantile"):
        return self._call(self._quantile, name, value)

    def _scoped(self, method, name):
        with tf.name_scope(self._name + "/" + name + "/"):
            return method()

    def entropy(self, name="entropy"):
        return self._scoped(self._entropy, name)

    def mean(self, name="mean"):
        return self._scoped(self._mean, name)

    def mode(self, name="mode"):
        return self._scoped(self._mode, name)

    def variance(self, name="variance"):
        if _overrides(self, "_variance"):
            return self._scoped(self._variance, name)
        return self._scoped(lambda: tf.square(self._stddev()), name)

    def stddev(self, name="stddev"):
        if _overrides(self, "_stddev"):
            return self._scoped(self._stddev, name)
        return self._scoped(lambda: tf.sqrt(self._variance()), name)

    def covariance(self, name="covariance"):
        return self._scoped(self._covariance, name)

    def kl_divergence(self, other, name="kl_divergence"):
        from flowstone.distributions import kullback_leibler
        return kullback_leibler.kl_divergence(self, other, name=name)

    def cross_entropy(self, other, name="cross_entropy"):
        with tf.name_scope(self._name + "/" + name + "/"):
            return self.entropy() + self.kl_divergence(other)

    def copy(self, **override_parameters_kwargs):
        """The same distribution with some parameters replaced."""
        return type(self)(**{**self._parameters, **override_parameters_kwargs})

    def _nan_where(self, condition, value, message):
        """`value` with NaN where `condition` holds (allow_nan_stats), else an assertion."""
        if self._allow_nan_stats:
            nan = tf.fill(tf.shape(value), tf.constant(np.nan, dtype=value.dtype))
            return tf.where(condition, nan, value)
        with tf.control_dependencies([tf.assert_equal(tf.reduce_any(condition), False,
                                                      message=message)]):
            return tf.identity(value)

    def __getattr__(self, name):
        # Methods a family does not have: TensorFlow's NotImplementedError, naming it.
        if name.startswith("_") and name[1:] in _DERIVED:
            raise NotImplementedError(f"{name[1:]} is not implemented: {type(self).__name__}")
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __str__(self):
        batch = self.batch_shape
        event = self.event_shape
        return (f"tf.distributions.{type(self).__name__}(\"{self._name}\", batch_shape="
                f"{batch}, event_shape={event}, dtype={self._dtype.name})")

    __repr__ = __str__


_DERIVED = {"log_prob", "prob", "cdf", "log_cdf", "survival_function",
            "log_survival_function", "quantile", "entropy", "mean", "mode", "variance",
            "stddev", "covariance", "sample_n", "batch_shape", "batch_shape_tensor"}


def _overrides(dist, method):
    return any(method in vars(cls) for cls in type(dist).__mro__ if cls is not Distribution)


tf_export("distributions.Distribution")(Distribution)
export_value("distributions.FULLY_REPARAMETERIZED", FULLY_REPARAMETERIZED)
export_value("distributions.NOT_REPARAMETERIZED", NOT_REPARAMETERIZED)
