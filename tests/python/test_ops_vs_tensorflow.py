"""Every conformance case (op_cases.py) run by real TensorFlow too: the same op, through
tf.raw_ops, with the same inputs and attrs, in one TensorFlow process (the peer venv). Integer,
bool and string outputs must be equal; float outputs within FLOAT_TOLERANCE, or the op's entry
in KNOWN_DIFFERENCES, which says why (docs/COMPAT.md lists the same). An op TensorFlow lacks, or
a case built around an op (datasets, variants), is skipped with the reason."""

import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import flowstone as tf
from flowstone import _C
from peers import HAVE_PEER, PEER_PYTHON, SKIP_REASON

from op_cases import CASES
from test_op_conformance import _build

pytestmark = pytest.mark.skipif(not HAVE_PEER, reason=SKIP_REASON)

# Relative and absolute tolerance by output dtype: a few float32 ulps (TensorFlow and Flowstone
# may sum in another order or vectorize transcendental functions differently).
FLOAT_TOLERANCE = {np.float16: (2e-3, 1e-3), np.float32: (2e-5, 1e-6),
                   np.float64: (1e-10, 1e-12), np.complex64: (2e-5, 1e-6),
                   np.complex128: (1e-10, 1e-12)}


class Known:
    """How an op's outputs may differ from TensorFlow's, and why (docs/COMPAT.md says the same).
    `outputs`: the outputs it applies to (all when None); `rtol`/`atol`: a wider float bound;
    `up_to_sign`: values compared in absolute value (eigenvectors, singular vectors);
    `tensorflow_rejects`: TensorFlow's kernel raises where Flowstone's accepts the case."""

    def __init__(self, why, outputs=None, rtol=None, atol=None, up_to_sign=False,
                 tensorflow_rejects=False, shapes_differ=False):
        self.why = why
        self.outputs = outputs
        self.rtol, self.atol = rtol, atol
        self.up_to_sign = up_to_sign
        self.tensorflow_rejects = tensorflow_rejects
        self.shapes_differ = shapes_differ

    def covers(self, output):
        return self.outputs is None or output in self.outputs


KNOWN_DIFFERENCES = {
    "Erfinv": Known("Flowstone's float64 erfinv agrees with scipy to 1e-12; TensorFlow's is off "
                    "by up to 2e-3 (relative) near +-1 and 1e-4 near 0", rtol=3e-3, atol=1e-12),
    "SelfAdjointEigV2": Known("eigenvectors are defined up to sign; with compute_v=False the "
                              "unused v is an empty vector in Flowstone, a scalar in TensorFlow",
                              outputs={1}, up_to_sign=True, shapes_differ=True),
    "Svd": Known("singular vectors are defined up to sign; with compute_uv=False the unused u "
                 "and v are empty vectors in Flowstone, scalars in TensorFlow",
                 outputs={1, 2}, up_to_sign=True, shapes_differ=True),
    "RFFT": Known("the kernel zero-pads an input shorter than fft_length (TensorFlow's "
                  "tf.signal.rfft pads before its kernel, which rejects it)",
                  tensorflow_rejects=True),
    "CTCBeamSearchDecoder": Known("float64 log probabilities: TensorFlow's differ from the exact "
                                  "sum over paths by up to 3e-8 (relative), Flowstone's by 1e-12",
                                  outputs={3, 9}, rtol=1e-7, atol=1e-12),
    "Substr": Known("pos and len broadcast against each other (TensorFlow's kernel wants them of "
                    "one shape)", tensorflow_rejects=True),
}

# Ops TensorFlow has but does not expose in tf.raw_ops (its internal fused ops): not compared
# here, with where they are compared with TensorFlow instead.
NOT_IN_RAW_OPS = {
    **{op: "TensorFlow's remapper-internal op is not in tf.raw_ops; test_fusion.py runs a "
           "GraphDef that TensorFlow's grappler fused and compares with TensorFlow's outputs"
       for op in ("_FusedConv2D", "_FusedMatMul")},
    "_ReluGradBiasAddGrad": "Flowstone's own fused op (TensorFlow has none); test_fusion.py "
                            "checks it bit for bit against ReluGrad and BiasAddGrad",
    **{op: "Flowstone's own MaxPool / MaxPoolGrad pair (TensorFlow's oneDNN pair is internal); "
           "test_max_pool_grad.py checks it bit for bit against MaxPool and MaxPoolGrad"
       for op in ("_MaxPoolWithWorkspace", "_MaxPoolGradWithWorkspace")},
}

