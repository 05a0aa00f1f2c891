"""tf.signal: frame, overlap_and_add, the windows, stft / inverse_stft, the mel matrix, MFCCs,
DCTs and MDCTs, against numpy and scipy, against TensorFlow (one peer process for the module),
with gradients against finite differences in float64."""

import pickle

import numpy as np
import pytest
import scipy.fftpack
import scipy.signal

import flowstone as tf
from peers import HAVE_PEER, SKIP_REASON, run_tensorflow

RNG = np.random.default_rng(11)
SIGNAL = RNG.normal(size=(2, 3, 61)).astype(np.float32)
SPECTRUM_IN = RNG.normal(size=(3, 16)).astype(np.float32)


def _run(fetch):
    graph = tf.Graph()
    with graph.as_default():
        out = fetch()
        with tf.Session() as sess:
            return sess.run(out)


# (name, flowstone/TensorFlow expression over `tf`, `x` and `s`): one list for both sides.
EXPRESSIONS = {
    "frame": "tf.signal.frame(x, 9, 4)",
    "frame_pad": "tf.signal.frame(x, 9, 4, pad_end=True, pad_value=2.5)",
    "frame_axis": "tf.signal.frame(x, 2, 1, axis=1)",
    "frame_short": "tf.signal.frame(x[..., :5], 9, 4)",
    "overlap_add": "tf.signal.overlap_and_add(tf.signal.frame(x, 8, 3), 3)",
    "overlap_add_step": "tf.signal.overlap_and_add(x[..., :16], 5)",
    "hann": "tf.signal.hann_window(10)",
    "hann_odd_symmetric": "tf.signal.hann_window(9, periodic=False)",
    "hann_one": "tf.signal.hann_window(1)",
    "hamming": "tf.signal.hamming_window(11)",
    "hamming_f64": "tf.signal.hamming_window(12, periodic=False, dtype=tf.float64)",
    "kaiser": "tf.signal.kaiser_window(11, beta=6.)",
    "kaiser_even": "tf.signal.kaiser_window(16)",
    "kbd": "tf.signal.kaiser_bessel_derived_window(16, beta=4.)",
    "vorbis": "tf.signal.vorbis_window(12)",
    "stft": "tf.signal.stft(x, 16, 5)",
    "stft_pad": "tf.signal.stft(x, 12, 7, fft_length=32, pad_end=True)",
    "stft_hamming": "tf.signal.stft(x, 10, 4, window_fn=tf.signal.hamming_window)",
    "inverse_stft": "tf.signal.inverse_stft(tf.signal.stft(x, 16, 4), 16, 4)",
    "inverse_stft_window": "tf.signal.inverse_stft(tf.signal.stft(x, 16, 4), 16, 4, "
                           "window_fn=tf.signal.inverse_stft_window_fn(4))",
    "inverse_stft_long": "tf.signal.inverse_stft(tf.signal.stft(x, 20, 6, fft_length=16), 20, 6,"
                         " fft_length=16)",
    "mel": "tf.signal.linear_to_mel_weight_matrix(12, 65, 16000, 80.0, 7600.0)",
    "mel_default": "tf.signal.linear_to_mel_weight_matrix()",
    "mel_f64": "tf.signal.linear_to_mel_weight_matrix(5, 33, 8000, 0.0, 4000.0, tf.float64)",
    "mfcc": "tf.signal.mfccs_from_log_mel_spectrograms(s)",
    "dct1": "tf.signal.dct(s, type=1)",
    "dct2": "tf.signal.dct(s)",
    "dct2_ortho": "tf.signal.dct(s, norm='ortho')",
    "dct2_n": "tf.signal.dct(s, n=10)",
    "dct2_pad": "tf.signal.dct(s, n=20)",
    "dct3": "tf.signal.dct(s, type=3)",
    "dct3_ortho": "tf.signal.dct(s, type=3, norm='ortho')",
    "dct4": "tf.signal.dct(s, type=4)",
    "dct4_ortho": "tf.signal.dct(s, type=4, norm='ortho')",
    "idct2": "tf.signal.idct(s)",
    "idct4_ortho": "tf.signal.idct(s, type=4, norm='ortho')",
    "mdct": "tf.signal.mdct(x, 16)",
    "mdct_ortho_pad": "tf.signal.mdct(x, 8, pad_end=True, norm='ortho')",
    "mdct_kbd": "tf.signal.mdct(x, 12, window_fn=tf.signal.kaiser_bessel_derived_window)",
    "mdct_plain": "tf.signal.mdct(x, 8, window_fn=None)",
    "inverse_mdct": "tf.signal.inverse_mdct(tf.signal.mdct(x, 16))",
    "inverse_mdct_ortho": "tf.signal.inverse_mdct(tf.signal.mdct(x, 16, norm='ortho'), "
                          "norm='ortho')",
}

