"""tf.einsum and tf.tensordot, built from Transpose, Reshape, Sum, MatrixDiagPart and
BatchMatMulV2 as TensorFlow 1 built einsum, so that gradients come from those ops.

An equation's operands are contracted left to right, two at a time. For each pair, every label is
either a batch label (in both operands and needed later), a contracted label (in both, not needed
later), or kept by one side; the operands are transposed to [batch, kept, contracted] and
[batch, contracted, kept], flattened to matrices and multiplied, and the product reshaped back.
Labels that appear in only one operand and are not needed later are summed out first; a label
repeated within one operand takes that operand's diagonal. Ellipses become generated labels, one
per broadcast dimension, so that they take part like any other label (BatchMatMulV2 broadcasts
batch dimensions of size 1)."""

import re
import string

import numpy as np

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.ops import array_ops as _array
from flowstone.ops import reduction_ops as _reduction
from flowstone.util.tf_export import tf_export

# Labels for the dimensions an ellipsis covers; they never clash with a user's letters.
_ELLIPSIS_LABELS = "0123456789"


def _op(op_type, inputs, attrs=None):
    return _ops.apply_op(op_type, inputs, attrs, name=op_type).outputs[0]


def _static_rank(t):
    if t.shape.rank is None:
        raise ValueError(f"einsum needs the rank of every operand known while building the graph; "
                         f"{t.name} has unknown rank")
    return t.shape.rank


def _parse(equation, operands):
    """The equation as one label string per operand and one for the output, ellipses replaced by
    generated labels (right-aligned, as broadcasting aligns them)."""
    equation = equation.replace(" ", "")
    if not re.fullmatch(r"[a-zA-Z.,]*(->[a-zA-Z.]*)?", equation):
        raise ValueError(f"Invalid einsum equation '{equation}': only letters, ',', '...' and "
                         "'->' are allowed")
    inputs, arrow, output = equation.partition("->")
    input_specs = inputs.split(",")
    if len(input_specs) != len(operands):
        raise ValueError(f"Invalid einsum equation '{equation}': it names {len(input_specs)} "
                         f"operands but {len(operands)} were given")
    ellipsis_rank = 0
    labels = []
    for spec, t in zip(input_specs, operands):
        if spec.count("...") > 1 or spec.replace("...", "").count(".") > 0:
            raise ValueError(f"Invalid einsum equation '{equation}': malformed ellipsis in "
                             f"'{spec}'")
        rank = _static_rank(t)
        named = len(spec.replace("...", ""))
        if "..." in spec:
            covered = rank - named
            if covered < 0:
                raise ValueError(f"einsum: operand {t.name} of rank {rank} has too few "
                                 f"dimensions for '{spec}'")
            ellipsis_rank = max(ellipsis_rank, covered)
            spec = spec.replace("...", _ELLIPSIS_LABELS[len(_ELLIPSIS_LABELS) - covered:])
        elif named != rank:
            raise ValueError(f"einsum: operand {t.name} has rank {rank} but '{spec}' names "
                             f"{named} dimensions")
        labels.append(spec)
    ellipsis = _ELLIPSIS_LABELS[len(_ELLIPSIS_LABELS) - ellipsis_rank:]
    if arrow:
        if output.count("...") > 1:
            raise ValueError(f"Invalid einsum equation '{equation}': malformed output ellipsis")
        output = output.replace("...", ellipsis)
    else:
        # Implicit output: the ellipsis, then the labels used exactly once, in order.
        counts = {}
        for spec in labels:
            for c in spec:
                counts[c] = counts.get(c, 0) + 1
        output = ellipsis + "".join(sorted(c for c, n in counts.items()
                                           if n == 1 and c not in _ELLIPSIS_LABELS))
    for c in output:
        if not any(c in spec for spec in labels):
            raise ValueError(f"einsum: output label '{c}' of '{equation}' appears in no input")
        if output.count(c) > 1:
            raise ValueError(f"einsum: output label '{c}' of '{equation}' appears twice")
    return labels, output


def _dims(t):
    """t's dimensions: Python ints where known, int32 scalar tensors otherwise."""
    shape = t.shape.as_list()
    dynamic = None
    dims = []
    for i, d in enumerate(shape):
        if d is None:
            if dynamic is None:
                dynamic = _array.shape(t)
            dims.append(dynamic[i])
        else:
            dims.append(d)
    return dims


def _product(dims):
    known = int(np.prod([d for d in dims if isinstance(d, int)], dtype=np.int64))
    unknown = [d for d in dims if not isinstance(d, int)]
    if not unknown:
        return known
    result = unknown[0]
    for d in unknown[1:]:
        result = result * d
    return result * known if known != 1 else result


def _reshape(t, dims):
    if all(isinstance(d, int) for d in dims):
        shape = _ops.constant(np.array(dims, dtype=np.int32))
    else:
        shape = _array.stack([d if isinstance(d, _ops.Tensor) else _ops.constant(d, _dtypes.int32)
                              for d in dims])
    return _op("Reshape", [t, shape])


def _transpose(t, labels, order):
    perm = [labels.index(c) for c in order]
    if perm == list(range(len(perm))):
        return t
    return _array.transpose(t, perm)


def _take_diagonals(t, labels):
    """Replaces each label repeated within one operand by its diagonal."""
    while len(set(labels)) < len(labels):
        c = next(c for c in labels if labels.count(c) > 1)
        first = labels.index(c)
        second = labels.index(c, first + 1)
        rest = [i for i in range(len(labels)) if i not in (first, second)]
        t = _array.transpose(t, rest + [first, second])
        t = _op("MatrixDiagPart", [t])
        labels = "".join(labels[i] for i in rest) + c
    return t, labels


