"""tf.image's crop_and_resize, sample_distorted_bounding_box, draw_bounding_boxes, decode_gif,
resize_bicubic / resize_area and the resize gradients: against TensorFlow (one peer process for
the module), gradients against finite differences, errors by class and message, and the
sampled boxes by their bounds, their statistics and their seeded determinism."""

import pickle

import numpy as np
import pytest

import flowstone as tf
from flowstone.framework.ops import apply_op
from peers import HAVE_PEER, SKIP_REASON, run_tensorflow

import op_cases  # noqa: F401 - loads the case modules in their order
from op_cases_imagesignal import FRAMES, GIF, crop_and_resize as crop_reference

RNG = np.random.default_rng(5)
IMAGE = RNG.uniform(0, 1, (2, 7, 9, 3)).astype(np.float32)
# Box sample positions fall between pixel rows and columns, so finite differences are smooth.
BOXES = np.array([[0.13, 0.07, 0.71, 0.83], [0.31, 0.22, 0.97, 0.69], [-0.2, 0.1, 0.5, 1.3]],
                 np.float32)
BOX_IND = np.array([0, 1, 1], np.int32)
CROP = [5, 4]


def _run(build, feeds=None):
    graph = tf.Graph()
    with graph.as_default():
        out = build()
        with tf.Session() as sess:
            return sess.run(out, feeds or {})


# --- TensorFlow as the oracle ---------------------------------------------------------------

TF_SCRIPT = """
import pickle, sys
import numpy as np
import tensorflow as tf
inputs = pickle.load(open(sys.argv[1], "rb"))
image, boxes, box_ind, crop, gif = (inputs[k] for k in
                                     ("image", "boxes", "box_ind", "crop", "gif"))
out = {}
for method in ("bilinear", "nearest"):
    out["crop_" + method] = tf.image.crop_and_resize(image, boxes, box_ind, crop, method=method,
                                                     extrapolation_value=-0.5).numpy()
weights = inputs["weights"]
x, b = tf.constant(image), tf.constant(boxes)
with tf.GradientTape(persistent=True) as tape:
    tape.watch([x, b])
    loss = tf.reduce_sum(tf.image.crop_and_resize(x, b, box_ind, crop) * weights)
out["crop_grad_image"], out["crop_grad_boxes"] = [g.numpy() for g in tape.gradient(loss, [x, b])]
v1 = tf.compat.v1.image
for name, fn in (("bicubic", v1.resize_bicubic), ("bilinear", v1.resize_bilinear),
                 ("nearest", v1.resize_nearest_neighbor)):
    for size in ((11, 4), (3, 13)):
        for align, half in ((False, False), (True, False), (False, True)):
            key = f"{name}_{size}_{align}_{half}"
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = fn(x, size, align_corners=align, half_pixel_centers=half)
                loss = tf.reduce_sum(tf.cast(y, tf.float32) *
                                     np.linspace(-1, 1, int(np.prod(y.shape)))
                                     .reshape(y.shape).astype(np.float32))
            out[key] = y.numpy()
            out[key + "_grad"] = tape.gradient(loss, x).numpy()
for size in ((3, 4), (11, 13), (7, 9)):
    for align in (False, True):
        out[f"area_{size}_{align}"] = v1.resize_area(image, size, align_corners=align).numpy()
out["area_uint8"] = v1.resize_area((image * 255).astype(np.uint8), (4, 5)).numpy()
out["draw"] = v1.draw_bounding_boxes(image, inputs["draw_boxes"]).numpy()
out["draw_colors"] = v1.draw_bounding_boxes(image, inputs["draw_boxes"], colors=
                                                  inputs["colors"]).numpy()
out["gif"] = tf.io.decode_gif(gif).numpy()
out["gif_image"] = tf.io.decode_image(gif).numpy()
# Statistics of sample_distorted_bounding_box's crops.
draws = []
op = tf.image.sample_distorted_bounding_box
for i in range(1500):
    begin, size, _ = op([60, 80, 3], inputs["objects"], seed=i + 1, min_object_covered=0.3,
                        aspect_ratio_range=[0.5, 2.0], area_range=[0.1, 0.9])
    draws.append(np.concatenate([begin.numpy()[:2], size.numpy()[:2]]))
out["sampled"] = np.array(draws)
pickle.dump(out, open(sys.argv[2], "wb"))
"""

