"""tf.test.StubOutForTesting: replace attributes of modules, classes and objects for a test and
put them back after, as TensorFlow's (googletest's) stubout does."""

import inspect


class StubOutForTesting:
    """Set(obj, name, new) and SmartSet replace an attribute; UnsetAll / SmartUnsetAll (CleanUp
    does both) restore every replaced attribute, the last replaced first."""

    def __init__(self):
        self.cache = []
        self.stubs = []

    def __del__(self):
        self.SmartUnsetAll()
        self.UnsetAll()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        self.CleanUp()

    def CleanUp(self):  # noqa: N802 - TensorFlow's name
        self.SmartUnsetAll()
        self.UnsetAll()

    def Set(self, parent, child_name, new_child):  # noqa: N802
        """parent.child_name = new_child, restored by UnsetAll. A static or class method of a
        class is wrapped again as one, so that it keeps its binding."""
        old_child = getattr(parent, child_name)
        old_attribute = parent.__dict__.get(child_name) if inspect.isclass(parent) else None
        if isinstance(old_attribute, staticmethod):
            new_child = staticmethod(new_child)
        elif isinstance(old_attribute, classmethod):
            new_child = classmethod(new_child)
        self.cache.append((parent, old_attribute if old_attribute is not None else old_child,
                           child_name))
        setattr(parent, child_name, new_child)

    def SmartSet(self, obj, attr_name, new_attr):  # noqa: N802
        """Replaces obj.attr_name (a module's, class's or instance's), restored by SmartUnsetAll:
        an attribute obj inherits is restored by removing the replacement, so obj sees its
        parent's again."""
        if not hasattr(obj, attr_name):
            raise AttributeError(f"Attribute not found: {attr_name}")
        own = vars(obj) if hasattr(obj, "__dict__") else {}
        self.stubs.append((obj, attr_name, attr_name in own, own.get(attr_name)))
        setattr(obj, attr_name, new_attr)

    def SmartUnsetAll(self):  # noqa: N802
        for obj, attr_name, had_own, old in reversed(self.stubs):
            if had_own:
                setattr(obj, attr_name, old)
            else:
                delattr(obj, attr_name)
        del self.stubs[:]

    def UnsetAll(self):  # noqa: N802
        for parent, old_child, child_name in reversed(self.cache):
            setattr(parent, child_name, old_child)
        del self.cache[:]
