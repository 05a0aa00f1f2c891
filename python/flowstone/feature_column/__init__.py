"""tf.feature_column: how raw features (a dict of dense or sparse tensors) become the dense
input of a network (input_layer) or the logits of a linear model (linear_model).

Loaded on first use of `tf.feature_column` (see flowstone/__init__.py), as tf.keras is.
"""

import sys as _sys

# The column modules place their names with tf_export.
from flowstone.feature_column import categorical, embedding, layers, numeric  # noqa: F401
from flowstone.util import tf_export as _tf_export

_tf_export.populate(_sys.modules[__name__], prefix="feature_column.")
