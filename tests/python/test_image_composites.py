"""tf.image's compositions (colour spaces, gamma, transpose, total variation, gradients, Sobel
edges, PSNR, SSIM, MS-SSIM, resize_image_with_pad, JPEG quality) and codec helpers (is_jpeg,
extract_jpeg_shape, decode_and_crop_jpeg, decode_bmp, decode_image of GIF/BMP) and NMS
variants: against numpy, against TensorFlow (one peer process for the module), gradients
against finite differences."""

import pickle

import numpy as np
import pytest

import flowstone as tf
from peers import HAVE_PEER, SKIP_REASON, run_tensorflow

import op_cases  # noqa: F401 - loads the case modules in their order
from op_cases_imagesignal import (BMP_IMAGE, COMBINED_BOXES, COMBINED_SCORES, GIF, NMS_BOXES,
                                  NMS_SCORES, OVERLAPS, bmp)

RNG = np.random.default_rng(21)
IMAGES = RNG.uniform(0, 1, (2, 24, 26, 3)).astype(np.float32)
NOISY = np.clip(IMAGES + RNG.normal(0, 0.1, IMAGES.shape), 0, 1).astype(np.float32)
BIG = RNG.uniform(0, 1, (1, 180, 170, 3)).astype(np.float32)
BIG_NOISY = np.clip(BIG * 0.8 + 0.1 + RNG.normal(0, 0.05, BIG.shape), 0, 1).astype(np.float32)
UINT8 = (IMAGES[0] * 255).astype(np.uint8)
NOISY_UINT8 = (NOISY[0] * 255).astype(np.uint8)
GREY = IMAGES[..., :1]


def _run(build):
    graph = tf.Graph()
    with graph.as_default():
        out = build()
        with tf.Session() as sess:
            return sess.run(out)


# name -> expression over `tf` and the inputs below, run by Flowstone and by TensorFlow.
EXPRESSIONS = {
    "yiq": "tf.image.rgb_to_yiq(IMAGES)",
    "yiq_back": "tf.image.yiq_to_rgb(tf.image.rgb_to_yiq(IMAGES))",
    "yuv": "tf.image.rgb_to_yuv(IMAGES)",
    "yuv_back": "tf.image.yuv_to_rgb(IMAGES)",
    "grey_to_rgb": "tf.image.grayscale_to_rgb(GREY)",
    "transpose": "tf.image.transpose(IMAGES)",
    "transpose_single": "tf.image.transpose(IMAGES[0])",
    "gamma": "tf.image.adjust_gamma(IMAGES, 2.2, 0.9)",
    "gamma_uint8": "tf.image.adjust_gamma(UINT8, 0.5)",
    "total_variation": "tf.image.total_variation(IMAGES)",
    "total_variation_single": "tf.image.total_variation(IMAGES[0])",
    "image_gradients": "tf.image.image_gradients(IMAGES)",
    "sobel": "tf.image.sobel_edges(IMAGES)",
    "psnr": "tf.image.psnr(IMAGES, NOISY, 1.0)",
    "psnr_uint8": "tf.image.psnr(UINT8, NOISY_UINT8, 255)",
    "ssim": "tf.image.ssim(IMAGES, NOISY, 1.0)",
    "ssim_small_filter": "tf.image.ssim(IMAGES, NOISY, 1.0, filter_size=5, filter_sigma=1.0)",
    "ssim_map": "tf.image.ssim(IMAGES, NOISY, 1.0, return_index_map=True)",
    "ssim_uint8": "tf.image.ssim(UINT8, NOISY_UINT8, 255)",
    "ssim_multiscale": "tf.image.ssim_multiscale(BIG, BIG_NOISY, 1.0)",
    "ssim_multiscale_3": "tf.image.ssim_multiscale(IMAGES, NOISY, 1.0, "
                         "power_factors=(0.3, 0.3, 0.4), filter_size=3)",
    "resize_with_pad": "tf.compat.v1.image.resize_image_with_pad(IMAGES, 20, 40)",
    "resize_with_pad_tall": "tf.compat.v1.image.resize_image_with_pad(IMAGES[0], 50, 13, "
                            "method=tf.image.ResizeMethod.NEAREST_NEIGHBOR)",
    "jpeg_quality": "tf.image.adjust_jpeg_quality(IMAGES[0], 90)",
    "is_jpeg": "[tf.io.is_jpeg(tf.io.encode_jpeg(UINT8)), tf.io.is_jpeg(tf.io.encode_png(UINT8))]",
    "jpeg_shape": "tf.image.extract_jpeg_shape(tf.io.encode_jpeg(UINT8[..., :1]))",
    "decode_and_crop": "tf.image.decode_and_crop_jpeg(tf.io.encode_jpeg(UINT8), [2, 3, 10, 11])",
    "decode_bmp": "tf.io.decode_bmp(BMP)",
    "decode_image_bmp": "tf.io.decode_image(BMP)",
    "decode_image_gif": "tf.io.decode_image(GIF)",
    "decode_image_gif_first": "tf.io.decode_image(GIF, expand_animations=False)",
    "nms_scores": "tf.image.non_max_suppression_with_scores(NMS_BOXES, NMS_SCORES, 6, 0.5, 0.1,"
                  " soft_nms_sigma=0.3)",
    "nms_overlaps": "tf.image.non_max_suppression_overlaps(OVERLAPS, NMS_SCORES[:8], 4, 0.6)",
    "combined_nms": "tf.image.combined_non_max_suppression(COMBINED_BOXES, COMBINED_SCORES, 2, "
                    "4, 0.5, 0.3)",
}

