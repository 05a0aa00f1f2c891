"""tf.math's elementwise functions beyond arithmetic: trigonometric and hyperbolic functions,
special functions (erf, lgamma, digamma, zeta, polygamma, Bessel I0 and I1), floating-point
tests, xlogy and friends, truncating division, bitwise ops, log_sigmoid and polyval. Each is one
op (or, where TensorFlow composes, the same composition), named as TensorFlow names it."""

from flowstone.framework import ops as _ops
from flowstone.ops.math_ops import _binary, _unary
from flowstone.util.tf_export import tf_export


def _unary_export(op_type, *names, doc):
    """A function f(x, name=None) creating one `op_type` op, exported under `names`."""
    def fn(x, name=None):
        return _unary(op_type, x, name)

    fn.__name__ = names[0].rsplit(".", 1)[-1]
    fn.__qualname__ = fn.__name__
    fn.__doc__ = doc
    return tf_export(*names)(fn)


sin = _unary_export("Sin", "math.sin", "sin", doc="sin(x) elementwise.")
cos = _unary_export("Cos", "math.cos", "cos", doc="cos(x) elementwise.")
tan = _unary_export("Tan", "math.tan", "tan", doc="tan(x) elementwise.")
asin = _unary_export("Asin", "math.asin", "asin", doc="The inverse sine, in [-pi/2, pi/2].")
acos = _unary_export("Acos", "math.acos", "acos", doc="The inverse cosine, in [0, pi].")
atan = _unary_export("Atan", "math.atan", "atan", doc="The inverse tangent, in (-pi/2, pi/2).")
sinh = _unary_export("Sinh", "math.sinh", "sinh", doc="Hyperbolic sine elementwise.")
cosh = _unary_export("Cosh", "math.cosh", "cosh", doc="Hyperbolic cosine elementwise.")
asinh = _unary_export("Asinh", "math.asinh", "asinh", doc="Inverse hyperbolic sine.")
acosh = _unary_export("Acosh", "math.acosh", "acosh", doc="Inverse hyperbolic cosine.")
atanh = _unary_export("Atanh", "math.atanh", "atanh", doc="Inverse hyperbolic tangent.")
erf = _unary_export("Erf", "math.erf", "erf", doc="The Gauss error function elementwise.")
erfc = _unary_export("Erfc", "math.erfc", "erfc", doc="1 - erf(x), accurate for large x.")
lgamma = _unary_export("Lgamma", "math.lgamma", "lgamma", doc="log |Gamma(x)| elementwise.")
digamma = _unary_export("Digamma", "math.digamma", "digamma",
                        doc="psi(x), the derivative of lgamma, elementwise.")
reciprocal = _unary_export("Reciprocal", "math.reciprocal", "reciprocal", doc="1 / x elementwise.")
expm1 = _unary_export("Expm1", "math.expm1", "expm1", doc="exp(x) - 1, accurate for small x.")
rint = _unary_export("Rint", "math.rint", "rint",
                     doc="The nearest integer elementwise, halves to even.")
is_nan = _unary_export("IsNan", "math.is_nan", "debugging.is_nan", "is_nan",
                       doc="Whether each element is NaN.")
is_inf = _unary_export("IsInf", "math.is_inf", "debugging.is_inf", "is_inf",
                       doc="Whether each element is infinite.")
is_finite = _unary_export("IsFinite", "math.is_finite", "debugging.is_finite", "is_finite",
                          doc="Whether each element is neither NaN nor infinite.")
invert = _unary_export("Invert", "bitwise.invert", doc="Bitwise NOT elementwise.")
erfinv = _unary_export("Erfinv", "math.erfinv", doc="The inverse of erf (NaN outside [-1, 1]).")
ndtri = _unary_export("Ndtri", "math.ndtri",
                      doc="The standard normal quantile: x with Phi(x) = p (NaN outside [0, 1]).")
bessel_i0 = _unary_export("BesselI0", "math.bessel_i0", "math.special.bessel_i0",
                          doc="The modified Bessel function of the first kind of order 0.")
bessel_i0e = _unary_export("BesselI0e", "math.bessel_i0e", "math.special.bessel_i0e",
                           doc="exp(-|x|) * bessel_i0(x), finite for large |x|.")
bessel_i1 = _unary_export("BesselI1", "math.bessel_i1", "math.special.bessel_i1",
                          doc="The modified Bessel function of the first kind of order 1.")
bessel_i1e = _unary_export("BesselI1e", "math.bessel_i1e", "math.special.bessel_i1e",
                           doc="exp(-|x|) * bessel_i1(x), finite for large |x|.")


