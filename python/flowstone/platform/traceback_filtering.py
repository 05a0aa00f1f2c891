"""tf.debugging's traceback filtering switch. TensorFlow hides its own frames from the tracebacks
of errors raised through its API when filtering is on; Flowstone's errors show the user's
frames and the op's creation site whether it is on or off, so the switch is kept and reported
but changes nothing (docs/COMPAT.md)."""

from flowstone.util.tf_export import tf_export

_enabled = [True]


@tf_export("debugging.enable_traceback_filtering")
def enable_traceback_filtering():
    """Turns traceback filtering on (the default)."""
    _enabled[0] = True


@tf_export("debugging.disable_traceback_filtering")
def disable_traceback_filtering():
    """Turns traceback filtering off."""
    _enabled[0] = False


@tf_export("debugging.is_traceback_filtering_enabled")
def is_traceback_filtering_enabled():
    """Whether traceback filtering is on."""
    return _enabled[0]