INPUTS = {"IMAGES": IMAGES, "NOISY": NOISY, "BIG": BIG, "BIG_NOISY": BIG_NOISY, "UINT8": UINT8,
          "GREY": GREY, "NOISY_UINT8": NOISY_UINT8, "BMP": bmp(BMP_IMAGE), "GIF": GIF,
          "NMS_BOXES": NMS_BOXES,
          "NMS_SCORES": NMS_SCORES, "OVERLAPS": OVERLAPS, "COMBINED_BOXES": COMBINED_BOXES,
          "COMBINED_SCORES": COMBINED_SCORES}

TF_SCRIPT = """
import pickle, sys
import numpy as np
import tensorflow as tf
inputs, expressions = pickle.load(open(sys.argv[1], "rb"))
scope = dict({k: tf.constant(v) for k, v in inputs.items()}, tf=tf, np=np)
def numpy(value):
    if isinstance(value, (list, tuple)):
        return [numpy(v) for v in value]
    return value.numpy()
out = {name: numpy(eval(expression, scope)) for name, expression in expressions.items()}
pickle.dump(out, open(sys.argv[2], "wb"))
"""


@pytest.fixture(scope="module")
def oracle(tmp_path_factory):
    if not HAVE_PEER:
        pytest.skip(SKIP_REASON)
    work = tmp_path_factory.mktemp("image_composites")
    (work / "in.pkl").write_bytes(pickle.dumps((INPUTS, EXPRESSIONS)))
    (work / "run.py").write_text(TF_SCRIPT)
    run_tensorflow(f"import runpy, sys; sys.argv = ['run.py', '{work}/in.pkl', "
                   f"'{work}/out.pkl']; runpy.run_path('{work}/run.py')")
    return pickle.loads((work / "out.pkl").read_bytes())


def _flowstone(name):
    scope = dict(INPUTS, tf=tf, np=np)
    return _run(lambda: eval(EXPRESSIONS[name], scope))


@pytest.mark.parametrize("name", sorted(EXPRESSIONS))
def test_matches_tensorflow(oracle, name):
    got, expected = _flowstone(name), oracle[name]
    if not isinstance(expected, list):
        got, expected = [got], [expected]
    for g, e in zip(got, expected):
        g, e = np.asarray(g), np.asarray(e)
        assert g.shape == e.shape, (g.shape, e.shape)
        assert g.dtype == e.dtype, (g.dtype, e.dtype)
        if e.dtype.kind in "iub":
            np.testing.assert_array_equal(g, e)
        else:
            np.testing.assert_allclose(g, e, rtol=2e-5, atol=2e-5)


