"""tf.train.summary_iterator: the Event protos of an event file, in order."""

from flowstone import _C
from flowstone import errors as _errors
from flowstone.framework import tf_protos as _protos
from flowstone.util.tf_export import tf_export


@tf_export("train.summary_iterator")
def summary_iterator(path):
    """Yields each Event of the event file `path`; a corrupted record raises DataLossError."""
    try:
        reader = _C.RecordReader(str(path), "")
        while True:
            record = reader.next()
            if record is None:
                return
            yield _protos.Event.FromString(record)
    except _C.StatusError as e:
        raise _errors.from_status_error(e) from None
