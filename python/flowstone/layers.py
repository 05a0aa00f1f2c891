"""tf.layers: TF1's functional layers, creating variables through tf.get_variable."""

import contextlib

import numpy as np

from flowstone.framework import ops as _ops
from flowstone.ops import init_ops, variable_scope

__all__ = ["dense", "conv2d", "max_pooling2d", "average_pooling2d", "flatten", "dropout",
           "batch_normalization"]


def _pair(value, name):
    if isinstance(value, int):
        return [value, value]
    value = list(value)
    if len(value) != 2:
        raise ValueError(f"The `{name}` argument must be an int or a tuple of 2 ints, got "
                         f"{value}")
    return [int(v) for v in value]


def _layer_scope(name, base_name, reuse):
    """The variable scope of one layer: `name`, or `base_name` made unique ("dense_1"); a layer
    built with reuse=True and no name shares the variables of the first `base_name` layer."""
    if name is None and reuse:
        name = base_name
    return variable_scope.variable_scope(name, default_name=base_name, reuse=reuse)


@contextlib.contextmanager
def reenter_scope(scope, reuse=None):
    """Re-enters a variable scope made earlier, with its ops under its original name scope (as
    TensorFlow's layers do when built with `_scope`, e.g. by tf_slim)."""
    with variable_scope.variable_scope(scope, reuse=reuse, auxiliary_name_scope=False), \
            _ops.name_scope(scope.original_name_scope):
        yield


def _add_bias_and_activate(outputs, bias, activation, activity_regularizer,
                           data_format="NHWC"):
    from flowstone.ops import conv_ops
    if bias is not None:
        outputs = conv_ops.bias_add(outputs, bias, data_format=data_format)
    if activation is not None:
        outputs = activation(outputs)
    if activity_regularizer is not None:
        _add_activity_loss(outputs, activity_regularizer)
    return outputs


def _add_activity_loss(outputs, regularizer):
    """Adds regularizer(outputs) per example to REGULARIZATION_LOSSES, as Keras layers do."""
    from flowstone.ops import array_ops, math_ops
    with _ops.name_scope("ActivityRegularizer"):
        loss = _ops.convert_to_tensor(regularizer(outputs))
        batch = math_ops.cast(array_ops.shape(outputs)[0], loss.dtype)
        _ops.add_to_collection(_ops.GraphKeys.REGULARIZATION_LOSSES,
                               math_ops.divide(loss, batch))


# The variable names of a layer's weights: tf.layers' ("kernel", "bias") or tf.contrib.layers'
# ("weights", "biases"), which TensorFlow checkpoints of either kind hold.
LAYERS_NAMES = ("kernel", "bias")
CONTRIB_NAMES = ("weights", "biases")


def _kernel_and_bias(kernel_shape, units, dtype, use_bias, trainable, kernel_initializer,
                     kernel_regularizer, kernel_constraint, bias_initializer, bias_regularizer,
                     bias_constraint, names=LAYERS_NAMES, collections=None):
    """The kernel and (when use_bias) bias variables of a layer, in the current scope, named
    `names`; `collections` maps a name to the collections that replace tf.get_variable's
    default (tf.GraphKeys.GLOBAL_VARIABLES)."""
    collections = collections or {}
    kernel = variable_scope.get_variable(names[0], kernel_shape, dtype=dtype,
                                         initializer=kernel_initializer,
                                         regularizer=kernel_regularizer, trainable=trainable,
                                         constraint=kernel_constraint,
                                         collections=collections.get(names[0]))
    bias = None
    if use_bias:
        bias = variable_scope.get_variable(names[1], [units], dtype=dtype,
                                           initializer=bias_initializer,
                                           regularizer=bias_regularizer, trainable=trainable,
                                           constraint=bias_constraint,
                                           collections=collections.get(names[1]))
    return kernel, bias