def test_colour_round_trips_and_numpy():
    back = _run(lambda: tf.image.yuv_to_rgb(tf.image.rgb_to_yuv(IMAGES)))
    np.testing.assert_allclose(back, IMAGES, atol=1e-5)
    np.testing.assert_allclose(_run(lambda: tf.image.rgb_to_yiq(IMAGES))[..., 0],
                               IMAGES @ np.array([0.299, 0.587, 0.114], np.float32), atol=1e-6)
    dy, dx = _run(lambda: tf.image.image_gradients(IMAGES))
    np.testing.assert_array_equal(dy[:, :-1], IMAGES[:, 1:] - IMAGES[:, :-1])
    np.testing.assert_array_equal(dx[:, :, -1], 0)
    np.testing.assert_allclose(
        _run(lambda: tf.image.total_variation(IMAGES)),
        np.abs(np.diff(IMAGES, axis=1)).sum((1, 2, 3)) + np.abs(np.diff(IMAGES, axis=2)).sum(
            (1, 2, 3)), rtol=1e-5)


def test_ssim_of_an_image_with_itself_is_one():
    np.testing.assert_allclose(_run(lambda: tf.image.ssim(IMAGES, IMAGES, 1.0)), 1.0, atol=1e-6)
    np.testing.assert_allclose(_run(lambda: tf.image.ssim_multiscale(BIG, BIG, 1.0)), 1.0,
                               atol=1e-5)
    assert np.isinf(_run(lambda: tf.image.psnr(IMAGES, IMAGES, 1.0))).all()


def _finite_difference_check(build, x, eps=1e-4):
    graph = tf.Graph()
    with graph.as_default():
        placeholder = tf.placeholder(tf.float64, x.shape)
        out = tf.cast(build(tf.cast(placeholder, tf.float32)), tf.float64)
        weights = RNG.uniform(0.5, 1.5, out.shape.as_list())
        loss = tf.reduce_sum(out * weights)
        grad = tf.gradients(loss, placeholder)[0]
        with tf.Session() as sess:
            symbolic = sess.run(grad, {placeholder: x})
            numeric = np.zeros_like(x)
            for idx in np.ndindex(x.shape):
                up, down = x.copy(), x.copy()
                up[idx] += eps
                down[idx] -= eps
                numeric[idx] = (sess.run(loss, {placeholder: up}) -
                                sess.run(loss, {placeholder: down})) / (2 * eps)
    np.testing.assert_allclose(symbolic, numeric, rtol=2e-2, atol=2e-3)


@pytest.mark.parametrize("build", [
    lambda x: tf.image.ssim(x, tf.constant(NOISY[:1, :7, :7]), 1.0, filter_size=3),
    lambda x: tf.image.sobel_edges(x),
    lambda x: tf.image.total_variation(x),
    lambda x: tf.image.rgb_to_yuv(x),
    lambda x: tf.image.adjust_gamma(x + 0.5, 1.7),
], ids=["ssim", "sobel", "total_variation", "yuv", "gamma"])
def test_gradients_match_finite_differences(build):
    _finite_difference_check(build, IMAGES[:1, :7, :7].astype(np.float64))


