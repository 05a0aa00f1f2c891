"""tf.contrib.distributions: tf.distributions' families and KL registry, and
MultivariateNormalDiag (flowstone/distributions/multivariate.py). Loaded with tf.distributions on
first use."""


_NAMES = ("Bernoulli", "Beta", "Categorical", "Dirichlet", "DirichletMultinomial",
          "Distribution", "Exponential", "FULLY_REPARAMETERIZED", "Gamma", "Laplace",
          "Multinomial", "NOT_REPARAMETERIZED", "Normal", "RegisterKL",
          "ReparameterizationType", "StudentT", "Uniform", "kl_divergence")


def __getattr__(name):
    import flowstone
    from flowstone.distributions import multivariate
    if name == "MultivariateNormalDiag":
        return multivariate.MultivariateNormalDiag
    if name in _NAMES:
        return getattr(flowstone.distributions, name)
    raise AttributeError(f"tf.contrib.distributions has no '{name}' in Flowstone (it has "
                         f"tf.distributions' names and MultivariateNormalDiag; for the rest, "
                         "tensorflow_probability)")


def __dir__():
    return sorted(_NAMES + ("MultivariateNormalDiag",))
