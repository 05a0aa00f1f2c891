"""tf.train: optimizers, the global step, learning-rate schedules and checkpoints."""

from flowstone.train.learning_rate import *  # noqa: F401,F403
from flowstone.train.optimizer import *  # noqa: F401,F403
from flowstone.train.saver import *  # noqa: F401,F403