TF_SCRIPT = """
import pickle, sys
import numpy as np
import tensorflow as tf
x, s, expressions = pickle.load(open(sys.argv[1], "rb"))
out = {}
for name, expression in expressions.items():
    out[name] = eval(expression).numpy()
pickle.dump(out, open(sys.argv[2], "wb"))
"""


@pytest.fixture(scope="module")
def oracle(tmp_path_factory):
    if not HAVE_PEER:
        pytest.skip(SKIP_REASON)
    work = tmp_path_factory.mktemp("signal")
    (work / "in.pkl").write_bytes(pickle.dumps((SIGNAL, SPECTRUM_IN, EXPRESSIONS)))
    (work / "run.py").write_text(TF_SCRIPT)
    run_tensorflow(f"import runpy, sys; sys.argv = ['run.py', '{work}/in.pkl', "
                   f"'{work}/out.pkl']; runpy.run_path('{work}/run.py')")
    return pickle.loads((work / "out.pkl").read_bytes())


@pytest.mark.parametrize("name", sorted(EXPRESSIONS))
def test_matches_tensorflow(oracle, name):
    got = _run(lambda: eval(EXPRESSIONS[name], {"tf": tf, "x": SIGNAL, "s": SPECTRUM_IN}))
    expected = oracle[name]
    assert got.shape == expected.shape and got.dtype == expected.dtype
    # Sums over up to 64 terms in another order: relative to the result's scale.
    scale = max(np.abs(expected).max(initial=0.0), 1.0)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=2e-6 * scale)


def test_frame_and_overlap_and_add_by_numpy():
    frames = _run(lambda: tf.signal.frame(SIGNAL, 9, 4))
    expected = np.stack([SIGNAL[..., i * 4:i * 4 + 9] for i in range(14)], axis=-2)
    np.testing.assert_array_equal(frames, expected)
    added = _run(lambda: tf.signal.overlap_and_add(frames, 4))
    reference = np.zeros(SIGNAL.shape[:-1] + (9 + 13 * 4,), np.float32)
    for i in range(14):
        reference[..., i * 4:i * 4 + 9] += frames[..., i, :]
    np.testing.assert_allclose(added, reference, rtol=1e-6, atol=1e-6)


def test_windows_match_scipy():
    np.testing.assert_allclose(_run(lambda: tf.signal.hann_window(10, dtype=tf.float64)),
                               scipy.signal.get_window("hann", 10), atol=1e-12)
    np.testing.assert_allclose(
        _run(lambda: tf.signal.hamming_window(9, periodic=False, dtype=tf.float64)),
        scipy.signal.get_window("hamming", 9, fftbins=False), atol=1e-12)
    np.testing.assert_allclose(_run(lambda: tf.signal.kaiser_window(11, 6., tf.float64)),
                               np.kaiser(11, 6.), atol=1e-12)
    kbd = _run(lambda: tf.signal.kaiser_bessel_derived_window(16, 4., tf.float64))
    np.testing.assert_allclose(kbd ** 2 + np.roll(kbd, 8) ** 2, 1.0, atol=1e-12)  # Princen-Bradley
    np.testing.assert_allclose(kbd, scipy.signal.windows.kaiser_bessel_derived(16, 4.),
                               atol=1e-12)


