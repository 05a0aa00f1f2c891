"""The functional graph of a model: which nodes lead from its inputs to its outputs, in which
order to run them, and its config (layers and the connections between them)."""

from flowstone.keras.engine import node as node_module


def map_graph_network(outputs):
    """Returns (nodes_by_depth, layers in Keras's order) for the graph ending at `outputs`.

    Depth 0 holds the output nodes; a node's inputs sit deeper. Layers are listed from the
    deepest (the inputs) up, and, within a depth, in the order a walk back from the outputs
    first met them, which is the order Keras lists them in (summary, weights in files).
    """
    finished, in_progress = set(), set()
    ordered_nodes = []
    layer_indices = {}

    def visit(layer, node_index):
        node = layer._inbound_nodes[node_index]
        if id(node) in finished:
            return
        if id(node) in in_progress:
            raise ValueError(f"The tensor computed by layer {layer.name} is part of a cycle.")
        layer_indices.setdefault(layer, len(layer_indices))
        in_progress.add(id(node))
        for inbound_layer, inbound_index, _, _ in node.iterate_inbound():
            visit(inbound_layer, inbound_index)
        in_progress.discard(id(node))
        finished.add(id(node))
        ordered_nodes.append(node)

    for tensor in outputs:
        h = node_module.history(tensor)
        if h is None:
            raise ValueError("Output tensors of a Functional model must be the output of a "
                             f"TensorFlow `Layer` (thus holding past layer metadata). Found: "
                             f"{tensor}")
        visit(h.layer, h.node_index)

    node_depth = {}
    layer_depth = {}
    for node in reversed(ordered_nodes):
        depth = node_depth.setdefault(id(node), 0)
        layer = node.outbound_layer
        layer_depth[layer] = max(depth, layer_depth.get(layer, 0))
        node_depth[id(node)] = layer_depth[layer]
        for inbound_layer, inbound_index, _, _ in node.iterate_inbound():
            inbound = inbound_layer._inbound_nodes[inbound_index]
            node_depth[id(inbound)] = max(depth + 1, node_depth.get(id(inbound), 0))

    nodes_by_depth = {}
    for node in ordered_nodes:
        nodes_by_depth.setdefault(node_depth[id(node)], []).append(node)
    layers_by_depth = {}
    for layer, depth in layer_depth.items():
        layers_by_depth.setdefault(depth, []).append(layer)
    layers = []
    for depth in sorted(layers_by_depth, reverse=True):
        layers.extend(sorted(layers_by_depth[depth], key=lambda lay: layer_indices[lay]))
    return nodes_by_depth, layers


def run_internal_graph(model, inputs):
    """Calls the model's layers on new `inputs`, node by node from the deepest."""
    inputs = node_module.flatten(inputs)
    if len(inputs) != len(model.inputs):
        raise ValueError(f'Layer "{model.name}" expects {len(model.inputs)} input(s), but it '
                         f"received {len(inputs)} input tensors.")
    computed = {id(original): new for original, new in zip(model.inputs, inputs)}
    keep_alive = list(inputs)
    for depth in sorted(model._nodes_by_depth, reverse=True):
        for node in model._nodes_by_depth[depth]:
            layer = node.outbound_layer
            if not node.input_tensors:
                continue
            if not all(id(t) in computed for t in node.input_tensors):
                continue
            args = [computed[id(t)] for t in node.input_tensors]
            outputs = layer(args if node.call_structure_is_list else args[0], **node.arguments)
            for original, new in zip(node.output_tensors, node_module.flatten(outputs)):
                computed[id(original)] = new
                keep_alive.append(new)
    outputs = [computed[id(t)] for t in model.outputs]
    return outputs[0] if len(outputs) == 1 and not model._nested_outputs else outputs


def skips_first_node(layer):
    """Keras numbers a nested model's calls from 1 in configs: node 0 is the model's own
    graph (which Flowstone does not record as a node)."""
    return bool(getattr(layer, "_is_graph_network", False))


