"""Attention (Luong-style dot-product attention) and MultiHeadAttention, composed from matmuls
and softmax; weights, shapes, masks and configs as tf-keras 2.x's."""

import math

import flowstone as tf
from flowstone.keras import backend as K
from flowstone.keras import constraints, initializers, regularizers
from flowstone.keras.engine.base_layer import Layer
from flowstone.util.tf_export import tf_export

# What a masked-out score becomes before the softmax (tf-keras's value for float32).
_MASKED_SCORE = -1e9


def _serialize(obj, module):
    return None if obj is None else module.serialize(obj)


def _causal_mask(scores):
    """[..., Tq, Tv] booleans, True where key position <= query position."""
    shape = tf.shape(scores)
    rows = tf.expand_dims(tf.range(shape[-2]), -1)
    cols = tf.expand_dims(tf.range(shape[-1]), 0)
    return tf.greater_equal(rows, cols)


def _merge_masks(x, y):
    if x is None:
        return y
    if y is None:
        return x
    return tf.logical_and(x, y)


def _masked_scores(scores, mask):
    if mask is None:
        return scores
    return scores + _MASKED_SCORE * tf.cast(tf.logical_not(mask), scores.dtype)


def _dropout(weights, rate, training):
    if rate == 0:
        return weights
    return K.in_train_phase(lambda: tf.nn.dropout(weights, rate=rate),
                            lambda: tf.identity(weights), training=training)


@tf_export("keras.layers.Attention")
class Attention(Layer):
    """softmax(query . key^T (times a learned scale with `use_scale`)) . value, called on
    [query, value] or [query, value, key]; masks [query_mask, value_mask] drop value positions
    and zero masked query rows; `use_causal_mask` (or the deprecated `causal=True`) lets each
    query position see only keys at or before it."""

    def __init__(self, use_scale=False, score_mode="dot", dropout=0.0, **kwargs):
        self.causal = kwargs.pop("causal", False)
        super().__init__(**kwargs)
        if score_mode not in ("dot", "concat"):
            raise ValueError(f"Received: score_mode={score_mode}. Acceptable values are: "
                             '["dot", "concat"]')
        self.use_scale = use_scale
        self.score_mode = score_mode
        self.dropout = dropout
        self.supports_masking = True

    def build(self, input_shape):
        self.scale = self.add_weight("scale", (), initializer="ones") if self.use_scale \
            else None
        self.concat_score_weight = self.add_weight(
            "concat_score_weight", (), initializer="ones") if self.score_mode == "concat" \
            else None
        self.built = True

    def _scores(self, query, key):
        if self.score_mode == "dot":
            scores = tf.matmul(query, key, transpose_b=True)
            return scores * self.scale.value() if self.scale is not None else scores
        summed = tf.expand_dims(query, -2) + tf.expand_dims(key, -3)
        if self.scale is not None:
            summed = self.scale.value() * summed
        return self.concat_score_weight.value() * tf.reduce_sum(tf.tanh(summed), axis=-1)

    def _validate(self, inputs, mask):
        name = type(self).__name__
        if not isinstance(inputs, (list, tuple)):
            raise ValueError(f"{name} layer must be called on a list of inputs, namely "
                             f"[query, value] or [query, value, key]. Received: {inputs}.")
        if len(inputs) < 2 or len(inputs) > 3:
            raise ValueError(f"{name} layer accepts inputs list of length 2 or 3, namely "
                             f"[query, value] or [query, value, key]. Received length: "
                             f"{len(inputs)}.")
        if mask is not None and any(m is not None for m in mask):
            if not isinstance(mask, (list, tuple)):
                raise ValueError(f"{name} layer mask must be a list, namely [query_mask, "
                                 f"value_mask]. Received: {mask}.")
            if len(mask) < 2 or len(mask) > len(inputs):
                raise ValueError(f"{name} layer mask must be a list of length 2, namely "
                                 f"[query_mask, value_mask]. Received length: {len(mask)}.")

    def call(self, inputs, mask=None, training=None, return_attention_scores=False,
             use_causal_mask=False):
        self._validate(inputs, mask)
        query, value = inputs[0], inputs[1]
        key = inputs[2] if len(inputs) > 2 else value
        query_mask = mask[0] if mask else None
        value_mask = mask[1] if mask else None
        scores = self._scores(query, key)
        scores_mask = None if value_mask is None else tf.expand_dims(
            tf.cast(value_mask, tf.bool), -2)
        if self.causal or use_causal_mask:
            scores_mask = _merge_masks(scores_mask, _causal_mask(scores))
        weights = tf.nn.softmax(_masked_scores(scores, scores_mask))
        result = tf.matmul(_dropout(weights, self.dropout, training), value)
        if query_mask is not None:
            result = result * tf.cast(tf.expand_dims(query_mask, -1), result.dtype)
        if return_attention_scores:
            return result, weights
        return result

    def compute_mask(self, inputs, mask=None):
        return mask[0] if mask else None

    def compute_output_shape(self, input_shape):
        return tf.TensorShape(input_shape[0])

    def get_config(self):
        return {**super().get_config(), "use_scale": self.use_scale,
                "score_mode": self.score_mode, "dropout": self.dropout}


