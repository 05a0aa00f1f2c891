"""tf.nest: nested structures (lists, tuples, namedtuples, dicts) of leaves.

Sequences are lists, tuples (and namedtuples) and dicts; dicts are walked in sorted key order, as
TensorFlow does. Everything else (tensors, numbers, strings, None) is a leaf.
"""

import collections.abc as _abc

from flowstone.util.tf_export import tf_export


def _is_namedtuple(value):
    return isinstance(value, tuple) and hasattr(type(value), "_fields")


@tf_export("nest.is_nested")
def is_nested(seq):
    """True for a list, tuple or dict (a structure with children)."""
    return isinstance(seq, (list, tuple, _abc.Mapping))


def _children(value):
    if isinstance(value, _abc.Mapping):
        return [value[k] for k in _sorted_keys(value)]
    return list(value)


def _sorted_keys(mapping):
    try:
        return sorted(mapping)
    except TypeError as e:
        raise TypeError("nest only supports dicts with sortable keys.") from e


@tf_export("nest.flatten")
def flatten(structure, expand_composites=False):
    """The leaves of `structure` in order; a leaf becomes a one-element list."""
    del expand_composites  # no composite tensors in Flowstone
    if not is_nested(structure):
        return [structure]
    out = []
    for child in _children(structure):
        out.extend(flatten(child))
    return out


def _rebuild(template, children):
    if isinstance(template, _abc.Mapping):
        values = dict(zip(_sorted_keys(template), children))
        return type(template)((k, values[k]) for k in template)
    if _is_namedtuple(template):
        return type(template)(*children)
    return type(template)(children)


def _pack(structure, flat, index):
    if not is_nested(structure):
        return flat[index], index + 1
    children = []
    for child in _children(structure):
        packed, index = _pack(child, flat, index)
        children.append(packed)
    return _rebuild(structure, children), index


@tf_export("nest.pack_sequence_as")
def pack_sequence_as(structure, flat_sequence, expand_composites=False):
    """`flat_sequence` rebuilt in the shape of `structure`."""
    del expand_composites
    if not isinstance(flat_sequence, (list, tuple)):
        raise TypeError(f"Attempted to pack value:\n  {flat_sequence!r}\ninto a structure, but "
                        f"found incompatible type `{type(flat_sequence).__name__}` instead.")
    flat_sequence = list(flat_sequence)
    expected = len(flatten(structure))
    if expected != len(flat_sequence):
        raise ValueError(
            "Could not pack sequence. Structure had %d atoms, but flat_sequence had %d items.  "
            "Structure: %s, flat_sequence: %s." % (expected, len(flat_sequence), structure,
                                                   flat_sequence))
    if not is_nested(structure):
        return flat_sequence[0]
    packed, _ = _pack(structure, flat_sequence, 0)
    return packed


def _structure_error(nest1, nest2, detail):
    return ValueError("The two structures don't have the same nested structure.\n\n"
                      f"First structure: {nest1}\n\nSecond structure: {nest2}\n\n"
                      f"More specifically: {detail}")


def _assert_same(a, b, check_types, nest1, nest2):
    if is_nested(a) != is_nested(b):
        seq, other = (a, b) if is_nested(a) else (b, a)
        raise _structure_error(nest1, nest2, f"Substructure \"{seq}\" is a sequence, while "
                                             f"substructure \"{other}\" is not")
    if not is_nested(a):
        return
    if check_types and type(a) is not type(b):
        raise TypeError("The two structures don't have the same sequence type. Input structure "
                        f"has type {type(a)!r}, while shallow structure has type {type(b)!r}.")
    if isinstance(a, _abc.Mapping) and set(a) != set(b):
        raise _structure_error(nest1, nest2, f"The two dictionaries don't have the same set of "
                                             f"keys. First structure has keys {sorted(a)}, while "
                                             f"second structure has keys {sorted(b)}.")
    ca, cb = _children(a), _children(b)
    if len(ca) != len(cb):
        raise _structure_error(nest1, nest2, f"Substructure \"{a}\" has length {len(ca)}, while "
                                             f"substructure \"{b}\" has length {len(cb)}")
    for x, y in zip(ca, cb):
        _assert_same(x, y, check_types, nest1, nest2)


@tf_export("nest.assert_same_structure")
def assert_same_structure(nest1, nest2, check_types=True, expand_composites=False):
    """Raises ValueError (TypeError for different sequence types when `check_types`) unless the
    two structures nest the same way."""
    del expand_composites
    _assert_same(nest1, nest2, check_types, nest1, nest2)


@tf_export("nest.map_structure")
def map_structure(func, *structure, **kwargs):
    """`func` applied to the leaves of the structures (which must nest alike), in their shape."""
    if not callable(func):
        raise TypeError(f"func must be callable, got: {func}")
    if not structure:
        raise ValueError("Must provide at least one structure")
    check_types = kwargs.pop("check_types", True)
    kwargs.pop("expand_composites", None)
    if kwargs:
        raise ValueError(f"Only valid keyword arguments are `check_types` and "
                         f"`expand_composites`, not: `{', '.join(kwargs)}`")
    for other in structure[1:]:
        assert_same_structure(structure[0], other, check_types=check_types)
    flat = [flatten(s) for s in structure]
    return pack_sequence_as(structure[0], [func(*leaves) for leaves in zip(*flat)])
