"""tf.contrib.layers' layers: TF1 contrib's signatures (num_outputs, activation_fn=relu,
normalizer_fn, weights_initializer, variables_collections, outputs_collections, scope) over the
same builders as tf.layers, with contrib's variable names (`Conv/weights`, `Conv/biases`,
`fully_connected/weights`, `BatchNorm/moving_mean`...) so that TensorFlow checkpoints of contrib
and tf_slim models load. Every variable is a model variable (tf.GraphKeys.MODEL_VARIABLES)."""

from flowstone import layers as _layers
from flowstone.contrib.framework.arg_scope import add_arg_scope
from flowstone.contrib.framework.variables import model_variable, model_variable_collections
from flowstone.contrib.layers.initializers import xavier_initializer
from flowstone.framework import ops as _ops
from flowstone.ops import array_ops, conv_layers, init_ops, math_ops, nn_impl, variable_scope


def _collections(variables_collections, names):
    return {name: model_variable_collections(variables_collections, name) for name in names}


def collect_named_outputs(collections, alias, outputs):
    """Adds `outputs` to `collections` under the name `alias` (its `.aliases`), as contrib's
    layers do with their outputs_collections."""
    if collections:
        aliases = list(getattr(outputs, "aliases", []))
        outputs.aliases = aliases + [alias]
        _ops.add_to_collections(collections, outputs)
    return outputs


def _finish(outputs, normalizer_fn, normalizer_params, activation_fn, outputs_collections,
            scope_name):
    if normalizer_fn is not None:
        outputs = normalizer_fn(outputs, **(normalizer_params or {}))
    if activation_fn is not None:
        outputs = activation_fn(outputs)
    return collect_named_outputs(outputs_collections, scope_name, outputs)


def _channels(data_format):
    if data_format not in (None, "NHWC", "NCHW"):
        raise ValueError(f"data_format has to be either NCHW or NHWC. Received: {data_format}")
    return "channels_first" if data_format == "NCHW" else "channels_last"


@add_arg_scope
def fully_connected(inputs, num_outputs, activation_fn=math_ops.relu, normalizer_fn=None,
                    normalizer_params=None, weights_initializer=xavier_initializer(),
                    weights_regularizer=None, biases_initializer=init_ops.zeros_initializer(),
                    biases_regularizer=None, reuse=None, variables_collections=None,
                    outputs_collections=None, trainable=True, scope=None):
    """activation_fn(normalizer_fn(inputs @ weights + biases)); no biases with a
    normalizer_fn or biases_initializer=None."""
    if not isinstance(num_outputs, int):
        raise ValueError(f"num_outputs type should be one of [<class 'int'>], got "
                         f"{type(num_outputs)}.")
    with variable_scope.variable_scope(scope, "fully_connected", [inputs], reuse=reuse) as sc:
        outputs = _layers.build_dense(
            inputs, num_outputs, use_bias=bool(not normalizer_fn and biases_initializer),
            kernel_initializer=weights_initializer, bias_initializer=biases_initializer,
            kernel_regularizer=weights_regularizer, bias_regularizer=biases_regularizer,
            trainable=trainable, names=_layers.CONTRIB_NAMES,
            collections=_collections(variables_collections, _layers.CONTRIB_NAMES))[0]
        return _finish(outputs, normalizer_fn, normalizer_params, activation_fn,
                       outputs_collections, sc.name)


@add_arg_scope
def convolution2d(inputs, num_outputs, kernel_size, stride=1, padding="SAME", data_format=None,
                  rate=1, activation_fn=math_ops.relu, normalizer_fn=None,
                  normalizer_params=None, weights_initializer=xavier_initializer(),
                  weights_regularizer=None, biases_initializer=init_ops.zeros_initializer(),
                  biases_regularizer=None, reuse=None, variables_collections=None,
                  outputs_collections=None, trainable=True, scope=None):
    """A 2-D convolution ([kh, kw, in, num_outputs] weights) of 4-D inputs, then biases (no
    biases with a normalizer_fn), normalizer_fn and activation_fn (ReLU by default)."""
    with variable_scope.variable_scope(scope, "Conv", [inputs], reuse=reuse) as sc:
        inputs = _ops.convert_to_tensor(inputs)
        if inputs.shape.rank != 4:
            raise ValueError(f"Convolution expects input with rank 4, got "
                             f"{inputs.shape.rank}")
        outputs = _layers.build_conv2d(
            inputs, num_outputs, kernel_size, stride, padding, _channels(data_format), rate,
            use_bias=bool(not normalizer_fn and biases_initializer),
            kernel_initializer=weights_initializer, bias_initializer=biases_initializer,
            kernel_regularizer=weights_regularizer, bias_regularizer=biases_regularizer,
            trainable=trainable, names=_layers.CONTRIB_NAMES,
            collections=_collections(variables_collections, _layers.CONTRIB_NAMES))[0]
        return _finish(outputs, normalizer_fn, normalizer_params, activation_fn,
                       outputs_collections, sc.name)


