"""tf.keras.callbacks: hooks fit/evaluate/predict call at the edges of epochs and batches."""

import collections
import csv
import os

import numpy as np

from flowstone import errors
from flowstone.framework.tf_protos import Summary
from flowstone.keras import backend as K
from flowstone.keras.utils.progbar import Progbar
from flowstone.platform import tf_logging as logging
from flowstone.summary import summary_ops
from flowstone.summary import summary_v2
from flowstone.summary.writer import FileWriter
from flowstone.ops.eager_mode import executing_eagerly
from flowstone.util.tf_export import tf_export


@tf_export("keras.callbacks.Callback")
class Callback:
    def __init__(self):
        self.validation_data = None
        self.model = None
        self.params = {}

    def set_params(self, params):
        self.params = params

    def set_model(self, model):
        self.model = model

    def on_batch_begin(self, batch, logs=None):
        """Alias of on_train_batch_begin, kept for old callbacks."""

    def on_batch_end(self, batch, logs=None):
        """Alias of on_train_batch_end, kept for old callbacks."""

    def on_epoch_begin(self, epoch, logs=None):
        pass

    def on_epoch_end(self, epoch, logs=None):
        pass

    def on_train_batch_begin(self, batch, logs=None):
        self.on_batch_begin(batch, logs=logs)

    def on_train_batch_end(self, batch, logs=None):
        self.on_batch_end(batch, logs=logs)

    def on_test_batch_begin(self, batch, logs=None):
        pass

    def on_test_batch_end(self, batch, logs=None):
        pass

    def on_predict_batch_begin(self, batch, logs=None):
        pass

    def on_predict_batch_end(self, batch, logs=None):
        pass

    def on_train_begin(self, logs=None):
        pass

    def on_train_end(self, logs=None):
        pass

    def on_test_begin(self, logs=None):
        pass

    def on_test_end(self, logs=None):
        pass

    def on_predict_begin(self, logs=None):
        pass

    def on_predict_end(self, logs=None):
        pass


@tf_export("keras.callbacks.CallbackList")
class CallbackList:
    def __init__(self, callbacks=None, add_history=False, add_progbar=False, model=None,
                 **params):
        self.callbacks = list(callbacks or [])
        if add_progbar and not any(isinstance(c, ProgbarLogger) for c in self.callbacks):
            self.callbacks.append(ProgbarLogger())
        if add_history:
            history = [c for c in self.callbacks if isinstance(c, History)]
            self.history = history[0] if history else History()
            if not history:
                self.callbacks.append(self.history)
        if model is not None:
            self.set_model(model)
        if params:
            self.set_params(params)

    def set_model(self, model):
        for c in self.callbacks:
            c.set_model(model)

    def set_params(self, params):
        for c in self.callbacks:
            c.set_params(params)

    def __getattr__(self, hook):
        if not hook.startswith("on_"):
            raise AttributeError(hook)

        def call(*args, **kwargs):
            for c in self.callbacks:
                getattr(c, hook)(*args, **kwargs)
        return call

    def __iter__(self):
        return iter(self.callbacks)


@tf_export("keras.callbacks.History")
class History(Callback):
    def __init__(self):
        super().__init__()
        self.history = {}
        self.epoch = []

    def on_train_begin(self, logs=None):
        self.epoch = []

    def on_epoch_end(self, epoch, logs=None):
        self.epoch.append(epoch)
        for key, value in (logs or {}).items():
            self.history.setdefault(key, []).append(value)
        self.model.history = self


@tf_export("keras.callbacks.BaseLogger")
class BaseLogger(Callback):
    """Kept for old code: logs are already epoch averages."""

    def __init__(self, stateful_metrics=None):
        super().__init__()