WEIGHTS = RNG.uniform(-1, 1, (3, 5, 4, 3)).astype(np.float32)
DRAW_BOXES = np.array([[[0.1, 0.1, 0.7, 0.9], [-0.5, 0.3, 0.5, 1.2], [0.2, 0.2, 0.4, 0.4]],
                       [[0.0, 0.0, 1.0, 1.0], [0.6, 0.6, 0.2, 0.2], [0.5, -0.1, 1.1, 0.5]]],
                      np.float32)
COLORS = np.array([[0.25, 0.5, 0.75, 1.0], [1, 0, 1, 1]], np.float32)
OBJECTS = np.array([[[0.1, 0.2, 0.6, 0.5], [0.5, 0.5, 0.9, 0.95]]], np.float32)


@pytest.fixture(scope="module")
def oracle(tmp_path_factory):
    if not HAVE_PEER:
        pytest.skip(SKIP_REASON)
    work = tmp_path_factory.mktemp("image_boxes")
    inputs = {"image": IMAGE, "boxes": BOXES, "box_ind": BOX_IND, "crop": CROP, "gif": GIF,
              "weights": WEIGHTS, "draw_boxes": DRAW_BOXES, "colors": COLORS,
              "objects": OBJECTS}
    (work / "in.pkl").write_bytes(pickle.dumps(inputs))
    (work / "run.py").write_text(TF_SCRIPT)
    run_tensorflow(f"import runpy, sys; sys.argv = ['run.py', '{work}/in.pkl', "
                   f"'{work}/out.pkl']; runpy.run_path('{work}/run.py')")
    return pickle.loads((work / "out.pkl").read_bytes())


@pytest.mark.parametrize("method", ["bilinear", "nearest"])
def test_crop_and_resize_matches_tensorflow(oracle, method):
    got = _run(lambda: tf.image.crop_and_resize(IMAGE, BOXES, BOX_IND, CROP, method=method,
                                                extrapolation_value=-0.5))
    np.testing.assert_allclose(got, oracle["crop_" + method], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got, crop_reference(IMAGE, BOXES, BOX_IND, CROP, method, -0.5),
                               rtol=1e-6, atol=1e-6)


