"""Small stand-ins for TensorFlow-internal helpers that third-party TF1 libraries call while
they are being imported (decorators, inspection, module hygiene). They are not part of
Flowstone's API: only the modules of INTERNAL_MODULES (paths.py) hand them out."""

import contextlib
import functools
import inspect

from flowstone.platform import tf_logging


# tensorflow.python.util.deprecation: the decorated function unchanged, with a warning on its
# first call, as TensorFlow logs one.
def _warn_once(func, message):
    warned = []

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        if not warned:
            warned.append(True)
            tf_logging.warning("From %s: %s is deprecated. %s", func.__module__,
                               func.__qualname__, message)
        return func(*args, **kwargs)

    return wrapper


def deprecated(date, instructions, warn_once=True):
    return lambda func: _warn_once(func, instructions) if callable(func) else func


def deprecated_args(date, instructions, *deprecated_arg_names_or_tuples, **kwargs):
    return lambda func: func


def deprecated_arg_values(date, instructions, warn_once=True, **deprecated_kwargs):
    return lambda func: func


def deprecated_endpoints(*args):
    return lambda func: func


def deprecated_argument_lookup(new_name, new_value, old_name, old_value):
    """The value of the argument given by its new or its old name (not both)."""
    if old_value is not None:
        if new_value is not None:
            raise ValueError(f"Cannot specify both '{old_name}' and '{new_name}'")
        return old_value
    return new_value


@contextlib.contextmanager
def silence():
    yield


# tensorflow.python.util.tf_decorator and tf_inspect
def make_decorator(target, decorator_func, decorator_name=None, decorator_doc="",
                   decorator_argspec=None):
    """decorator_func dressed as target (name, doc, module, __wrapped__)."""
    functools.update_wrapper(decorator_func, target)
    return decorator_func


def unwrap(maybe_tf_decorator):
    return [], inspect.unwrap(maybe_tf_decorator)


ArgSpec = inspect.FullArgSpec


def getargspec(obj):
    """inspect.getfullargspec of the innermost wrapped function (Python 3.11 has no
    getargspec)."""
    return inspect.getfullargspec(inspect.unwrap(obj))


def getfullargspec(obj):
    return inspect.getfullargspec(inspect.unwrap(obj))


# tensorflow.python.util.all_util: modules trimming their public names.
def remove_undocumented(module_name, allowed_exception_list=None, doc_string_modules=None):
    return None


def make_all(module_name, doc_string_modules=None):
    import sys
    return [name for name in dir(sys.modules[module_name]) if not name.startswith("_")]


# tensorflow.python.tf2: TF1 behaviour.
def enabled():
    return False


# tensorflow.python.ops.control_flow_ops
def with_dependencies(dependencies, output_tensor, name=None):
    """output_tensor, produced only after `dependencies` have run."""
    from flowstone.framework import ops
    from flowstone.ops import basic_ops
    with ops.name_scope(name, "control_dependency", list(dependencies) + [output_tensor]):
        with ops.control_dependencies(dependencies):
            return basic_ops.identity(output_tensor)


# tensorflow.python.ops.io_ops: libraries subclass the queue-based readers at import time.
class ReaderBase:
    """TF1's queue-based reader base class, so that subclasses can be defined; making one
    raises, as Flowstone has no queue-based readers."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError("TF1's queue-based readers (tf.ReaderBase and its "
                                  "subclasses) are not provided by Flowstone; read files with "
                                  "tf.data instead")


# tensorflow.python.ops.variables: libraries test `isinstance(v, PartitionedVariable)`.
class PartitionedVariable:
    """TF1's variable split into shards. Flowstone makes every variable whole (a partitioner
    is accepted and ignored), so no object is ever one of these."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError("Flowstone does not make partitioned variables")