def dense(inputs, units, activation=None, use_bias=True, kernel_initializer=None,
          bias_initializer=init_ops.Zeros(), kernel_regularizer=None, bias_regularizer=None,
          activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
          trainable=True, name=None, reuse=None):
    """activation(inputs @ kernel + bias), with kernel [in, units] (glorot uniform) and bias."""
    with _layer_scope(name, "dense", reuse):
        return build_dense(inputs, units, activation, use_bias, kernel_initializer,
                           bias_initializer, kernel_regularizer, bias_regularizer,
                           activity_regularizer, kernel_constraint, bias_constraint,
                           trainable)[0]


def build_dense(inputs, units, activation=None, use_bias=True, kernel_initializer=None,
                bias_initializer=init_ops.Zeros(), kernel_regularizer=None,
                bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                bias_constraint=None, trainable=True, names=LAYERS_NAMES, collections=None):
    """The dense layer in the current variable scope: (outputs, kernel, bias). tf.layers.dense,
    tf.layers.Dense and tf.contrib.layers.fully_connected all build through here."""
    from flowstone.ops import array_ops, matmul_ops
    inputs = _ops.convert_to_tensor(inputs)
    rank = inputs.shape.rank
    if rank is not None and rank < 2:
        raise ValueError(f"Input 0 of layer dense is incompatible with the layer: expected "
                         f"min_ndim=2, found ndim={rank}. Full shape received: {inputs.shape}")
    in_dim = inputs.shape[-1] if rank else None
    if in_dim is None:
        raise ValueError("The last dimension of the inputs to `Dense` should be defined. Found "
                         "`None`.")
    kernel, bias = _kernel_and_bias(
        [in_dim, units], units, inputs.dtype, use_bias, trainable, kernel_initializer,
        kernel_regularizer, kernel_constraint, bias_initializer, bias_regularizer,
        bias_constraint, names, collections)
    if rank > 2:
        # Applies the kernel to the last axis: [..., in] -> [..., units]. A constant target
        # shape, when the inner dims are static, lets shape inference keep them.
        flat = array_ops.reshape(inputs, [-1, in_dim])
        out = matmul_ops.matmul(flat, kernel)
        inner = inputs.shape[1:-1]
        if inner.is_fully_defined():
            out_shape = [-1] + inner.as_list() + [units]
        else:
            out_shape = array_ops.concat([array_ops.shape(inputs)[:-1], [units]], 0)
        out = array_ops.reshape(out, out_shape)
    else:
        out = matmul_ops.matmul(inputs, kernel)
    return _add_bias_and_activate(out, bias, activation, activity_regularizer), kernel, bias


def _data_format(data_format):
    if data_format in ("channels_last", "NHWC", None):
        return "NHWC"
    if data_format in ("channels_first", "NCHW"):
        return "NCHW"
    raise ValueError(f"The `data_format` argument must be one of \"channels_first\", "
                     f"\"channels_last\". Received: {data_format}")


def _padding(padding):
    padding = padding.upper()
    if padding not in ("SAME", "VALID"):
        raise ValueError(f"The `padding` argument must be one of \"valid\", \"same\". "
                         f"Received: {padding.lower()}")
    return padding


def conv2d(inputs, filters, kernel_size, strides=(1, 1), padding="valid",
           data_format="channels_last", dilation_rate=(1, 1), activation=None, use_bias=True,
           kernel_initializer=None, bias_initializer=init_ops.Zeros(), kernel_regularizer=None,
           bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
           bias_constraint=None, trainable=True, name=None, reuse=None):
    """A 2-D convolution layer with a [kh, kw, in, filters] kernel and a bias."""
    with _layer_scope(name, "conv2d", reuse):
        return build_conv2d(inputs, filters, kernel_size, strides, padding, data_format,
                            dilation_rate, activation, use_bias, kernel_initializer,
                            bias_initializer, kernel_regularizer, bias_regularizer,
                            activity_regularizer, kernel_constraint, bias_constraint,
                            trainable)[0]


