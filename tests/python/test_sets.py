"""tf.sets: sizes, intersections, unions and differences of dense and sparse sets, against real
TensorFlow's results, and the errors for bad inputs."""

import contextlib
import io
import json

import numpy as np
import pytest

import flowstone as tf
from peers import HAVE_PEER, SKIP_REASON, run_tensorflow

A = [[1, 2, 3, 3], [4, 5, 4, 6], [7, 7, 7, 7]]
B = [[2, 3, 9, 9], [8, 8, 8, 8], [7, 1, 0, 7]]
SPARSE = ([[0, 0], [0, 2], [1, 1], [1, 3]], [3, 11, 4, 12], [3, 4])

# Each case: (function name, kwargs as source text, dense/sparse for a, for b).
CASES = [
    ("intersection", "", "dense", "dense"),
    ("union", "", "dense", "dense"),
    ("difference", "", "dense", "dense"),
    ("difference", "aminusb=False", "dense", "dense"),
    ("intersection", "", "dense", "sparse"),
    ("difference", "", "sparse", "dense"),  # swapped inside: b-a of (dense, sparse)
    ("union", "", "sparse", "sparse"),
    ("difference", "aminusb=False", "sparse", "sparse"),
]

PROGRAM = """
import json
{imports}
A, B, SPARSE = {A!r}, {B!r}, {SPARSE!r}

def operand(kind, dense):
    return tf.constant(dense) if kind == "dense" else tf.SparseTensor(*SPARSE)

out = []
with tf.Session() as sess:
    for name, kwargs, kind_a, kind_b in {CASES!r}:
        a, b = operand(kind_a, A), operand(kind_b, B)
        result = eval(f"tf.sets.{{name}}(a, b, {{kwargs}})")
        value = sess.run(result)
        out.append([value.indices.tolist(), value.values.tolist(), value.dense_shape.tolist()])
    out.append(sess.run(tf.sets.size(tf.SparseTensor(*SPARSE))).tolist())
print(json.dumps(out))
"""


def run_program(imports):
    return PROGRAM.format(imports=imports, A=A, B=B, SPARSE=SPARSE, CASES=CASES)


def flowstone_results():
    namespace = {}
    buffer = io.StringIO()
    with tf.Graph().as_default(), contextlib.redirect_stdout(buffer):
        exec(run_program("import flowstone as tf"), namespace)  # noqa: S102 - our own program
    return json.loads(buffer.getvalue())


def test_results_against_numpy_sets():
    results = flowstone_results()
    inter = results[0]
    # Row by row: {1,2,3} & {2,3,9} = [2,3]; {4,5,6} & {8} = []; {7} & {0,1,7} = [7].
    assert inter == [[[0, 0], [0, 1], [2, 0]], [2, 3, 7], [3, 2]]
    union = results[1]
    assert union[1] == [1, 2, 3, 9, 4, 5, 6, 8, 0, 1, 7] and union[2] == [3, 4]
    assert results[2] == [[[0, 0], [1, 0], [1, 1], [1, 2]], [1, 4, 5, 6], [3, 3]]
    assert results[-1] == [2, 2, 0]


@pytest.mark.skipif(not HAVE_PEER, reason=SKIP_REASON)
def test_every_combination_matches_tensorflow():
    printed = run_tensorflow(run_program("import tensorflow.compat.v1 as tf\n"
                                         "tf.disable_eager_execution()"))
    assert flowstone_results() == json.loads(printed.splitlines()[-1])


def test_strings_and_empty_results():
    a = tf.constant([[b"b", b"a"], [b"c", b"c"]])
    b = tf.constant([[b"a", b"z"], [b"c", b"c"]])
    with tf.Session() as sess:
        diff = sess.run(tf.sets.difference(a, b))
        none = sess.run(tf.sets.intersection(tf.constant([[1, 2]]), tf.constant([[3, 4]])))
    assert diff.values.tolist() == [b"b"] and diff.dense_shape.tolist() == [2, 1]
    assert none.indices.shape == (0, 2) and none.dense_shape.tolist() == [1, 0]


def test_errors():
    with pytest.raises(TypeError, match="Expected `SparseTensor`"):
        tf.sets.size(tf.constant([[1, 2]]))
    with pytest.raises(TypeError, match="Types don't match"):
        tf.sets.union(tf.constant([[1]]), tf.constant([[1]], tf.int64))
    with pytest.raises(TypeError, match="'a' has invalid dtype"):
        tf.sets.union(tf.constant([[1.0]]), tf.constant([[1.0]]))
    with pytest.raises(ValueError, match="rank 2 or more"):
        tf.sets.union(tf.constant([1, 2]), tf.constant([1, 2]))
    ragged_groups = tf.sets.union(tf.placeholder(tf.int32, [None, 2]),
                                  tf.placeholder(tf.int32, [None, 2]))
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"set1 has shape \[2,2\] and set2 \[3,2\]"):
            sess.run(ragged_groups, {"Placeholder:0": [[1, 2]] * 2, "Placeholder_1:0": [[1, 2]] * 3})
        unordered = tf.SparseTensor([[0, 1], [0, 0]], [1, 2], [1, 2])
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"set_indices\[1\] = \[0,0\] does not come after"):
            sess.run(tf.sets.size(unordered))
        assert sess.run(tf.sets.size(unordered, validate_indices=False)).tolist() == [2]
        outside = tf.SparseTensor([[0, 5]], [1], [1, 2])
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"set2_indices\[0\] = \[0,5\] is out of bounds"):
            sess.run(tf.sets.union(tf.constant([[1, 2]]), outside))
