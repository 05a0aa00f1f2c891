"""model.summary(): Keras's table, column for column."""


def _print_row(fields, positions, print_fn):
    """One table row; a cell too long for its column wraps onto further lines, broken after
    "),", "],", "'," where possible, as Keras breaks it."""
    remaining = [str(field) for field in fields]
    while any(remaining):
        line = ""
        for col, text in enumerate(remaining):
            start = positions[col - 1] if col > 0 else 0
            last = col == len(positions) - 1
            space = 0 if last else 2
            cutoff = positions[col] - start - space - (0 if last else 1)
            piece = text[:cutoff]
            breaks = [piece.find(mark) + len(mark) for mark in ("),", "},", "],", "',")
                      if piece.find(mark) >= 0]
            if breaks:
                cutoff = min(breaks)
                piece = piece[:cutoff]
            if col == 0:
                line += " "
            line += piece + " " * space
            remaining[col] = text[cutoff:]
            line += " " * (positions[col] - len(line))
        print_fn(line)


def _is_sequential_like(model):
    if type(model).__name__ == "Sequential" or not model._is_graph_network:
        return True
    nodes = []
    for depth_nodes in model._nodes_by_depth.values():
        if len(depth_nodes) > 1 or (len(depth_nodes) == 1 and
                                    len(depth_nodes[0].input_tensors) > 1):
            return False
        nodes += depth_nodes
    node_ids = {id(n) for n in nodes}
    for layer in model.layers:
        if sum(1 for n in layer._inbound_nodes if id(n) in node_ids) > 1:
            return False
    return True


def _weight_bytes(weights):
    total = 0
    seen = set()
    for w in weights:
        if id(w) in seen:
            continue
        seen.add(id(w))
        dims = w.shape.as_list()
        if None in dims:
            continue
        size = 1
        for d in dims:
            size *= d
        total += size * w.dtype.size
    return total


def readable_size(size):
    for unit in ("Byte", "KB", "MB", "GB", "TB", "PB"):
        if size / 1024 < 1:
            return f"{size:.2f} {unit}"
        size /= 1024
    return f"{size:.2f} PB"


def print_summary(model, line_length=None, positions=None, print_fn=None):
    print_fn = print_fn or print
    if _is_sequential_like(model):
        line_length = line_length or 65
        positions = positions or [0.45, 0.85, 1.0]
        headers = ["Layer (type)", "Output Shape", "Param #"]
        relevant = None
    else:
        line_length = line_length or 98
        positions = positions or [0.3, 0.6, 0.70, 1.0]
        headers = ["Layer (type)", "Output Shape", "Param #", "Connected to"]
        relevant = {id(n) for nodes in model._nodes_by_depth.values() for n in nodes}
    if positions[-1] <= 1:
        positions = [int(line_length * p) for p in positions]

    print_fn(f'Model: "{model.name}"')
    print_fn("_" * line_length)
    _print_row(headers, positions, print_fn)
    print_fn("=" * line_length)
    layers = model.layers
    for layer in layers:
        try:
            output_shape = layer.output_shape
        except AttributeError:
            output_shape = "multiple"
        params = layer.count_params() if layer.built else "0 (unused)"
        fields = [f"{layer.name} ({type(layer).__name__})", output_shape, params]
        if relevant is not None:
            connections = []
            for node in layer._inbound_nodes:
                if id(node) not in relevant:
                    continue
                for inbound, node_index, tensor_index, _ in node.iterate_inbound():
                    connections.append(f"{inbound.name}[{node_index}][{tensor_index}]")
            fields.append(connections)
        _print_row(fields, positions, print_fn)
        print_fn(" " * line_length)
    print_fn("=" * line_length)
    trainable = model.trainable_weights
    non_trainable = model.non_trainable_weights
    trainable_count = sum(_count(w) for w in _unique(trainable))
    non_trainable_count = sum(_count(w) for w in _unique(non_trainable))
    total_bytes = _weight_bytes(trainable + non_trainable)
    print_fn(f"Total params: {trainable_count + non_trainable_count} "
             f"({readable_size(total_bytes)})")
    print_fn(f"Trainable params: {trainable_count} ({readable_size(_weight_bytes(trainable))})")
    print_fn(f"Non-trainable params: {non_trainable_count} "
             f"({readable_size(_weight_bytes(non_trainable))})")
    print_fn("_" * line_length)


def _unique(weights):
    seen, out = set(), []
    for w in weights:
        if id(w) not in seen:
            seen.add(id(w))
            out.append(w)
    return out


def _count(weight):
    size = 1
    for d in weight.shape.as_list():
        size *= d
    return size

