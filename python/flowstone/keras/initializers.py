"""tf.keras.initializers: Keras's names and defaults over Flowstone's initializers."""

from flowstone.keras.utils.generic_utils import deserialize_keras_object
from flowstone.ops import init_ops
from flowstone.util.tf_export import tf_export


def _keras_class(name, base, defaults, aliases=()):
    """A Keras initializer class: `base` with Keras's constructor defaults and a config that
    holds exactly the constructor's arguments (what tf-keras writes in model files)."""

    def __init__(self, *args, **kwargs):
        values = dict(defaults)
        for key, value in zip(defaults, args):
            values[key] = value
        unknown = set(kwargs) - set(defaults) - {"dtype"}
        if unknown:
            raise TypeError(f"{name}.__init__() got unexpected keyword arguments "
                            f"{sorted(unknown)}")
        values.update({k: v for k, v in kwargs.items() if k != "dtype"})
        self._keras_config = values
        base.__init__(self, **_base_arguments(name, values))

    def get_config(self):
        return dict(self._keras_config)

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config.pop("dtype", None)
        return cls(**config)

    cls = type(name, (base,), {"__init__": __init__, "get_config": get_config,
                               "from_config": from_config, "__module__": __name__})
    for export in (name,) + tuple(aliases):
        tf_export(f"keras.initializers.{export}")(cls)
    return cls


def _base_arguments(name, values):
    if name in ("GlorotUniform", "GlorotNormal", "HeNormal", "HeUniform", "LecunNormal",
                "LecunUniform"):
        scale = 2.0 if name.startswith("He") else 1.0
        mode = "fan_avg" if name.startswith("Glorot") else "fan_in"
        distribution = "uniform" if name.endswith("Uniform") else "truncated_normal"
        return {"scale": scale, "mode": mode, "distribution": distribution,
                "seed": values["seed"]}
    return values


Zeros = _keras_class("Zeros", init_ops.Zeros, {}, ("zeros",))
Ones = _keras_class("Ones", init_ops.Ones, {}, ("ones",))
Constant = _keras_class("Constant", init_ops.Constant, {"value": 0}, ("constant",))
RandomNormal = _keras_class("RandomNormal", init_ops.RandomNormal,
                            {"mean": 0.0, "stddev": 0.05, "seed": None}, ("random_normal",))
RandomUniform = _keras_class("RandomUniform", init_ops.RandomUniform,
                             {"minval": -0.05, "maxval": 0.05, "seed": None}, ("random_uniform",))
TruncatedNormal = _keras_class("TruncatedNormal", init_ops.TruncatedNormal,
                               {"mean": 0.0, "stddev": 0.05, "seed": None},
                               ("truncated_normal",))
VarianceScaling = _keras_class("VarianceScaling", init_ops.VarianceScaling,
                               {"scale": 1.0, "mode": "fan_in",
                                "distribution": "truncated_normal", "seed": None},
                               ("variance_scaling",))
GlorotUniform = _keras_class("GlorotUniform", init_ops.VarianceScaling, {"seed": None},
                             ("glorot_uniform",))
GlorotNormal = _keras_class("GlorotNormal", init_ops.VarianceScaling, {"seed": None},
                            ("glorot_normal",))
HeNormal = _keras_class("HeNormal", init_ops.VarianceScaling, {"seed": None}, ("he_normal",))
HeUniform = _keras_class("HeUniform", init_ops.VarianceScaling, {"seed": None}, ("he_uniform",))
LecunNormal = _keras_class("LecunNormal", init_ops.VarianceScaling, {"seed": None},
                           ("lecun_normal",))
LecunUniform = _keras_class("LecunUniform", init_ops.VarianceScaling, {"seed": None},
                            ("lecun_uniform",))

@tf_export("keras.initializers.Orthogonal", "keras.initializers.orthogonal")
class Orthogonal(init_ops.Initializer):
    """A (scaled) random orthogonal matrix: Q of the QR decomposition of a normal sample, with
    the signs of R's diagonal folded in, as Keras draws it."""

    def __init__(self, gain=1.0, seed=None):
        super().__init__()
        self.gain, self.seed = gain, seed

    def __call__(self, shape, dtype=None, partition_info=None):
        import flowstone as tf
        dims = [int(d) for d in shape]
        if len(dims) < 2:
            raise ValueError("The tensor to initialize must be at least two-dimensional. "
                             f"Received: shape={shape} of rank {len(dims)}.")
        rows = 1
        for d in dims[:-1]:
            rows *= d
        cols = dims[-1]
        flat = (max(rows, cols), min(rows, cols))
        sample = tf.random_normal(flat, dtype=self._dtype(dtype), seed=self.seed)
        q, r = tf.linalg.qr(sample)
        q = q * tf.sign(tf.linalg.diag_part(r))
        if rows < cols:
            q = tf.transpose(q)
        return self.gain * tf.reshape(q, dims)

    def get_config(self):
        return {"gain": self.gain, "seed": self.seed}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


_ALL = [Orthogonal, Zeros, Ones, Constant, RandomNormal, RandomUniform, TruncatedNormal,
        VarianceScaling, GlorotUniform, GlorotNormal, HeNormal, HeUniform, LecunNormal,
        LecunUniform]
_BY_NAME = {cls.__name__: cls for cls in _ALL}


@tf_export("keras.initializers.serialize")
def serialize(initializer):
    return {"class_name": type(initializer).__name__, "config": initializer.get_config()}


@tf_export("keras.initializers.deserialize")
def deserialize(config, custom_objects=None):
    return deserialize_keras_object(config, _BY_NAME, custom_objects,
                                    printable_module_name="initializer")


@tf_export("keras.initializers.get")
def get(identifier):
    """'glorot_uniform' (snake case), 'GlorotUniform', a config dict, or an initializer."""
    if identifier is None:
        return None
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        by_snake = {_snake(name): cls for name, cls in _BY_NAME.items()}
        by_snake.update(uniform=RandomUniform, normal=RandomNormal)
        cls = _BY_NAME.get(identifier) or by_snake.get(identifier)
        if cls is None:
            return deserialize(identifier)
        return cls()
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret initializer identifier: {identifier!r}")


def _snake(name):
    from flowstone.util.naming import to_snake_case
    return to_snake_case(name)
