"""tf.keras with Keras 2 semantics (TF 1.15 / tf-keras 2.x), in graph mode on Flowstone's ops.

`import flowstone` does not import this package: `tf.keras` is loaded on first use (see
flowstone/__init__.py), so programs without Keras start as fast as before.
"""

import sys as _sys

from flowstone.keras import activations, backend, callbacks, constraints, initializers, losses
from flowstone.keras import metrics, optimizers, regularizers
from flowstone.keras import layers, models
from flowstone.keras import datasets, utils
from flowstone.keras import preprocessing
from flowstone.keras.utils import data_utils as _data_utils  # noqa: F401 - keras.utils.Sequence
from flowstone.keras.utils import generic_utils as _generic_utils  # noqa: F401
from flowstone.keras.utils import np_utils as _np_utils  # noqa: F401
from flowstone.keras.utils import progbar as _progbar  # noqa: F401
from flowstone.keras.engine.input_layer import Input
from flowstone.keras.engine.sequential import Sequential
from flowstone.keras.engine.training import Model
from flowstone.util import tf_export as _tf_export

__version__ = "2.15.0"

# Every keras.* name in the export table, set on this package's modules.
_tf_export.populate(_sys.modules[__name__], prefix="keras.")
