"""tf.TypeSpec, tf.TensorSpec, tf.SparseTensorSpec, tf.RaggedTensorSpec and
tf.type_spec_from_value: construction, equality, compatibility, batching, against TensorFlow's
reprs and answers where it is installed."""

import json

import numpy as np
import pytest

import flowstone as tf
from peers import requires_tensorflow, run_tensorflow


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def test_specs_are_type_specs_with_tensorflow_reprs():
    for spec in [tf.TensorSpec([2], tf.int32), tf.SparseTensorSpec([None, 3]),
                 tf.RaggedTensorSpec([2, None], tf.int32)]:
        assert isinstance(spec, tf.TypeSpec)
    assert repr(tf.SparseTensorSpec([None, 3], tf.float32)) == \
        "SparseTensorSpec(TensorShape([None, 3]), tf.float32)"
    assert repr(tf.RaggedTensorSpec([2, None], tf.int32)) == \
        "RaggedTensorSpec(TensorShape([2, None]), tf.int32, 1, tf.int64)"
    assert tf.RaggedTensorSpec([2, None, None]).ragged_rank == 2  # default: rank - 1
    assert tf.RaggedTensorSpec([2, None], row_splits_dtype=tf.int32).row_splits_dtype == tf.int32


def test_type_spec_from_value():
    sp = tf.SparseTensor([[0, 1]], [1.5], [2, 3])
    rt = tf.ragged.constant([[1, 2], [3]])
    assert tf.type_spec_from_value(sp) == tf.SparseTensorSpec([2, 3], tf.float32)
    assert tf.type_spec_from_value(rt) == tf.RaggedTensorSpec([2, None], tf.int32, 1)
    assert tf.type_spec_from_value(tf.constant([1, 2])) == tf.TensorSpec([2], tf.int32)
    assert tf.type_spec_from_value(np.zeros([3], np.float64)) == tf.TensorSpec([3], tf.float64)
    value = tf.SparseTensorValue(np.array([[0]]), np.array([2.0], np.float32), np.array([4]))
    assert tf.type_spec_from_value(value) == tf.SparseTensorSpec([4], tf.float32)
    with pytest.raises(TypeError, match="Could not build a TypeSpec for .* of unsupported type"):
        tf.type_spec_from_value(object())


def test_compatibility_and_most_specific_type():
    spec = tf.SparseTensorSpec([None, 3], tf.float32)
    assert spec.is_compatible_with(tf.SparseTensor([[0, 1]], [1.5], [2, 3]))
    assert not spec.is_compatible_with(tf.SparseTensor([[0, 1]], [1.5], [2, 4]))
    assert not spec.is_compatible_with(tf.SparseTensorSpec([None, 3], tf.int32))
    assert not spec.is_compatible_with(tf.TensorSpec([None, 3], tf.float32))
    relaxed = tf.RaggedTensorSpec([2, None], tf.int32).most_specific_compatible_type(
        tf.RaggedTensorSpec([3, None], tf.int32))
    assert relaxed == tf.RaggedTensorSpec([None, None], tf.int32)
    with pytest.raises(ValueError, match="No TypeSpec is compatible"):
        tf.RaggedTensorSpec([2, None], tf.int32).most_specific_compatible_type(
            tf.RaggedTensorSpec([2, None], tf.int64))
    assert tf.SparseTensorSpec([2], tf.float32) != tf.SparseTensorSpec([3], tf.float32)
    assert len({tf.SparseTensorSpec([2]), tf.SparseTensorSpec([2])}) == 1


def test_bad_ragged_specs_raise():
    with pytest.raises(ValueError, match="Must specify ragged_rank or a shape with a known rank"):
        tf.RaggedTensorSpec(None, tf.int32)
    with pytest.raises(ValueError, match="ragged_rank must be less than rank"):
        tf.RaggedTensorSpec([2, None], tf.int32, ragged_rank=2)
    with pytest.raises(ValueError, match="row_splits_dtype must be int32 or int64"):
        tf.RaggedTensorSpec([2, None], row_splits_dtype=tf.float32)


def test_value_types():
    assert tf.SparseTensorSpec([2]).value_type is tf.SparseTensor
    assert tf.RaggedTensorSpec([2, None]).value_type is tf.RaggedTensor
    assert tf.TensorSpec([2]).value_type is tf.Tensor


# The same questions put to TensorFlow's specs and to Flowstone's (run with `tf` bound).
SPEC_QUESTIONS = """
sp = tf.SparseTensor([[0, 1]], [1.5], [2, 3])
rt = tf.ragged.constant([[[1], [2, 3]], [[4]]])
answers = [
    repr(tf.type_spec_from_value(sp)),
    repr(tf.type_spec_from_value(rt)),
    repr(tf.type_spec_from_value(tf.constant([[1.0]]))),
    repr(tf.RaggedTensorSpec([2, None, None], tf.float64)),
    repr(tf.SparseTensorSpec([None, 3], tf.float32).most_specific_compatible_type(
        tf.SparseTensorSpec([4, None], tf.float32))),
    tf.SparseTensorSpec([None, 3], tf.float32).is_compatible_with(sp),
    tf.RaggedTensorSpec([None, None, None], tf.int32).is_compatible_with(rt),
    tf.RaggedTensorSpec([None, None], tf.int32).is_compatible_with(rt),
]
"""


@requires_tensorflow
def test_answers_match_tensorflow():
    script = ("import json\nimport tensorflow as tf\n" + SPEC_QUESTIONS +
              "print(json.dumps(answers))\n")
    theirs = json.loads(run_tensorflow(script).strip().splitlines()[-1])
    namespace = {"tf": tf}
    exec(SPEC_QUESTIONS, namespace)
    assert namespace["answers"] == theirs


def test_a_tensor_spec_is_not_compatible_with_composites():
    sp = tf.SparseTensor([[0, 1]], [1.5], [2, 3])
    assert not tf.TensorSpec([2, 3], tf.float32).is_compatible_with(sp)
    assert not tf.TensorSpec([2, None], tf.int32).is_compatible_with(tf.ragged.constant([[1]]))
    assert tf.TensorSpec([2, None], tf.int32).is_compatible_with(tf.constant([[1, 2], [3, 4]]))
    window = tf.data.Dataset.range(4).window(2).element_spec
    assert window.is_compatible_with(window)
    assert not window.is_compatible_with(tf.TensorSpec([], tf.variant))
