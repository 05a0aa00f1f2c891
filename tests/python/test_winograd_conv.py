"""Winograd F(4x4, 3x3) convolutions (src/ops/nn/winograd_conv.cc): Conv2D, _FusedConv2D,
Conv2DBackpropInput and Conv2DBackpropFilter at stride 1 with 3x3 float32 NHWC filters.

FLOWSTONE_CONV_WINOGRAD is read once per process, so each mode runs in a subprocess of its own:
"always" puts every eligible convolution through Winograd (small test shapes included), "0"
through the direct path. Results are checked against float64 numpy within the bound stated in
docs/COMPAT.md, and for bit-identical results at 1, 2 and 4 threads.
"""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from conv_reference import geometry

HERE = os.path.dirname(os.path.abspath(__file__))

# (batch, height, width, in_channels, out_channels, padding): odd sizes, 1x1 and 2x2 images,
# channel counts off the 16-lane vectors, batch 1, and the tutorial CNN's shapes (cut in batch).
CASES = [
    (2, 14, 14, 32, 64, "SAME"),
    (2, 7, 7, 64, 128, "SAME"),
    (3, 13, 13, 32, 64, "VALID"),
    (1, 11, 9, 17, 19, "SAME"),
    (2, 10, 13, 5, 33, "VALID"),
    (4, 1, 1, 16, 16, "SAME"),
    (1, 2, 2, 3, 70, "SAME"),
    (1, 3, 3, 20, 7, "VALID"),
    (1, 29, 31, 48, 40, "SAME"),
]

# The bound on |winograd - exact| relative to the size of the terms summed,
# max over outputs of sum |x| |f|: F(4x4, 3x3)'s transforms scale values by up to 8x10 and
# round at every step, so this is about 80 float32 ulps of the largest term sum.
BOUND = 1e-5

SCRIPT = """
import sys
import numpy as np
import flowstone as tf

cases = {cases!r}
threads = {threads}
rng = np.random.RandomState(11)
config = tf.ConfigProto(intra_op_parallelism_threads=threads, inter_op_parallelism_threads=1)
out = {{}}
for i, (n, h, w, c, k, padding) in enumerate(cases):
    x_value = rng.standard_normal((n, h, w, c)).astype(np.float32)
    f_value = rng.standard_normal((3, 3, c, k)).astype(np.float32)
    b_value = rng.standard_normal(k).astype(np.float32)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, h, w, c])
        f = tf.Variable(f_value)
        y = tf.nn.conv2d(x, f, [1, 1, 1, 1], padding)
        fused = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, f, [1, 1, 1, 1], padding), b_value))
        dy_value = rng.standard_normal([n] + y.shape.as_list()[1:]).astype(np.float32)
        dx = tf.nn.conv2d_backprop_input([n, h, w, c], f, dy_value, [1, 1, 1, 1], padding)
        df = tf.nn.conv2d_backprop_filter(x, [3, 3, c, k], dy_value, [1, 1, 1, 1], padding)
        constant = tf.nn.conv2d(x, tf.constant(f_value), [1, 1, 1, 1], padding)
        init = tf.global_variables_initializer()
    with tf.Session(graph=graph, config=config) as sess:
        sess.run(init)
        for run in range(2):  # the second run reads the constant filter's kept transform
            got = sess.run([y, fused, dx, constant, df], {{x: x_value}})
        out.update({{f"x{{i}}": x_value, f"f{{i}}": f_value, f"b{{i}}": b_value, f"dy{{i}}": dy_value,
                    f"y{{i}}": got[0], f"fused{{i}}": got[1], f"dx{{i}}": got[2],
                    f"const{{i}}": got[3], f"df{{i}}": got[4]}})
np.savez(sys.argv[1], **out)
"""


def run_cases(tmp_path, mode, threads=1, cases=CASES):
    """Runs CASES in a subprocess with FLOWSTONE_CONV_WINOGRAD=mode; returns the arrays."""
    path = str(tmp_path / f"out_{mode}_{threads}.npz")
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    if mode is None:
        env.pop("FLOWSTONE_CONV_WINOGRAD", None)
    else:
        env["FLOWSTONE_CONV_WINOGRAD"] = mode
    script = textwrap.dedent(SCRIPT.format(cases=cases, threads=threads))
    proc = subprocess.run([sys.executable, "-c", script, path], env=env, cwd=HERE,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with np.load(path) as data:
        return dict(data)


def has_avx512():
    with open("/proc/cpuinfo") as f:
        return " avx512f" in f.read()


requires_avx512 = pytest.mark.skipif(not has_avx512(),
                                     reason="Winograd convolutions need AVX-512F")


def padded(x, padding, out_hw, pads):
    (_, top, bottom), (_, left, right) = pads
    return np.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)))


def conv_terms(x, f, padding):
    """float64 conv(x, f) and conv(|x|, |f|), the exact result and the scale of its terms."""
    pads = geometry(x.shape[1:3], (3, 3), (1, 1), (1, 1), padding)
    out_h, out_w = pads[0][0], pads[1][0]
    xp = padded(x.astype(np.float64), padding, (out_h, out_w), pads)
    f64 = f.astype(np.float64)
    y = np.zeros((x.shape[0], out_h, out_w, f.shape[3]))
    scale = np.zeros_like(y)
    for i in range(3):
        for j in range(3):
            window = xp[:, i:i + out_h, j:j + out_w, :]
            y += window @ f64[i, j]
            scale += np.abs(window) @ np.abs(f64[i, j])
    return y, scale