def build_conv2d(inputs, filters, kernel_size, strides=(1, 1), padding="valid",
                 data_format="channels_last", dilation_rate=(1, 1), activation=None,
                 use_bias=True, kernel_initializer=None, bias_initializer=init_ops.Zeros(),
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, trainable=True,
                 names=LAYERS_NAMES, collections=None):
    """The conv2d layer in the current variable scope: (outputs, kernel, bias). tf.layers.conv2d,
    tf.layers.Conv2D and tf.contrib.layers.conv2d all build through here."""
    from flowstone.ops import conv_ops
    inputs = _ops.convert_to_tensor(inputs)
    fmt = _data_format(data_format)
    if inputs.shape.rank != 4:
        raise ValueError(f"Input 0 of layer conv2d is incompatible with the layer: expected "
                         f"ndim=4, found ndim={inputs.shape.rank}. Full shape received: "
                         f"{inputs.shape}")
    channels = inputs.shape[3] if fmt == "NHWC" else inputs.shape[1]
    if channels is None:
        raise ValueError("The channel dimension of the inputs should be defined. Found `None`.")
    kh, kw = _pair(kernel_size, "kernel_size")
    sh, sw = _pair(strides, "strides")
    dh, dw = _pair(dilation_rate, "dilation_rate")
    kernel, bias = _kernel_and_bias(
        [kh, kw, channels, filters], filters, inputs.dtype, use_bias, trainable,
        kernel_initializer, kernel_regularizer, kernel_constraint, bias_initializer,
        bias_regularizer, bias_constraint, names, collections)
    strides4 = [1, sh, sw, 1] if fmt == "NHWC" else [1, 1, sh, sw]
    dilations4 = [1, dh, dw, 1] if fmt == "NHWC" else [1, 1, dh, dw]
    out = conv_ops.conv2d(inputs, kernel, strides4, _padding(padding), data_format=fmt,
                          dilations=dilations4)
    return (_add_bias_and_activate(out, bias, activation, activity_regularizer, fmt), kernel,
            bias)


def _pool(op_name, inputs, pool_size, strides, padding, data_format, name, default_name):
    from flowstone.ops import conv_ops
    fmt = _data_format(data_format)
    ph, pw = _pair(pool_size, "pool_size")
    sh, sw = _pair(strides, "strides")
    ksize = [1, ph, pw, 1] if fmt == "NHWC" else [1, 1, ph, pw]
    stride4 = [1, sh, sw, 1] if fmt == "NHWC" else [1, 1, sh, sw]
    fn = conv_ops.max_pool if op_name == "max" else conv_ops.avg_pool
    with _ops.name_scope(name, default_name):
        return fn(inputs, ksize, stride4, _padding(padding), data_format=fmt)


def max_pooling2d(inputs, pool_size, strides, padding="valid", data_format="channels_last",
                  name=None):
    """Max over pool_size windows of the spatial axes."""
    return _pool("max", inputs, pool_size, strides, padding, data_format, name, "max_pooling2d")


def average_pooling2d(inputs, pool_size, strides, padding="valid", data_format="channels_last",
                      name=None):
    """Mean over pool_size windows of the spatial axes (padding does not count)."""
    return _pool("avg", inputs, pool_size, strides, padding, data_format, name,
                 "average_pooling2d")


def flatten(inputs, name=None, data_format="channels_last"):
    """Reshapes [batch, ...] to [batch, prod(...)]."""
    from flowstone.ops import array_ops
    inputs = _ops.convert_to_tensor(inputs)
    with _ops.name_scope(name, "flatten"):
        if _data_format(data_format) == "NCHW" and inputs.shape.rank and inputs.shape.rank > 2:
            perm = [0] + list(range(2, inputs.shape.rank)) + [1]
            inputs = array_ops.transpose(inputs, perm)
        rest = inputs.shape[1:]
        if rest.is_fully_defined():
            return array_ops.reshape(inputs, [-1, int(np.prod(rest.as_list()))])
        return array_ops.reshape(inputs, array_ops.stack([array_ops.shape(inputs)[0], -1]))


def _select_training(training, train_value, infer_value):
    """`training` may be a Python bool (one branch is built) or a bool tensor (both are built
    and the tensor selects between them at run time)."""
    if isinstance(training, (bool, np.bool_)):
        return train_value() if training else infer_value()
    from flowstone.ops import math_ops
    return math_ops.where_v2(_ops.convert_to_tensor(training), train_value(), infer_value())