@tf_export("keras.callbacks.ProgbarLogger")
class ProgbarLogger(Callback):
    """Prints Keras's progress bar (see utils/progbar.py) for fit, evaluate and predict."""

    def __init__(self, count_mode="steps", stateful_metrics=None):
        super().__init__()
        self.progbar = None
        self._mode = None
        self.seen = 0

    def _start(self, mode, target):
        self._mode = mode
        verbose = self.params.get("verbose", 1)
        self.verbose = verbose
        self.target = target
        self.seen = 0
        self.progbar = Progbar(target, verbose=verbose, unit_name="step")
        self.progbar.stateful_metrics = _AllNames()

    def on_epoch_begin(self, epoch, logs=None):
        epochs = self.params.get("epochs", 1)
        if self.params.get("verbose", 1) and epochs > 1:
            print(f"Epoch {epoch + 1}/{epochs}")
        self._start("train", self.params.get("steps"))

    def on_train_batch_end(self, batch, logs=None):
        self._batch_update(batch, logs)

    def on_epoch_end(self, epoch, logs=None):
        self._finish(logs)

    def on_test_begin(self, logs=None):
        self._start("test", self.params.get("steps"))

    def on_test_batch_end(self, batch, logs=None):
        self._batch_update(batch, logs)

    def on_test_end(self, logs=None):
        self._finish(logs)

    def on_predict_begin(self, logs=None):
        self._start("predict", self.params.get("steps"))

    def on_predict_batch_end(self, batch, logs=None):
        self._batch_update(batch, None)

    def on_predict_end(self, logs=None):
        self._finish(None)

    def _batch_update(self, batch, logs):
        self.seen = batch + 1
        if self.progbar is None or self.progbar.verbose != 1:
            return
        values = [(k, v) for k, v in (logs or {}).items() if k not in ("batch", "size")]
        if self.target is None or self.seen < self.target:
            self.progbar.update(self.seen, values, finalize=False)

    def _finish(self, logs):
        if self.progbar is None or not self.progbar.verbose:
            return
        if self.target is None:
            self.target = self.progbar.target = self.seen
        values = [(k, v) for k, v in (logs or {}).items() if k not in ("batch", "size")]
        self.progbar.update(self.seen, values, finalize=True)


class _AllNames:
    """Every metric fit reports is already an epoch average: the bar shows it as it is."""

    def __contains__(self, name):
        return True

    def union(self, other):
        return self


@tf_export("keras.callbacks.TerminateOnNaN")
class TerminateOnNaN(Callback):
    def on_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and (np.isnan(loss) or np.isinf(loss)):
            print(f"Batch {batch}: Invalid loss, terminating training")
            self.model.stop_training = True


class _MonitorMixin:
    def _init_monitor(self, monitor, mode, min_delta=0.0):
        if mode not in ("auto", "min", "max"):
            logging.warning(f"{type(self).__name__} mode {mode} is unknown, fallback to auto "
                            "mode.")
            mode = "auto"
        if mode == "min" or (mode == "auto" and not ("acc" in monitor or
                                                     monitor.startswith("fmeasure") or
                                                     "auc" in monitor)):
            self.monitor_op, self._min_delta_sign = np.less, -1
        else:
            self.monitor_op, self._min_delta_sign = np.greater, 1
        self.min_delta = abs(min_delta) * self._min_delta_sign

    def _improved(self, current, reference):
        return self.monitor_op(current - self.min_delta, reference)


