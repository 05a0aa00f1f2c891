"""hvd.Compression: how gradients travel in an allreduce."""

from flowstone import dtypes as _dtypes
from flowstone.ops import math_ops as _math_ops


class NoneCompressor:
    """Sends tensors as they are."""

    @staticmethod
    def compress(tensor):
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor


class FP16Compressor:
    """Sends floating-point tensors as float16 and casts the result back."""

    @staticmethod
    def compress(tensor):
        if tensor.dtype.is_floating and tensor.dtype != _dtypes.float16:
            return _math_ops.cast(tensor, _dtypes.float16), tensor.dtype
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor if ctx is None else _math_ops.cast(tensor, ctx)


class Compression:
    none = NoneCompressor
    fp16 = FP16Compressor