def test_crop_and_resize_gradients_match_tensorflow(oracle):
    def build():
        x, b = tf.constant(IMAGE), tf.constant(BOXES)
        loss = tf.reduce_sum(tf.image.crop_and_resize(x, b, BOX_IND, CROP) * WEIGHTS)
        return tf.gradients(loss, [x, b])

    grad_image, grad_boxes = _run(build)
    np.testing.assert_allclose(grad_image, oracle["crop_grad_image"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(grad_boxes, oracle["crop_grad_boxes"], rtol=1e-5, atol=1e-5)


def _finite_difference(loss_of, x, eps):
    numeric = np.zeros(x.shape, np.float64)
    for idx in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[idx] += eps
        down[idx] -= eps
        numeric[idx] = (loss_of(up) - loss_of(down)) / (2 * eps)
    return numeric


def test_crop_and_resize_gradients_match_finite_differences():
    image = IMAGE[:, :4, :5].astype(np.float64)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float64, image.shape)
        b = tf.placeholder(tf.float32, BOXES.shape)
        crops = tf.image.crop_and_resize(x, b, BOX_IND, [3, 3])
        loss = tf.reduce_sum(crops * WEIGHTS[:, :3, :3])
        grads = tf.gradients(loss, [x, b])
        with tf.Session() as sess:
            grad_image, grad_boxes = sess.run(grads, {x: image, b: BOXES})
            # The crop is linear in the image: differences are exact up to float32 rounding.
            numeric = _finite_difference(lambda v: sess.run(loss, {x: v, b: BOXES}), image, 0.5)
            np.testing.assert_allclose(grad_image, numeric, rtol=1e-4, atol=1e-4)
            numeric = _finite_difference(lambda v: sess.run(loss, {x: image, b: v}),
                                         BOXES.astype(np.float64), 1e-3)
            np.testing.assert_allclose(grad_boxes, numeric, rtol=2e-2, atol=2e-2)


RESIZES = [(name, size, align, half) for name in ("bicubic", "bilinear", "nearest")
           for size in ((11, 4), (3, 13))
           for align, half in ((False, False), (True, False), (False, True))]


@pytest.mark.parametrize("name,size,align,half", RESIZES)
def test_resize_and_its_gradient_match_tensorflow(oracle, name, size, align, half):
    fn = getattr(tf.image, f"resize_{name}" if name != "nearest" else "resize_nearest_neighbor")

    def build():
        x = tf.constant(IMAGE)
        y = fn(x, size, align_corners=align, half_pixel_centers=half)
        ramp = np.linspace(-1, 1, IMAGE.shape[0] * IMAGE.shape[3] * size[0] * size[1])
        loss = tf.reduce_sum(tf.cast(y, tf.float32) *
                             ramp.reshape(IMAGE.shape[0], size[0], size[1], 3).astype(np.float32))
        return y, tf.gradients(loss, x)[0]

    resized, grad = _run(build)
    key = f"{name}_{size}_{align}_{half}"
    np.testing.assert_allclose(resized, oracle[key], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(grad, oracle[key + "_grad"], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["bicubic", "bilinear", "nearest"])
def test_resize_gradients_match_finite_differences(name):
    fn = getattr(tf.image, f"resize_{name}" if name != "nearest" else "resize_nearest_neighbor")
    image = IMAGE[:1, :4, :3, :2].astype(np.float64)
    weights = RNG.uniform(-1, 1, (1, 6, 5, 2))
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float64, image.shape)
        loss = tf.reduce_sum(tf.cast(fn(x, [6, 5], half_pixel_centers=True), tf.float64) *
                             weights)
        grad = tf.gradients(loss, x)[0]
        with tf.Session() as sess:
            symbolic = sess.run(grad, {x: image})
            numeric = _finite_difference(lambda v: sess.run(loss, {x: v}), image, 0.5)
    np.testing.assert_allclose(symbolic, numeric, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("size", [(3, 4), (11, 13), (7, 9)])
@pytest.mark.parametrize("align", [False, True])
def test_resize_area_matches_tensorflow(oracle, size, align):
    got = _run(lambda: tf.image.resize_area(IMAGE, size, align_corners=align))
    np.testing.assert_allclose(got, oracle[f"area_{size}_{align}"], rtol=1e-5, atol=1e-5)


def test_resize_images_methods_and_uint8_area(oracle):
    got = _run(lambda: tf.image.resize_area((IMAGE * 255).astype(np.uint8), (4, 5)))
    np.testing.assert_allclose(got, oracle["area_uint8"], rtol=1e-5, atol=1e-4)
    single = _run(lambda: tf.image.resize_images(IMAGE[0], [3, 4],
                                                 method=tf.image.ResizeMethod.AREA))
    np.testing.assert_allclose(single, oracle["area_(3, 4)_False"][0], rtol=1e-5, atol=1e-5)
    bicubic = _run(lambda: tf.image.resize_images(IMAGE, [11, 4], method="bicubic"))
    np.testing.assert_allclose(bicubic, oracle["bicubic_(11, 4)_False_False"], rtol=1e-5,
                               atol=1e-5)


def test_draw_bounding_boxes_matches_tensorflow(oracle):
    np.testing.assert_array_equal(_run(lambda: tf.image.draw_bounding_boxes(IMAGE, DRAW_BOXES)),
                                  oracle["draw"])
    np.testing.assert_array_equal(
        _run(lambda: tf.image.draw_bounding_boxes(IMAGE, DRAW_BOXES, colors=COLORS)),
        oracle["draw_colors"])


def test_decode_gif_frames():
    frames = _run(lambda: tf.io.decode_gif(GIF))
    assert frames.dtype == np.uint8 and frames.shape == (3, 4, 5, 3)
    np.testing.assert_array_equal(frames, FRAMES)


def test_decode_gif_matches_tensorflow(oracle):
    np.testing.assert_array_equal(_run(lambda: tf.image.decode_gif(GIF)), oracle["gif"])


@pytest.mark.parametrize("data,message", [
    (b"not an image at all", "not a GIF"),
    (GIF[:40], "Invalid GIF data"),
    (GIF[:6], "Invalid GIF data"),
])
def test_decode_gif_rejects_bad_data(data, message):
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        _run(lambda: tf.io.decode_gif(data))


def test_crop_and_resize_errors_name_the_problem():
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"box_ind\[1\] = 5 is not in"):
        _run(lambda: tf.image.crop_and_resize(IMAGE, BOXES[:2], [0, 5], CROP))
    with pytest.raises(tf.errors.InvalidArgumentError, match="method must be"):
        _run(lambda: tf.image.crop_and_resize(IMAGE, BOXES, BOX_IND, CROP, method="cubic"))
    with pytest.raises(tf.errors.InvalidArgumentError, match="crop dimensions must be positive"):
        _run(lambda: tf.image.crop_and_resize(IMAGE, BOXES, BOX_IND, [0, 3]))


# --- sample_distorted_bounding_box -----------------------------------------------------------


def _sample(count, seed, **kwargs):
    graph = tf.Graph()
    with graph.as_default():
        begin, size, bboxes = tf.image.sample_distorted_bounding_box(
            [60, 80, 3], OBJECTS, seed=seed, **kwargs)
        with tf.Session() as sess:
            return [np.concatenate([v for v in sess.run([begin, size, bboxes[0, 0]])])
                    for _ in range(count)]


def _object_covered(crop, objects, height=60, width=80):
    y, x, h, w = crop
    best = 0.0
    for box in objects[0]:
        ymin, xmin = int(box[0] * height), int(box[1] * width)
        ymax, xmax = int(box[2] * height), int(box[3] * width)
        iy = max(0, min(y + h, ymax) - max(y, ymin))
        ix = max(0, min(x + w, xmax) - max(x, xmin))
        best = max(best, iy * ix / ((ymax - ymin) * (xmax - xmin)))
    return best


def test_sampled_crops_respect_every_constraint():
    kwargs = dict(min_object_covered=0.3, aspect_ratio_range=[0.5, 2.0], area_range=[0.1, 0.9])
    for row in _sample(300, 7, **kwargs):
        y, x, _, h, w, channels = row[:6]
        assert channels == -1
        assert 0 <= y and y + h <= 60 and 0 <= x and x + w <= 80
        # Rounding may move the area by a row and the ratio by half a pixel of width.
        assert 0.1 * 4800 - w <= h * w <= 0.9 * 4800 + w
        assert 0.5 - 1 / h <= w / h <= 2.0 + 1 / h
        assert _object_covered((y, x, h, w), OBJECTS) >= 0.3
        np.testing.assert_allclose(row[6:], [y / 60, x / 80, (y + h) / 60, (x + w) / 80],
                                   rtol=1e-6)


def test_sampling_is_seeded_and_draws_differ():
    first, again, other = _sample(20, 11), _sample(20, 11), _sample(20, 12)
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)
    assert len({tuple(r) for r in first}) > 10


