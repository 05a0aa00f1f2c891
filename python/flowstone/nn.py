"""tf.nn: neural-network ops gathered from the op-family modules."""

from flowstone.ops.math_ops import relu, sigmoid, tanh  # noqa: F401
from flowstone.ops.nn_impl import *  # noqa: F401,F403
from flowstone.ops.nn_ops import *  # noqa: F401,F403
from flowstone.ops.conv_ops import *  # noqa: F401,F403
