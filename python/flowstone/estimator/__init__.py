"""tf.estimator (TensorFlow 1.15's, with the v1 canned estimators): Estimator, its specs and
config, the numpy/pandas input functions, train_and_evaluate, SavedModel export and the canned
Linear/DNN/DNNLinearCombined estimators. Training runs in a MonitoredTrainingSession with the
hooks of flowstone/train; checkpoints are TensorFlow's V2 format in model_dir.

Loaded on first use of `tf.estimator` (see flowstone/__init__.py), as tf.keras is.
"""

import importlib as _importlib
import pkgutil as _pkgutil
import sys as _sys

from flowstone.util import tf_export as _tf_export

for _package in (__name__, f"{__name__}.canned"):
    _module = _importlib.import_module(_package)
    for _info in sorted(_pkgutil.iter_modules(_module.__path__), key=lambda m: m.name):
        _importlib.import_module(f"{_package}.{_info.name}")

_tf_export.populate(_sys.modules[__name__], prefix="estimator.")