def test_sampled_crops_are_distributed_as_tensorflows(oracle):
    kwargs = dict(min_object_covered=0.3, aspect_ratio_range=[0.5, 2.0], area_range=[0.1, 0.9])
    ours = np.array([[r[0], r[1], r[3], r[4]] for r in _sample(1500, 3, **kwargs)], np.float64)
    theirs = oracle["sampled"].astype(np.float64)
    for column, name in enumerate(["offset y", "offset x", "height", "width"]):
        spread = max(ours[:, column].std(), theirs[:, column].std(), 1.0)
        # Means of 1500 draws each: 5 standard errors of their difference apart at most.
        assert abs(ours[:, column].mean() - theirs[:, column].mean()) < 5 * spread * np.sqrt(
            2 / 1500), name
    area_ours, area_theirs = ours[:, 2] * ours[:, 3], theirs[:, 2] * theirs[:, 3]
    assert abs(np.median(area_ours) - np.median(area_theirs)) < 0.08 * 4800


def test_sampling_falls_back_to_the_whole_image():
    # No crop of at most a tenth of the image can cover all of a box as big as the image.
    rows = _sample(5, 4, min_object_covered=1.0, area_range=[0.05, 0.1],
                   max_attempts=5)
    for row in rows:
        np.testing.assert_array_equal(row[:6], [0, 0, 0, 60, 80, -1])


