"""tf.contrib.layers: contrib's layers, initializers, regularizers and optimize_loss."""

from flowstone.contrib.layers.initializers import (  # noqa: F401
    variance_scaling_initializer, xavier_initializer, xavier_initializer_conv2d)
from flowstone.contrib.layers.layers import (  # noqa: F401
    avg_pool2d, batch_norm, collect_named_outputs, conv2d, conv2d_transpose, convolution2d,
    convolution2d_transpose, dropout, embed_sequence, flatten, fully_connected, layer_norm,
    linear, max_pool2d, one_hot_encoding, repeat, separable_conv2d, separable_convolution2d,
    stack)
from flowstone.contrib.layers.optimizers import OPTIMIZER_CLS_NAMES, optimize_loss  # noqa: F401
from flowstone.contrib.layers.regularizers import (  # noqa: F401
    apply_regularization, l1_l2_regularizer, l1_regularizer, l2_regularizer, sum_regularizer)
