"""tf.contrib.framework.arg_scope: default keyword arguments for the functions decorated with
add_arg_scope, set for a block of code.

    with arg_scope([layers.conv2d, layers.fully_connected], weights_regularizer=l2(1e-4)):
        net = layers.conv2d(images, 64, [3, 3])

Scopes nest (inner values win) and are per thread. A scope entered by passing the dict that an
outer `with arg_scope(...) as sc` yielded is that scope again."""

import functools
import threading

_state = threading.local()
_decorated = set()  # keys of the functions add_arg_scope decorated


def _stack():
    if not hasattr(_state, "stack"):
        _state.stack = [{}]
    return _state.stack


def current_arg_scope():
    """The innermost scope: {function key: {argument: value}}."""
    return _stack()[-1]


def arg_scope_func_key(op):
    return getattr(op, "_key_op", str(op))


def _name_op(op):
    return getattr(op, "__module__", "?"), getattr(op, "__name__", repr(op))


def has_arg_scope(func):
    """Whether func was decorated with add_arg_scope."""
    return arg_scope_func_key(func) in _decorated


class arg_scope:  # noqa: N801 - TensorFlow's name
    """Sets `kwargs` as the defaults of every function in `list_ops_or_scope` inside the block,
    or re-enters a scope dict yielded earlier."""

    def __init__(self, list_ops_or_scope, **kwargs):
        if isinstance(list_ops_or_scope, dict):
            if kwargs:
                raise ValueError("When attempting to re-use a scope by suppling a dictionary, "
                                 "kwargs must be empty.")
            self._scope = list_ops_or_scope.copy()
            return
        if not isinstance(list_ops_or_scope, (list, tuple)):
            raise TypeError("list_ops_or_scope must either be a list/tuple or reused scope "
                            "(i.e. dict)")
        scope = current_arg_scope().copy()
        for op in list_ops_or_scope:
            if not has_arg_scope(op):
                raise ValueError(f"{_name_op(op)} is not decorated with @add_arg_scope")
            key = arg_scope_func_key(op)
            merged = dict(scope.get(key, {}))
            merged.update(kwargs)
            scope[key] = merged
        self._scope = scope

    def __enter__(self):
        _stack().append(self._scope)
        return self._scope

    def __exit__(self, *exc):
        _stack().pop()
        return False


def add_arg_scope(func):
    """Decorates func so that arg_scope can set its keyword arguments' defaults; arguments the
    caller passes win over the scope's."""
    key = (func.__module__, func.__qualname__)

    @functools.wraps(func)
    def func_with_args(*args, **kwargs):
        scoped = current_arg_scope().get(key)
        if scoped:
            kwargs = {**scoped, **kwargs}
        return func(*args, **kwargs)

    func_with_args._key_op = key
    _decorated.add(key)
    return func_with_args


def arg_scoped_arguments(func):
    """The names of func's arguments (the ones arg_scope may set)."""
    import inspect
    return list(inspect.signature(getattr(func, "__wrapped__", func)).parameters)
