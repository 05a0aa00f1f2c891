"""`import tensorflow` resolving to Flowstone inside one process, so that TF1 programs and the
third-party libraries they use (tf_slim, old model repositories) run unmodified:

    python -m flowstone run train.py --steps 100
    # or, in a program:
    import flowstone
    flowstone.install_as_tensorflow()
    import tensorflow as tf     # Flowstone

install() puts a finder first on sys.meta_path; nothing is written to site-packages, and other
processes are unaffected. The finder answers for `tensorflow` and the names below it:

- `tensorflow`, `tensorflow.compat.v1` and `tensorflow.compat.v2`: the flowstone module.
- a public path (`tensorflow.compat.v1.layers`, `tensorflow.contrib.layers`, `tensorflow.nn`):
  the Flowstone module or namespace at that path; a tf.contrib module Flowstone lacks raises
  ImportError naming its replacement.
- a TensorFlow-internal path (`tensorflow.python.ops.array_ops`): a module over the Flowstone
  namespaces that INTERNAL_MODULES (paths.py) names for it; any other internal path raises
  ImportError saying that Flowstone does not provide it.
"""

import importlib
import importlib.abc
import importlib.machinery
import sys
import types

from flowstone.tensorflow_import.paths import ALIASES, INTERNAL_MODULES

_ROOT = "tensorflow"
_COMPAT_PREFIXES = ("compat.v1.", "compat.v2.")


def _flowstone():
    return sys.modules["flowstone"]


def _walk(path):
    """The object at a dotted path below the flowstone package ("" is flowstone itself),
    importing submodules on the way; None when there is none."""
    obj = _flowstone()
    walked = []
    for part in filter(None, path.split(".")):
        walked.append(part)
        child = getattr(obj, part, None)
        if child is None:
            try:
                child = importlib.import_module("flowstone." + ".".join(walked))
            except ImportError:
                return None
        obj = child
    return obj


def _source(source):
    if source == "shims":
        from flowstone.tensorflow_import import shims
        return shims
    if source.startswith("std:"):
        return importlib.import_module(source[4:])
    return _walk(source)


class InternalModule(types.ModuleType):
    """A TensorFlow-internal module: each attribute is looked up, on first use, in the Flowstone
    namespaces that stand in for it."""

    def __init__(self, name, sources, aliases):
        super().__init__(name)
        self.__dict__["_sources"] = sources
        self.__dict__["_aliases"] = aliases

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        wanted = self._aliases.get(name, name)
        for source in self._sources:
            module = _source(source)
            if module is not None and hasattr(module, wanted):
                value = getattr(module, wanted)
                setattr(self, name, value)
                return value
        where = ", ".join(f"flowstone.{s}".rstrip(".") for s in self._sources) or "nothing"
        raise AttributeError(
            f"module '{self.__name__}' has no attribute '{name}': Flowstone maps "
            f"{self.__name__} to {where}, and none of them has '{wanted}'")


class _Loader(importlib.abc.Loader):
    """Hands out a module that already exists (or was made by the finder). The import system
    stamps a new __spec__ on it; exec_module puts the module's own one back."""

    def __init__(self, module):
        self._module = module
        self._spec = getattr(module, "__spec__", None)

    def create_module(self, spec):
        return self._module

    def exec_module(self, module):
        if self._spec is not None:
            module.__spec__ = self._spec


class TensorFlowFinder(importlib.abc.MetaPathFinder):
    """Resolves `tensorflow` and the modules below it to Flowstone (see the module doc)."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname.startswith("flowstone.contrib."):
            # `from tensorflow.contrib import slim` looks for flowstone.contrib.slim (the
            # alias's real name): say what to use instead of "cannot import name".
            self._check_contrib(fullname.split(".")[2], fullname)
            return None
        if fullname != _ROOT and not fullname.startswith(_ROOT + "."):
            return None
        module = self._resolve(fullname)
        # Every module is a package here, so that the import system looks below it (for
        # `tensorflow.compat.v1`, whose parent is a namespace without a __path__): it gives such
        # a module an empty __path__, which changes nothing for Flowstone's own imports.
        return importlib.machinery.ModuleSpec(fullname, _Loader(module), is_package=True)

    def _resolve(self, fullname):
        path = fullname[len(_ROOT) + 1:]
        for prefix in _COMPAT_PREFIXES:
            if path.startswith(prefix):
                path = path[len(prefix):]
        if path in ("", "compat.v1", "compat.v2"):
            return _flowstone()
        if path.startswith(("python", "core")) and path.split(".")[0] in ("python", "core"):
            return self._internal(fullname, path)
        if path.startswith("contrib."):
            self._check_contrib(path.split(".")[1], fullname)
        module = _walk(path)
        if not isinstance(module, types.ModuleType):
            raise ImportError(f"No module named '{fullname}': Flowstone has no module "
                              f"tf.{path}", name=fullname)
        return module

    @staticmethod
    def _check_contrib(name, fullname):
        from flowstone import contrib
        if not hasattr(contrib, name):
            raise ImportError(contrib.not_provided_message(name), name=fullname)

    def _internal(self, fullname, path):
        if path in INTERNAL_MODULES:
            return InternalModule(fullname, INTERNAL_MODULES[path], ALIASES.get(path, {}))
        if any(known.startswith(path + ".") for known in INTERNAL_MODULES):
            package = types.ModuleType(fullname)
            package.__path__ = []
            return package
        raise ImportError(
            f"{fullname} is TensorFlow-internal and Flowstone does not provide it (code run "
            "with `import tensorflow` resolving to Flowstone can use the public tf.* API and "
            "the internal modules listed in flowstone/tensorflow_import/paths.py)",
            name=fullname)


_finder = TensorFlowFinder()


def install():
    """Makes `import tensorflow` (and its submodules) resolve to Flowstone in this process, and
    says so once on stderr. Raises RuntimeError when real TensorFlow is already imported."""
    existing = sys.modules.get(_ROOT)
    if existing is not None and existing is not _flowstone():
        raise RuntimeError("TensorFlow is already imported in this process, so `import "
                           "tensorflow` cannot resolve to Flowstone: call "
                           "flowstone.install_as_tensorflow() before anything imports it")
    if _finder in sys.meta_path:
        return
    sys.meta_path.insert(0, _finder)
    import flowstone
    sys.stderr.write(f"flowstone: `import tensorflow` resolves to Flowstone "
                     f"{flowstone.__version__} in this process\n")


def installed():
    """Whether install() has run in this process."""
    return _finder in sys.meta_path
