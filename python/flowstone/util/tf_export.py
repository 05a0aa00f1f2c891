"""The one place that says which public names an implementation has.

    @tf_export("math.cumsum", "cumsum")
    def cumsum(x, axis=0, ...):

Each name is a path below the `flowstone` package: "cumsum" is `tf.cumsum`, "math.cumsum" is
`tf.math.cumsum`, "nn.rnn_cell.LSTMCell" is `tf.nn.rnn_cell.LSTMCell`. `tf.compat.v1` is the
top-level namespace itself, so a TF1 name needs no "compat.v1." copy. `flowstone/__init__.py`
imports every implementation module and then calls `populate`, which sets each name on its
namespace, creating namespaces that have no module file of their own (such as `tf.linalg`) and
registering them in `sys.modules` so that `import flowstone.linalg` works too.

This module is a leaf: it imports nothing from flowstone, so any module may use it.
"""

import sys
import types

_exports = {}  # "math.cumsum" -> object


def tf_export(*names):
    """Decorator: exports the decorated function or class under each of `names`."""
    if not names:
        raise ValueError("tf_export needs at least one name")

    def decorate(obj):
        for name in names:
            export_value(name, obj)
        return obj

    return decorate


def export_value(name, value):
    """Exports a value that cannot be decorated (a constant, an alias, a class made elsewhere)."""
    previous = _exports.get(name)
    if previous is not None and previous is not value:
        raise ValueError(f"tf_export: '{name}' is already exported as {previous!r}")
    _exports[name] = value


def exported_names():
    """Every exported path, sorted ("math.cumsum", "cumsum", ...)."""
    return sorted(_exports)


def populate(root, prefix=""):
    """Sets every exported name on its namespace below the package module `root`. With a
    `prefix` ("keras."), only the names below it, relative to `root`: a package imported lazily
    (flowstone.keras) fills its own namespaces when it loads."""
    for name, value in _exports.items():
        if not name.startswith(prefix):
            continue
        *path, leaf = name[len(prefix):].split(".")
        namespace = root
        for part in path:
            child = getattr(namespace, part, None)
            if child is None:
                child = types.ModuleType(f"{namespace.__name__}.{part}")
                setattr(namespace, part, child)
                sys.modules[child.__name__] = child
            namespace = child
        setattr(namespace, leaf, value)
