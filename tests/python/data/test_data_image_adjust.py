"""tf.image's crops, pads, rotations, dtype conversion and distortions: against numpy, and
against TensorFlow where it is installed."""

import colorsys
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import flowstone as tf

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from peers import HAVE_PEER, PEER_PYTHON, SKIP_REASON  # noqa: E402

RNG = np.random.RandomState(3)
IMAGE = RNG.randint(0, 256, size=(5, 6, 3)).astype(np.uint8)
FLOAT = RNG.rand(5, 6, 3).astype(np.float32)


def _run(t, feed=None):
    with tf.Session() as sess:
        return sess.run(t, feed)


def test_convert_image_dtype_scales_like_tensorflow():
    np.testing.assert_allclose(_run(tf.image.convert_image_dtype(IMAGE, tf.float32)),
                               IMAGE / 255.0, rtol=1e-6)
    back = _run(tf.image.convert_image_dtype(FLOAT, tf.uint8))
    np.testing.assert_array_equal(back, (FLOAT * 255.5).astype(np.uint8))
    np.testing.assert_array_equal(_run(tf.image.convert_image_dtype(IMAGE, tf.int32)),
                                  IMAGE.astype(np.int64) * (2 ** 31 // 256))
    saturated = _run(tf.image.convert_image_dtype(np.array([-0.5, 2.0], np.float32), tf.uint8,
                                                  saturate=True))
    assert saturated.tolist() == [0, 255]


def test_flips_and_rotations():
    np.testing.assert_array_equal(_run(tf.image.rot90(IMAGE)), np.rot90(IMAGE, 1))
    for k in range(4):
        np.testing.assert_array_equal(_run(tf.image.rot90(IMAGE, k)), np.rot90(IMAGE, k))
        k_tensor = tf.constant(k)
        np.testing.assert_array_equal(_run(tf.image.rot90(IMAGE, k_tensor)), np.rot90(IMAGE, k))
    batch = np.stack([IMAGE, IMAGE[::-1]])
    np.testing.assert_array_equal(_run(tf.image.rot90(batch, 3)),
                                  np.rot90(batch, 3, axes=(1, 2)))


def test_random_flips_are_either_flipped_or_not_and_seeded():
    image = tf.constant(IMAGE)
    seen = set()
    for seed in range(8):
        got = _run(tf.image.random_flip_left_right(image, seed=seed))
        if np.array_equal(got, IMAGE):
            seen.add("same")
        else:
            np.testing.assert_array_equal(got, IMAGE[:, ::-1])
            seen.add("flipped")
    assert seen == {"same", "flipped"}
    flip = tf.image.random_flip_up_down(image, seed=5)
    with tf.Session() as sess:
        first = [sess.run(flip) for _ in range(6)]
    with tf.Session() as sess:
        again = [sess.run(flip) for _ in range(6)]
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    batch = np.stack([IMAGE] * 16)
    got = _run(tf.image.random_flip_left_right(batch, seed=1))
    flipped = [not np.array_equal(g, IMAGE) for g in got]
    assert 0 < sum(flipped) < 16
    for g, f in zip(got, flipped):
        np.testing.assert_array_equal(g, IMAGE[:, ::-1] if f else IMAGE)


def test_crops_and_pads():
    np.testing.assert_array_equal(_run(tf.image.crop_to_bounding_box(IMAGE, 1, 2, 3, 2)),
                                  IMAGE[1:4, 2:4])
    padded = _run(tf.image.pad_to_bounding_box(IMAGE, 1, 2, 8, 9))
    expected = np.zeros([8, 9, 3], np.uint8)
    expected[1:6, 2:8] = IMAGE
    np.testing.assert_array_equal(padded, expected)
    # Taller target, narrower target: pad rows, crop columns, both centred.
    got = _run(tf.image.resize_with_crop_or_pad(IMAGE, 8, 3))
    expected = np.zeros([8, 3, 3], np.uint8)
    expected[1:6] = IMAGE[:, 1:4]
    np.testing.assert_array_equal(got, expected)
    assert tf.image.resize_image_with_crop_or_pad(IMAGE, 8, 3).shape.as_list() == [8, 3, 3]
    np.testing.assert_array_equal(_run(tf.image.central_crop(IMAGE, 0.5)), IMAGE[1:4, 1:5])
    with pytest.raises(ValueError, match="central_fraction"):
        tf.image.central_crop(IMAGE, 0.0)


def test_central_crop_of_an_image_of_unknown_size():
    image = tf.placeholder(tf.uint8, [None, None, 3])
    got = _run(tf.image.central_crop(image, 0.5), {image: IMAGE})
    np.testing.assert_array_equal(got, IMAGE[1:4, 1:5])


def test_brightness_contrast_and_standardization():
    np.testing.assert_allclose(_run(tf.image.adjust_brightness(FLOAT, 0.25)), FLOAT + 0.25,
                               rtol=1e-6)
    bright = _run(tf.image.adjust_brightness(IMAGE, 0.5))
    np.testing.assert_array_equal(bright, np.minimum(IMAGE / 255.0 + 0.5, 1.0) * 255.5 // 1)
    mean = FLOAT.mean(axis=(0, 1), keepdims=True)
    np.testing.assert_allclose(_run(tf.image.adjust_contrast(FLOAT, 1.5)),
                               (FLOAT - mean) * 1.5 + mean, rtol=1e-5)
    std = _run(tf.image.per_image_standardization(IMAGE))
    x = IMAGE.astype(np.float64)
    expected = (x - x.mean()) / max(x.std(), 1 / np.sqrt(x.size))
    np.testing.assert_allclose(std, expected, rtol=1e-4, atol=1e-5)
    assert std.dtype == np.float32
    delta = _run(tf.image.random_brightness(FLOAT, 0.2, seed=3)) - FLOAT
    assert np.ptp(delta) < 1e-5 and abs(delta.mean()) <= 0.2
    contrasted = _run(tf.image.random_contrast(FLOAT, 0.5, 1.5, seed=4))
    factor = ((contrasted - mean) / (FLOAT - mean)).mean()
    assert 0.5 <= factor <= 1.5


def _colorsys(fn, image):
    return np.array([fn(*px) for px in image.reshape(-1, 3)], np.float64).reshape(image.shape)


def test_colour_conversions_match_colorsys():
    hsv = _run(tf.image.rgb_to_hsv(FLOAT))
    np.testing.assert_allclose(hsv, _colorsys(colorsys.rgb_to_hsv, FLOAT), atol=1e-5)
    np.testing.assert_allclose(_run(tf.image.hsv_to_rgb(hsv)), FLOAT, atol=1e-5)
    grey = np.full([2, 2, 3], 0.5, np.float32)
    assert _run(tf.image.rgb_to_hsv(grey))[..., 0].tolist() == [[0, 0], [0, 0]]
    gray = _run(tf.image.rgb_to_grayscale(FLOAT))
    np.testing.assert_allclose(gray[..., 0], FLOAT @ np.array([0.2989, 0.5870, 0.1140]),
                               rtol=1e-5)
    assert _run(tf.image.rgb_to_grayscale(IMAGE)).dtype == np.uint8


def test_hue_and_saturation_adjustments():
    def hue_shift(*px, delta=0.3):
        h, s, v = colorsys.rgb_to_hsv(*px)
        return colorsys.hsv_to_rgb((h + delta) % 1.0, s, v)

    def saturate(*px, factor=1.7):
        h, s, v = colorsys.rgb_to_hsv(*px)
        return colorsys.hsv_to_rgb(h, min(s * factor, 1.0), v)

    np.testing.assert_allclose(_run(tf.image.adjust_hue(FLOAT, 0.3)),
                               _colorsys(hue_shift, FLOAT), atol=1e-5)
    np.testing.assert_allclose(_run(tf.image.adjust_saturation(FLOAT, 1.7)),
                               _colorsys(saturate, FLOAT), atol=1e-5)
    np.testing.assert_allclose(_run(tf.image.random_hue(FLOAT, 0.0)), FLOAT, atol=1e-5)
    assert _run(tf.image.random_saturation(IMAGE, 0.5, 1.5, seed=2)).dtype == np.uint8
    with pytest.raises(ValueError, match="max_delta must be <= 0.5"):
        tf.image.random_hue(FLOAT, 0.7)
    with pytest.raises(tf.errors.InvalidArgumentError, match="last dimension of images must be 3"):
        _run(tf.image.adjust_hue(FLOAT[..., :2], 0.1))


def test_augmentation_in_a_dataset_map():
    ds = tf.data.Dataset.from_tensors(IMAGE).repeat(4).map(
        lambda im: tf.image.per_image_standardization(tf.image.random_flip_left_right(
            tf.image.random_crop(tf.image.resize_with_crop_or_pad(im, 6, 6), [4, 4, 3]))))
    got = _run(ds.batch(4).make_one_shot_iterator().get_next())
    assert got.shape == (4, 4, 4, 3)
    np.testing.assert_allclose(got.mean(axis=(1, 2, 3)), 0, atol=1e-5)


@pytest.mark.skipif(not HAVE_PEER, reason=SKIP_REASON)
def test_deterministic_ops_match_tensorflow():
    program = textwrap.dedent(f"""
        import json, numpy as np, tensorflow as tf
        image = np.array({IMAGE.tolist()!r}, np.uint8)
        flt = np.array({FLOAT.tolist()!r}, np.float32)
        out = {{
            "rot": tf.image.rot90(image, 3).numpy().tolist(),
            "pad": tf.image.resize_with_crop_or_pad(image, 8, 3).numpy().tolist(),
            "crop": tf.image.central_crop(image, 0.6).numpy().tolist(),
            "bright": tf.image.adjust_brightness(image, 0.3).numpy().tolist(),
            "contrast": tf.image.adjust_contrast(flt, 1.7).numpy().tolist(),
            "contrast8": tf.image.adjust_contrast(image, 0.7).numpy().tolist(),
            "std": tf.image.per_image_standardization(image).numpy().tolist(),
            "u8": tf.image.convert_image_dtype(flt, tf.uint8).numpy().tolist(),
            "hsv": tf.image.rgb_to_hsv(flt).numpy().tolist(),
            "hue": tf.image.adjust_hue(flt, -0.4).numpy().tolist(),
            "sat": tf.image.adjust_saturation(image, 0.6).numpy().tolist(),
            "gray": tf.image.rgb_to_grayscale(image).numpy().tolist(),
            "i32": tf.image.convert_image_dtype(image, tf.int32).numpy().tolist(),
        }}
        print(json.dumps(out))
    """)
    proc = subprocess.run([PEER_PYTHON, "-c", program], capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    want = json.loads(proc.stdout.strip().splitlines()[-1])
    got = _run({
        "rot": tf.image.rot90(IMAGE, 3),
        "pad": tf.image.resize_with_crop_or_pad(IMAGE, 8, 3),
        "crop": tf.image.central_crop(IMAGE, 0.6),
        "bright": tf.image.adjust_brightness(IMAGE, 0.3),
        "contrast": tf.image.adjust_contrast(FLOAT, 1.7),
        "contrast8": tf.image.adjust_contrast(IMAGE, 0.7),
        "std": tf.image.per_image_standardization(IMAGE),
        "u8": tf.image.convert_image_dtype(FLOAT, tf.uint8),
        "hsv": tf.image.rgb_to_hsv(FLOAT),
        "hue": tf.image.adjust_hue(FLOAT, -0.4),
        "sat": tf.image.adjust_saturation(IMAGE, 0.6),
        "gray": tf.image.rgb_to_grayscale(IMAGE),
        "i32": tf.image.convert_image_dtype(IMAGE, tf.int32),
    })
    for key in ("rot", "pad", "crop", "bright", "u8", "i32", "contrast8"):
        np.testing.assert_array_equal(got[key], np.array(want[key]), err_msg=key)
    for key in ("sat", "gray"):  # uint8 results: within one level of TensorFlow's rounding
        assert np.abs(got[key].astype(int) - np.array(want[key])).max() <= 1, key
    for key in ("contrast", "std", "hsv", "hue"):
        np.testing.assert_allclose(got[key], np.array(want[key]), rtol=1e-5, atol=1e-5,
                                   err_msg=key)


def test_non_max_suppression_and_its_padded_form():
    boxes = tf.constant([[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, -0.1, 1, 0.9], [0, 10, 1, 11],
                         [0, 10.1, 1, 11.1], [0, 100, 1, 101]], tf.float32)
    scores = tf.constant([0.9, 0.75, 0.6, 0.95, 0.5, 0.3])
    kept = tf.image.non_max_suppression(boxes, scores, 3, iou_threshold=0.5)
    padded, valid = tf.image.non_max_suppression_padded(boxes, scores, 5, score_threshold=0.4,
                                                        pad_to_max_output_size=True)
    assert padded.shape.as_list() == [5]
    with tf.Session() as sess:
        got, got_padded, got_valid = sess.run([kept, padded, valid])
        # The same indices TensorFlow 2.21 gives.
        assert got.tolist() == [3, 0, 5] and got.dtype == np.int32
        assert got_padded.tolist() == [3, 0, 0, 0, 0] and got_valid == 2
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"iou_threshold must be in \[0, 1\]"):
            sess.run(tf.image.non_max_suppression(boxes, scores, 3, iou_threshold=1.5))
        with pytest.raises(tf.errors.InvalidArgumentError, match="max_output_size must be "
                                                                 "non-negative"):
            sess.run(tf.image.non_max_suppression(boxes, scores, -1))
    with pytest.raises(ValueError, match=r"boxes must be \[num_boxes, 4\]"):
        tf.image.non_max_suppression(tf.zeros([3, 5]), tf.zeros([3]), 2)
