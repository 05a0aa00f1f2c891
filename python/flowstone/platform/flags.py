"""tf.flags (also tf.app.flags): absl.flags, as TensorFlow routes it.

TensorFlow's `tf.compat.v1.flags` is the absl.flags module with two TensorFlow habits on top, and
so is this one: reading a value from `FLAGS` before anything parsed the command line parses
`sys.argv` first (absl itself raises `UnparsedFlagAccessError`), and the `DEFINE_string`,
`_boolean`, `_float` and `_integer` functions also take TF 1.0's keyword names (`flag_name`,
`default_value`, `docstring`). Everything else (parsers, validators, `--flagfile`, enum-class
and multi-enum flags, aliases, key flags, `FlagHolder`) is absl's own.
"""

import functools as _functools
import logging as _logging
import sys as _sys

from absl.flags import *  # noqa: F401,F403  (tf.flags is absl.flags' public surface)
from absl import flags as _absl_flags

from flowstone.util.tf_export import export_value as _export_value

# As in TensorFlow: flags defined by this module do not count as the program's key flags.
disclaim_key_flags()  # noqa: F405

_OLD_KEYWORDS = {"flag_name": "name", "default_value": "default", "docstring": "help"}


def _accept_old_keywords(define):
    """`define` also taking TF 1.0's keyword names, with TensorFlow's deprecation warning."""

    @_functools.wraps(define)
    def define_with_old_keywords(*args, **kwargs):
        renamed = {old: new for old, new in _OLD_KEYWORDS.items() if old in kwargs}
        for old, new in renamed.items():
            kwargs[new] = kwargs.pop(old)
        if renamed:
            _logging.warning("Use of the keyword argument names (flag_name, default_value, "
                             "docstring) is deprecated, please use (name, default, help) "
                             "instead.")
        return define(*args, **kwargs)

    return define_with_old_keywords


DEFINE_string = _accept_old_keywords(_absl_flags.DEFINE_string)
DEFINE_boolean = _accept_old_keywords(_absl_flags.DEFINE_boolean)
DEFINE_bool = DEFINE_boolean
DEFINE_float = _accept_old_keywords(_absl_flags.DEFINE_float)
DEFINE_integer = _accept_old_keywords(_absl_flags.DEFINE_integer)


class _ParsingOnReadFlagValues:
    """A FlagValues whose first read of a flag's value parses `sys.argv` if nothing has parsed
    the command line yet: TF1 programs read `FLAGS.x` without calling `tf.app.run()`. Every
    other attribute, item and call goes to the wrapped FlagValues unchanged."""

    def __init__(self, flag_values):
        self.__dict__["_wrapped"] = flag_values

    def __getattribute__(self, name):
        if name == "__dict__":
            return object.__getattribute__(self, name)
        # The wrapped object's own attributes only: a flag's value is not one of them, so
        # reading a flag falls through to __getattr__ below.
        return self.__dict__["_wrapped"].__getattribute__(name)

    def __getattr__(self, name):
        wrapped = self.__dict__["_wrapped"]
        if not wrapped.is_parsed():
            wrapped(_sys.argv)
        return getattr(wrapped, name)

    def __setattr__(self, name, value):
        setattr(self.__dict__["_wrapped"], name, value)

    def __delattr__(self, name):
        delattr(self.__dict__["_wrapped"], name)

    def __dir__(self):
        return dir(self.__dict__["_wrapped"])

    def __contains__(self, name):
        return name in self.__dict__["_wrapped"]

    def __getitem__(self, name):
        return self.__dict__["_wrapped"][name]

    def __setitem__(self, name, flag):
        self.__dict__["_wrapped"][name] = flag

    def __len__(self):
        return len(self.__dict__["_wrapped"])

    def __iter__(self):
        return iter(self.__dict__["_wrapped"])

    def __str__(self):
        return str(self.__dict__["_wrapped"])

    def __call__(self, *args, **kwargs):
        return self.__dict__["_wrapped"](*args, **kwargs)


FLAGS = _ParsingOnReadFlagValues(_absl_flags.FLAGS)

# tf.flags and tf.app.flags are this module.
_export_value("flags", _sys.modules[__name__])
_export_value("app.flags", _sys.modules[__name__])
