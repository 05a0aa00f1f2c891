"""tf.autograph: Flowstone's tf.function does not convert Python control flow (no AutoGraph; see
docs/COMPAT.md), so what this module offers is what holds without a converter.

`do_not_convert` (a function that must not be converted: none is) and `set_verbosity` /
`get_verbosity` / `trace` behave as TensorFlow's. `to_graph` and `to_code`, which return
converted code, raise NotImplementedError naming the replacement: write `tf.cond` and
`tf.while_loop` where Python `if` and `while` depend on tensors.
"""

import functools
import os
import sys

from flowstone.autograph import experimental  # noqa: F401

_NO_CONVERTER = (
    "Flowstone has no AutoGraph: tf.function traces Python `if` and `for` as they run once at "
    "trace time. Write tf.cond / tf.while_loop (or tf.case, tf.map_fn, tf.scan) where the "
    "condition or the loop depends on a tensor; the function then runs as written")

_verbosity = [int(os.environ.get("AUTOGRAPH_VERBOSITY", 0))]


def set_verbosity(level, alsologtostdout=False):
    """Sets how much AutoGraph logs (AUTOGRAPH_VERBOSITY); Flowstone converts nothing to log."""
    _verbosity[0] = int(level)


def get_verbosity():
    return _verbosity[0]


def trace(*args):
    """Prints its arguments at trace time, as TensorFlow's autograph.trace does."""
    print(*args, file=sys.stdout)


def to_graph(entity, recursive=True, experimental_optional_features=None):
    raise NotImplementedError(f"tf.autograph.to_graph({getattr(entity, '__name__', entity)}): "
                              f"{_NO_CONVERTER}")


def to_code(entity, recursive=True, experimental_optional_features=None):
    raise NotImplementedError(f"tf.autograph.to_code({getattr(entity, '__name__', entity)}): "
                              f"{_NO_CONVERTER}")


def do_not_convert(func=None):
    """Marks `func` as not to be converted (Flowstone converts nothing); usable with or without
    arguments, as TensorFlow's decorator."""
    if func is None:
        return do_not_convert

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)
    wrapper.__autograph_do_not_convert__ = True
    return wrapper


experimental.do_not_convert = do_not_convert
