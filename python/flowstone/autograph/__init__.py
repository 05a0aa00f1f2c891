"""tf.autograph: Python control flow on tensors, converted (source to source) into tf.cond and
tf.while_loop. tf.function converts the functions it traces (autograph=True, the default); these
are the entry points for doing it by hand and for keeping a function out of it.

The converter: conversion.py (parse, passes, compile, cache, converted_call), jumps.py (break,
continue, return into flags), expressions.py (and/or/not/==/ternaries/calls), control_flow.py
(if/while/for into functions of their state), analysis.py (which names are that state),
operators.py, loops.py and py_builtins.py (what converted code calls at trace time).
"""

import functools
import os
import sys

from flowstone.autograph import conversion
from flowstone.autograph import experimental

_verbosity = [int(os.environ.get("AUTOGRAPH_VERBOSITY", 0))]


def set_verbosity(level, alsologtostdout=False):
    """Sets how much AutoGraph logs (AUTOGRAPH_VERBOSITY)."""
    _verbosity[0] = int(level)


def get_verbosity():
    return _verbosity[0]


def trace(*args):
    """Prints its arguments at trace time, as TensorFlow's autograph.trace does."""
    print(*args, file=sys.stdout)


def _function_of(entity):
    """The plain function to convert for `entity` (a function, a method or a tf.function)."""
    entity = getattr(entity, "python_function", entity)
    if hasattr(entity, "__func__"):
        return entity.__func__, entity.__self__
    if not callable(entity) or not hasattr(entity, "__code__"):
        raise ValueError(f"tf.autograph converts functions and methods; got {entity!r}.")
    return entity, None


def to_graph(entity, recursive=True, experimental_optional_features=None):
    """`entity` converted: a function whose Python control flow on tensors builds tf.cond and
    tf.while_loop (call it in a graph, or inside tf.function). Raises
    conversion.ConversionError when the source cannot be had."""
    del recursive, experimental_optional_features  # calls are always converted as they run
    func, instance = _function_of(entity)
    converted = conversion.convert(func)
    return converted.__get__(instance) if instance is not None else converted


def to_code(entity, recursive=True, experimental_optional_features=None):
    """The source code of `entity` converted (the rewritten definition, as Python text)."""
    del recursive, experimental_optional_features
    return conversion.converted_source(_function_of(entity)[0]) + "\n"


def do_not_convert(func=None):
    """Marks `func` as not to be converted: it runs as written, also inside tf.function (its
    calls are not converted either). Usable with or without parentheses."""
    if func is None:
        return do_not_convert

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with conversion.control_status(conversion.Status.DISABLED):
            return func(*args, **kwargs)
    wrapper.__autograph_do_not_convert__ = True
    return wrapper


experimental.do_not_convert = do_not_convert
