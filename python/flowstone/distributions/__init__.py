"""tf.distributions (TF1's, deprecated in TensorFlow but in much TF1 code: VAEs, policy
gradients): the Distribution base, twelve families and kl_divergence, composed from Flowstone's
ops like TensorFlow's own Python implementation.

Loaded on first use of `tf.distributions` (see flowstone/__init__.py), as tf.keras is.
"""

import importlib as _importlib
import pkgutil as _pkgutil
import sys as _sys

from flowstone.util import tf_export as _tf_export

for _info in sorted(_pkgutil.iter_modules(__path__), key=lambda m: m.name):
    _importlib.import_module(f"{__name__}.{_info.name}")

_tf_export.populate(_sys.modules[__name__], prefix="distributions.")