@tf_export("keras.callbacks.EarlyStopping")
class EarlyStopping(Callback, _MonitorMixin):
    def __init__(self, monitor="val_loss", min_delta=0, patience=0, verbose=0, mode="auto",
                 baseline=None, restore_best_weights=False, start_from_epoch=0):
        super().__init__()
        self.monitor, self.patience, self.verbose = monitor, patience, verbose
        self.baseline, self.restore_best_weights = baseline, restore_best_weights
        self.start_from_epoch = start_from_epoch
        self._init_monitor(monitor, mode, min_delta)

    def on_train_begin(self, logs=None):
        self.wait = 0
        self.stopped_epoch = 0
        self.best = np.inf if self.monitor_op == np.less else -np.inf
        self.best_weights = None
        self.best_epoch = 0

    def on_epoch_end(self, epoch, logs=None):
        current = (logs or {}).get(self.monitor)
        if current is None:
            logging.warning(f"Early stopping conditioned on metric `{self.monitor}` which is "
                            f"not available. Available metrics are: "
                            f"{','.join(list((logs or {}).keys()))}")
            return
        if epoch < self.start_from_epoch:
            return
        if self.restore_best_weights and self.best_weights is None:
            self.best_weights = self.model.get_weights()
        self.wait += 1
        if self._improved(current, self.best):
            self.best, self.best_epoch = current, epoch
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            if self.baseline is None or self._improved(current, self.baseline):
                self.wait = 0
            return
        if self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True
            if self.restore_best_weights and self.best_weights is not None:
                if self.verbose > 0:
                    print("Restoring model weights from the end of the best epoch: "
                          f"{self.best_epoch + 1}.")
                self.model.set_weights(self.best_weights)

    def on_train_end(self, logs=None):
        if self.stopped_epoch > 0 and self.verbose > 0:
            print(f"Epoch {self.stopped_epoch + 1}: early stopping")


@tf_export("keras.callbacks.ModelCheckpoint")
class ModelCheckpoint(Callback, _MonitorMixin):
    """Saves the model (or its weights) after each epoch, to a path that may name the epoch
    and logs: 'weights.{epoch:02d}-{val_loss:.2f}.h5'."""

    def __init__(self, filepath, monitor="val_loss", verbose=0, save_best_only=False,
                 save_weights_only=False, mode="auto", save_freq="epoch", options=None,
                 initial_value_threshold=None, **kwargs):
        super().__init__()
        self.filepath, self.monitor, self.verbose = os.fspath(filepath), monitor, verbose
        self.save_best_only, self.save_weights_only = save_best_only, save_weights_only
        if save_freq != "epoch":
            raise ValueError("Flowstone's ModelCheckpoint saves once per epoch "
                             f"(save_freq='epoch'); received save_freq={save_freq!r}.")
        self._init_monitor(monitor, mode)
        self.best = initial_value_threshold if initial_value_threshold is not None else (
            np.inf if self.monitor_op == np.less else -np.inf)

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        try:
            filepath = self.filepath.format(epoch=epoch + 1, **logs)
        except KeyError as e:
            raise KeyError(f'Failed to format this callback filepath: "{self.filepath}". '
                           f"Reason: {e}") from None
        if self.save_best_only:
            current = logs.get(self.monitor)
            if current is None:
                logging.warning(f"Can save best model only with {self.monitor} available, "
                                "skipping.")
                return
            if not self._improved(current, self.best):
                if self.verbose > 0:
                    print(f"\nEpoch {epoch + 1}: {self.monitor} did not improve from "
                          f"{self.best:.5f}")
                return
            if self.verbose > 0:
                print(f"\nEpoch {epoch + 1}: {self.monitor} improved from {self.best:.5f} to "
                      f"{current:.5f}, saving model to {filepath}")
            self.best = current
        elif self.verbose > 0:
            print(f"\nEpoch {epoch + 1}: saving model to {filepath}")
        if self.save_weights_only:
            self.model.save_weights(filepath, overwrite=True)
        else:
            self.model.save(filepath, overwrite=True)


