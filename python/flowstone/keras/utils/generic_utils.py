"""Serialization by name or config (`'relu'`, `{'class_name': 'Dense', 'config': {...}}`),
custom objects, and Keras's naming of classes."""

import threading

from flowstone.util.tf_export import tf_export

_GLOBAL_CUSTOM_OBJECTS = {}
_SCOPE = threading.local()


@tf_export("keras.utils.get_custom_objects")
def get_custom_objects():
    return _GLOBAL_CUSTOM_OBJECTS


@tf_export("keras.utils.CustomObjectScope", "keras.utils.custom_object_scope")
class CustomObjectScope:
    """`with CustomObjectScope({'MyLayer': MyLayer}):` names objects for deserialization."""

    def __init__(self, *args):
        self.custom_objects = args

    def __enter__(self):
        stack = getattr(_SCOPE, "stack", None)
        if stack is None:
            stack = _SCOPE.stack = []
        merged = {}
        for objects in self.custom_objects:
            merged.update(objects or {})
        stack.append(merged)
        return self

    def __exit__(self, *exc):
        _SCOPE.stack.pop()


def _scoped_objects():
    merged = dict(_GLOBAL_CUSTOM_OBJECTS)
    for objects in getattr(_SCOPE, "stack", []):
        merged.update(objects)
    return merged




@tf_export("keras.utils.serialize_keras_object")
def serialize_keras_object(instance):
    if instance is None:
        return None
    if hasattr(instance, "get_config"):
        return {"class_name": type(instance).__name__, "config": instance.get_config()}
    if hasattr(instance, "__name__"):
        return instance.__name__
    raise ValueError(f"Cannot serialize {instance!r}: it has no get_config() and no name.")


@tf_export("keras.utils.deserialize_keras_object")
def deserialize_keras_object(identifier, module_objects=None, custom_objects=None,
                             printable_module_name="object"):
    """A string names a function or class; a dict {'class_name', 'config'} builds an object."""
    if identifier is None:
        return None
    objects = dict(module_objects or {})
    objects.update(_scoped_objects())
    objects.update(custom_objects or {})
    if isinstance(identifier, dict):
        class_name = identifier.get("class_name")
        cls = objects.get(class_name)
        if cls is None:
            raise ValueError(f"Unknown {printable_module_name}: '{class_name}'. Please ensure "
                             "you are using a `keras.utils.custom_object_scope` and that this "
                             "object is included in the scope.")
        config = identifier.get("config", {})
        if hasattr(cls, "from_config"):
            if _accepts_custom_objects(cls.from_config):
                return cls.from_config(config, custom_objects=dict(objects))
            with CustomObjectScope(custom_objects or {}):
                return cls.from_config(config)
        return cls(**config)
    if isinstance(identifier, str):
        obj = objects.get(identifier)
        if obj is None:
            raise ValueError(f"Unknown {printable_module_name}: '{identifier}'. Please ensure "
                             "you are using a `keras.utils.custom_object_scope` and that this "
                             "object is included in the scope.")
        return obj
    return identifier


def _accepts_custom_objects(function):
    import inspect
    try:
        return "custom_objects" in inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False
