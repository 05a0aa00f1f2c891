"""tf.train: optimizers, the global step, learning-rate schedules and checkpoints."""

from flowstone.train.learning_rate import *  # noqa: F401,F403
from flowstone.train.optimizer import *  # noqa: F401,F403
from flowstone.train.saver import *  # noqa: F401,F403
from flowstone.train import checkpoint_utils as _checkpoint_utils  # noqa: F401 - tf_export
from flowstone.train import meta_graph as _meta_graph  # noqa: F401 - tf_export
