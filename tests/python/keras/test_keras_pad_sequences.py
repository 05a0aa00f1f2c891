"""keras.preprocessing.sequence.pad_sequences (also keras.utils.pad_sequences) against tf-keras:
padding and truncating at either end, maxlen, value, dtype, item shapes and errors."""

import json

import numpy as np
import pytest

import flowstone as tf

import tf_keras_peer

keras = tf.keras
pad_sequences = keras.preprocessing.sequence.pad_sequences
needs_tf_keras = pytest.mark.skipif(not tf_keras_peer.available(),
                                    reason=tf_keras_peer.SKIP_REASON)

# Argument lists as code, evaluated unchanged by both implementations.
CASES = [
    "[[1, 2, 3], [4, 5], [6]]",
    "[[1, 2, 3], [4, 5], [6]], padding='post'",
    "[[1, 2, 3, 4], [5, 6], []], maxlen=3",
    "[[1, 2, 3, 4], [5, 6], []], maxlen=3, truncating='post'",
    "[[1, 2, 3, 4], [5, 6]], maxlen=2, padding='post', truncating='post', value=-1",
    "[[1.5, 2.5], [3.5]], dtype='float32', value=0.25",
    "[[1, 2], [3]], maxlen=5, dtype='int64'",
    "[[[1, 2], [3, 4]], [[5, 6]]], maxlen=3",
    "[np.arange(5), np.arange(2)], maxlen=4, padding='post'",
    "[['a', 'b'], ['c']], dtype=object, value='<pad>'",
    "[['a', 'b'], ['c']], dtype='<U5', value='-'",
    "[[], []]",
]


@pytest.fixture(scope="module")
def tf_keras_results():
    script = (f"import json\nout = []\nfor code in {CASES!r}:\n"
              "    result = eval('keras.utils.pad_sequences(' + code + ')')\n"
              "    out.append({'value': result.tolist(), 'dtype': str(result.dtype),"
              " 'shape': list(result.shape)})\n"
              "print(json.dumps(out))\n")
    return json.loads(tf_keras_peer.run(script, cwd=None).strip().splitlines()[-1])


@needs_tf_keras
@pytest.mark.parametrize("index", range(len(CASES)), ids=CASES)
def test_matches_tf_keras(index, tf_keras_results):
    result = eval(f"pad_sequences({CASES[index]})", {"pad_sequences": pad_sequences,  # noqa: S307
                                                     "np": np})
    theirs = tf_keras_results[index]
    assert list(result.shape) == theirs["shape"]
    assert str(result.dtype) == theirs["dtype"]
    assert result.tolist() == theirs["value"]


def test_values_and_aliases():
    assert keras.utils.pad_sequences is pad_sequences
    np.testing.assert_array_equal(pad_sequences([[1, 2, 3], [4]], maxlen=2),
                                  [[2, 3], [0, 4]])
    np.testing.assert_array_equal(
        pad_sequences([[1, 2, 3], [4]], maxlen=2, padding="post", truncating="post"),
        [[1, 2], [4, 0]])
    assert pad_sequences([[1]], dtype="float32").dtype == np.float32


def test_errors():
    with pytest.raises(ValueError, match="`sequences` must be iterable"):
        pad_sequences(5)
    with pytest.raises(ValueError, match="must be a list of iterables. Found non-iterable: 3"):
        pad_sequences([[1], 3])
    with pytest.raises(ValueError, match='Padding type "middle" not understood'):
        pad_sequences([[1]], padding="middle")
    with pytest.raises(ValueError, match='Truncating type "both" not understood'):
        pad_sequences([[1]], truncating="both")
    with pytest.raises(ValueError, match="is not compatible with `value`'s type"):
        pad_sequences([["a"]], value="x")
    with pytest.raises(ValueError, match="Shape of sample \\(3,\\) of sequence at position 1 "
                                         "is different from expected shape \\(2,\\)"):
        pad_sequences([[[1, 2]], [[1, 2, 3]]])