@tf_export("keras.callbacks.ReduceLROnPlateau")
class ReduceLROnPlateau(Callback, _MonitorMixin):
    def __init__(self, monitor="val_loss", factor=0.1, patience=10, verbose=0, mode="auto",
                 min_delta=1e-4, cooldown=0, min_lr=0, **kwargs):
        super().__init__()
        if factor >= 1.0:
            raise ValueError("ReduceLROnPlateau does not support a factor >= 1.0. Got "
                             f"{factor}")
        self.monitor, self.factor, self.patience = monitor, factor, patience
        self.verbose, self.cooldown, self.min_lr = verbose, cooldown, min_lr
        self._init_monitor(monitor, mode, min_delta)
        self._reset()

    def _reset(self):
        self.best = np.inf if self.monitor_op == np.less else -np.inf
        self.cooldown_counter = 0
        self.wait = 0

    def on_train_begin(self, logs=None):
        self._reset()

    def on_epoch_end(self, epoch, logs=None):
        logs = logs if logs is not None else {}
        logs["lr"] = float(K.get_value(self.model.optimizer.lr))
        current = logs.get(self.monitor)
        if current is None:
            logging.warning(f"Learning rate reduction is conditioned on metric "
                            f"`{self.monitor}` which is not available. Available metrics "
                            f"are: {','.join(list(logs.keys()))}")
            return
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.wait = 0
        if self._improved(current, self.best):
            self.best = current
            self.wait = 0
        elif self.cooldown_counter <= 0:
            self.wait += 1
            if self.wait >= self.patience:
                old_lr = float(K.get_value(self.model.optimizer.lr))
                if old_lr > np.float32(self.min_lr):
                    new_lr = max(old_lr * self.factor, self.min_lr)
                    K.set_value(self.model.optimizer.lr, new_lr)
                    if self.verbose > 0:
                        print(f"\nEpoch {epoch + 1}: ReduceLROnPlateau reducing learning rate "
                              f"to {new_lr}.")
                    self.cooldown_counter = self.cooldown
                    self.wait = 0


@tf_export("keras.callbacks.LearningRateScheduler")
class LearningRateScheduler(Callback):
    def __init__(self, schedule, verbose=0):
        super().__init__()
        self.schedule, self.verbose = schedule, verbose

    def on_epoch_begin(self, epoch, logs=None):
        lr = float(K.get_value(self.model.optimizer.lr))
        try:
            lr = self.schedule(epoch, lr)
        except TypeError:
            lr = self.schedule(epoch)
        if not isinstance(lr, (float, int, np.floating, np.integer)):
            raise ValueError('The output of the "schedule" function should be float. Got: '
                             f"{lr}")
        K.set_value(self.model.optimizer.lr, float(lr))
        if self.verbose > 0:
            print(f"\nEpoch {epoch + 1}: LearningRateScheduler setting learning rate to "
                  f"{lr}.")

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["lr"] = float(K.get_value(self.model.optimizer.lr))


@tf_export("keras.callbacks.CSVLogger")
class CSVLogger(Callback):
    def __init__(self, filename, separator=",", append=False):
        super().__init__()
        self.filename, self.sep, self.append = os.fspath(filename), separator, append
        self.keys = None
        self._file = None
        self._writer = None

    def on_train_begin(self, logs=None):
        exists = self.append and os.path.exists(self.filename) and \
            os.path.getsize(self.filename) > 0
        self._append_header = not exists
        self._file = open(self.filename, "a" if self.append else "w", newline="")

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        if self.keys is None:
            self.keys = sorted(logs)
        if self._writer is None:
            self._writer = csv.DictWriter(self._file, fieldnames=["epoch"] + self.keys,
                                          delimiter=self.sep)
            if self._append_header:
                self._writer.writeheader()
        row = collections.OrderedDict({"epoch": epoch})
        row.update((key, logs.get(key, "NA")) for key in self.keys)
        self._writer.writerow(row)
        self._file.flush()

    def on_train_end(self, logs=None):
        if self._file is not None:
            self._file.close()
        self._file = None
        self._writer = None


@tf_export("keras.callbacks.LambdaCallback")
class LambdaCallback(Callback):
    def __init__(self, on_epoch_begin=None, on_epoch_end=None, on_batch_begin=None,
                 on_batch_end=None, on_train_begin=None, on_train_end=None, **kwargs):
        super().__init__()
        hooks = dict(on_epoch_begin=on_epoch_begin, on_epoch_end=on_epoch_end,
                     on_batch_begin=on_batch_begin, on_batch_end=on_batch_end,
                     on_train_begin=on_train_begin, on_train_end=on_train_end, **kwargs)
        for hook, fn in hooks.items():
            if fn is not None:
                setattr(self, hook, fn)


