"""tf.Module: a named container of variables and other modules, as TensorFlow 2 defines it.
Attributes are searched for tf.Variables and nested Modules (in lists, tuples and dicts too), so
`trainable_variables` of a model collects those of its layers."""

import re

from flowstone.framework import ops as _ops
from flowstone.util.naming import to_snake_case
from flowstone.util.tf_export import tf_export

_VALID_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")




def _is_variable(value):
    from flowstone.ops import variables
    return isinstance(value, variables.Variable)


@tf_export("Module")
class Module:
    """Tracks the variables and submodules assigned to its attributes."""

    def __init__(self, name=None):
        if name is None:
            name = to_snake_case(type(self).__name__)
        elif not _VALID_NAME.match(name):
            raise ValueError(f"{name!r} is not a valid module name. Module names must be valid "
                             f"Python identifiers (e.g. a valid class name).")
        self._name = name
        with _ops.name_scope(name) as scope:
            self._scope_name = scope

    @property
    def name(self):
        return self._name

    @property
    def name_scope(self):
        """Re-enters this module's name scope (ops made inside are named under it)."""
        return _ops.name_scope(self._scope_name)

    @classmethod
    def with_name_scope(cls, method):
        """Decorates a method so that it runs inside the module's name scope."""
        def wrapped(self, *args, **kwargs):
            with self.name_scope:
                return method(self, *args, **kwargs)
        wrapped.__name__ = method.__name__
        wrapped.__doc__ = method.__doc__
        return wrapped

    def _flatten(self, predicate):
        """Every value below this module's attributes (through nested modules, lists, tuples
        and dicts, in attribute-name order) for which `predicate` holds, each once."""
        found, seen = [], {id(self)}

        def visit(value):
            if id(value) in seen:
                return
            if isinstance(value, Module):
                seen.add(id(value))
                if predicate(value):
                    found.append(value)
                for key in sorted(vars(value)):
                    visit(vars(value)[key])
            elif isinstance(value, (list, tuple)):
                for item in value:
                    visit(item)
            elif isinstance(value, dict):
                for key in sorted(value, key=str):
                    visit(value[key])
            elif predicate(value):
                seen.add(id(value))
                found.append(value)

        for key in sorted(vars(self)):
            visit(vars(self)[key])
        return found

    @property
    def variables(self):
        return tuple(self._flatten(_is_variable))

    @property
    def trainable_variables(self):
        return tuple(self._flatten(lambda v: _is_variable(v) and v.trainable))

    @property
    def non_trainable_variables(self):
        return tuple(self._flatten(lambda v: _is_variable(v) and not v.trainable))

    @property
    def submodules(self):
        return tuple(self._flatten(lambda v: isinstance(v, Module)))

    def __repr__(self):
        return f"<{type(self).__module__}.{type(self).__name__} object named {self._name!r}>"
