"""Image codecs: PNG exactly, JPEG against TensorFlow's decoder (same libjpeg-turbo, so within
one level), bad data as InvalidArgumentError naming the problem, and the flips."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import flowstone as tf

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from peers import HAVE_PEER, PEER_PYTHON, SKIP_REASON  # noqa: E402


def _image(height, width, channels, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (height, width, channels), np.uint8)


def _run(fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed_dict)


@pytest.mark.parametrize("channels", [1, 2, 3, 4])
def test_png_round_trips_exactly(channels):
    image = _image(9, 13, channels)
    encoded = _run(tf.image.encode_png(image))
    assert encoded[:8] == b"\x89PNG\r\n\x1a\n"
    np.testing.assert_array_equal(_run(tf.image.decode_png(encoded)), image)
    np.testing.assert_array_equal(_run(tf.io.decode_image(encoded)), image)


def test_png_channel_conversion():
    rgb = _image(4, 4, 3)
    encoded = _run(tf.image.encode_png(rgb))
    rgba = _run(tf.image.decode_png(encoded, channels=4))
    np.testing.assert_array_equal(rgba[..., :3], rgb)
    assert (rgba[..., 3] == 255).all()
    assert _run(tf.image.decode_png(encoded, channels=1)).shape == (4, 4, 1)


def test_jpeg_round_trip_is_close_and_ratio_scales():
    y, x = np.mgrid[0:32, 0:48]
    image = np.stack([x * 5, y * 7, (x + y) * 3], axis=-1).astype(np.uint8)
    encoded = _run(tf.image.encode_jpeg(image, quality=100))
    assert encoded[:3] == b"\xff\xd8\xff"
    decoded = _run(tf.image.decode_jpeg(encoded, dct_method="INTEGER_ACCURATE"))
    assert decoded.shape == (32, 48, 3)
    assert np.abs(decoded.astype(int) - image).max() <= 8
    assert _run(tf.image.decode_jpeg(encoded, ratio=2)).shape == (16, 24, 3)
    assert _run(tf.image.decode_jpeg(encoded, channels=1)).shape == (32, 48, 1)


def test_bad_image_data_is_an_invalid_argument_not_a_crash():
    png = _run(tf.image.encode_png(_image(8, 8, 3)))
    jpeg = _run(tf.image.encode_jpeg(_image(8, 8, 3)))
    contents = tf.placeholder(tf.string, [])
    decoded = tf.image.decode_image(contents)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="Unknown image file format"):
            sess.run(decoded, {contents: b"not an image at all"})
        with pytest.raises(tf.errors.InvalidArgumentError, match="Invalid JPEG data"):
            sess.run(decoded, {contents: jpeg[:len(jpeg) // 2]})
        with pytest.raises(tf.errors.InvalidArgumentError, match="Invalid PNG data"):
            sess.run(decoded, {contents: png[:40]})
        # The session is still usable.
        assert sess.run(decoded, {contents: png}).shape == (8, 8, 3)
    with pytest.raises(tf.errors.InvalidArgumentError, match="channels"):
        _run(tf.image.encode_jpeg(_image(2, 2, 4)))


def test_flips():
    image = np.arange(24, dtype=np.uint8).reshape(2, 4, 3)
    got = _run({"lr": tf.image.flip_left_right(image), "ud": tf.image.flip_up_down(image),
                "batch": tf.image.flip_left_right(image[None])})
    np.testing.assert_array_equal(got["lr"], image[:, ::-1])
    np.testing.assert_array_equal(got["ud"], image[::-1])
    np.testing.assert_array_equal(got["batch"], image[None, :, ::-1])


@pytest.mark.skipif(not HAVE_PEER, reason=SKIP_REASON)
def test_pixels_match_tensorflow(tmp_path):
    rng = np.random.default_rng(5)
    image = (rng.normal(128, 40, (24, 40, 3)).clip(0, 255)).astype(np.uint8)
    ours_png, ours_jpeg = _run((tf.image.encode_png(image), tf.image.encode_jpeg(image)))
    (tmp_path / "ours.png").write_bytes(ours_png)
    (tmp_path / "ours.jpg").write_bytes(ours_jpeg)
    np.save(tmp_path / "image.npy", image)
    program = textwrap.dedent(f"""
        import numpy as np
        import tensorflow as tf
        d = {str(tmp_path)!r}
        image = np.load(d + "/image.npy")
        np.save(d + "/tf_of_our_png.npy", tf.io.decode_png(open(d + "/ours.png", "rb").read()))
        np.save(d + "/tf_of_our_jpeg.npy", tf.io.decode_jpeg(open(d + "/ours.jpg", "rb").read()))
        open(d + "/theirs.jpg", "wb").write(tf.io.encode_jpeg(image).numpy())
        open(d + "/theirs.png", "wb").write(tf.io.encode_png(image).numpy())
        np.save(d + "/tf_of_their_jpeg.npy", tf.io.decode_jpeg(tf.io.encode_jpeg(image)))
    """)
    proc = subprocess.run([PEER_PYTHON, "-c", program], capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    np.testing.assert_array_equal(np.load(tmp_path / "tf_of_our_png.npy"), image)
    our_decode = _run(tf.image.decode_jpeg(ours_jpeg))
    their_decode = np.load(tmp_path / "tf_of_our_jpeg.npy")
    assert np.abs(our_decode.astype(int) - their_decode).max() <= 1
    theirs = (tmp_path / "theirs.jpg").read_bytes()
    assert np.abs(_run(tf.image.decode_jpeg(theirs)).astype(int) -
                  np.load(tmp_path / "tf_of_their_jpeg.npy")).max() <= 1
    np.testing.assert_array_equal(_run(tf.image.decode_png((tmp_path / "theirs.png")
                                                           .read_bytes())), image)


def test_resize_images_of_one_image_and_of_a_batch():
    image = np.arange(2 * 3 * 1, dtype=np.float32).reshape(2, 3, 1)
    got = _run({
        "one": tf.image.resize_images(image, [4, 6]),
        "nearest": tf.image.resize_images(image.astype(np.uint8), [4, 6],
                                          method=tf.image.ResizeMethod.NEAREST_NEIGHBOR),
        "batch": tf.image.resize_bilinear(image[None], [2, 3]),
    })
    assert got["one"].shape == (4, 6, 1) and got["one"].dtype == np.float32
    np.testing.assert_array_equal(got["nearest"][..., 0], image[..., 0].repeat(2, 0).repeat(2, 1))
    assert got["nearest"].dtype == np.uint8
    np.testing.assert_array_equal(got["batch"], image[None])  # same size: the image itself
    with pytest.raises(tf.errors.InvalidArgumentError, match="align_corners must be False"):
        _run(tf.image.resize_bilinear(image[None], [4, 6], align_corners=True,
                                      half_pixel_centers=True))


@pytest.mark.skipif(not HAVE_PEER, reason=SKIP_REASON)
def test_resize_matches_tensorflow(tmp_path):
    images = np.random.default_rng(9).uniform(0, 255, (2, 7, 5, 3)).astype(np.float32)
    np.save(tmp_path / "images.npy", images)
    settings = [(False, False), (True, False), (False, True)]
    sizes = [(13, 4), (3, 9)]
    program = textwrap.dedent(f"""
        import numpy as np
        import tensorflow as tf
        images = np.load({str(tmp_path / "images.npy")!r})
        out = {{}}
        for ac, hp in {settings!r}:
            for size in {sizes!r}:
                for method in ("bilinear", "nearest"):
                    fn = getattr(tf.compat.v1.image, "resize_" + ("bilinear" if method ==
                                 "bilinear" else "nearest_neighbor"))
                    out[f"{{method}}_{{ac}}_{{hp}}_{{size}}"] = fn(
                        images, size, align_corners=ac, half_pixel_centers=hp).numpy()
        np.savez({str(tmp_path / "theirs.npz")!r}, **out)
    """)
    proc = subprocess.run([PEER_PYTHON, "-c", program], capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    theirs = np.load(tmp_path / "theirs.npz")
    for ac, hp in settings:
        for size in sizes:
            ours_bilinear, ours_nearest = _run((
                tf.image.resize_bilinear(images, size, align_corners=ac, half_pixel_centers=hp),
                tf.image.resize_nearest_neighbor(images, size, align_corners=ac,
                                                 half_pixel_centers=hp)))
            np.testing.assert_allclose(ours_bilinear, theirs[f"bilinear_{ac}_{hp}_{size}"],
                                       rtol=1e-5, atol=1e-3, err_msg=f"{ac} {hp} {size}")
            np.testing.assert_array_equal(ours_nearest, theirs[f"nearest_{ac}_{hp}_{size}"],
                                          err_msg=f"{ac} {hp} {size}")