def network_config(model):
    """Keras's functional config: layers, their inbound nodes, and the model's ends."""
    kept = {}   # (layer, node index here) -> the node's index in the config
    network_nodes = {id(n) for nodes in model._nodes_by_depth.values() for n in nodes}
    for layer in model.layers:
        count = 1 if skips_first_node(layer) else 0
        for index, node in enumerate(layer._inbound_nodes):
            if id(node) in network_nodes:
                kept[(layer, index)] = count
                count += 1
    layer_configs = []
    for layer in model.layers:
        inbound = []
        for index, node in enumerate(layer._inbound_nodes):
            if id(node) not in network_nodes or not node.input_tensors:
                continue
            inbound.append([[inbound_layer.name, kept.get((inbound_layer, inbound_index), 0),
                             tensor_index, dict(node.arguments)]
                            for inbound_layer, inbound_index, tensor_index, _ in
                            node.iterate_inbound()])
        layer_configs.append({"class_name": type(layer).__name__, "config": layer.get_config(),
                              "name": layer.name, "inbound_nodes": inbound})

    def ends(tensors):
        out = []
        for tensor in tensors:
            h = node_module.history(tensor)
            out.append([h.layer.name, kept.get((h.layer, h.node_index), 0), h.tensor_index])
        return out

    return {"name": model.name, "layers": layer_configs,
            "input_layers": ends(model.inputs), "output_layers": ends(model.outputs)}


def _node_entries(node_data):
    """[(layer name, node index, tensor index, kwargs)] of one inbound node in a config."""
    if node_data and isinstance(node_data, dict):   # Keras 3 style is not supported
        raise ValueError(f"Unsupported inbound node format in model config: {node_data}")
    return [(e[0], e[1], e[2], e[3] if len(e) > 3 else {}) for e in node_data]


def reconstruct_from_config(config, deserialize_layer):
    """(input tensors, output tensors, name) of a network rebuilt from a functional config."""
    created = {}
    node_map = {}      # (layer name, node index in the config) -> index in layer._inbound_nodes
    next_index = {}    # layer name -> the config index its next processed node gets
    queue = []         # per layer, its config nodes in order
    for layer_data in config["layers"]:
        layer = deserialize_layer(layer_data)
        name = layer_data.get("name", layer.name)
        created[name] = layer
        if not layer_data.get("inbound_nodes"):
            node_map[(name, 0)] = 0
        next_index[name] = 1 if skips_first_node(layer) else 0
        queue.append([name, layer, [_node_entries(n) for n in layer_data.get("inbound_nodes",
                                                                             [])]])
    while any(nodes for _, _, nodes in queue):
        progress = False
        for entry in queue:
            name, layer, nodes = entry
            while nodes:
                inputs = []
                for inbound, node_index, tensor_index, _ in nodes[0]:
                    index = node_map.get((inbound, node_index))
                    if index is None:
                        break
                    inputs.append(created[inbound]._inbound_nodes[index]
                                  .output_tensors[tensor_index])
                if len(inputs) != len(nodes[0]):
                    break
                kwargs = nodes[0][0][3] if nodes[0] else {}
                layer(inputs[0] if len(inputs) == 1 else inputs, **(kwargs or {}))
                node_map[(name, next_index[name])] = len(layer._inbound_nodes) - 1
                next_index[name] += 1
                nodes.pop(0)
                progress = True
        if not progress:
            raise ValueError("Could not reconstruct the model from its config: some layers' "
                             "inputs are never produced.")

    def ends(entries):
        if entries and not isinstance(entries[0], list):
            entries = [entries]
        return [created[name]._inbound_nodes[node_map[(name, node_index)]]
                .output_tensors[tensor_index] for name, node_index, tensor_index in entries]

    return ends(config["input_layers"]), ends(config["output_layers"]), config.get("name")