@tf_export("math.erfcinv")
def erfcinv(x, name=None):
    """The inverse of erfc, -ndtri(x / 2) / sqrt(2) as TensorFlow computes it."""
    with _ops.name_scope(name, "erfcinv", [x]):
        x = _ops.convert_to_tensor(x, name="start")
        return -ndtri(0.5 * x) * 0.7071067811865476  # sqrt(1/2)


@tf_export("math.softplus", "nn.softplus")
def softplus(features, name=None):
    """log(exp(features) + 1) elementwise, without overflow."""
    return _unary("Softplus", features, name)


@tf_export("math.softsign", "nn.softsign")
def softsign(features, name=None):
    """features / (abs(features) + 1) elementwise."""
    return _unary("Softsign", features, name)


@tf_export("math.log_sigmoid", "log_sigmoid")
def log_sigmoid(x, name=None):
    """log(sigmoid(x)), computed as -softplus(-x) as TensorFlow does, so it never overflows."""
    with _ops.name_scope(name, "LogSigmoid", [x]) as scope:
        x = _ops.convert_to_tensor(x, name="x")
        negated = _ops.apply_op("Neg", [x]).outputs[0]
        softplus_value = _ops.apply_op("Softplus", [negated]).outputs[0]
        return _ops.apply_op("Neg", [softplus_value], name=scope.rstrip("/"),
                             exact_name=True).outputs[0]


def _binary_export(op_type, default_name, *names, doc, args=("x", "y")):
    """A function f(x, y, name=None) creating one `op_type` op, exported under `names`."""
    def fn(x, y, name=None):
        return _binary(op_type, x, y, name, default_name)

    fn.__name__ = names[0].rsplit(".", 1)[-1]
    fn.__qualname__ = fn.__name__
    fn.__doc__ = doc
    return tf_export(*names)(fn)


xlogy = _binary_export("Xlogy", "Xlogy", "math.xlogy", doc="x * log(y), 0 where x == 0.")
xdivy = _binary_export("Xdivy", "Xdivy", "math.xdivy", doc="x / y, 0 where x == 0.")
xlog1py = _binary_export("Xlog1py", "Xlog1py", "math.xlog1py", doc="x * log1p(y), 0 where x == 0.")
truncatediv = _binary_export("TruncateDiv", "TruncateDiv", "truncatediv",
                             doc="x / y rounded toward zero, like C.")
truncatemod = _binary_export("TruncateMod", "TruncateMod", "truncatemod",
                             doc="The remainder of truncatediv, with the sign of x, like C.")
bitwise_and = _binary_export("BitwiseAnd", "BitwiseAnd", "bitwise.bitwise_and", doc="x & y.")
bitwise_or = _binary_export("BitwiseOr", "BitwiseOr", "bitwise.bitwise_or", doc="x | y.")
bitwise_xor = _binary_export("BitwiseXor", "BitwiseXor", "bitwise.bitwise_xor", doc="x ^ y.")
left_shift = _binary_export("LeftShift", "LeftShift", "bitwise.left_shift",
                            doc="x << y; counts are clamped to [0, bits - 1].")
right_shift = _binary_export("RightShift", "RightShift", "bitwise.right_shift",
                             doc="x >> y (arithmetic for signed types); counts are clamped.")


@tf_export("math.zeta", "zeta")
def zeta(x, q, name=None):
    """The Hurwitz zeta function: the sum over k >= 0 of (q + k)^-x."""
    return _binary("Zeta", x, q, name, "Zeta")


@tf_export("math.polygamma", "polygamma")
def polygamma(a, x, name=None):
    """psi^(a)(x), the a-th derivative of digamma (a a whole number, as a float tensor)."""
    return _binary("Polygamma", a, x, name, "Polygamma")


@tf_export("math.atan2", "atan2")
def atan2(y, x, name=None):
    """The angle of the point (x, y): atan(y / x) in the right quadrant."""
    return _binary("Atan2", y, x, name, "Atan2")


@tf_export("math.polyval")
def polyval(coeffs, x, name=None):
    """coeffs[0] * x^(n-1) + ... + coeffs[n-1] by Horner's rule, as TensorFlow evaluates it.

    `coeffs` is a list of tensors broadcasting against x; an empty list gives zeros like x.
    """
    if not isinstance(coeffs, (list, tuple)):
        raise ValueError(f"Argument coeffs must be list type found {type(coeffs)}.")
    with _ops.name_scope(name, "polyval", list(coeffs) + [x]):
        x = _ops.convert_to_tensor(x, name="x")
        if not coeffs:
            return _ops.apply_op("ZerosLike", [x], name="zeros_like").outputs[0]
        coeffs = [_ops.convert_to_tensor(c, dtype=x.dtype, name=f"coeff_{i}")
                  for i, c in enumerate(coeffs)]
        result = coeffs[0]
        for c in coeffs[1:]:
            result = c + result * x
        return result
