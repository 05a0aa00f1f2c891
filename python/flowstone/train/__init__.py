"""tf.train: checkpoints (Saver and the functions that find and read them)."""

from flowstone.train import saver as _saver
from flowstone.train.saver import *  # noqa: F401,F403

__all__ = list(_saver.__all__)
