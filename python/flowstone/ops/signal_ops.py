"""tf.signal beyond the FFTs: framing, overlap-add, windows, STFTs, mel matrices, MFCCs, DCTs
and MDCTs. As in TensorFlow these are compositions of graph ops (GatherV2, UnsortedSegmentSum,
RFFT/IRFFT, arithmetic), so gradients flow through them by the ops' own gradients.

Lengths that shape the graph (frame_length, frame_step, fft_length, a DCT's length) are taken as
Python integers or constants, as almost every TF1 program passes them; docs/COMPAT.md says so.
"""

import math as _math

import numpy as np

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.ops import (array_composites, array_ops, complex_ops, fft_ops,
                           math_functions, math_ops, reduction_ops, scan_ops)
from flowstone.util.tf_export import tf_export


def _static_int(value, what):
    """`value` as a Python int: an int, a numpy integer or a constant tensor."""
    if isinstance(value, _ops.Tensor):
        constant = array_composites.get_static_value(value)
        if constant is None:
            raise ValueError(f"{what} must be known when the graph is built (a Python int or a "
                             f"constant), got the tensor {value.name}")
        value = constant
    value = np.asarray(value)
    if value.ndim != 0 or not np.issubdtype(value.dtype, np.integer):
        raise ValueError(f"{what} must be a scalar integer, got {value!r}")
    return int(value)


def _dim(tensor, axis):
    """The static size of `tensor`'s dimension `axis`, or its run-time size as a tensor."""
    dims = tensor.shape.as_list() if tensor.shape.ndims is not None else None
    if dims is not None and dims[axis] is not None:
        return dims[axis]
    return array_ops.shape(tensor)[axis]


# --- framing ------------------------------------------------------------------------------------