def dropout(inputs, rate=0.5, noise_shape=None, seed=None, training=False, name=None):
    """Dropout at training time, identity at inference time."""
    from flowstone.ops import nn_impl
    inputs = _ops.convert_to_tensor(inputs)
    with _ops.name_scope(name, "dropout"):
        return _select_training(
            training, lambda: nn_impl.dropout(inputs, rate=rate, noise_shape=noise_shape,
                                              seed=seed), lambda: inputs)


def _uses_fused_statistics(rank, axis, dtype, fused):
    """Whether TensorFlow would run this layer as its fused kernel, whose moving variance
    tracks the unbiased (Bessel-corrected) batch variance instead of the biased one."""
    from flowstone import dtypes
    return (fused is not False and rank == 4 and axis in (1, 3)
            and dtype in (dtypes.float16, dtypes.bfloat16, dtypes.float32))


def batch_normalization(inputs, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                        beta_initializer=init_ops.Zeros(), gamma_initializer=init_ops.Ones(),
                        moving_mean_initializer=init_ops.Zeros(),
                        moving_variance_initializer=init_ops.Ones(), beta_regularizer=None,
                        gamma_regularizer=None, beta_constraint=None, gamma_constraint=None,
                        training=False, trainable=True, name=None, reuse=None, renorm=False,
                        renorm_clipping=None, renorm_momentum=0.99, fused=None,
                        virtual_batch_size=None, adjustment=None):
    """Batch normalization over `axis`.

    In training it normalizes with the batch statistics and adds the moving-average updates
    (moving -= (moving - batch_statistic) * (1 - momentum)) to tf.GraphKeys.UPDATE_OPS: run
    them with the train op. When `training` is a tensor, the updates leave the moving averages
    unchanged in the steps where it is false."""
    if renorm or virtual_batch_size is not None or adjustment is not None:
        raise NotImplementedError("batch_normalization supports neither renorm, "
                                  "virtual_batch_size nor adjustment")
    with _layer_scope(name, "batch_normalization", reuse):
        return build_batch_normalization(
            inputs, axis, momentum, epsilon, center, scale, beta_initializer,
            gamma_initializer, moving_mean_initializer, moving_variance_initializer,
            beta_regularizer, gamma_regularizer, beta_constraint, gamma_constraint, training,
            trainable, fused)[0]


