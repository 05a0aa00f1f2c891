"""hvd.keras.callbacks: broadcasting rank 0's weights once training starts, averaging the epoch's
metrics over the ranks, and the learning-rate warm-up of "Accurate, Large Minibatch SGD"."""

import numpy as np

import flowstone as tf
from flowstone.horovod import basics as _basics
from flowstone.horovod.functions import broadcast_global_variables
from flowstone.horovod.mpi_ops import allreduce
from flowstone.keras import backend as K
from flowstone.keras.callbacks import Callback


class BroadcastGlobalVariablesCallback(Callback):
    """Broadcasts root_rank's global variables after the first batch (when the optimizer's
    slots exist too), so every rank continues from the same weights."""

    def __init__(self, root_rank, device=""):
        super().__init__()
        self.root_rank = root_rank
        self.device = device
        self.broadcast_done = False

    def on_batch_end(self, batch, logs=None):
        if self.broadcast_done:
            return
        with tf.device(self.device):
            bcast = broadcast_global_variables(self.root_rank)
        K.get_session().run(bcast)
        self.broadcast_done = True


class MetricAverageCallback(Callback):
    """Replaces each metric of the epoch's logs by its average over the ranks (place it before
    the callbacks that read the metrics)."""

    def __init__(self, device=""):
        super().__init__()
        self.device = device
        self._ops = {}  # metric name -> (placeholder, averaged)

    def on_epoch_end(self, epoch, logs=None):
        if not logs:
            return
        session = K.get_session()
        for name in sorted(logs):  # the same order on every rank
            if name not in self._ops:
                with session.graph.as_default(), tf.device(self.device):
                    value = tf.placeholder(tf.float64, [], name=f"metric_{name}")
                    self._ops[name] = (value, allreduce(value, name=f"MetricAverage_{name}"))
            value, averaged = self._ops[name]
            logs[name] = float(session.run(averaged, {value: np.float64(logs[name])}))


class LearningRateWarmupCallback(Callback):
    """Ramps the learning rate from initial_lr / size() to initial_lr over warmup_epochs (per
    batch when steps_per_epoch is known), as Horovod's callback does."""

    def __init__(self, initial_lr, warmup_epochs=5, momentum_correction=True,
                 steps_per_epoch=None, verbose=0):
        super().__init__()
        self.initial_lr = initial_lr
        self.warmup_epochs = warmup_epochs
        self.steps_per_epoch = steps_per_epoch
        self.verbose = verbose
        self.current_epoch = None

    def _multiplier(self, epoch):
        size = _basics.size()
        return 1.0 / size * (epoch * (size - 1) / self.warmup_epochs + 1)

    def on_epoch_begin(self, epoch, logs=None):
        self.current_epoch = epoch
        if self.steps_per_epoch is None:
            self.steps_per_epoch = self.params.get("steps")

    def on_batch_begin(self, batch, logs=None):
        if self.current_epoch >= self.warmup_epochs:
            return
        # Counting the batch as done makes the last batch of the warm-up reach initial_lr.
        epoch = self.current_epoch + float(batch + 1) / (self.steps_per_epoch or 1)
        K.set_value(self.model.optimizer.lr, self.initial_lr * self._multiplier(epoch))

    def on_train_batch_begin(self, batch, logs=None):
        self.on_batch_begin(batch, logs)

    def on_epoch_end(self, epoch, logs=None):
        if epoch == self.warmup_epochs - 1 and self.verbose > 0:
            print(f"\nEpoch {epoch + 1}: finished gradual learning rate warmup to "
                  f"{self.initial_lr}.")
        if logs is not None:
            logs["lr"] = float(K.get_value(self.model.optimizer.lr))
