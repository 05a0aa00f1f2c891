"""Random functions composed from uniform draws: shuffling (a random sort key per row),
multinomial / categorical sampling (the Gumbel-max trick: argmax of logits plus Gumbel noise
draws class k with probability softmax(logits)[k]) and random cropping; and the tf.random names
of the samplers in random_ops.py."""

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.ops import array_ops, check_ops, math_ops, random_ops, reduction_ops, sort_ops
from flowstone.util.tf_export import export_value, tf_export

export_value("random.uniform", random_ops.random_uniform)
export_value("random.normal", random_ops.random_normal)
export_value("random.truncated_normal", random_ops.truncated_normal)
export_value("random.set_random_seed", _ops.set_random_seed)
export_value("random.set_seed", _ops.set_random_seed)  # TensorFlow 2's name
export_value("random.get_seed", random_ops.get_seed)


@tf_export("random.shuffle", "random_shuffle")
def random_shuffle(value, seed=None, name=None):
    """`value` with its first dimension randomly permuted."""
    with _ops.name_scope(name, "RandomShuffle"):
        value = _ops.convert_to_tensor(value, name="value")
        keys = random_ops.random_uniform(array_ops.shape(value)[:1], seed=seed)
        return array_ops.gather(value, sort_ops.argsort(keys))


def _gumbel_max(logits, num_samples, output_dtype, seed):
    logits = _ops.convert_to_tensor(logits, name="logits")
    if logits.shape.ndims not in (None, 2):
        raise ValueError(f"logits should be a matrix [batch_size, num_classes], got shape "
                         f"{logits.shape}")
    shape = array_ops.shape(logits)
    noise_shape = array_ops.stack([shape[0], num_samples, shape[1]])
    # u > 0 keeps log(u) finite.
    u = random_ops.random_uniform(noise_shape, minval=1e-20, maxval=1.0, dtype=logits.dtype,
                                  seed=seed)
    gumbel = math_ops.negative(math_ops.log(math_ops.negative(math_ops.log(u))))
    scores = math_ops.add(array_ops.expand_dims(logits, 1), gumbel)
    return reduction_ops.argmax(scores, axis=2, output_type=output_dtype)


@tf_export("random.multinomial", "multinomial")
def multinomial(logits, num_samples, seed=None, name=None, output_dtype=None):
    """[batch, num_samples] class indices drawn from softmax(logits) of each row."""
    with _ops.name_scope(name, "multinomial"):
        return _gumbel_max(logits, num_samples, output_dtype or _dtypes.int64, seed)


@tf_export("random.categorical")
def categorical(logits, num_samples, dtype=None, seed=None, name=None):
    """[batch, num_samples] class indices drawn from softmax(logits) of each row."""
    with _ops.name_scope(name, "categorical"):
        return _gumbel_max(logits, num_samples, dtype or _dtypes.int64, seed)


@tf_export("random_crop", "image.random_crop")
def random_crop(value, size, seed=None, name=None):
    """A slice of `value` of shape `size` at a uniformly random offset."""
    with _ops.name_scope(name, "random_crop"):
        value = _ops.convert_to_tensor(value, name="value")
        size = _ops.convert_to_tensor(size, dtype=_dtypes.int32, name="size")
        shape = array_ops.shape(value)
        fits = reduction_ops.reduce_min(math_ops.cast(math_ops.greater_equal(shape, size),
                                                      _dtypes.int32))
        check = check_ops.Assert(math_ops.greater(fits, 0),
                                 ["Need value.shape >= size, got ", shape, size], summarize=1000)
        with _ops.control_dependencies([check]):
            room = math_ops.cast(math_ops.add(math_ops.subtract(shape, size), 1), _dtypes.float32)
        draw = random_ops.random_uniform(array_ops.shape(shape), seed=seed)
        offset = math_ops.cast(math_ops.floor(math_ops.multiply(draw, room)), _dtypes.int32)
        offset = math_ops.minimum(offset, math_ops.subtract(shape, size))
        return array_ops.slice(value, offset, size)