@add_arg_scope
def convolution2d_transpose(inputs, num_outputs, kernel_size, stride=1, padding="SAME",
                            data_format="NHWC", activation_fn=math_ops.relu,
                            normalizer_fn=None, normalizer_params=None,
                            weights_initializer=xavier_initializer(), weights_regularizer=None,
                            biases_initializer=init_ops.zeros_initializer(),
                            biases_regularizer=None, reuse=None, variables_collections=None,
                            outputs_collections=None, trainable=True, scope=None):
    """A transposed 2-D convolution ([kh, kw, num_outputs, in] weights), then biases,
    normalizer_fn and activation_fn, in scope "Conv2d_transpose"."""
    with variable_scope.variable_scope(scope, "Conv2d_transpose", [inputs], reuse=reuse) as sc:
        outputs = conv_layers.build_conv2d_transpose(
            inputs, num_outputs, kernel_size, stride, padding, _channels(data_format),
            use_bias=bool(not normalizer_fn and biases_initializer),
            kernel_initializer=weights_initializer, bias_initializer=biases_initializer,
            kernel_regularizer=weights_regularizer, bias_regularizer=biases_regularizer,
            trainable=trainable, names=_layers.CONTRIB_NAMES,
            collections=_collections(variables_collections, _layers.CONTRIB_NAMES))[0]
        return _finish(outputs, normalizer_fn, normalizer_params, activation_fn,
                       outputs_collections, sc.name)


@add_arg_scope
def separable_convolution2d(inputs, num_outputs, kernel_size, depth_multiplier=1, stride=1,
                            padding="SAME", data_format="NHWC", rate=1,
                            activation_fn=math_ops.relu, normalizer_fn=None,
                            normalizer_params=None, weights_initializer=xavier_initializer(),
                            pointwise_initializer=None, weights_regularizer=None,
                            biases_initializer=init_ops.zeros_initializer(),
                            biases_regularizer=None, reuse=None, variables_collections=None,
                            outputs_collections=None, trainable=True, scope=None):
    """A depthwise convolution ([kh, kw, in, depth_multiplier] depthwise_weights) and, when
    num_outputs is not None, a 1x1 convolution to num_outputs channels (pointwise_weights),
    then biases, normalizer_fn and activation_fn, in scope "SeparableConv2d"."""
    use_bias = bool(not normalizer_fn and biases_initializer)
    names = conv_layers.SEPARABLE_CONTRIB_NAMES
    collections = _collections(variables_collections, names)
    with variable_scope.variable_scope(scope, "SeparableConv2d", [inputs], reuse=reuse) as sc:
        if num_outputs is not None:
            outputs = conv_layers.build_separable_conv2d(
                inputs, num_outputs, kernel_size, stride, padding, _channels(data_format), rate,
                depth_multiplier, use_bias=use_bias, depthwise_initializer=weights_initializer,
                pointwise_initializer=pointwise_initializer or weights_initializer,
                bias_initializer=biases_initializer, depthwise_regularizer=weights_regularizer,
                pointwise_regularizer=weights_regularizer, bias_regularizer=biases_regularizer,
                trainable=trainable, names=names, collections=collections)[0]
        else:
            outputs = _depthwise_only(inputs, kernel_size, depth_multiplier, stride, padding,
                                      data_format, rate, use_bias, weights_initializer,
                                      weights_regularizer, biases_initializer,
                                      biases_regularizer, trainable, names, collections)
        return _finish(outputs, normalizer_fn, normalizer_params, activation_fn,
                       outputs_collections, sc.name)