def test_errors():
    with pytest.raises(ValueError, match="size 1"):
        tf.image.grayscale_to_rgb(IMAGES)
    with pytest.raises(ValueError, match="4D"):
        tf.image.image_gradients(IMAGES[0])
    with pytest.raises(ValueError, match="jpeg encoding range"):
        tf.image.random_jpeg_quality(IMAGES[0], 50, 120)
    with pytest.raises(tf.errors.InvalidArgumentError, match="crop_window"):
        _run(lambda: tf.image.decode_and_crop_jpeg(tf.io.encode_jpeg(UINT8), [20, 0, 10, 10]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Incomplete BMP"):
        _run(lambda: tf.io.decode_bmp(bmp(BMP_IMAGE)[:60]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="does not match bits per pixel"):
        _run(lambda: tf.io.decode_bmp(bmp(BMP_IMAGE), channels=4))
    with pytest.raises(tf.errors.InvalidArgumentError, match="soft_nms_sigma"):
        _run(lambda: tf.image.non_max_suppression_with_scores(NMS_BOXES, NMS_SCORES, 3,
                                                              soft_nms_sigma=-1.0))


def test_random_jpeg_quality_runs_in_range():
    out = _run(lambda: [tf.image.random_jpeg_quality(IMAGES[0], 40, 90, seed=3)
                        for _ in range(3)])
    for image in out:
        assert image.shape == IMAGES[0].shape and image.dtype == np.float32
        assert np.abs(image - IMAGES[0]).mean() < 0.2


def test_mutated_bmps_decode_or_fail_cleanly():
    """Random changes to a BMP's header fields and truncations: pixels or InvalidArgumentError,
    never a read past the data."""
    rng = np.random.default_rng(23)
    source = bmp(BMP_IMAGE)
    graph = tf.Graph()
    with graph.as_default():
        contents = tf.placeholder(tf.string, [])
        image = tf.io.decode_bmp(contents)
        with tf.Session() as sess:
            for _ in range(300):
                data = bytearray(source)
                for position in rng.integers(2, 34, rng.integers(1, 4)):
                    data[position] = rng.integers(0, 256)
                data = bytes(data[:rng.integers(20, len(data) + 1)])
                try:
                    assert sess.run(image, {contents: data}).ndim == 3
                except tf.errors.InvalidArgumentError:
                    pass


HSV_PIXELS = RNG.uniform(0.05, 0.95, (4, 5, 3)).astype(np.float32)


def test_rgb_to_hsv_gradient_matches_finite_differences_and_tensorflow():
    weights = RNG.uniform(0.5, 1.5, HSV_PIXELS.shape).astype(np.float32)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, HSV_PIXELS.shape)
        loss = tf.reduce_sum(tf.image.rgb_to_hsv(x) * weights)
        grad = tf.gradients(loss, x)[0]
        with tf.Session() as sess:
            symbolic = sess.run(grad, {x: HSV_PIXELS})
            numeric = np.zeros(HSV_PIXELS.shape)
            for idx in np.ndindex(HSV_PIXELS.shape):
                up, down = HSV_PIXELS.copy(), HSV_PIXELS.copy()
                up[idx] += 1e-3
                down[idx] -= 1e-3
                numeric[idx] = (sess.run(loss, {x: up}) - sess.run(loss, {x: down})) / 2e-3
    np.testing.assert_allclose(symbolic, numeric, rtol=2e-2, atol=2e-2)
    if HAVE_PEER:
        expected = run_tensorflow(f"""
            import numpy as np, tensorflow as tf
            x = tf.constant(np.array({HSV_PIXELS.tolist()}, np.float32))
            with tf.GradientTape() as tape:
                tape.watch(x)
                loss = tf.reduce_sum(tf.image.rgb_to_hsv(x) *
                                     np.array({weights.tolist()}, np.float32))
            print(repr(tape.gradient(loss, x).numpy().tolist()))
        """)
        np.testing.assert_allclose(symbolic, np.array(eval(expected.strip().splitlines()[-1])),
                                   rtol=1e-4, atol=1e-4)


def test_rgb_to_hsv_gradient_of_greys_and_black_is_finite():
    pixels = np.array([[0.5, 0.5, 0.5], [0, 0, 0], [0.2, 0.7, 0.7]], np.float32)

    def build():
        x = tf.constant(pixels)
        return tf.gradients(tf.reduce_sum(tf.image.rgb_to_hsv(x)), x)[0]

    got = _run(build)
    assert np.isfinite(got).all()
    np.testing.assert_array_equal(got[1], [1, 0, 0])  # black: only the value, through red