# Attrs raw_ops names differently from the op's schema: (op, attr) -> raw_ops keyword.
RAW_OPS_ATTR_NAMES = {("Squeeze", "squeeze_dims"): "axis"}

# TensorFlow errors that say it has no CPU kernel for the case's dtypes or layout (Flowstone
# has more): the case is skipped, not compared.
NO_TENSORFLOW_KERNEL = ("Could not find device for node", "is not in the list of allowed values",
                        "only supports NHWC", "currently only supports", "Signature mismatch")

TF_SCRIPT = textwrap.dedent("""
    import inspect, os, pickle, sys
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    import numpy as np
    import tensorflow as tf

    def to_numpy(value):
        if isinstance(value, (list, tuple)):
            return [to_numpy(v) for v in value]
        if hasattr(value, "numpy"):
            return value.numpy()
        return value

    def as_tensor(value):
        # tf.constant keeps the numpy dtype; raw_ops would convert a float64 array to the
        # op's default float32.
        if isinstance(value, list):
            return [as_tensor(v) for v in value]
        return tf.constant(value)

    def as_attr(value):
        if isinstance(value, tuple) and value and value[0] == "dtype":
            return tf.as_dtype(value[1])
        if isinstance(value, list) and value and isinstance(value[0], tuple):
            return [as_attr(v) for v in value]
        return value

    with open(sys.argv[1], "rb") as f:
        calls = pickle.load(f)
    results = {}
    with tf.device("/cpu:0"):
        for key, op, inputs, attrs in calls:
            fn = getattr(tf.raw_ops, op, None)
            if fn is None:
                results[key] = ("missing", None)
                continue
            # raw_ops takes inputs by its own (Python) names, in the op's order, and infers the
            # type and length attrs from the inputs.
            params = [p for p in inspect.signature(fn).parameters if p != "name"]
            kwargs = {params[i]: as_tensor(v) for i, v in enumerate(inputs)}
            kwargs.update({k: as_attr(v) for k, v in attrs.items() if k in params})
            try:
                results[key] = ("ok", to_numpy(fn(**kwargs)))
            except Exception as e:  # recorded and compared by the test
                results[key] = ("error", f"{type(e).__name__}: {str(e)[:300]}")
    with open(sys.argv[2], "wb") as f:
        pickle.dump(results, f)
""")


def _attr_for_tf(value):
    if isinstance(value, tf.DType):
        return ("dtype", value.name)
    if isinstance(value, (list, tuple)) and value and isinstance(value[0], tf.DType):
        return [("dtype", v.name) for v in value]
    return value


def _tf_inputs(case):
    """The case's inputs in the op's input order, list inputs grouped (None if the grouping is
    ambiguous)."""
    op_def = _C.op_def(case.op)
    inputs = list(case.inputs)
    args = op_def["inputs"]
    lists = [name for name, is_list in args if is_list]
    fixed = len(args) - len(lists)
    if lists and (len(inputs) - fixed) % len(lists):
        return None
    per_list = (len(inputs) - fixed) // len(lists) if lists else 0
    out, position = [], 0
    for _, is_list in args:
        if is_list:
            out.append(inputs[position:position + per_list])
            position += per_list
        else:
            out.append(inputs[position])
            position += 1
    return out if position == len(inputs) else None


def _comparable_cases():
    cases, skipped = [], {}
    for index, case in enumerate(CASES):
        key = f"{index}:{case!r}"
        if case.op in NOT_IN_RAW_OPS:
            skipped[key] = NOT_IN_RAW_OPS[case.op]
            continue
        if case.build is not None:
            skipped[key] = "built around the op (datasets, variants): not a plain raw_ops call"
            continue
        inputs = _tf_inputs(case)
        if inputs is None:
            skipped[key] = "list inputs whose grouping the schema does not fix"
            continue
        cases.append((key, case, inputs))
    return cases, skipped


