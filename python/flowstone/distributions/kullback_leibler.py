"""tf.distributions.kl_divergence and RegisterKL: KL(a || b) by the most specific registered
pair of classes (their MROs searched in order, as TensorFlow does), with TensorFlow's closed
forms for the pairs it registers."""

import flowstone as tf
from flowstone.distributions import families as _f
from flowstone.util.tf_export import tf_export

_KL = {}


def _find(type_a, type_b):
    for a in type_a.__mro__:
        for b in type_b.__mro__:
            fn = _KL.get((a, b))
            if fn is not None:
                return fn
    return None


@tf_export("distributions.kl_divergence")
def kl_divergence(distribution_a, distribution_b, allow_nan_stats=True, name=None):
    """KL(distribution_a || distribution_b)."""
    fn = _find(type(distribution_a), type(distribution_b))
    if fn is None:
        raise NotImplementedError(f"No KL(distribution_a || distribution_b) registered for "
                                  f"distribution_a type {type(distribution_a).__name__} and "
                                  f"distribution_b type {type(distribution_b).__name__}")
    with tf.name_scope((name or "KullbackLeibler") + "/"):
        kl = fn(distribution_a, distribution_b, name=name)
        if allow_nan_stats:
            return tf.identity(kl)
        with tf.control_dependencies([tf.assert_equal(
                tf.reduce_any(tf.is_nan(kl)), False,
                message=f"KL calculation between {distribution_a.name} and "
                        f"{distribution_b.name} returned NaN values (and was called with "
                        "allow_nan_stats=False). Values:")]):
            return tf.identity(kl)


@tf_export("distributions.RegisterKL")
class RegisterKL:
    """Decorator: registers `fn(a, b, name=None)` as KL for the pair of classes."""

    def __init__(self, dist_cls_a, dist_cls_b):
        self._key = (dist_cls_a, dist_cls_b)

    def __call__(self, kl_fn):
        if not callable(kl_fn):
            raise TypeError(f"kl_fn must be callable, received: {kl_fn}")
        if self._key in _KL:
            raise ValueError(f"KL({self._key[0].__name__} || {self._key[1].__name__}) has "
                             "already been registered to: " + str(_KL[self._key]))
        _KL[self._key] = kl_fn
        return kl_fn


@RegisterKL(_f.Normal, _f.Normal)
def _kl_normal_normal(a, b, name=None):
    ratio = tf.square(a.scale / b.scale)
    return (tf.square(a.loc - b.loc) / (2.0 * tf.square(b.scale))
            + 0.5 * (ratio - 1.0 - tf.log(ratio)))


@RegisterKL(_f.Bernoulli, _f.Bernoulli)
def _kl_bernoulli_bernoulli(a, b, name=None):
    delta = tf.nn.softplus(-b.logits) - tf.nn.softplus(-a.logits)
    delta_neg = tf.nn.softplus(b.logits) - tf.nn.softplus(a.logits)
    return tf.sigmoid(a.logits) * delta + tf.sigmoid(-a.logits) * delta_neg


@RegisterKL(_f.Categorical, _f.Categorical)
def _kl_categorical_categorical(a, b, name=None):
    log_a = tf.nn.log_softmax(a.logits)
    return tf.reduce_sum(tf.nn.softmax(a.logits) * (log_a - tf.nn.log_softmax(b.logits)), -1)


@RegisterKL(_f.Gamma, _f.Gamma)
def _kl_gamma_gamma(a, b, name=None):
    return ((a.concentration - b.concentration) * tf.digamma(a.concentration)
            + tf.lgamma(b.concentration) - tf.lgamma(a.concentration)
            + b.concentration * tf.log(a.rate) - b.concentration * tf.log(b.rate)
            + a.concentration * (b.rate / a.rate - 1.0))


@RegisterKL(_f.Beta, _f.Beta)
def _kl_beta_beta(a, b, name=None):
    def lbeta(d):
        return (tf.lgamma(d.concentration1) + tf.lgamma(d.concentration0)
                - tf.lgamma(d.total_concentration))

    return (lbeta(b) - lbeta(a)
            + (a.concentration1 - b.concentration1) * tf.digamma(a.concentration1)
            + (a.concentration0 - b.concentration0) * tf.digamma(a.concentration0)
            + (b.total_concentration - a.total_concentration) * tf.digamma(
                a.total_concentration))


@RegisterKL(_f.Dirichlet, _f.Dirichlet)
def _kl_dirichlet_dirichlet(a, b, name=None):
    digamma_diff = tf.digamma(a.concentration) - tf.digamma(a.total_concentration)[..., None]
    return (tf.reduce_sum((a.concentration - b.concentration) * digamma_diff, -1)
            - tf.math.lbeta(a.concentration) + tf.math.lbeta(b.concentration))
