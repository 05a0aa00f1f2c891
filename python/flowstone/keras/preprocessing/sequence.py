"""tf.keras.preprocessing.sequence: padding variable-length sequences into one array."""

import numpy as np

from flowstone.util.tf_export import tf_export


@tf_export("keras.preprocessing.sequence.pad_sequences", "keras.utils.pad_sequences")
def pad_sequences(sequences, maxlen=None, dtype="int32", padding="pre", truncating="pre",
                  value=0.0):
    """A [len(sequences), maxlen, *item_shape] array of `dtype`: each sequence cut to maxlen
    (dropping its start with truncating='pre', its end with 'post') and filled with `value`
    before it (padding='pre') or after it ('post'). maxlen defaults to the longest sequence;
    the item shape is the first non-empty sequence's, and every other must match it."""
    if not hasattr(sequences, "__len__"):
        raise ValueError("`sequences` must be iterable.")
    if padding not in ("pre", "post"):
        raise ValueError(f'Padding type "{padding}" not understood: use "pre" or "post".')
    if truncating not in ("pre", "post"):
        raise ValueError(f'Truncating type "{truncating}" not understood: use "pre" or "post".')
    lengths, item_shape = [], None
    for sequence in sequences:
        try:
            lengths.append(len(sequence))
        except TypeError as e:
            raise ValueError("`sequences` must be a list of iterables. Found non-iterable: "
                             f"{sequence}") from e
        if item_shape is None and len(sequence):
            item_shape = np.asarray(sequence).shape[1:]
    item_shape = item_shape or ()
    if maxlen is None:
        maxlen = max(lengths, default=0)
    is_text = np.issubdtype(dtype, np.str_)
    if isinstance(value, str) and dtype != object and not is_text:
        raise ValueError(f"`dtype` {dtype} is not compatible with `value`'s type: "
                         f"{type(value)}\nYou should set `dtype=object` for variable length "
                         "strings.")
    result = np.full((len(sequences), maxlen) + item_shape, value, dtype=dtype)
    for index, sequence in enumerate(sequences):
        if not len(sequence) or maxlen == 0:
            continue
        kept = sequence[-maxlen:] if truncating == "pre" else sequence[:maxlen]
        kept = np.asarray(kept, dtype=dtype)
        if kept.shape[1:] != item_shape:
            raise ValueError(f"Shape of sample {kept.shape[1:]} of sequence at position "
                             f"{index} is different from expected shape {item_shape}")
        if padding == "post":
            result[index, :len(kept)] = kept
        else:
            result[index, maxlen - len(kept):] = kept
    return result