def input_gradient_terms(dy, f, in_shape, padding):
    """float64 Conv2DBackpropInput and its term scale, as the transposed convolution."""
    pads = geometry(in_shape[1:3], (3, 3), (1, 1), (1, 1), padding)
    (_, top, _), (_, left, _) = pads
    n, h, w, c = in_shape
    grad = np.zeros((n, h + 4, w + 4, c))
    scale = np.zeros_like(grad)
    dy64 = dy.astype(np.float64)
    for i in range(3):
        for j in range(3):
            # Output pixel (oy, ox) reads input (oy - top + i, ox - left + j); offset by 2.
            rows = slice(2 - top + i, 2 - top + i + dy.shape[1])
            cols = slice(2 - left + j, 2 - left + j + dy.shape[2])
            grad[:, rows, cols, :] += dy64 @ f[i, j].astype(np.float64).T
            scale[:, rows, cols, :] += np.abs(dy64) @ np.abs(f[i, j].astype(np.float64)).T
    return grad[:, 2:2 + h, 2:2 + w], scale[:, 2:2 + h, 2:2 + w]


def filter_gradient_terms(x, dy, padding):
    """float64 Conv2DBackpropFilter and its term scale."""
    pads = geometry(x.shape[1:3], (3, 3), (1, 1), (1, 1), padding)
    out_h, out_w = pads[0][0], pads[1][0]
    xp = padded(x.astype(np.float64), padding, (out_h, out_w), pads)
    dy64 = dy.reshape(-1, dy.shape[3]).astype(np.float64)
    grad = np.zeros((3, 3, x.shape[3], dy.shape[3]))
    scale = np.zeros_like(grad)
    for i in range(3):
        for j in range(3):
            window = xp[:, i:i + out_h, j:j + out_w, :].reshape(-1, x.shape[3])
            grad[i, j] = window.T @ dy64
            scale[i, j] = np.abs(window).T @ np.abs(dy64)
    return grad, scale


def assert_within_bound(got, exact, scale, what):
    err = np.abs(got.astype(np.float64) - exact).max()
    limit = BOUND * max(scale.max(), 1e-30)
    assert err <= limit, f"{what}: max error {err:.3g} > {limit:.3g} (scale {scale.max():.3g})"


@requires_avx512
def test_winograd_matches_float64_reference(tmp_path):
    got = run_cases(tmp_path, "always")
    direct = run_cases(tmp_path, "0")
    differs = 0
    for i, (n, h, w, c, k, padding) in enumerate(CASES):
        x, f, b = got[f"x{i}"], got[f"f{i}"], got[f"b{i}"]
        exact, scale = conv_terms(x, f, padding)
        assert got[f"y{i}"].shape == exact.shape
        assert_within_bound(got[f"y{i}"], exact, scale, f"Conv2D case {CASES[i]}")
        # The fused bias and ReLU run after the same convolution, bit for bit as the plain ops.
        expected = np.maximum(got[f"y{i}"] + b, 0)
        np.testing.assert_array_equal(got[f"fused{i}"], expected)
        # The kept transform of a constant filter gives the variable filter's bits.
        np.testing.assert_array_equal(got[f"const{i}"], got[f"y{i}"])
        exact_dx, scale_dx = input_gradient_terms(got[f"dy{i}"], f, x.shape, padding)
        assert_within_bound(got[f"dx{i}"], exact_dx, scale_dx,
                            f"Conv2DBackpropInput case {CASES[i]}")
        exact_df, scale_df = filter_gradient_terms(x, got[f"dy{i}"], padding)
        assert_within_bound(got[f"df{i}"], exact_df, scale_df,
                            f"Conv2DBackpropFilter case {CASES[i]}")
        differs += sum(not np.array_equal(got[f"{key}{i}"], direct[f"{key}{i}"])
                       for key in ("y", "dx", "df"))
    # Winograd really ran: its rounding differs from the direct convolution's.
    assert differs >= 2 * len(CASES)


@requires_avx512
def test_winograd_is_bit_identical_across_thread_counts(tmp_path):
    # The last case's filter gradient sums 8 chunks of 2 blocks of 48 tiles, in order.
    cases = CASES[:3] + [(48, 14, 14, 32, 64, "SAME")]
    results = [run_cases(tmp_path, "always", threads, cases) for threads in (1, 2, 4)]
    for other in results[1:]:
        for key in results[0]:
            np.testing.assert_array_equal(results[0][key], other[key], err_msg=key)


@requires_avx512
def test_default_rule_takes_winograd_for_the_tutorial_shapes_only(tmp_path):
    # The tutorial CNN's second convolution (at batch 16) is over the rule; a 3-channel input is
    # not (its products would run far from the FMA peak).
    cases = [(16, 14, 14, 32, 64, "SAME"), (16, 14, 14, 3, 64, "SAME")]
    auto = run_cases(tmp_path, None, cases=cases)
    always = run_cases(tmp_path, "always", cases=cases)
    direct = run_cases(tmp_path, "0", cases=cases)
    for key in ("y0", "dx0", "fused0", "df0"):
        np.testing.assert_array_equal(auto[key], always[key])
    for key in ("y1", "dx1", "fused1", "df1"):
        np.testing.assert_array_equal(auto[key], direct[key])