@tf_export("keras.layers.MultiHeadAttention")
class MultiHeadAttention(Layer):
    """Scaled dot-product attention in `num_heads` learned projections (Vaswani et al.),
    called as layer(query, value, key=None, attention_mask=None, ...). Weights are tf-keras's:
    query/key/value kernels [dim, heads, key_dim (value_dim)] with [heads, dim] biases, and
    attention_output kernel [heads, value_dim, *output_shape]. The attention runs over every
    axis between the batch and the features (tf-keras's default `attention_axes`)."""

    def __init__(self, num_heads, key_dim, value_dim=None, dropout=0.0, use_bias=True,
                 output_shape=None, attention_axes=None, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 softmax_robust_masking=False, **kwargs):
        for built_shape in ("query_shape", "key_shape", "value_shape"):
            kwargs.pop(built_shape, None)
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        self.supports_masking = True
        self._num_heads = num_heads
        self._key_dim = key_dim
        self._value_dim = value_dim if value_dim else key_dim
        self._dropout = dropout
        self._use_bias = use_bias
        self._output_shape = output_shape
        self._kernel_initializer = initializers.get(kernel_initializer)
        self._bias_initializer = initializers.get(bias_initializer)
        self._kernel_regularizer = regularizers.get(kernel_regularizer)
        self._bias_regularizer = regularizers.get(bias_regularizer)
        self._kernel_constraint = constraints.get(kernel_constraint)
        self._bias_constraint = constraints.get(bias_constraint)
        self._softmax_robust_masking = softmax_robust_masking
        if isinstance(attention_axes, int):
            attention_axes = (attention_axes,)
        self._attention_axes = None if attention_axes is None else tuple(attention_axes)
        self._shapes = None   # (query, value, key) shapes, once built

    def __call__(self, query, value=None, key=None, **kwargs):
        if value is None and isinstance(query, (list, tuple)) and len(query) in (2, 3):
            # A functional model replaying its recorded call (inputs as one list).
            return super().__call__(list(query), **kwargs)
        if value is None:
            raise TypeError(f"MultiHeadAttention {self.name} needs `value`: call it as "
                            "layer(query, value) or layer(query, value, key).")
        # One list of inputs, so the functional API records every input of the call.
        inputs = [query, value] if key is None else [query, value, key]
        return super().__call__(inputs, **kwargs)

    def _projection(self, name, dim, units):
        kernel = self.add_weight(f"{name}/kernel", [dim] + units,
                                 initializer=self._kernel_initializer,
                                 regularizer=self._kernel_regularizer,
                                 constraint=self._kernel_constraint)
        bias = self.add_weight(f"{name}/bias", units, initializer=self._bias_initializer,
                               regularizer=self._bias_regularizer,
                               constraint=self._bias_constraint) if self._use_bias else None
        return kernel, bias

    def _output_units(self, query_shape):
        if not self._output_shape:
            return [query_shape[-1]]
        if isinstance(self._output_shape, int):
            return [self._output_shape]
        return list(self._output_shape)

    def build(self, input_shape):
        shapes = [tf.TensorShape(s).as_list() for s in input_shape]
        query_shape, value_shape = shapes[0], shapes[1]
        key_shape = shapes[2] if len(shapes) > 2 else value_shape
        self._shapes = (query_shape, value_shape, key_shape)
        rank = len(query_shape)
        default_axes = tuple(range(1, rank - 1))
        if self._attention_axes is None:
            self._attention_axes = default_axes
        elif tuple(a % rank for a in self._attention_axes) != default_axes:
            raise NotImplementedError(
                f"MultiHeadAttention {self.name}: attention_axes={self._attention_axes} is not "
                f"supported; Flowstone attends over every axis between batch and features "
                f"({default_axes} for inputs of rank {rank}), tf-keras's default.")
        heads = self._num_heads
        self._query = self._projection("query", query_shape[-1], [heads, self._key_dim])
        self._key = self._projection("key", key_shape[-1], [heads, self._key_dim])
        self._value = self._projection("value", value_shape[-1], [heads, self._value_dim])
        out_units = self._output_units(query_shape)
        kernel = self.add_weight("attention_output/kernel",
                                 [heads, self._value_dim] + out_units,
                                 initializer=self._kernel_initializer,
                                 regularizer=self._kernel_regularizer,
                                 constraint=self._kernel_constraint)
        bias = self.add_weight("attention_output/bias", out_units,
                               initializer=self._bias_initializer,
                               regularizer=self._bias_regularizer,
                               constraint=self._bias_constraint) if self._use_bias else None
        self._output = (kernel, bias)
        self.built = True

    @staticmethod
    def _project(x, kernel, bias, contract):
        rank = x.shape.ndims
        out = tf.tensordot(x, kernel.value(), [list(range(rank - contract, rank)),
                                                list(range(contract))])
        return out + bias.value() if bias is not None else out

    def _flat_positions(self, x):
        """[B, T1..Tn, H, D] -> [B, H, T1*..*Tn, D]."""
        shape = tf.shape(x)
        flat = tf.reshape(x, tf.stack([shape[0], -1, x.shape.as_list()[-2],
                                       x.shape.as_list()[-1]]))
        return tf.transpose(flat, [0, 2, 1, 3])

    def call(self, inputs, mask=None, attention_mask=None, return_attention_scores=False,
             training=None, use_causal_mask=False):
        query, value = inputs[0], inputs[1]
        key = inputs[2] if len(inputs) > 2 else value
        attention_mask = self._attention_mask(query, value, mask, attention_mask,
                                              use_causal_mask)
        q = self._project(query, *self._query, 1)
        k = self._project(key, *self._key, 1)
        v = self._project(value, *self._value, 1)
        q_flat = self._flat_positions(q * (1.0 / math.sqrt(float(self._key_dim))))
        k_flat, v_flat = self._flat_positions(k), self._flat_positions(v)
        scores = tf.matmul(q_flat, k_flat, transpose_b=True)   # [B, H, Tq, Tk]
        if attention_mask is not None:
            attention_mask = tf.cast(attention_mask, tf.bool)
            # [B or 1, T1..Tn, S1..Sn] -> [B or 1, 1 (every head), Tq, Tk].
            mask_flat = tf.reshape(attention_mask, tf.stack(
                [tf.shape(attention_mask)[0], 1, tf.shape(scores)[2], -1]))
            scores = _masked_scores(scores, mask_flat)
        weights = tf.nn.softmax(scores)
        attended = tf.matmul(_dropout(weights, self._dropout, training), v_flat)
        # Back to [B, T1..Tn, H, Dv] for the output projection.
        attended = tf.transpose(attended, [0, 2, 1, 3])
        attended = tf.reshape(attended, tf.concat([tf.shape(q)[:-1], [self._value_dim]], 0))
        output = self._project(attended, *self._output, 2)
        if not return_attention_scores:
            return output
        return output, self._unflatten_scores(weights, query, key)

    def _unflatten_scores(self, weights, query, key):
        """[B, H, Tq, Tk] -> [B, H, T1..Tn, S1..Sn] when attending over several axes."""
        if len(self._attention_axes) == 1:
            return weights
        shape = tf.concat([tf.shape(weights)[:2], tf.shape(query)[1:-1], tf.shape(key)[1:-1]],
                          0)
        return tf.reshape(weights, shape)

    def _attention_mask(self, query, value, mask, attention_mask, use_causal_mask):
        """tf-keras's: the explicit mask, and-ed with the Keras masks of the inputs ([B, T, 1]
        for the query, [B, 1, S] for value and key) and the causal mask."""
        masks = list(mask) if isinstance(mask, (list, tuple)) else [None, None, None]
        query_mask, value_mask = masks[0], masks[1]
        key_mask = masks[2] if len(masks) > 2 else None
        auto = None
        if query_mask is not None:
            auto = tf.expand_dims(tf.cast(query_mask, tf.bool), -1)
        for other in (value_mask, key_mask):
            if other is not None:
                auto = _merge_masks(auto, tf.expand_dims(tf.cast(other, tf.bool), 1))
        if use_causal_mask:
            rows = tf.expand_dims(tf.range(tf.shape(query)[1]), -1)
            cols = tf.expand_dims(tf.range(tf.shape(value)[1]), 0)
            auto = _merge_masks(auto, tf.expand_dims(tf.greater_equal(rows, cols), 0))
        if auto is None:
            return attention_mask
        if attention_mask is None:
            return auto
        return tf.logical_and(tf.cast(attention_mask, tf.bool), auto)

    def compute_mask(self, inputs, mask=None):
        return mask[0] if isinstance(mask, (list, tuple)) else mask

    def get_config(self):
        query_shape, value_shape, key_shape = self._shapes or (None, None, None)
        return {**super().get_config(), "num_heads": self._num_heads,
                "key_dim": self._key_dim, "value_dim": self._value_dim,
                "dropout": self._dropout, "use_bias": self._use_bias,
                "output_shape": self._output_shape, "attention_axes": self._attention_axes,
                "kernel_initializer": initializers.serialize(self._kernel_initializer),
                "bias_initializer": initializers.serialize(self._bias_initializer),
                "kernel_regularizer": _serialize(self._kernel_regularizer, regularizers),
                "bias_regularizer": _serialize(self._bias_regularizer, regularizers),
                "activity_regularizer": _serialize(self.activity_regularizer, regularizers),
                "kernel_constraint": _serialize(self._kernel_constraint, constraints),
                "bias_constraint": _serialize(self._bias_constraint, constraints),
                "query_shape": query_shape, "key_shape": key_shape,
                "value_shape": value_shape,
                "softmax_robust_masking": self._softmax_robust_masking}
