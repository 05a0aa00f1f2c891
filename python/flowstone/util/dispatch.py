"""Dispatch of TensorFlow API functions on composite arguments (tf.RaggedTensor): a function
such as tf.concat asks `lookup(api, *args)` for the handler registered for the type of any
argument (or of any element of a list argument) and calls it instead of its own body. Handlers
are registered by the module that defines the composite (flowstone/ops/ragged_ops.py), so the
dense implementations need not import it.

This module is a leaf: it imports nothing from flowstone, so any module may use it."""

_handlers = {}  # api name -> [(class, handler)]


def register(api, cls):
    """Decorator: `handler` runs instead of `api` when an argument is a `cls`."""
    def decorate(handler):
        _handlers.setdefault(api, []).append((cls, handler))
        return handler
    return decorate


def lookup(api, *args):
    """The handler registered for `api` and the type of one of `args` (lists and tuples are
    searched one level down), or None."""
    entries = _handlers.get(api)
    if not entries:
        return None
    for arg in args:
        items = arg if isinstance(arg, (list, tuple)) else (arg,)
        for item in items:
            for cls, handler in entries:
                if isinstance(item, cls):
                    return handler
    return None
