"""tf.contrib.distributions.MultivariateNormalDiag: independent normals over the last axis (the
VAE posterior of TF1 code), with its KL divergence to another such distribution."""

import math

import flowstone as tf
from flowstone.distributions.distribution import FULLY_REPARAMETERIZED, Distribution
from flowstone.distributions.kullback_leibler import RegisterKL


class MultivariateNormalDiag(Distribution):
    """N(loc, diag(scale_diag ** 2)); events are the last axis of loc / scale_diag."""

    def __init__(self, loc=None, scale_diag=None, scale_identity_multiplier=None,
                 validate_args=False, allow_nan_stats=True, name="MultivariateNormalDiag"):
        parameters = dict(locals())
        if loc is None and scale_diag is None:
            raise ValueError("Must specify one or both of `loc`, `scale_diag`.")
        with tf.name_scope(name + "/"):
            ref = loc if loc is not None else scale_diag
            ref = tf.convert_to_tensor(ref)
            self._loc = (tf.convert_to_tensor(loc, name="loc") if loc is not None
                         else tf.zeros_like(ref))
            scale = (tf.convert_to_tensor(scale_diag, name="scale_diag", dtype=self._loc.dtype)
                     if scale_diag is not None else tf.ones_like(self._loc))
            if scale_identity_multiplier is not None:
                scale = scale + tf.cast(scale_identity_multiplier, scale.dtype)
            self._scale = scale * tf.ones_like(self._loc)
        super().__init__(self._loc.dtype, FULLY_REPARAMETERIZED, validate_args,
                         allow_nan_stats, parameters, [self._loc, self._scale], name)

    loc = property(lambda self: self._loc)
    scale_diag = property(lambda self: self._scale)

    def _batch_shape(self):
        return self._scale.shape[:-1]

    def _batch_shape_tensor(self):
        return tf.shape(self._scale)[:-1]

    def _event_shape(self):
        return self._scale.shape[-1:]

    def _event_shape_tensor(self):
        return tf.shape(self._scale)[-1:]

    def _sample_n(self, n, seed=None):
        shape = tf.concat([[n], tf.shape(self._scale)], 0)
        return self._loc + self._scale * tf.random_normal(shape, dtype=self.dtype, seed=seed)

    def _log_prob(self, x):
        z = (x - self._loc) / self._scale
        return tf.reduce_sum(-0.5 * tf.square(z) - tf.log(tf.abs(self._scale))
                             - 0.5 * math.log(2.0 * math.pi), -1)

    def _entropy(self):
        return tf.reduce_sum(0.5 * math.log(2.0 * math.pi * math.e)
                             + tf.log(tf.abs(self._scale)), -1)

    def _mean(self):
        return tf.identity(self._loc)

    _mode = _mean

    def _stddev(self):
        return tf.abs(self._scale)

    def _covariance(self):
        return tf.linalg.diag(tf.square(self._scale))


@RegisterKL(MultivariateNormalDiag, MultivariateNormalDiag)
def _kl_mvn_diag(a, b, name=None):
    ratio = tf.square(a.scale_diag / b.scale_diag)
    return tf.reduce_sum(tf.square(a.loc - b.loc) / (2.0 * tf.square(b.scale_diag))
                         + 0.5 * (ratio - 1.0 - tf.log(ratio)), -1)
