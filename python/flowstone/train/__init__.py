"""tf.train: optimizers, the global step, learning-rate schedules, checkpoints, hooks and
monitored sessions.

The first modules list their names in __all__; the others place theirs with
flowstone.util.tf_export. Every module of this package is imported here, so a new one needs no
edit.
"""

import importlib as _importlib
import pkgutil as _pkgutil

from flowstone.train.learning_rate import *  # noqa: F401,F403
from flowstone.train.optimizer import *  # noqa: F401,F403
from flowstone.train.saver import *  # noqa: F401,F403

for _info in sorted(_pkgutil.iter_modules(__path__), key=lambda m: m.name):
    _importlib.import_module(f"{__name__}.{_info.name}")