@pytest.mark.parametrize("dct_type", [1, 2, 3, 4])
@pytest.mark.parametrize("norm", [None, "ortho"])
def test_dct_matches_scipy(dct_type, norm):
    if dct_type == 1 and norm == "ortho":
        with pytest.raises(ValueError, match="not supported for the Type-I DCT"):
            tf.signal.dct(SPECTRUM_IN, type=1, norm="ortho")
        return
    x = SPECTRUM_IN.astype(np.float64)
    np.testing.assert_allclose(_run(lambda: tf.signal.dct(x, type=dct_type, norm=norm)),
                               scipy.fftpack.dct(x, type=dct_type, norm=norm), atol=1e-10)
    np.testing.assert_allclose(_run(lambda: tf.signal.idct(x, type=dct_type, norm=norm)),
                               scipy.fftpack.idct(x, type=dct_type, norm=norm), atol=1e-10)


def test_stft_round_trip_and_mdct_perfect_reconstruction():
    x = SIGNAL.astype(np.float64)
    rebuilt = _run(lambda: tf.signal.inverse_stft(
        tf.signal.stft(x, 16, 4), 16, 4, window_fn=tf.signal.inverse_stft_window_fn(4)))
    # Samples covered by a full set of overlapping frames come back exactly.
    np.testing.assert_allclose(rebuilt[..., 12:48], x[..., 12:48], atol=1e-10)
    rebuilt = _run(lambda: tf.signal.inverse_mdct(tf.signal.mdct(x, 16)))
    np.testing.assert_allclose(rebuilt[..., 8:48], x[..., 8:48], atol=1e-10)


def test_mel_matrix_triangles():
    weights = _run(lambda: tf.signal.linear_to_mel_weight_matrix(
        12, 65, 16000, 80.0, 7600.0, dtype=tf.float64))
    assert weights.shape == (65, 12)
    np.testing.assert_array_equal(weights[0], 0)  # the DC bin
    assert (weights >= 0).all() and (weights <= 1).all()
    assert (np.argmax(weights, axis=0) == np.sort(np.argmax(weights, axis=0))).all()


def _finite_difference_check(build, x, eps=1e-6):
    graph = tf.Graph()
    with graph.as_default():
        placeholder = tf.placeholder(tf.float64, x.shape)
        out = build(placeholder)
        if out.dtype.is_complex:
            out = tf.math.real(out) * 0.7 + tf.math.imag(out) * 1.3
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
    np.testing.assert_allclose(symbolic, numeric, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("build", [
    lambda x: tf.signal.frame(x, 5, 2, pad_end=True),
    lambda x: tf.signal.overlap_and_add(tf.reshape(x, [4, 6]), 3),
    lambda x: tf.signal.stft(x, 8, 4),
    lambda x: tf.signal.inverse_stft(tf.signal.stft(x, 8, 4), 8, 4),
    lambda x: tf.signal.dct(x, type=2, norm="ortho"),
    lambda x: tf.signal.dct(x, type=4),
    lambda x: tf.signal.mdct(x, 8),
    lambda x: tf.signal.mfccs_from_log_mel_spectrograms(x),
], ids=["frame", "overlap_and_add", "stft", "inverse_stft", "dct2", "dct4", "mdct", "mfcc"])
def test_gradients_match_finite_differences(build):
    _finite_difference_check(build, RNG.normal(size=(24,)))


def test_errors_say_what_is_wrong():
    with pytest.raises(ValueError, match="frame_length must be known"):
        tf.signal.frame(SIGNAL, tf.placeholder(tf.int32, []), 2)
    with pytest.raises(ValueError, match="multiple of 4"):
        tf.signal.mdct(SIGNAL, 10)
    with pytest.raises(ValueError, match="Nyquist"):
        tf.signal.linear_to_mel_weight_matrix(10, 33, 8000, 100.0, 5000.0)
    with pytest.raises(ValueError, match="Expected None or 'ortho'"):
        tf.signal.dct(SPECTRUM_IN, norm="forward")