@tf_export("signal.frame")
def frame(signal, frame_length, frame_step, pad_end=False, pad_value=0, axis=-1, name=None):
    """Frames of `frame_length` samples every `frame_step` along `axis`: shape
    signal.shape[:axis] + [num_frames, frame_length] + signal.shape[axis + 1:]. Without pad_end
    only whole frames; with it the end is padded with `pad_value` so every sample is framed."""
    with _ops.name_scope(name, "frame", [signal]):
        signal = _ops.convert_to_tensor(signal, name="signal")
        frame_length = _static_int(frame_length, "frame_length")
        frame_step = _static_int(frame_step, "frame_step")
        if frame_length < 0 or frame_step <= 0:
            raise ValueError(f"frame_length must be non-negative and frame_step positive, got "
                             f"{frame_length} and {frame_step}")
        rank = signal.shape.ndims
        if rank is None:
            raise ValueError("frame needs the rank of signal known")
        axis = _static_int(axis, "axis") % max(rank, 1)
        length = signal.shape.as_list()[axis]
        if length is None:
            raise ValueError(f"frame needs signal's dimension {axis} known, got shape "
                             f"{signal.shape}")
        if pad_end:
            frames = -(-length // frame_step)
            padded = max(0, (frames - 1) * frame_step + frame_length - length)
            if padded:
                paddings = [[0, 0]] * rank
                paddings[axis] = [0, padded]
                signal = array_ops.pad(signal, paddings, constant_values=pad_value)
        else:
            frames = max(0, 1 + (length - frame_length) // frame_step)
        indices = (np.arange(frames)[:, None] * frame_step +
                   np.arange(frame_length)[None, :]).astype(np.int32)
        return array_ops.gather(signal, indices.reshape(frames, frame_length), axis=axis)


@tf_export("signal.overlap_and_add")
def overlap_and_add(signal, frame_step, name=None):
    """The frames of `signal` ([..., frames, frame_length]) added at offsets of `frame_step`:
    [..., (frames - 1) * frame_step + frame_length]."""
    with _ops.name_scope(name, "overlap_and_add", [signal]):
        signal = _ops.convert_to_tensor(signal, name="signal")
        frame_step = _static_int(frame_step, "frame_step")
        if signal.shape.ndims is None or signal.shape.ndims < 2:
            raise ValueError(f"overlap_and_add needs signal of rank 2 or more, got shape "
                             f"{signal.shape}")
        frames, frame_length = signal.shape.as_list()[-2:]
        if frames is None or frame_length is None:
            raise ValueError("overlap_and_add needs the frame count and frame length known, got "
                             f"shape {signal.shape}")
        if frame_step <= 0 or frame_step > max(frame_length, 1):
            raise ValueError(f"frame_step must be in [1, frame_length = {frame_length}], got "
                             f"{frame_step}")
        output_length = max(0, (frames - 1) * frame_step + frame_length)
        outer = array_ops.shape(signal)[:-2]
        # Samples first, so UnsortedSegmentSum adds each to its output position.
        flat = array_ops.reshape(signal, [-1, frames * frame_length])
        targets = (np.arange(frames)[:, None] * frame_step +
                   np.arange(frame_length)[None, :]).reshape(-1).astype(np.int32)
        summed = array_ops.unsorted_segment_sum(array_ops.transpose(flat), targets,
                                                output_length)
        result = array_ops.reshape(array_ops.transpose(summed),
                                   array_ops.concat([outer, [output_length]], 0))
        static_outer = signal.shape.as_list()[:-2]
        result.set_shape(static_outer + [output_length])
        return result


# --- windows -----------------------------------------------------------------------------------


def _window_length(window_length):
    return _static_int(window_length, "window_length")


def _raised_cosine(window_length, periodic, dtype, a, b, name, default_name):
    with _ops.name_scope(name, default_name):
        dtype = _dtypes.as_dtype(dtype)
        length = _window_length(window_length)
        if length == 1:
            return array_ops.ones([1], dtype=dtype)
        # A periodic window of even length is the symmetric window one sample longer, cut.
        denominator = length - 1 + (1 if periodic and length % 2 == 0 else 0)
        count = math_ops.cast(array_ops.range(length), dtype)
        angle = count * _ops.constant(2 * np.pi / denominator, dtype=dtype)
        return _ops.constant(a, dtype=dtype) - _ops.constant(b, dtype=dtype) * \
            math_functions.cos(angle)


@tf_export("signal.hann_window")
def hann_window(window_length, periodic=True, dtype=_dtypes.float32, name=None):
    """0.5 - 0.5 cos(2 pi n / N), N = window_length (periodic) or window_length - 1."""
    return _raised_cosine(window_length, periodic, dtype, 0.5, 0.5, name, "hann_window")


@tf_export("signal.hamming_window")
def hamming_window(window_length, periodic=True, dtype=_dtypes.float32, name=None):
    """0.54 - 0.46 cos(2 pi n / N), N = window_length (periodic) or window_length - 1."""
    return _raised_cosine(window_length, periodic, dtype, 0.54, 0.46, name, "hamming_window")


@tf_export("signal.kaiser_window")
def kaiser_window(window_length, beta=12., dtype=_dtypes.float32, name=None):
    """I0(beta sqrt(1 - (2n / (N - 1) - 1)^2)) / I0(beta), N = window_length."""
    with _ops.name_scope(name, "kaiser_window"):
        dtype = _dtypes.as_dtype(dtype)
        length = _window_length(window_length)
        if length == 1:
            return array_ops.ones([1], dtype=dtype)
        half = (length - 1) / 2.0
        position = _ops.constant((np.arange(length) - half) / half, dtype=dtype)
        beta = math_ops.cast(beta, dtype)
        one = _ops.constant(1.0, dtype=dtype)
        argument = beta * math_ops.sqrt(math_ops.relu(one - math_ops.square(position)))
        # i0e keeps large beta finite: I0(x) = i0e(x) exp(x).
        return math_ops.exp(argument - beta) * (
            math_functions.bessel_i0e(argument) / math_functions.bessel_i0e(beta))


@tf_export("signal.kaiser_bessel_derived_window")
def kaiser_bessel_derived_window(window_length, beta=12., dtype=_dtypes.float32, name=None):
    """The Kaiser-Bessel-derived window (for MDCTs): sqrt of the normalized running sum of a
    Kaiser window of half the length plus one, mirrored."""
    with _ops.name_scope(name, "kaiser_bessel_derived_window"):
        length = _window_length(window_length)
        kaiser = kaiser_window(length // 2 + 1, beta, dtype=dtype)
        running = scan_ops.cumsum(kaiser)
        half = math_ops.sqrt(running[:-1] / running[-1])
        return array_ops.concat([half, half[::-1]], 0)


@tf_export("signal.vorbis_window")
def vorbis_window(window_length, dtype=_dtypes.float32, name=None):
    """sin(pi / 2 sin^2(pi (n + 0.5) / N)), the Vorbis power-complementary window."""
    with _ops.name_scope(name, "vorbis_window"):
        dtype = _dtypes.as_dtype(dtype)
        length = _window_length(window_length)
        n = math_ops.cast(array_ops.range(length), dtype)
        inner = math_functions.sin(_ops.constant(np.pi / length, dtype=dtype) *
                                   (n + _ops.constant(0.5, dtype=dtype)))
        return math_functions.sin(_ops.constant(np.pi / 2, dtype=dtype) * math_ops.square(inner))


# --- short-time Fourier transforms -------------------------------------------------------------


def _enclosing_power_of_two(value):
    return int(2 ** _math.ceil(_math.log2(value))) if value > 1 else 1


@tf_export("signal.stft")
def stft(signals, frame_length, frame_step, fft_length=None, window_fn=hann_window,
         pad_end=False, name=None):
    """The short-time Fourier transform of real `signals` [..., samples]: windowed frames'
    RFFTs, [..., frames, fft_length // 2 + 1] complex."""
    with _ops.name_scope(name, "stft", [signals]):
        signals = _ops.convert_to_tensor(signals, name="signals")
        frame_length = _static_int(frame_length, "frame_length")
        fft_length = (_enclosing_power_of_two(frame_length) if fft_length is None
                      else _static_int(fft_length, "fft_length"))
        framed = frame(signals, frame_length, frame_step, pad_end=pad_end)
        if window_fn is not None:
            framed = framed * window_fn(frame_length, dtype=framed.dtype)
        return fft_ops.rfft(framed, [fft_length])


@tf_export("signal.inverse_stft")
def inverse_stft(stfts, frame_length, frame_step, fft_length=None, window_fn=hann_window,
                 name=None):
    """Signals from their STFTs [..., frames, fft_length // 2 + 1]: each frame's IRFFT, cut or
    zero-padded to frame_length, windowed, and overlap-added. Pass
    inverse_stft_window_fn(frame_step) as window_fn for a perfect reconstruction."""
    with _ops.name_scope(name, "inverse_stft", [stfts]):
        stfts = _ops.convert_to_tensor(stfts, name="stfts")
        frame_length = _static_int(frame_length, "frame_length")
        fft_length = (_enclosing_power_of_two(frame_length) if fft_length is None
                      else _static_int(fft_length, "fft_length"))
        frames = fft_ops.irfft(stfts, [fft_length])
        rank = frames.shape.ndims
        if fft_length > frame_length:
            frames = frames[..., :frame_length]
        elif fft_length < frame_length:
            frames = array_ops.pad(frames, [[0, 0]] * (rank - 1) +
                                   [[0, frame_length - fft_length]])
        if window_fn is not None:
            frames = frames * window_fn(frame_length, dtype=frames.dtype)
        return overlap_and_add(frames, frame_step)


@tf_export("signal.inverse_stft_window_fn")
def inverse_stft_window_fn(frame_step, forward_window_fn=hann_window, name=None):
    """A window_fn for inverse_stft that undoes `forward_window_fn` with hop `frame_step`: the
    forward window divided by the overlapped sum of its squares (Griffin and Lim, eq. 7)."""
    def window_fn(frame_length, dtype):
        with _ops.name_scope(name, "inverse_stft_window_fn"):
            step = _static_int(frame_step, "frame_step")
            length = _static_int(frame_length, "frame_length")
            forward = forward_window_fn(length, dtype=dtype)
            overlaps = -(-length // step)
            squares = array_ops.pad(math_ops.square(forward), [[0, overlaps * step - length]])
            per_phase = reduction_ops.reduce_sum(array_ops.reshape(squares, [overlaps, step]), 0)
            denominator = array_ops.reshape(
                array_ops.tile(array_ops.expand_dims(per_phase, 0), [overlaps, 1]), [-1])
            return forward / denominator[:length]

    return window_fn


# --- mel scale and MFCCs -----------------------------------------------------------------------

_MEL_BREAK_FREQUENCY_HERTZ = 700.0
_MEL_HIGH_FREQUENCY_Q = 1127.0


def _hertz_to_mel(hertz, dtype):
    return (dtype.type(_MEL_HIGH_FREQUENCY_Q) *
            np.log(dtype.type(1.0) + hertz / dtype.type(_MEL_BREAK_FREQUENCY_HERTZ)))


def _linspace(start, stop, num, dtype):
    step = (stop - start) / dtype.type(max(num - 1, 1))
    values = start + np.arange(num, dtype=dtype) * step
    values[-1] = stop
    return values


@tf_export("signal.linear_to_mel_weight_matrix")
def linear_to_mel_weight_matrix(num_mel_bins=20, num_spectrogram_bins=129, sample_rate=8000,
                                lower_edge_hertz=125.0, upper_edge_hertz=3800.0,
                                dtype=_dtypes.float32, name=None):
    """[num_spectrogram_bins, num_mel_bins] weights taking linear-frequency spectrogram bins
    (0 to sample_rate / 2) to HTK mel bands: triangles between lower_edge_hertz and
    upper_edge_hertz, equally spaced in mel, the DC bin excluded. A constant, computed while
    building in the dtype's precision in TensorFlow's order."""
    dtype = _dtypes.as_dtype(dtype)
    if not dtype.is_floating:
        raise ValueError(f"dtype must be a floating point type, got {dtype!r}")
    num_mel_bins = _static_int(num_mel_bins, "num_mel_bins")
    num_spectrogram_bins = _static_int(num_spectrogram_bins, "num_spectrogram_bins")
    sample_rate = float(array_composites.get_static_value(sample_rate)
                        if isinstance(sample_rate, _ops.Tensor) else sample_rate)
    lower, upper = float(lower_edge_hertz), float(upper_edge_hertz)
    if num_mel_bins <= 0:
        raise ValueError(f"num_mel_bins must be positive, got {num_mel_bins}")
    if lower < 0.0:
        raise ValueError(f"lower_edge_hertz must be non-negative, got {lower}")
    if lower >= upper:
        raise ValueError(f"lower_edge_hertz {lower} >= upper_edge_hertz {upper}")
    if sample_rate <= 0.0:
        raise ValueError(f"sample_rate must be positive, got {sample_rate}")
    if upper > sample_rate / 2:
        raise ValueError(f"upper_edge_hertz must not be larger than the Nyquist frequency "
                         f"(sample_rate / 2), got {upper} for sample_rate {sample_rate}")
    np_dtype = np.dtype(dtype.as_numpy_dtype)
    nyquist = np_dtype.type(sample_rate) / np_dtype.type(2.0)
    linear = _linspace(np_dtype.type(0.0), nyquist, num_spectrogram_bins, np_dtype)[1:]
    bins_mel = _hertz_to_mel(linear, np_dtype)[:, None]
    edges = _linspace(_hertz_to_mel(np_dtype.type(lower), np_dtype),
                      _hertz_to_mel(np_dtype.type(upper), np_dtype), num_mel_bins + 2, np_dtype)
    lower_mel, center_mel, upper_mel = edges[:-2], edges[1:-1], edges[2:]
    with np.errstate(divide="ignore", invalid="ignore"):
        rising = (bins_mel - lower_mel) / (center_mel - lower_mel)
        falling = (upper_mel - bins_mel) / (upper_mel - center_mel)
    weights = np.maximum(np_dtype.type(0), np.minimum(rising, falling)).astype(np_dtype)
    weights = np.concatenate([np.zeros((1, num_mel_bins), np_dtype), weights], 0)
    return _ops.constant(weights, dtype=dtype, name=name or "linear_to_mel_weight_matrix")


@tf_export("signal.mfccs_from_log_mel_spectrograms")
def mfccs_from_log_mel_spectrograms(log_mel_spectrograms, name=None):
    """MFCCs of [..., num_mel_bins] log-magnitude mel spectrograms: their orthonormal-scaled
    DCT-II, as HTK computes them."""
    with _ops.name_scope(name, "mfccs_from_log_mel_spectrograms", [log_mel_spectrograms]):
        spectrograms = _ops.convert_to_tensor(log_mel_spectrograms, name="log_mel_spectrograms")
        bins = _dim(spectrograms, -1)
        if isinstance(bins, int) and bins == 0:
            raise ValueError("num_mel_bins must be positive, got log_mel_spectrograms of shape "
                             f"{spectrograms.shape}")
        coefficients = dct(spectrograms, type=2)
        return coefficients * math_ops.rsqrt(
            math_ops.cast(bins, coefficients.dtype) * _ops.constant(2.0, coefficients.dtype))


# --- discrete cosine transforms ----------------------------------------------------------------


def _check_dct(input_tensor, dct_type, n, axis, norm):
    if axis != -1:
        raise NotImplementedError(f"axis must be -1, got {axis}")
    if n is not None and n < 1:
        raise ValueError(f"n should be a positive integer or None, got {n}")
    if dct_type not in (1, 2, 3, 4):
        raise ValueError(f"Types I, II, III and IV (I)DCT are supported, got type {dct_type}")
    if norm not in (None, "ortho"):
        raise ValueError(f"Unknown normalization. Expected None or 'ortho', got: {norm}")
    if dct_type == 1:
        if norm == "ortho":
            raise ValueError("Normalization is not supported for the Type-I DCT.")
        length = input_tensor.shape.as_list()[-1] if input_tensor.shape.ndims else None
        if length is not None and length < 2 and n is None:
            raise ValueError(f"Type-I DCT requires the dimension to be greater than one, got "
                             f"{length}")


def _dct(x, dct_type, n, norm):
    length = _dim(x, -1)
    if not isinstance(length, int):
        raise ValueError(f"dct needs the last dimension known, got shape {x.shape}")
    if n is not None and n != length:
        if n < length:
            x = x[..., :n]
        else:
            x = array_ops.pad(x, [[0, 0]] * (x.shape.ndims - 1) + [[0, n - length]])
        length = n
    real = x.dtype
    complex_dtype = _dtypes.complex64 if real == _dtypes.float32 else _dtypes.complex128
    if dct_type == 1:
        mirrored = array_ops.concat([x, x[..., -2:0:-1]], -1)
        return complex_ops.real(fft_ops.rfft(mirrored))
    quarter_turns = np.arange(length) * np.pi * 0.5 / length
    if dct_type == 2:
        twiddle = _ops.constant(2.0 * np.exp(-1j * quarter_turns), dtype=complex_dtype)
        spectrum = fft_ops.rfft(x, [2 * length])[..., :length]
        result = complex_ops.real(spectrum * twiddle)
        if norm == "ortho":
            weights = np.full(length, np.sqrt(0.5 / length))
            weights[0] = 0.5 / np.sqrt(length)
            result = result * _ops.constant(weights, dtype=real)
        return result
    if dct_type == 3:
        if norm == "ortho":
            weights = np.full(length, np.sqrt(length * 0.5))
            weights[0] = np.sqrt(length)
        else:
            weights = np.full(length, float(length))
        scaled = x * _ops.constant(weights, dtype=real)
        twiddle = _ops.constant(2.0 * np.exp(1j * quarter_turns), dtype=complex_dtype)
        spectrum = twiddle * complex_ops.complex(scaled, array_ops.zeros_like(scaled))
        return fft_ops.irfft(spectrum, [2 * length])[..., :length]
    # Type IV: the odd coefficients of the type-II DCT of the signal zero-padded to twice its
    # length.
    result = _dct(x, 2, 2 * length, None)[..., 1::2]
    if norm == "ortho":
        result = result * _ops.constant(np.sqrt(0.5 / length), dtype=real)
    return result


@tf_export("signal.dct", "spectral.dct")
def dct(input, type=2, n=None, axis=-1, norm=None, name=None):  # noqa: A002 - TF's names
    """The DCT (types I-IV, scipy.fftpack's definitions) of `input` over its last axis,
    truncated or zero-padded to `n` points; `norm="ortho"` for the orthonormal scaling."""
    with _ops.name_scope(name, "dct", [input]):
        x = _ops.convert_to_tensor(input, name="input")
        _check_dct(x, type, n, axis, norm)
        return _dct(x, type, n, norm)


@tf_export("signal.idct", "spectral.idct")
def idct(input, type=2, n=None, axis=-1, norm=None, name=None):  # noqa: A002 - TF's names
    """The inverse DCT: the DCT of the inverse type (II <-> III, I and IV their own), so
    idct(dct(x)) is x * 2 * length unless norm="ortho"."""
    with _ops.name_scope(name, "idct", [input]):
        x = _ops.convert_to_tensor(input, name="input")
        _check_dct(x, type, n, axis, norm)
        return _dct(x, {1: 1, 2: 3, 3: 2, 4: 4}[type], n, norm)


# --- modified discrete cosine transforms -------------------------------------------------------


@tf_export("signal.mdct")
def mdct(signals, frame_length, window_fn=vorbis_window, pad_end=False, norm=None, name=None):
    """The MDCT of real `signals` [..., samples]: frames of frame_length (a multiple of 4) every
    frame_length / 2, windowed, each giving frame_length / 2 coefficients by a type-IV DCT of
    its folded halves."""
    with _ops.name_scope(name, "mdct", [signals]):
        signals = _ops.convert_to_tensor(signals, name="signals")
        frame_length = _static_int(frame_length, "frame_length")
        if frame_length % 4:
            raise ValueError(f"The frame length must be a multiple of 4, got {frame_length}")
        framed = frame(signals, frame_length, frame_length // 2, pad_end=pad_end)
        if window_fn is not None:
            framed = framed * window_fn(frame_length, dtype=framed.dtype)
        else:
            framed = framed * _ops.constant(1.0 / np.sqrt(2), dtype=framed.dtype)
        quarter = frame_length // 4
        a, b, c, d = (framed[..., i * quarter:(i + 1) * quarter] for i in range(4))
        folded = array_ops.concat([-c[..., ::-1] - d, a - b[..., ::-1]], -1)
        return dct(folded, type=4, norm=norm)


@tf_export("signal.inverse_mdct")
def inverse_mdct(mdcts, window_fn=vorbis_window, norm=None, name=None):
    """Signals from their MDCTs [..., frames, frame_length / 2]: each frame's type-IV DCT,
    unfolded to frame_length samples, windowed and overlap-added (time-domain aliasing
    cancels for a window w with w[n]^2 + w[n + frame_length / 2]^2 = 1, the default's)."""
    with _ops.name_scope(name, "inverse_mdct", [mdcts]):
        mdcts = _ops.convert_to_tensor(mdcts, name="mdcts")
        half = _dim(mdcts, -1)
        if not isinstance(half, int):
            raise ValueError(f"inverse_mdct needs the last dimension known, got {mdcts.shape}")
        frame_length = 2 * half
        if norm is None:
            scaled = dct(mdcts, type=4) * _ops.constant(0.5 / half, dtype=mdcts.dtype)
        elif norm == "ortho":
            scaled = dct(mdcts, type=4, norm="ortho")
        else:
            raise ValueError(f"norm must be None or 'ortho', got {norm!r}")
        quarter = frame_length // 4
        first, second = scaled[..., :quarter], scaled[..., quarter:]
        unfolded = array_ops.concat([second, -second[..., ::-1], -first[..., ::-1], -first], -1)
        if window_fn is not None:
            unfolded = unfolded * window_fn(frame_length, dtype=unfolded.dtype)
        else:
            unfolded = unfolded * _ops.constant(1.0 / np.sqrt(2), dtype=unfolded.dtype)
        return overlap_and_add(unfolded, half)