def _depthwise_only(inputs, kernel_size, depth_multiplier, stride, padding, data_format, rate,
                    use_bias, weights_initializer, weights_regularizer, biases_initializer,
                    biases_regularizer, trainable, names, collections):
    from flowstone.ops import conv_ops
    inputs = _ops.convert_to_tensor(inputs)
    nchw = data_format == "NCHW"
    channels = inputs.shape[1 if nchw else 3]
    kh, kw = _layers._pair(kernel_size, "kernel_size")
    sh, sw = _layers._pair(stride, "stride")
    depthwise = model_variable(names[0], [kh, kw, channels, depth_multiplier], inputs.dtype,
                               weights_initializer, weights_regularizer, trainable,
                               collections=collections[names[0]])
    outputs = conv_ops.depthwise_conv2d(inputs, depthwise,
                                        [1, 1, sh, sw] if nchw else [1, sh, sw, 1],
                                        padding, rate=_layers._pair(rate, "rate"),
                                        data_format=data_format)
    if use_bias:
        biases = model_variable(names[2], [channels * depth_multiplier], inputs.dtype,
                                biases_initializer, biases_regularizer, trainable,
                                collections=collections[names[2]])
        outputs = conv_ops.bias_add(outputs, biases, data_format=data_format)
    return outputs


def _pool(pool, inputs, kernel_size, stride, padding, data_format, outputs_collections, scope,
          default_name):
    with _ops.name_scope(scope, default_name, [inputs]) as sc:
        outputs = pool(inputs, kernel_size, stride, padding, _channels(data_format))
        return collect_named_outputs(outputs_collections, sc, outputs)


@add_arg_scope
def max_pool2d(inputs, kernel_size, stride=2, padding="VALID", data_format="NHWC",
               outputs_collections=None, scope=None):
    """Max pooling over kernel_size windows (padding "VALID" and stride 2 by default)."""
    return _pool(_layers.max_pooling2d, inputs, kernel_size, stride, padding, data_format,
                 outputs_collections, scope, "MaxPool2D")


@add_arg_scope
def avg_pool2d(inputs, kernel_size, stride=2, padding="VALID", data_format="NHWC",
               outputs_collections=None, scope=None):
    """Average pooling over kernel_size windows (padding "VALID" and stride 2 by default)."""
    return _pool(_layers.average_pooling2d, inputs, kernel_size, stride, padding, data_format,
                 outputs_collections, scope, "AvgPool2D")


@add_arg_scope
def flatten(inputs, outputs_collections=None, scope=None):
    """[batch, d1, d2, ...] -> [batch, d1 * d2 * ...]."""
    with _ops.name_scope(scope, "Flatten", [inputs]) as sc:
        inputs = _ops.convert_to_tensor(inputs)
        if inputs.shape.rank is None:
            raise ValueError("Inputs rank must be known to flatten.")
        if inputs.shape.rank < 2:
            raise ValueError(f"Inputs must have a least 2 dimensions, got shape "
                             f"{inputs.shape}.")
        outputs = _layers.flatten(inputs)
        return collect_named_outputs(outputs_collections, sc, outputs)


@add_arg_scope
def dropout(inputs, keep_prob=0.5, noise_shape=None, is_training=True, outputs_collections=None,
            scope=None, seed=None):
    """Keeps each element with probability keep_prob (scaled by 1 / keep_prob) when
    is_training (a bool or a bool tensor); identity otherwise."""
    with variable_scope.variable_scope(scope, "Dropout", [inputs]) as sc:
        outputs = _layers.dropout(inputs, rate=1.0 - keep_prob, noise_shape=noise_shape,
                                  seed=seed, training=is_training)
        return collect_named_outputs(outputs_collections, sc.name, outputs)