@tf_export("keras.callbacks.TensorBoard")
class TensorBoard(Callback):
    """Writes TensorBoard event files in `log_dir` (TF 1's callback): the model's graph
    (`write_graph`), the epoch logs as scalars 'epoch_<name>', and every `histogram_freq` epochs
    a histogram of each weight. With `update_freq='batch'` or N, the batch logs are written as
    'batch_<name>' at the batch's index once N samples passed since the last write (a batch
    counts as its logs' 'size', or 1), and epochs are stepped by samples seen, as in TF 1."""

    def __init__(self, log_dir="logs", histogram_freq=0, batch_size=32, write_graph=True,
                 write_grads=False, write_images=False, embeddings_freq=0,
                 embeddings_layer_names=None, embeddings_metadata=None, embeddings_data=None,
                 update_freq="epoch", profile_batch=2, **kwargs):
        super().__init__()
        del batch_size, write_grads, write_images, embeddings_layer_names, embeddings_metadata
        del embeddings_data, profile_batch, kwargs
        if embeddings_freq:
            raise errors.UnimplementedError(
                None, None, "tf.keras.callbacks.TensorBoard: embeddings (embeddings_freq) are "
                "not written by Flowstone; pass embeddings_freq=0")
        self.log_dir = os.fspath(log_dir)
        self.histogram_freq = histogram_freq
        self.write_graph = write_graph
        self.update_freq = 1 if update_freq == "batch" else update_freq
        self.writer = None
        self._histograms = None
        self._batches_seen = 0
        self._samples_seen = 0
        self._samples_at_last_write = 0

    def on_train_begin(self, logs=None):
        if executing_eagerly():
            # Eager mode has no session graph: TF 2's writer takes the same scalars and
            # histograms, in the same event-file layout.
            self.writer = summary_v2.create_file_writer(self.log_dir)
            return
        graph = K.get_session().graph if self.write_graph else None
        self.writer = FileWriter(self.log_dir, graph=graph)

    def _write_scalars(self, prefix, logs, step):
        values = [(prefix + name, float(np.mean(value))) for name, value in (logs or {}).items()
                  if name not in ("batch", "size", "num_steps")]
        if executing_eagerly():
            with self.writer.as_default():
                for tag, value in values:
                    summary_ops.scalar(tag, value, step=step)
            return
        summary = Summary()
        for tag, value in values:
            summary.value.add(tag=tag, simple_value=value)
        self.writer.add_summary(summary, step)

    def on_train_batch_end(self, batch, logs=None):
        logs = logs or {}
        self._samples_seen += logs.get("size", 1)
        if (self.update_freq != "epoch" and
                self._samples_seen - self._samples_at_last_write >= self.update_freq):
            self._write_scalars("batch_", logs, self._batches_seen)
            self._samples_at_last_write = self._samples_seen
        self._batches_seen += 1

    def _write_histograms(self, epoch):
        if executing_eagerly():
            with self.writer.as_default():
                for w in self.model.weights:
                    summary_ops.histogram(w.name.replace(":", "_"), w.value(), step=epoch)
            return
        session = K.get_session()
        if self._histograms is None:
            with session.graph.as_default():
                ops = [summary_ops.histogram(w.name.replace(":", "_"), w, collections=[])
                       for w in self.model.weights]
                self._histograms = summary_ops.merge(ops) if ops else None
        if self._histograms is not None:
            self.writer.add_summary(session.run(self._histograms), epoch)

    def on_epoch_end(self, epoch, logs=None):
        self._write_scalars("epoch_", logs,
                            epoch if self.update_freq == "epoch" else self._samples_seen)
        if self.histogram_freq and epoch % self.histogram_freq == 0:
            self._write_histograms(epoch)
        self.writer.flush()

    def on_train_end(self, logs=None):
        if self.writer is not None:
            self.writer.close()