CASES_TO_RUN, SKIPPED = _comparable_cases()


@pytest.fixture(scope="module")
def tensorflow_results(tmp_path_factory):
    work = tmp_path_factory.mktemp("tf_ops")
    calls = [(key, case.op, inputs,
              {RAW_OPS_ATTR_NAMES.get((case.op, k), k): _attr_for_tf(v)
               for k, v in case.attrs.items()})
             for key, case, inputs in CASES_TO_RUN]
    (work / "calls.pkl").write_bytes(pickle.dumps(calls))
    (work / "run.py").write_text(TF_SCRIPT)
    proc = subprocess.run([PEER_PYTHON, str(work / "run.py"), str(work / "calls.pkl"),
                           str(work / "results.pkl")], capture_output=True, text=True,
                          timeout=1200, env={"CUDA_VISIBLE_DEVICES": "", "PATH": os.defpath})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return pickle.loads((work / "results.pkl").read_bytes())


def _flowstone_outputs(case):
    graph = tf.Graph()
    placeholders, op = _build(case, graph)
    with tf.Session(graph=graph) as sess:
        return sess.run(op.outputs, dict(zip(placeholders, case.inputs)))


def _as_list(value, count, op=None):
    if count == 1 and not isinstance(value, list):
        return [value]
    outputs = _C.op_def(op)["outputs"] if op else []
    if len(outputs) == len(value) and any(is_list for _, is_list in outputs):
        # TensorFlow returns a list output (RaggedGather's splits) as a nested list.
        return [item for v, (_, is_list) in zip(value, outputs)
                for item in (v if is_list else [v])]
    return list(value)


def _compare(case, mine, theirs):
    known = KNOWN_DIFFERENCES.get(case.op)
    for i, (a, b) in enumerate(zip(mine, theirs)):
        a = np.array(a, dtype=object) if isinstance(a, bytes) else np.asarray(a)
        b = np.array(b, dtype=object) if isinstance(b, bytes) else np.asarray(b)
        known_here = known is not None and known.covers(i)
        if known_here and known.shapes_differ and a.size == 0 and a.shape != b.shape:
            continue  # an output the attrs leave unused
        assert a.shape == b.shape, f"{case} output {i}: shape {a.shape} vs TensorFlow's {b.shape}"
        if a.dtype.kind in "fc":
            rtol, atol = FLOAT_TOLERANCE.get(a.dtype.type, (1e-6, 1e-6))
            if known_here and known.rtol is not None:
                rtol, atol = known.rtol, known.atol
            if known_here and known.up_to_sign:
                a, b = np.abs(a), np.abs(b)
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True,
                                       err_msg=f"{case} output {i} vs TensorFlow")
        else:
            assert a.dtype == b.dtype or a.dtype == object, (
                f"{case} output {i}: dtype {a.dtype} vs TensorFlow's {b.dtype}")
            np.testing.assert_array_equal(a, b, err_msg=f"{case} output {i} vs TensorFlow")


@pytest.mark.parametrize("key, case, inputs", CASES_TO_RUN, ids=[k for k, _, _ in CASES_TO_RUN])
def test_case_matches_tensorflow(tensorflow_results, key, case, inputs):
    status, theirs = tensorflow_results[key]
    if status == "missing":
        pytest.skip(f"TensorFlow has no op {case.op} (Flowstone's own)")
    if status == "error" and any(text in theirs for text in NO_TENSORFLOW_KERNEL):
        pytest.skip(f"TensorFlow has no CPU kernel for this case: {theirs[:160]}")
    mine = _flowstone_outputs(case)
    known = KNOWN_DIFFERENCES.get(case.op)
    if status == "error" and known is not None and known.tensorflow_rejects:
        pytest.skip(f"{case.op}: {known.why}")
    assert status == "ok", f"{case}: TensorFlow raised {theirs}; Flowstone gave {mine!r:.300}"
    _compare(case, mine, _as_list(theirs, len(mine), case.op))


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-rs"]))
