"""tf.keras.activations: activation functions by object and by name."""

import flowstone as tf
from flowstone.keras.utils.generic_utils import deserialize_keras_object
from flowstone.util.tf_export import tf_export


@tf_export("keras.activations.linear")
def linear(x):
    return x


@tf_export("keras.activations.relu")
def relu(x, alpha=0.0, max_value=None, threshold=0.0):
    if alpha == 0.0 and max_value is None and threshold == 0.0:
        return tf.nn.relu(x)
    negative = None
    if alpha != 0.0:
        negative = tf.nn.relu(-x + threshold)
    if threshold != 0.0:
        x = x * tf.cast(tf.greater(x, threshold), x.dtype)
    else:
        x = tf.nn.relu(x)
    if max_value is not None:
        x = tf.clip_by_value(x, 0.0, max_value)
    if negative is not None:
        x = x - alpha * negative
    return x


@tf_export("keras.activations.softmax")
def softmax(x, axis=-1):
    if x.shape.ndims == 1:
        raise ValueError("Cannot apply softmax to a tensor that is 1D. Received input: "
                         f"{x}")
    return tf.nn.softmax(x, axis=axis)


def _unary(name, fn):
    fn = tf_export(f"keras.activations.{name}")(fn)
    fn.__name__ = name
    return fn


sigmoid = _unary("sigmoid", lambda x: tf.sigmoid(x))
tanh = _unary("tanh", lambda x: tf.tanh(x))
selu = _unary("selu", lambda x: tf.nn.selu(x))
softplus = _unary("softplus", lambda x: tf.nn.softplus(x))
softsign = _unary("softsign", lambda x: tf.nn.softsign(x))
exponential = _unary("exponential", lambda x: tf.exp(x))
swish = _unary("swish", lambda x: x * tf.sigmoid(x))
gelu = tf_export("keras.activations.gelu")(
    lambda x, approximate=False: tf.nn.gelu(x, approximate=approximate))
gelu.__name__ = "gelu"
hard_sigmoid = _unary("hard_sigmoid",
                      lambda x: tf.clip_by_value(0.2 * x + 0.5, 0.0, 1.0))


@tf_export("keras.activations.elu")
def elu(x, alpha=1.0):
    out = tf.nn.elu(x)
    return out if alpha == 1.0 else tf.where(tf.greater(x, 0.0), out, alpha * out)



_BY_NAME = {fn.__name__: fn for fn in (linear, relu, softmax, sigmoid, tanh, elu, selu,
                                       softplus, softsign, exponential, swish, gelu,
                                       hard_sigmoid)}


@tf_export("keras.activations.serialize")
def serialize(activation):
    name = getattr(activation, "__name__", None)
    if name in _BY_NAME and _BY_NAME[name] is activation:
        return name
    if hasattr(activation, "get_config"):
        return {"class_name": type(activation).__name__, "config": activation.get_config()}
    if name is not None:
        return name
    raise ValueError(f"Unknown activation function: {activation!r}")


@tf_export("keras.activations.deserialize")
def deserialize(name, custom_objects=None):
    return deserialize_keras_object(name, _BY_NAME, custom_objects,
                                    printable_module_name="activation function")


@tf_export("keras.activations.get")
def get(identifier):
    if identifier is None:
        return linear
    if isinstance(identifier, (str, dict)):
        return deserialize(identifier)
    if callable(identifier):
        return identifier
    raise TypeError("Could not interpret activation function identifier: "
                    f"{identifier!r}")