def _sum_out(t, labels, keep):
    """Sums over the labels of t that are not in `keep`."""
    axes = [i for i, c in enumerate(labels) if c not in keep]
    if not axes:
        return t, labels
    t = _reduction.reduce_sum(t, axes)
    return t, "".join(c for c in labels if c in keep)


def _contract(a, a_labels, b, b_labels, needed):
    """a and b contracted over their shared labels not in `needed`; returns (t, labels)."""
    batch = [c for c in a_labels if c in b_labels and c in needed]
    contracted = [c for c in a_labels if c in b_labels and c not in needed]
    a_kept = [c for c in a_labels if c not in b_labels]
    b_kept = [c for c in b_labels if c not in a_labels]
    a = _transpose(a, a_labels, batch + a_kept + contracted)
    b = _transpose(b, b_labels, batch + contracted + b_kept)
    a_dims, b_dims = _dims(a), _dims(b)
    nb = len(batch)
    a_batch, b_batch = a_dims[:nb], b_dims[:nb]
    a_kept_dims = a_dims[nb:nb + len(a_kept)]
    b_kept_dims = b_dims[nb + len(contracted):]
    k = _product(a_dims[nb + len(a_kept):])
    a = _reshape(a, a_batch + [_product(a_kept_dims), k])
    b = _reshape(b, b_batch + [k, _product(b_kept_dims)])
    product = _op("BatchMatMulV2", [a, b])
    # Batch dimensions of size 1 on one side broadcast to the other's size.
    out_batch = [bd if (isinstance(ad, int) and ad == 1) else ad
                 for ad, bd in zip(a_batch, b_batch)]
    product = _reshape(product, out_batch + a_kept_dims + b_kept_dims)
    return product, "".join(batch + a_kept + b_kept)


@tf_export("einsum", "linalg.einsum")
def einsum(equation, *inputs, **kwargs):
    """Contracts `inputs` as the equation says ("ij,jk->ik", "...ij,...jk", "ii->i", "bij->b"
    ...). Operands need statically known ranks."""
    name = kwargs.pop("name", None)
    if kwargs:
        raise TypeError(f"Invalid keyword arguments for einsum: {', '.join(kwargs)}")
    if not inputs:
        raise ValueError("einsum needs at least one operand")
    with _ops.name_scope(name, "einsum", list(inputs)):
        operands = [_ops.convert_to_tensor(t, name=f"input_{i}") for i, t in enumerate(inputs)]
        for t in operands[1:]:
            if t.dtype != operands[0].dtype:
                raise TypeError("einsum operands must have one dtype, got "
                                f"{operands[0].dtype.name} and {t.dtype.name}")
        labels, output = _parse(equation, operands)
        pieces = []
        for i, (t, spec) in enumerate(zip(operands, labels)):
            t, spec = _take_diagonals(t, spec)
            later = output + "".join(labels[:i] + labels[i + 1:])
            pieces.append(_sum_out(t, spec, later))
        result, result_labels = pieces[0]
        for i in range(1, len(pieces)):
            t, spec = pieces[i]
            needed = output + "".join(p[1] for p in pieces[i + 1:])
            result, result_labels = _sum_out(result, result_labels, needed + spec)
            result, result_labels = _contract(result, result_labels, t, spec, needed)
        result, result_labels = _sum_out(result, result_labels, output)
        return _transpose(result, result_labels, output)


def _tensordot_axes(axes, a_rank, b_rank):
    if isinstance(axes, (int, np.integer)):
        if axes < 0:
            raise ValueError(f"'axes' must be at least 0, got {axes}.")
        if axes > a_rank or axes > b_rank:
            raise ValueError(f"'axes' must not be larger than the number of dimensions of "
                             f"tensor a ({a_rank}) or b ({b_rank}), got {axes}.")
        return list(range(a_rank - axes, a_rank)), list(range(axes))
    if isinstance(axes, _ops.Tensor):
        raise NotImplementedError("tf.tensordot needs `axes` as Python integers")
    if len(axes) != 2:
        raise ValueError(f"'axes' must be an integer or have length 2, got {axes}.")
    a_axes, b_axes = axes
    a_axes = [a_axes] if isinstance(a_axes, (int, np.integer)) else list(a_axes)
    b_axes = [b_axes] if isinstance(b_axes, (int, np.integer)) else list(b_axes)
    if len(a_axes) != len(b_axes):
        raise ValueError(f"Different number of contraction axes 'a' and 'b', {len(a_axes)} != "
                         f"{len(b_axes)}.")
    return [x % a_rank for x in a_axes], [x % b_rank for x in b_axes]


@tf_export("tensordot", "linalg.tensordot")
def tensordot(a, b, axes, name=None):
    """Sums a * b over a's axes[0] against b's axes[1] (or a's last `axes` axes against b's
    first); the result has a's free axes followed by b's."""
    with _ops.name_scope(name, "Tensordot", [a, b, axes]):
        a = _ops.convert_to_tensor(a, name="a")
        b = _ops.convert_to_tensor(b, name="b", dtype=a.dtype)
        a_rank, b_rank = _static_rank(a), _static_rank(b)
        a_axes, b_axes = _tensordot_axes(axes, a_rank, b_rank)
        letters = iter(string.ascii_letters)
        a_labels = [next(letters) for _ in range(a_rank)]
        b_labels = [next(letters) for _ in range(b_rank)]
        for i, j in zip(a_axes, b_axes):
            b_labels[j] = a_labels[i]
        free = [c for i, c in enumerate(a_labels) if i not in a_axes]
        free += [c for j, c in enumerate(b_labels) if j not in b_axes]
        return einsum(f"{''.join(a_labels)},{''.join(b_labels)}->{''.join(free)}", a, b)
