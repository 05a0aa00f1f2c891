"""Every tf.distributions formula on fixed parameters, printed as JSON: run under Flowstone
and under TensorFlow by tests/python/test_distributions.py, which compares the two."""
import json, sys
import numpy as np
if sys.argv[1] == "tf":
    import tensorflow.compat.v1 as tf
    tf.disable_eager_execution()
else:
    import flowstone as tf
D = tf.distributions
x = np.array([0.3, 1.2, 2.5], np.float32)
cases = {
  "normal": D.Normal(loc=[0.5, 1.0, -1.0], scale=[1.0, 2.0, 0.5]),
  "uniform": D.Uniform(low=[0.0, 1.0, 2.0], high=[1.0, 3.0, 4.0]),
  "laplace": D.Laplace([0.0, 1.0, 2.0], [1.0, 0.5, 2.0]),
  "exponential": D.Exponential([0.5, 1.0, 2.0]),
  "gamma": D.Gamma([2.0, 3.0, 0.5], [1.0, 2.0, 1.5]),
  "studentt": D.StudentT([3.0, 5.0, 1.5], [0.0, 1.0, 2.0], [1.0, 2.0, 0.5]),
}
beta = D.Beta([2.0, 0.5], [3.0, 1.5])
bern = D.Bernoulli(logits=[0.3, -1.2])
cat = D.Categorical(logits=[[0.1, 0.5, -0.3], [1.0, 0.0, 2.0]])
dirichlet = D.Dirichlet([[1.5, 2.0, 3.0], [0.5, 1.0, 2.0]])
multi = D.Multinomial(total_count=5.0, logits=[0.2, 0.5, -0.1])
dm = D.DirichletMultinomial(total_count=4.0, concentration=[1.0, 2.0, 0.5])
out = {}
with tf.Session() as sess:
    for name, d in cases.items():
        ops = {"log_prob": d.log_prob(x), "entropy": d.entropy(), "cdf": d.cdf(x),
               "mean": d.mean(), "stddev": d.stddev(), "survival": d.survival_function(x)}
        for k, v in sess.run(ops).items():
            out[f"{name}.{k}"] = np.asarray(v, np.float64).tolist()
    ops = {
      "beta.log_prob": beta.log_prob([0.3, 0.7]), "beta.entropy": beta.entropy(),
      "beta.cdf": beta.cdf([0.3, 0.7]),
"beta.mean": beta.mean(), "beta.variance": beta.variance(),
      "bern.log_prob": bern.log_prob([1, 0]), "bern.entropy": bern.entropy(), "bern.mean": bern.mean(),
      "cat.log_prob": cat.log_prob([2, 0]), "cat.entropy": cat.entropy(), "cat.mode": cat.mode(),
      "dir.log_prob": dirichlet.log_prob([[0.2, 0.3, 0.5], [0.1, 0.6, 0.3]]), "dir.entropy": dirichlet.entropy(),
      "dir.mean": dirichlet.mean(), "dir.variance": dirichlet.variance(),
      "multi.log_prob": multi.log_prob([1.0, 3.0, 1.0]), "multi.mean": multi.mean(),
      "dm.log_prob": dm.log_prob([1.0, 2.0, 1.0]), "dm.mean": dm.mean(),
      "kl.normal": D.kl_divergence(cases["normal"], D.Normal(0.0, 1.0)),
      "kl.bern": D.kl_divergence(bern, D.Bernoulli(probs=[0.5, 0.2])),
      "kl.cat": D.kl_divergence(cat, D.Categorical(logits=[0.0, 0.0, 0.0])),
      "kl.gamma": D.kl_divergence(cases["gamma"], D.Gamma(1.0, 1.0)),
      "kl.beta": D.kl_divergence(beta, D.Beta(1.0, 1.0)),
      "kl.dir": D.kl_divergence(dirichlet, D.Dirichlet([1.0, 1.0, 1.0])),
      "normal.quantile": cases["normal"].quantile([0.1, 0.5, 0.9]),
      "normal.cross_entropy": cases["normal"].cross_entropy(D.Normal(0.0, 1.0)),
    }
    for k, v in sess.run(ops).items():
        out[k] = np.asarray(v, np.float64).tolist()
print(json.dumps(out))
