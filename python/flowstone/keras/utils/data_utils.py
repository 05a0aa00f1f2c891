"""keras.utils.Sequence: an indexable batch source fit iterates once per epoch."""

from flowstone.util.tf_export import tf_export


@tf_export("keras.utils.Sequence")
class Sequence:
    """Subclasses define `__getitem__(index)` -> (x, y[, sample_weight]) and `__len__`."""

    def __getitem__(self, index):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError

    def on_epoch_end(self):
        """Called after each epoch (shuffle here)."""

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]