def build_batch_normalization(inputs, axis=-1, momentum=0.99, epsilon=1e-3, center=True,
                              scale=True, beta_initializer=init_ops.Zeros(),
                              gamma_initializer=init_ops.Ones(),
                              moving_mean_initializer=init_ops.Zeros(),
                              moving_variance_initializer=init_ops.Ones(), beta_regularizer=None,
                              gamma_regularizer=None, beta_constraint=None,
                              gamma_constraint=None, training=False, trainable=True, fused=None,
                              collections=None, updates_collection=_ops.GraphKeys.UPDATE_OPS,
                              unbiased_variance=None):
    """Batch normalization in the current variable scope: (outputs, variables), variables a dict
    of gamma, beta, moving_mean and moving_variance (None where not made). tf.layers and
    tf.contrib.layers.batch_norm build through here.

    `collections` maps a variable name to the collections it goes in. The moving-average
    updates go to `updates_collection`; with None the outputs wait for them instead.
    `unbiased_variance` says whether the moving variance tracks the Bessel-corrected batch
    variance (None: where TensorFlow's fused kernel would run)."""
    from flowstone import dtypes
    from flowstone.ops import array_ops, math_ops, nn_impl
    inputs = _ops.convert_to_tensor(inputs)
    collections = collections or {}
    rank = inputs.shape.rank
    if rank is None:
        raise ValueError(f"Input has undefined rank: {inputs.shape}")
    if not -rank <= axis < rank:
        raise ValueError(f"Invalid axis: {axis} for input of rank {rank}")
    axis = axis % rank
    depth = inputs.shape[axis]
    if depth is None:
        raise ValueError(f"Axis {axis} of input tensor should have a defined dimension but the "
                         f"layer received an input with shape {inputs.shape}.")
    reduce_axes = [a for a in range(rank) if a != axis]
    broadcast = [1] * rank
    broadcast[axis] = depth
    fused_statistics = _uses_fused_statistics(rank, axis, inputs.dtype, fused)
    bessel = fused_statistics if unbiased_variance is None else unbiased_variance
    # Where TensorFlow runs its fused kernel, so does this layer (FusedBatchNormV3, float32);
    # float16 and bfloat16 get the same statistics from the composite ops.
    use_fused_kernel = fused_statistics and inputs.dtype == dtypes.float32
    dtype = inputs.dtype

    def variable(name, initializer, **kwargs):
        return variable_scope.get_variable(name, [depth], dtype, initializer,
                                           collections=collections.get(name), **kwargs)

    gamma = variable("gamma", gamma_initializer, regularizer=gamma_regularizer,
                     trainable=trainable, constraint=gamma_constraint) if scale else None
    beta = variable("beta", beta_initializer, regularizer=beta_regularizer,
                    trainable=trainable, constraint=beta_constraint) if center else None
    moving_mean = variable("moving_mean", moving_mean_initializer, trainable=False)
    moving_var = variable("moving_variance", moving_variance_initializer, trainable=False)
    updates = []

    def reshape(v):
        return None if v is None else (v if axis == rank - 1 else
                                       array_ops.reshape(v, broadcast))

    def update(variable, value, name):
        # With a training tensor the update is built once and must do nothing when it is
        # false: then the "batch statistic" is the moving value itself.
        with _ops.name_scope(name):
            current = variable.read_value()
            if not isinstance(training, (bool, np.bool_)):
                value = math_ops.where_v2(_ops.convert_to_tensor(training), value, current)
            delta = math_ops.multiply(math_ops.subtract(current, value), 1.0 - momentum)
            op = variable.assign_sub(delta, read_value=False)
        updates.append(op)
        if updates_collection is not None:
            _ops.add_to_collection(updates_collection, op)

    def fused_norm(mean, variance, is_training):
        # TensorFlow's fused kernel normalizes over the channel axis of a 4-D tensor.
        from flowstone.ops import nn_norm_ops
        ones = array_ops.ones([depth], dtype)
        zeros = array_ops.zeros([depth], dtype)
        return nn_norm_ops.fused_batch_norm(
            inputs, gamma if gamma is not None else ones,
            beta if beta is not None else zeros, mean, variance, epsilon=epsilon,
            data_format="NHWC" if axis == 3 else "NCHW", is_training=is_training)

    def train_branch():
        if use_fused_kernel:
            outputs, mean, variance = fused_norm(None, None, True)
            update(moving_mean, mean, "AssignMovingAvg")
            update(moving_var, variance, "AssignMovingAvg_1")
            return outputs
        mean, variance = nn_impl.moments(inputs, reduce_axes)
        update(moving_mean, mean, "AssignMovingAvg")
        if bessel:
            count = math_ops.divide(math_ops.cast(array_ops.size(inputs), dtype), float(depth))
            update(moving_var, math_ops.multiply(
                variance, math_ops.divide(count, math_ops.maximum(
                    math_ops.subtract(count, 1.0), 1.0))), "AssignMovingAvg_1")
        else:
            update(moving_var, variance, "AssignMovingAvg_1")
        return nn_impl.batch_normalization(inputs, reshape(mean), reshape(variance),
                                           reshape(beta), reshape(gamma), epsilon)

    def infer_branch():
        if use_fused_kernel:
            return fused_norm(moving_mean.value(), moving_var.value(), False)[0]
        return nn_impl.batch_normalization(inputs, reshape(moving_mean.value()),
                                           reshape(moving_var.value()), reshape(beta),
                                           reshape(gamma), epsilon)

    outputs = _select_training(training, train_branch, infer_branch)
    if updates_collection is None and updates:
        from flowstone.ops import basic_ops
        with _ops.control_dependencies(updates):
            outputs = basic_ops.identity(outputs)
    return outputs, dict(gamma=gamma, beta=beta, moving_mean=moving_mean,
                         moving_variance=moving_var)
