"""How Keras tensors remember where they came from.

Each call of a layer on Keras tensors makes a Node: the layers and tensors it consumed and the
tensors it produced. Every output tensor is tagged with (layer, node_index, tensor_index), its
history, which is what lets `Model(inputs, outputs)` walk back from outputs to inputs. Flowstone's
Tensor has fixed slots, so histories live in a weak map beside the tensors.
"""

import weakref



class _TensorMap:
    """A weak map by tensor identity: eager tensors, unlike graph ones, are unhashable (as in
    TensorFlow), so entries are keyed by id and dropped when their tensor dies."""

    def __init__(self):
        self._entries = {}   # id(tensor) -> (weak reference to the tensor, value)

    def get(self, tensor):
        entry = self._entries.get(id(tensor))
        return entry[1] if entry is not None and entry[0]() is tensor else None

    def set(self, tensor, value):
        key = id(tensor)
        entries = self._entries

        def forget(dead, key=key):
            entry = entries.get(key)
            if entry is not None and entry[0] is dead:   # not a newer tensor at that address
                del entries[key]
        self._entries[key] = (weakref.ref(tensor, forget), value)

    def pop(self, tensor):
        if self.get(tensor) is not None:
            del self._entries[id(tensor)]


_HISTORY = _TensorMap()   # tensor -> KerasHistory
_MASKS = _TensorMap()     # tensor -> its mask tensor (Embedding(mask_zero=True))


class KerasHistory:
    __slots__ = ("layer", "node_index", "tensor_index")

    def __init__(self, layer, node_index, tensor_index):
        self.layer, self.node_index, self.tensor_index = layer, node_index, tensor_index

    def __iter__(self):
        return iter((self.layer, self.node_index, self.tensor_index))


def history(tensor):
    return _HISTORY.get(tensor) if _is_weakrefable(tensor) else None


def set_history(tensor, value):
    _HISTORY.set(tensor, value)


def mask(tensor):
    return _MASKS.get(tensor) if _is_weakrefable(tensor) else None


def set_mask(tensor, value):
    if value is None:
        _MASKS.pop(tensor)
    else:
        _MASKS.set(tensor, value)


def _is_weakrefable(value):
    try:
        weakref.ref(value)
    except TypeError:
        return False
    return True


def flatten(structure):
    if isinstance(structure, (list, tuple)):
        return [leaf for item in structure for leaf in flatten(item)]
    if isinstance(structure, dict):
        return [leaf for key in sorted(structure) for leaf in flatten(structure[key])]
    return [structure]


class Node:
    """One call of `outbound_layer` on tensors made by `inbound_layers`."""

    def __init__(self, outbound_layer, input_tensors, output_tensors, arguments=None):
        self.outbound_layer = outbound_layer
        self.input_tensors = flatten(input_tensors)
        self.output_tensors = flatten(output_tensors)
        self.call_structure_is_list = isinstance(input_tensors, (list, tuple))
        self.arguments = arguments or {}
        histories = [history(t) for t in self.input_tensors]
        self.inbound_layers = [h.layer for h in histories if h is not None]
        self.node_indices = [h.node_index for h in histories if h is not None]
        self.tensor_indices = [h.tensor_index for h in histories if h is not None]
        node_index = len(outbound_layer._inbound_nodes)
        outbound_layer._inbound_nodes.append(self)
        for layer in self.inbound_layers:
            layer._outbound_nodes.append(self)
        for i, tensor in enumerate(self.output_tensors):
            set_history(tensor, KerasHistory(outbound_layer, node_index, i))

    @property
    def input_shapes(self):
        shapes = [tuple(t.shape.as_list()) for t in self.input_tensors]
        return shapes if self.call_structure_is_list else shapes[0]

    @property
    def output_shapes(self):
        shapes = [tuple(t.shape.as_list()) for t in self.output_tensors]
        return shapes[0] if len(shapes) == 1 else shapes

    def iterate_inbound(self):
        """(layer, node_index, tensor_index, tensor) for each input with a Keras history."""
        for tensor in self.input_tensors:
            h = history(tensor)
            if h is not None:
                yield h.layer, h.node_index, h.tensor_index, tensor