@add_arg_scope
def batch_norm(inputs, decay=0.999, center=True, scale=False, epsilon=0.001,
               activation_fn=None, param_initializers=None, param_regularizers=None,
               updates_collections=_ops.GraphKeys.UPDATE_OPS, is_training=True, reuse=None,
               variables_collections=None, outputs_collections=None, trainable=True,
               batch_weights=None, fused=None, data_format="NHWC",
               zero_debias_moving_mean=False, scope=None, renorm=False, renorm_clipping=None,
               renorm_decay=0.99, adjustment=None):
    """Batch normalization over the last axis (the channel axis for "NCHW"), in scope
    "BatchNorm": beta (center), gamma (scale: off by default, as the next layer can scale),
    moving_mean and moving_variance. In training (is_training, a bool or a bool tensor) the
    moving averages move by (1 - decay) toward the batch statistics; their updates go to
    `updates_collections`, or run with the outputs when it is None. As TensorFlow's fused
    kernel, which contrib uses for 2-D and 4-D inputs unless fused=False, the moving variance
    then tracks the unbiased batch variance."""
    if batch_weights is not None or renorm or adjustment is not None or zero_debias_moving_mean:
        raise NotImplementedError("tf.contrib.layers.batch_norm in Flowstone supports neither "
                                  "batch_weights, renorm, adjustment nor "
                                  "zero_debias_moving_mean")
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError(f"data_format has to be either NCHW or NHWC. Received: {data_format}")
    inputs = _ops.convert_to_tensor(inputs)
    rank = inputs.shape.rank
    if rank is None:
        raise ValueError(f"Inputs {inputs.name} has undefined rank.")
    initializers = param_initializers or {}
    regularizers = param_regularizers or {}
    names = ("beta", "gamma", "moving_mean", "moving_variance")
    with variable_scope.variable_scope(scope, "BatchNorm", [inputs], reuse=reuse) as sc:
        outputs, _ = _layers.build_batch_normalization(
            inputs, axis=1 if data_format == "NCHW" else -1, momentum=decay, epsilon=epsilon,
            center=center, scale=scale,
            beta_initializer=initializers.get("beta", init_ops.zeros_initializer()),
            gamma_initializer=initializers.get("gamma", init_ops.ones_initializer()),
            moving_mean_initializer=initializers.get("moving_mean",
                                                     init_ops.zeros_initializer()),
            moving_variance_initializer=initializers.get("moving_variance",
                                                         init_ops.ones_initializer()),
            beta_regularizer=regularizers.get("beta"),
            gamma_regularizer=regularizers.get("gamma"), training=is_training,
            trainable=trainable, fused=fused if rank == 4 else False,
            collections=_collections(variables_collections, names),
            updates_collection=updates_collections,
            unbiased_variance=fused is not False and rank in (2, 4))
        return _finish(outputs, None, None, activation_fn, outputs_collections, sc.name)


@add_arg_scope
def layer_norm(inputs, center=True, scale=True, activation_fn=None, reuse=None,
               variables_collections=None, outputs_collections=None, trainable=True,
               begin_norm_axis=1, begin_params_axis=-1, scope=None):
    """Normalizes over the axes from begin_norm_axis on (mean 0, variance 1, epsilon 1e-12),
    then scales by gamma and shifts by beta, shaped like the axes from begin_params_axis on."""
    with variable_scope.variable_scope(scope, "LayerNorm", [inputs], reuse=reuse) as sc:
        inputs = _ops.convert_to_tensor(inputs)
        rank = inputs.shape.rank
        if rank is None:
            raise ValueError(f"Inputs {inputs.name} has undefined rank.")
        if begin_norm_axis < 0:
            begin_norm_axis += rank
        if begin_params_axis < 0:
            begin_params_axis += rank
        if not 0 <= begin_norm_axis < rank or not 0 <= begin_params_axis < rank:
            raise ValueError(f"begin_params_axis ({begin_params_axis}) and begin_norm_axis "
                             f"({begin_norm_axis}) must be < rank(inputs) ({rank})")
        params_shape = inputs.shape[begin_params_axis:]
        if not params_shape.is_fully_defined():
            raise ValueError(f"Inputs {inputs.name}: shape(inputs)[{begin_params_axis}:] is "
                             f"not fully defined: {inputs.shape}")
        beta = gamma = None
        if center:
            beta = model_variable("beta", params_shape, inputs.dtype.base_dtype,
                                  init_ops.zeros_initializer(), trainable=trainable,
                                  collections=_collections(variables_collections, ["beta"])["beta"])
        if scale:
            gamma = model_variable("gamma", params_shape, inputs.dtype.base_dtype,
                                   init_ops.ones_initializer(), trainable=trainable,
                                   collections=_collections(variables_collections,
                                                            ["gamma"])["gamma"])
        mean, variance = nn_impl.moments(inputs, list(range(begin_norm_axis, rank)),
                                         keep_dims=True)
        outputs = nn_impl.batch_normalization(inputs, mean, variance, beta, gamma, 1e-12)
        return _finish(outputs, None, None, activation_fn, outputs_collections, sc.name)