def test_sampling_errors():
    with pytest.raises(tf.errors.InvalidArgumentError, match="use_image_if_no_bounding_boxes"):
        _run(lambda: tf.image.sample_distorted_bounding_box([4, 4, 1], np.zeros((1, 0, 4)),
                                                            seed=1))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"must be in \[0.0, 1.0\]"):
        _run(lambda: tf.image.sample_distorted_bounding_box([4, 4, 1], [[[0, 0, 1.5, 1]]],
                                                            seed=1))
    with pytest.raises(tf.errors.InvalidArgumentError, match="area_range"):
        _run(lambda: tf.image.sample_distorted_bounding_box(
            [4, 4, 1], [[[0, 0, 1, 1]]], seed=1, area_range=[0.5, 0.2]))


def test_mutated_gifs_decode_or_fail_cleanly():
    """Random byte flips and truncations of a valid GIF: pixels or InvalidArgumentError."""
    rng = np.random.default_rng(17)
    graph = tf.Graph()
    with graph.as_default():
        contents = tf.placeholder(tf.string, [])
        frames = tf.io.decode_gif(contents)
        with tf.Session() as sess:
            for _ in range(300):
                data = bytearray(GIF)
                for position in rng.integers(6, len(data), rng.integers(1, 6)):
                    data[position] = rng.integers(0, 256)
                data = bytes(data[:rng.integers(6, len(data) + 1)])
                try:
                    out = sess.run(frames, {contents: data})
                    assert out.ndim == 4 and out.shape[-1] == 3
                except tf.errors.InvalidArgumentError:
                    pass


@pytest.mark.parametrize("uniform", [True, False])
def test_glimpse_noise_stays_in_the_images_range(uniform):
    # Channel 0 in [0, 1), channel 1 in [10, 11): uniform noise spans the whole image's range,
    # Gaussian noise each channel's.
    images = np.stack([RNG.uniform(0, 1, (2, 8, 8)), 10 + RNG.uniform(0, 1, (2, 8, 8))],
                      -1).astype(np.float32)
    graph = tf.Graph()
    with graph.as_default():
        out = apply_op("ExtractGlimpseV2", [tf.constant(images), tf.constant([20, 20]),
                                            tf.constant(np.zeros((2, 2), np.float32))],
                       {"uniform_noise": False,
                        "noise": "uniform" if uniform else "gaussian"}).outputs[0]
        with tf.Session() as sess:
            first, second = sess.run(out), sess.run(out)
    noise = np.ones((20, 20), bool)
    noise[6:14, 6:14] = False  # the image sits in the middle of the window
    np.testing.assert_array_equal(first[:, 6:14, 6:14], images)
    values = first[:, noise]
    assert values.min() >= 0 and values.max() <= 11
    if uniform:
        assert values[..., 0].max() > 5  # the whole image's range
    else:
        assert values[..., 0].max() <= 1 and values[..., 1].min() >= 10
    assert not np.array_equal(first, second)  # fresh noise each run


def test_extract_glimpse_python_function():
    got = _run(lambda: tf.image.extract_glimpse(IMAGE, [3, 4], [[0.0, 0.0], [0.1, -0.1]]))
    assert got.shape == (2, 3, 4, 3)
    np.testing.assert_array_equal(got[0], IMAGE[0, 2:5, 2:6])
