"""tf.random.stateless_*: random values that are a pure function of `shape` and a `seed` of two
integers, so the same call gives the same values in every run and on every thread count (the
C++ Stateless* ops; categorical sampling is the Gumbel-max trick over stateless uniforms)."""

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.ops import array_ops, math_ops, reduction_ops
from flowstone.util.tf_export import tf_export


def _seed(seed):
    seed = _ops.convert_to_tensor(seed, name="seed")
    if seed.dtype not in (_dtypes.int32, _dtypes.int64):
        raise TypeError(f"seed must be int32 or int64, got {seed.dtype.name}")
    return seed


def _shape(shape):
    return _ops.convert_to_tensor(shape, dtype=_dtypes.int32 if not isinstance(
        shape, _ops.Tensor) else None, name="shape")


def _float_op(op_type, shape, seed, dtype):
    dtype = _dtypes.as_dtype(dtype)
    if not dtype.is_floating:
        raise ValueError(f"Invalid dtype {dtype!r}: {op_type} draws floating-point values")
    return _ops.apply_op(op_type, [_shape(shape), _seed(seed)], {"dtype": dtype}).outputs[0]


@tf_export("random.stateless_uniform")
def stateless_uniform(shape, seed, minval=0, maxval=None, dtype=_dtypes.float32, name=None,
                      alg="auto_select"):
    """Uniform values in [minval, maxval) (maxval defaults to 1 for floats; integers need
    both bounds), determined by `seed` ([2] integers)."""
    del alg  # one generator (Philox) serves every algorithm name
    dtype = _dtypes.as_dtype(dtype)
    with _ops.name_scope(name, "stateless_random_uniform"):
        if dtype.is_integer:
            if (minval is None) != (maxval is None):
                raise ValueError(
                    f"For integer `dtype` argument {dtype!r}, argument `minval` and `maxval` "
                    f"must be both None or not None. Got `minval`={minval} and "
                    f"`maxval`={maxval}.")
            if minval is None:
                return _ops.apply_op("StatelessRandomUniformFullInt",
                                     [_shape(shape), _seed(seed)], {"dtype": dtype}).outputs[0]
            minval = _ops.convert_to_tensor(minval, dtype=dtype, name="min")
            maxval = _ops.convert_to_tensor(maxval, dtype=dtype, name="max")
            return _ops.apply_op("StatelessRandomUniformInt",
                                 [_shape(shape), _seed(seed), minval, maxval],
                                 {"dtype": dtype}).outputs[0]
        maxval = 1 if maxval is None else maxval
        values = _float_op("StatelessRandomUniform", shape, seed, dtype)
        minval = _ops.convert_to_tensor(minval, dtype=dtype, name="min")
        maxval = _ops.convert_to_tensor(maxval, dtype=dtype, name="max")
        return math_ops.add(math_ops.multiply(values, math_ops.subtract(maxval, minval)), minval)


@tf_export("random.stateless_normal")
def stateless_normal(shape, seed, mean=0.0, stddev=1.0, dtype=_dtypes.float32, name=None,
                     alg="auto_select"):
    """Normal values with the given mean and stddev, determined by `seed`."""
    del alg
    with _ops.name_scope(name, "stateless_random_normal"):
        values = _float_op("StatelessRandomNormal", shape, seed, dtype)
        return math_ops.add(math_ops.multiply(values, _ops.convert_to_tensor(
            stddev, dtype=values.dtype, name="stddev")), _ops.convert_to_tensor(
            mean, dtype=values.dtype, name="mean"))


@tf_export("random.stateless_truncated_normal")
def stateless_truncated_normal(shape, seed, mean=0.0, stddev=1.0, dtype=_dtypes.float32,
                               name=None, alg="auto_select"):
    """Normal values within two standard deviations of the mean, determined by `seed`."""
    del alg
    with _ops.name_scope(name, "stateless_truncated_normal"):
        values = _float_op("StatelessTruncatedNormal", shape, seed, dtype)
        return math_ops.add(math_ops.multiply(values, _ops.convert_to_tensor(
            stddev, dtype=values.dtype, name="stddev")), _ops.convert_to_tensor(
            mean, dtype=values.dtype, name="mean"))


def _stateless_gumbel_max(logits, num_samples, seed, output_dtype):
    logits = _ops.convert_to_tensor(logits, name="logits")
    if logits.shape.ndims not in (None, 2):
        raise ValueError(f"logits should be a matrix [batch_size, num_classes], got shape "
                         f"{logits.shape}")
    shape = array_ops.shape(logits)
    noise_shape = array_ops.stack([shape[0], num_samples, shape[1]])
    # u > 0 keeps log(u) finite.
    u = stateless_uniform(noise_shape, seed, minval=1e-20, maxval=1.0, dtype=logits.dtype)
    gumbel = math_ops.negative(math_ops.log(math_ops.negative(math_ops.log(u))))
    scores = math_ops.add(array_ops.expand_dims(logits, 1), gumbel)
    return reduction_ops.argmax(scores, axis=2, output_type=output_dtype)


@tf_export("random.stateless_categorical")
def stateless_categorical(logits, num_samples, seed, dtype=_dtypes.int64, name=None):
    """[batch, num_samples] class indices drawn from softmax(logits) of each row, determined
    by `seed`."""
    with _ops.name_scope(name, "stateless_categorical"):
        return _stateless_gumbel_max(logits, num_samples, seed, _dtypes.as_dtype(dtype))


@tf_export("random.stateless_multinomial")
def stateless_multinomial(logits, num_samples, seed, output_dtype=_dtypes.int64, name=None):
    """stateless_categorical under TensorFlow 1's name."""
    with _ops.name_scope(name, "stateless_multinomial"):
        return _stateless_gumbel_max(logits, num_samples, seed, _dtypes.as_dtype(output_dtype))