def embed_sequence(ids, vocab_size=None, embed_dim=None, unique=False, initializer=None,
                   regularizer=None, trainable=True, scope=None, reuse=None):
    """The rows of an [vocab_size, embed_dim] "embeddings" variable (scope "EmbedSequence") for
    a [batch, length] tensor of ids: [batch, length, embed_dim]."""
    if not (reuse or (vocab_size and embed_dim)):
        raise ValueError("Must specify vocab size and embedding dimension when not reusing. "
                         f"Got vocab_size={vocab_size} and embed_dim={embed_dim}")
    with variable_scope.variable_scope(scope, "EmbedSequence", [ids], reuse=reuse):
        shape = [vocab_size, embed_dim] if vocab_size and embed_dim else None
        embeddings = model_variable("embeddings", shape=shape, initializer=initializer,
                                    regularizer=regularizer, trainable=trainable)
        return nn_impl.embedding_lookup(embeddings, ids)


@add_arg_scope
def one_hot_encoding(labels, num_classes, on_value=1.0, off_value=0.0, outputs_collections=None,
                     scope=None):
    """[...] integer labels -> [..., num_classes] one-hot floats."""
    from flowstone import dtypes
    with _ops.name_scope(scope, "OneHotEncoding", [labels, num_classes]) as sc:
        labels = _ops.convert_to_tensor(labels)
        if labels.dtype == dtypes.int32:
            labels = math_ops.cast(labels, dtypes.int64)
        outputs = array_ops.one_hot(labels, num_classes, on_value=on_value,
                                    off_value=off_value)
        return collect_named_outputs(outputs_collections, sc, outputs)


def _layer_name(layer, default):
    if hasattr(layer, "__name__"):
        return layer.__name__
    if hasattr(getattr(layer, "func", None), "__name__"):
        return layer.func.__name__  # a functools.partial
    return default


def repeat(inputs, repetitions, layer, *args, **kwargs):
    """Applies `layer` `repetitions` times, in scopes <scope>/<scope>_1, <scope>/<scope>_2, ...
    (scope defaults to the layer's name)."""
    scope = kwargs.pop("scope", None)
    with variable_scope.variable_scope(scope, "Repeat", [inputs]):
        outputs = _ops.convert_to_tensor(inputs)
        scope = scope or _layer_name(layer, "repeat")
        for i in range(repetitions):
            kwargs["scope"] = f"{scope}_{i + 1}"
            outputs = layer(outputs, *args, **kwargs)
        return outputs


def stack(inputs, layer, stack_args, **kwargs):
    """Applies `layer` once per entry of stack_args (its arguments after the inputs), each in
    scope <scope>/<scope>_<i>: stack(x, fully_connected, [32, 64]) is two dense layers."""
    scope = kwargs.pop("scope", None)
    if not isinstance(stack_args, (list, tuple)):
        raise ValueError("stack_args need to be a list or tuple")
    with variable_scope.variable_scope(scope, "Stack", [inputs]):
        outputs = _ops.convert_to_tensor(inputs)
        scope = scope or _layer_name(layer, "stack")
        for i, args in enumerate(stack_args):
            kwargs["scope"] = f"{scope}_{i + 1}"
            args = args if isinstance(args, (list, tuple)) else [args]
            outputs = layer(outputs, *args, **kwargs)
        return outputs


conv2d = convolution2d
conv2d_transpose = convolution2d_transpose
separable_conv2d = separable_convolution2d


def linear(inputs, num_outputs, **kwargs):
    """fully_connected with activation_fn=None."""
    return fully_connected(inputs, num_outputs, activation_fn=None, **kwargs)
