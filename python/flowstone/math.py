"""tf.math: elementwise math, reductions and comparisons."""

from flowstone.ops.math_ops import *  # noqa: F401,F403
from flowstone.ops.reduction_ops import *  # noqa: F401,F403
from flowstone.ops.nn_ops import softmax, log_softmax  # noqa: F401
from flowstone.ops.array_ops import unsorted_segment_sum  # noqa: F401
from flowstone.ops.nn_impl import in_top_k, top_k  # noqa: F401
