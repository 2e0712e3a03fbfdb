"""``fg.nn.functional`` (PyTorch names and semantics: ``dim=``, ``reduction=``)."""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from .. import dtypes as _dtypes
from .. import ops
from .. import random as _random
from ..array import Array as _Array
from ..array import ArrayBase
from ..errors import ArgumentValueError, ConcretizationError, DTypeError, ShapeError, named_errors
from ..primitives.attention import attention_p
from ..primitives.checks import normalize_axis
from ..primitives.core import bind
from ..primitives.core import fmt_shape as _fmt_shape
from ..primitives.cross_entropy import softmax_cross_entropy_p
from ..primitives.elementwise import UNARY
from ..primitives.linalg import linear_p
from ..primitives.normalization import layer_norm_p, softmax_p
from ..random.generator import bernoulli_mask, default_generator, uniform_draw
from ..transforms import custom_vjp as _custom_vjp
from ..transforms import no_grad as _no_grad
from ..transforms import stop_gradient as _stop_gradient
from ._checks import outside as _outside
from ._checks import same_dtype as _same_dtype
from .conv import (  # noqa: E402
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    avg_pool1d,
    avg_pool2d,
    conv1d,
    conv2d,
    max_pool1d,
    max_pool2d,
    max_unpool2d,
)
from .conv3d import (
    adaptive_avg_pool3d,
    adaptive_max_pool3d,
    avg_pool3d,
    conv3d,
    conv_transpose3d,
    max_pool3d,
    max_unpool3d,
)
from .conv_transpose import conv_transpose1d, conv_transpose2d, fold, unfold
from .fractional import fractional_max_pool2d, fractional_max_pool3d  # noqa: E402
from .norm import batch_norm as _batch_norm_stats
from .norm import instance_norm_stats as _instance_norm_stats
from .parameter import Parameter
from .resize import adaptive_max_pool1d, adaptive_max_pool2d, interpolate, pixel_shuffle, pixel_unshuffle, upsample

__all__ = ["conv2d", "max_pool2d", "max_unpool2d", "avg_pool2d", "adaptive_avg_pool2d", "leaky_relu", "elu",
           "softplus", "normalize", "one_hot", "linear", "relu", "gelu", "silu", "sigmoid", "tanh", "softmax",
           "log_softmax", "dropout", "layer_norm", "embedding", "cross_entropy", "nll_loss", "mse_loss", "l1_loss",
           "binary_cross_entropy_with_logits", "conv1d", "scaled_dot_product_attention", "dropout1d", "dropout2d",
           "group_norm", "instance_norm", "batch_norm", "pad", "hardshrink", "softshrink", "tanhshrink", "rms_norm",
           "channel_shuffle", "soft_margin_loss", "hinge_embedding_loss", "hardtanh", "relu6", "hardsigmoid",
           "hardswish", "mish", "logsigmoid", "softsign", "softmin", "threshold", "glu", "prelu", "selu", "celu",
           "binary_cross_entropy",
           "smooth_l1_loss", "huber_loss", "kl_div", "margin_ranking_loss", "pairwise_distance", "cosine_similarity",
           "triplet_margin_loss", "cosine_embedding_loss", "poisson_nll_loss", "gaussian_nll_loss",
           "multilabel_soft_margin_loss", "bilinear", "conv_transpose1d", "conv_transpose2d", "fold", "unfold",
           "adaptive_max_pool2d", "interpolate", "upsample", "pixel_shuffle", "pixel_unshuffle", "max_pool1d",
           "avg_pool1d", "adaptive_avg_pool1d", "adaptive_max_pool1d", "dropout3d", "rrelu", "alpha_dropout",
           "feature_alpha_dropout", "local_response_norm", "multi_margin_loss", "multilabel_margin_loss",
           "triplet_margin_with_distance_loss", "lp_pool1d", "lp_pool2d", "lp_pool3d", "conv3d", "conv_transpose3d",
           "avg_pool3d", "max_pool3d", "adaptive_avg_pool3d", "adaptive_max_pool3d", "max_unpool3d", "max_unpool1d",
           "embedding_bag", "ctc_loss", "linear_cross_entropy", "fractional_max_pool2d", "fractional_max_pool3d"]


def linear(x: Any, weight: Any, bias: Any = None) -> Any:
    """``x @ weight.T + bias`` (weight has PyTorch's (out_features, in_features) shape): the
    ``linear`` primitive (bfloat16: the composite). Input, weight and bias share one dtype."""
    x = x if isinstance(x, ArrayBase) else ops.asarray(x, device=weight.device)
    x = _same_dtype("linear", x, weight, bias)
    if x.dtype.kind == "f" and x.dtype.name != "bfloat16" and x.ndim >= 1:
        return bind(linear_p, x, weight) if bias is None else bind(linear_p, x, weight, bias)
    out = ops.matmul(x, ops.matrix_transpose(weight))
    return out if bias is None else out + bias


def bilinear(x1: Any, x2: Any, weight: Any, bias: Any = None) -> Any:
    """``y[..., o] = x1 @ weight[o] @ x2 + bias[o]``, weight (out, in1, in2), PyTorch's ``bilinear``."""
    if getattr(weight, "ndim", None) != 3 or tuple(x1.shape[-1:]) != tuple(weight.shape[1:2]) or tuple(
            x2.shape[-1:]) != tuple(weight.shape[2:3]) or tuple(x1.shape[:-1]) != tuple(x2.shape[:-1]):
        raise ShapeError(f"bilinear: inputs of shapes {_fmt_shape(tuple(x1.shape))} and {_fmt_shape(tuple(x2.shape))} "
                         f"do not fit a weight of shape {_fmt_shape(tuple(getattr(weight, 'shape', ())))} "
                         "(out, in1, in2): the inputs share their leading axes and end in in1 and in2")
    x1 = _same_dtype("bilinear", x1, weight, bias)
    x2 = _same_dtype("bilinear", x2, weight)
    out = ops.einsum("...i,oij,...j->...o", x1, weight, x2)
    return out if bias is None else out + bias


_RELU = UNARY["relu"]


def relu(x: Any) -> Any:
    """``max(x, 0)``, one primitive, as ``torch.nn.functional.relu``: NaN stays NaN, and the
    derivative is 0 at 0 and wherever the result is not positive (PyTorch's
    ``threshold_backward``).

    Args:
        x: a real array.

    Returns:
        The rectified array.

    Example:
        >>> fg.nn.functional.relu(fg.asarray([-1.0, 0.0, 2.0])).tolist()
        [0.0, 0.0, 2.0]
    """
    x = x if isinstance(x, ArrayBase) else ops.asarray(x)
    if x.dtype.kind in "bc":
        raise DTypeError(f"relu: takes a real numeric array, got {x.dtype} (cast it first, e.g. x.astype(fg.float32))")
    return bind(_RELU, x)


def gelu(x: Any, approximate: str = "none") -> Any:
    """GELU, ``x * Phi(x)`` with Phi the normal distribution function, as PyTorch's.

    Args:
        x: a float array.
        approximate: ``"none"`` (the exact form, one native loop where a compiler is found)
            or ``"tanh"`` (the tanh approximation).

    Returns:
        The activation.

    Example:
        >>> round(fg.nn.functional.gelu(fg.asarray([1.0])).item(), 6)   # torch.nn.functional.gelu's
        0.841345
    """
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    if approximate == "tanh":
        return 0.5 * x * (1.0 + ops.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    return bind(UNARY["gelu"], x)  # one primitive: its kernel and its derivative's are one loop each


def silu(x: Any) -> Any:
    """SiLU (swish): ``x * sigmoid(x)``."""
    return x * ops.sigmoid(x)


sigmoid = ops.sigmoid
tanh = ops.tanh


def leaky_relu(x: Any, negative_slope: float = 0.01) -> Any:
    """``x`` where positive, else ``negative_slope * x`` (the derivative at 0 is the slope, as PyTorch)."""
    return ops.where(x > 0, x, x * negative_slope)


def elu(x: Any, alpha: float = 1.0) -> Any:
    """``x`` where positive, else ``alpha * (exp(x) - 1)``. The exponential sees only the
    non-positive part, so the branch not taken has no overflow to turn its zero gradient
    into NaN (docs/sharp-bits.md)."""
    return ops.where(x > 0, x, alpha * ops.expm1(ops.minimum(x, 0.0)))


def softplus(x: Any, beta: float = 1.0, threshold: float = 20.0) -> Any:
    """``log(1 + exp(beta * x)) / beta``, and ``x`` itself where ``beta * x > threshold`` (PyTorch's)."""
    bx = x * beta
    return ops.where(bx > threshold, x, ops.logaddexp(0.0, bx) / beta)


def scaled_dot_product_attention(query: Any, key: Any, value: Any, attn_mask: Any = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: float | None = None, enable_gqa: bool = False) -> Any:
    """``softmax(q @ k.T * scale + mask) @ v`` over the last two axes (PyTorch's
    ``scaled_dot_product_attention``): a bool ``attn_mask`` keeps where true, a float one is
    added; ``is_causal`` keeps each query's own and earlier keys; ``dropout_p`` drops
    attention weights; ``enable_gqa`` shares each key/value head among a group of query heads."""
    if is_causal and attn_mask is not None:
        raise ValueError("scaled_dot_product_attention: give attn_mask or is_causal=True, not both")
    length, source = query.shape[-2], key.shape[-2]
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    if enable_gqa and key.ndim >= 3 and key.shape[-3] != query.shape[-3]:
        groups = query.shape[-3] // key.shape[-3]
        key, value = (ops.repeat(t, groups, axis=-3) for t in (key, value))
    if attn_mask is None and dropout_p == 0.0 and _one_attention(query, key, value):
        return bind(attention_p, query, key, value, scale=float(scale), causal=bool(is_causal))[0]
    # the scale on the queries (fewer elements than the scores), and a boolean mask made an
    # additive one of 0 and -inf (the size of the mask, not of the scores): a sum's gradient
    # passes through where a select's is another select
    scores = ops.matmul(query * scale, ops.swapaxes(key, -1, -2))
    if is_causal:
        attn_mask = ops.tril(ops.ones((length, source), _dtypes.bool_, device=query.device))
    if attn_mask is not None:
        if attn_mask.dtype.kind == "b":
            attn_mask = ops.where(attn_mask, ops.zeros((), scores.dtype, device=scores.device), -math.inf)
        scores = scores + attn_mask
    weights = softmax(scores, -1)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, True)
    return ops.matmul(weights, value)


def _one_attention(query: Any, key: Any, value: Any) -> bool:
    """Whether the ``attention`` primitive computes this call: float32 or float64 arrays of
    one dtype with the same leading axes (no broadcasting between them)."""
    return all(isinstance(t, ArrayBase) for t in (query, key, value)) and query.ndim >= 2 and \
        query.dtype is key.dtype is value.dtype and query.dtype in (_dtypes.float32, _dtypes.float64) and \
        tuple(query.shape[:-2]) == tuple(key.shape[:-2]) == tuple(value.shape[:-2]) and \
        query.shape[-1] == key.shape[-1] and key.shape[-2] == value.shape[-2]


def _channel_dropout(x: Any, p: float, training: bool, spatial: int, op: str) -> Any:
    """Whole channels zeroed with probability ``p`` (the rest scaled by ``1/(1-p)``), for
    inputs (N, C, *spatial) or (C, *spatial)."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{op}: p must be in [0, 1], got {p}")
    if x.ndim not in (spatial + 1, spatial + 2):
        raise ShapeError(f"{op}: expects (N, C, ...) or (C, ...) with {spatial} spatial axes, got "
                         f"{_fmt_shape(tuple(x.shape))}")
    if not training or p == 0.0:
        return x
    channels = tuple(x.shape[:x.ndim - spatial]) + (1,) * spatial
    return x * dropout(ops.ones(channels, x.dtype, device=x.device), p, True)


def dropout3d(x: Any, p: float = 0.5, training: bool = True) -> Any:
    """Dropout of whole channels of (N, C, D, H, W) inputs."""
    return _channel_dropout(x, p, training, 3, "dropout3d")


def dropout1d(x: Any, p: float = 0.5, training: bool = True) -> Any:
    """Dropout of whole channels of (N, C, L) inputs."""
    return _channel_dropout(x, p, training, 1, "dropout1d")


def dropout2d(x: Any, p: float = 0.5, training: bool = True) -> Any:
    """Dropout of whole channels of (N, C, H, W) inputs."""
    return _channel_dropout(x, p, training, 2, "dropout2d")


def group_norm(x: Any, num_groups: int, weight: Any = None, bias: Any = None, eps: float = 1e-5) -> Any:
    """Normalized over each group of channels (and the spatial axes) of (N, C, ...) inputs."""
    n, c = x.shape[0], x.shape[1]
    if c % num_groups:
        raise ShapeError(f"group_norm: {c} channels do not split into {num_groups} groups")
    grouped = ops.reshape(x, (n, num_groups, -1))
    mean = ops.mean(grouped, axis=-1, keepdims=True)
    var = ops.var(grouped, axis=-1, keepdims=True)
    out = ops.reshape((grouped - mean) / ops.sqrt(var + eps), tuple(x.shape))
    shape = (1, c) + (1,) * (x.ndim - 2)
    if weight is not None:
        out = out * ops.reshape(weight, shape)
    return out + ops.reshape(bias, shape) if bias is not None else out


def batch_norm(input: Any, running_mean: Any, running_var: Any, weight: Any = None, bias: Any = None,
               training: bool = False, momentum: float = 0.1, eps: float = 1e-5) -> Any:
    """PyTorch's ``F.batch_norm`` over axis 1 of (N, C, ...) inputs: with the running
    statistics (``training=False``), or the batch's (``training=True``). Training, PyTorch
    also updates ``running_mean``/``running_var`` in place; funcgrad arrays cannot change,
    so they are updated only when they are mutable holders (``fg.nn.Parameter``s), and
    passing plain arrays then is an error that says so (``nn.BatchNorm*`` keeps the
    statistics itself)."""
    if not training and (running_mean is None or running_var is None):
        raise ArgumentValueError("batch_norm: running_mean and running_var are needed when training=False")
    tracked = running_mean is not None and running_var is not None
    if training and tracked and not all(hasattr(s, "_assign") for s in (running_mean, running_var)):
        raise ArgumentValueError(
            "batch_norm: training=True would update running_mean and running_var in place, and funcgrad arrays "
            "cannot change. Use fg.nn.BatchNorm1d/2d/3d (the module keeps its statistics), pass "
            "running_mean=None and running_var=None, or pass fg.nn.Parameter(..., requires_grad=False) holders")
    out, mean, var = _batch_norm_stats(input, running_mean if tracked else None, running_var if tracked else None,
                                       weight, bias, training, momentum, eps)
    if training and tracked:
        with _no_grad():
            running_mean._assign(_stop_gradient(mean))
            running_var._assign(_stop_gradient(var))
    return out


def instance_norm(x: Any, running_mean: Any = None, running_var: Any = None, weight: Any = None, bias: Any = None,
                  use_input_stats: bool = True, momentum: float = 0.1, eps: float = 1e-5) -> Any:
    """Each channel of each sample normalized over its spatial axes: with the input's
    statistics (``use_input_stats``), or with ``running_mean``/``running_var``. PyTorch's
    functional form updates running statistics in place; arrays are immutable, so
    ``nn.norm.instance_norm_stats`` returns them (the layers keep them)."""
    if use_input_stats and running_mean is None:
        return group_norm(x, x.shape[1], weight, bias, eps)
    return _instance_norm_stats(x, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)[0]


def hardtanh(x: Any, min_val: float = -1.0, max_val: float = 1.0) -> Any:
    """``x`` clipped to ``[min_val, max_val]`` (the derivative is 0 at the bounds, as PyTorch's)."""
    return ops.where(x <= min_val, min_val, ops.where(x >= max_val, max_val, x)).astype(x.dtype)


def relu6(x: Any) -> Any:
    """``min(max(x, 0), 6)``."""
    return hardtanh(x, 0.0, 6.0)


def hardsigmoid(x: Any) -> Any:
    """``relu6(x + 3) / 6``: a piecewise-linear sigmoid."""
    return relu6(x + 3.0) / 6.0


def hardswish(x: Any) -> Any:
    """``x * relu6(x + 3) / 6``."""
    return x * hardsigmoid(x)


def mish(x: Any) -> Any:
    """``x * tanh(softplus(x))``."""
    return x * ops.tanh(softplus(x))


def logsigmoid(x: Any) -> Any:
    """``log(sigmoid(x))``, computed without overflow (``-softplus(-x)``)."""
    return -ops.logaddexp(0.0, -x)


def softsign(x: Any) -> Any:
    """``x / (1 + |x|)``."""
    return x / (1.0 + ops.abs(x))


def softmin(x: Any, dim: int | None = None) -> Any:
    """``softmax(-x)`` along ``dim`` (PyTorch's implicit dim when ``None``)."""
    return softmax(-x, _implicit_dim(x, dim))


def _implicit_dim(x: Any, dim: int | None) -> int:
    """PyTorch's dim for a softmax given none: 0 for 0-, 1- and 3-D inputs, else 1."""
    return dim if dim is not None else (0 if x.ndim in (0, 1, 3) else 1)


def threshold(x: Any, threshold: float, value: float) -> Any:
    """``x`` where it is above ``threshold``, else ``value``."""
    return ops.where(x > threshold, x, value).astype(x.dtype)


def glu(x: Any, dim: int = -1) -> Any:
    """The gated linear unit: the first half of ``dim`` times the sigmoid of the second."""
    n = x.shape[dim]
    if n % 2:
        raise ShapeError(f"glu: dim {dim} has odd size {n}; it must split in two halves")
    a, b = x.split(n // 2, dim)
    return a * ops.sigmoid(b)


def prelu(x: Any, weight: Any) -> Any:
    """``x`` where non-negative, ``weight * x`` elsewhere; one weight per channel (dim 1) or one for all."""
    if weight.size > 1:
        weight = ops.reshape(weight, (1, weight.size) + (1,) * (x.ndim - 2) if x.ndim > 1 else (weight.size,))
    return ops.where(x >= 0, x, weight * x)


_SELU_ALPHA, _SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def selu(x: Any) -> Any:
    """``scale * elu(x, alpha)`` with the self-normalizing constants."""
    return _SELU_SCALE * elu(x, _SELU_ALPHA)


def celu(x: Any, alpha: float = 1.0) -> Any:
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""
    return ops.where(x > 0, x, alpha * ops.expm1(ops.minimum(x, 0.0) / alpha))


def normalize(x: Any, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Any:
    """``x`` over its ``p``-norm along ``dim``, the norm held at least ``eps`` (PyTorch's
    ``F.normalize``). The floor is taken before the root, so a zero vector's gradient is
    zero, not NaN."""
    if math.isinf(p):  # the max-norm (p = inf) or the min of the magnitudes (p = -inf), as torch.linalg.norm
        norm = (ops.max if p > 0 else ops.min)(ops.abs(x), axis=dim, keepdims=True)
        return x / ops.maximum(norm, eps)
    powered = ops.sum(ops.abs(x) ** p, axis=dim, keepdims=True)
    return x / ops.maximum(powered, eps ** p) ** (1.0 / p)


def one_hot(x: Any, num_classes: int = -1) -> Any:
    """Integer class indices ``(...)`` to ``(..., num_classes)`` int64 zeros and ones.
    ``num_classes=-1`` reads the largest index (on the host, as PyTorch does)."""
    x = x if isinstance(x, ArrayBase) else ops.asarray(x)
    if x.dtype.kind not in "iu":
        raise DTypeError(f"one_hot: class indices must be integers, got {x.dtype}")
    if num_classes == -1:
        num_classes = int(ops.max(x).item()) + 1 if x.size else 0
    _outside("one_hot", x, num_classes, "index", "classes")
    return (ops.expand_dims(x, -1) == ops.arange(num_classes, device=x.device)).astype("int64")


def log_softmax(x: Any, dim: int = -1) -> Any:
    """``x - logsumexp(x)``. A row holding +inf is NaN throughout, as PyTorch's (its shifted
    form ``x - max`` is NaN there), not NaN at the inf and -inf elsewhere."""
    if x.ndim == 0:  # PyTorch: a 0-d array is one class (dim 0 or -1)
        return ops.reshape(log_softmax(ops.reshape(x, (1,)), _zero_d_dim("log_softmax", dim)), ())
    total = ops.logsumexp(x, axis=dim, keepdims=True)
    return x - ops.where(ops.equal(total, math.inf), math.nan, total)


def _zero_d_dim(op: str, dim: Any) -> int:
    if dim not in (0, -1) or isinstance(dim, bool):
        raise ShapeError(f"{op}: dim {dim!r} is out of range for a 0-d array (use 0 or -1)")
    return 0


def softmax(x: Any, dim: int = -1) -> Any:
    """``exp(x)`` normalized to sum to 1 along ``dim``: one primitive, a native row loop where
    a compiler is found.

    Args:
        x: a float array.
        dim: the axis to normalize along.

    Returns:
        The probabilities.

    Example:
        >>> [round(p, 4) for p in fg.nn.functional.softmax(fg.asarray([0.0, 1.0, 2.0]), dim=0).tolist()]
        [0.09, 0.2447, 0.6652]
    """
    if getattr(x, "ndim", None) == 0:
        _zero_d_dim("softmax", dim)
        return ops.exp(log_softmax(x, dim))
    x = ops.asarray(x)
    return bind(softmax_p, x, axis=normalize_axis("softmax", dim, x.ndim))


def dropout(x: Any, p: float = 0.5, training: bool = True) -> Any:
    """Zero elements with probability ``p`` and scale the rest by ``1/(1-p)``; the mask comes
    from the default generator (``fg.manual_seed``; an explicit key through
    ``fg.nn.functional_call(..., rng=key)``)."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout: p must be in [0, 1], got {p}")
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return x * 0.0

    keep = _mask(x, 1.0 - p, tuple(x.shape))
    scale = np.divide(1, np.asarray(1.0 - p, x.dtype.np), dtype=x.dtype.np)  # (1 / (1 - p) in x's dtype, as PyTorch)
    return x * ops.where(keep, ops.asarray(scale, x.dtype, device=x.device), 0.0)


def _mask(x: Any, p: float, shape: tuple[int, ...]) -> Any:
    """PyTorch's ``bernoulli_(p)`` of a new array of ``shape``, as bools on ``x``'s device,
    from the default generator (its key under ``fg.compile``: fresh draws per call)."""
    keep = bernoulli_mask(p, shape)
    return keep if keep.device is x.device else keep.to(x.device)


def layer_norm(x: Any, normalized_shape: Any, weight: Any = None, bias: Any = None, eps: float = 1e-5) -> Any:
    """Normalized over the last axes ``normalized_shape`` (mean 0, variance 1), then scaled and shifted."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(x.shape[x.ndim - len(shape):]) != shape:
        raise ShapeError(f"layer_norm: input of shape {_fmt_shape(tuple(x.shape))} does not end with "
                         f"{_fmt_shape(shape)}")
    x = _same_dtype("layer_norm", x, weight, bias)
    axes = tuple(range(x.ndim - len(shape), x.ndim))
    if weight is not None:  # (one primitive with its affine part, as PyTorch's native_layer_norm)
        affine = (weight,) if bias is None else (weight, bias)
        return bind(layer_norm_p, x, *affine, axes=axes, eps=float(eps))
    out = bind(layer_norm_p, x, axes=axes, eps=float(eps))
    return out if bias is None else out + bias


def embedding(indices: Any, weight: Any, padding_idx: int | None = None, max_norm: float | None = None,
              norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False) -> Any:
    """Rows of ``weight`` picked by integer ``indices`` (any shape): ``weight[indices]``.
    An index outside ``[0, num_embeddings)`` is an error, as in PyTorch (NumPy's reading
    of -1 as the last row would be silently wrong). With ``padding_idx``, that row's
    entries come out as they are but pass no gradient back to ``weight``.

    ``max_norm``: each looked-up row whose ``norm_type``-norm exceeds it is scaled down to
    it first (PyTorch's renorm, outside the gradient). PyTorch writes the scaled rows into
    ``weight``; a ``Parameter`` is re-pointed at them (the same lasting effect), any other
    array stays as it is (arrays are immutable) and only the result uses them.
    ``scale_grad_by_freq``: each row's gradient is divided by how often the indices pick it."""
    if sparse:
        raise ValueError("embedding: sparse=True (sparse gradients) is not supported: funcgrad's gradients are dense")
    indices = ops.asarray(indices, device=weight.device) if not isinstance(indices, ArrayBase) else indices
    if indices.dtype.kind not in "iu":
        raise DTypeError(f"embedding: indices must be integers, got {indices.dtype}")
    rows = weight.shape[0]
    bad = _outside("embedding", indices, rows, "index", "rows")
    safe = indices if bad is None else ops.where(bad, 0, indices)
    if max_norm is not None:
        weight = _renormed(weight, safe, float(max_norm), norm_type)
    out = ops.take(weight, safe, axis=0)
    if scale_grad_by_freq:
        counts = ops.zeros((rows,), weight.dtype, device=weight.device).at[ops.reshape(safe, (-1,))].add(1.0)
        out = _scale_gradient(out, ops.expand_dims(ops.take(1.0 / ops.maximum(counts, 1.0), safe), -1))
    if bad is not None:
        out = ops.where(ops.expand_dims(bad, -1), float("nan"), out)
    if padding_idx is not None:
        if not -rows <= padding_idx < rows:
            raise IndexError(f"embedding: padding_idx={padding_idx} is out of range for {rows} rows")
        padding = ops.expand_dims(indices == padding_idx % rows, -1)
        out = ops.where(padding, out.detach(), out)
    return out


def _renormed(weight: Any, indices: Any, max_norm: float, norm_type: float) -> Any:
    """``weight`` with each row that ``indices`` pick and whose norm exceeds ``max_norm``
    scaled by ``max_norm / (norm + 1e-7)`` (PyTorch's ``embedding_renorm_``), as a value the
    gradient passes straight through (PyTorch renormalizes in place, under no_grad). A
    Parameter is re-pointed at it."""
    with _no_grad():
        base = _stop_gradient(weight)
        picked = ops.zeros((weight.shape[0],), _dtypes.bool_, device=weight.device)
        picked = picked.at[ops.reshape(indices, (-1,))].set(True)
        norms = ops.vector_norm(base, axis=1, ord=norm_type)
        scale = ops.where(ops.logical_and(picked, norms > max_norm), max_norm / (norms + 1e-7), 1.0)
        scaled = base * ops.expand_dims(scale, 1)
    if isinstance(weight, Parameter):
        if scaled.__class__ is not _Array:  # abstract under fg.trace: it would leak into the module's state
            raise ConcretizationError(
                "embedding: max_norm rescales the rows of the Embedding's Parameter, which cannot hold traced "
                "values; pass the weight explicitly (fg.nn.functional_call), where the rescaled rows are used "
                "without being stored")
        weight._assign(scaled)
        return weight
    return _straight_through(weight, scaled)


@_custom_vjp
def _scale_gradient(x: Any, scale: Any) -> Any:
    """``x`` itself, whose cotangent comes back multiplied by ``scale``."""
    return x


_scale_gradient.defvjp(lambda x, scale: (x, scale), lambda scale, g: (g * scale, None))


@_custom_vjp
def _straight_through(x: Any, value: Any) -> Any:
    """``value``, whose cotangent goes to ``x`` unchanged (``x`` and ``value`` share a shape)."""
    return value


_straight_through.defvjp(lambda x, value: (value, None), lambda _, g: (g, None))


def _reduce(loss: Any, reduction: str, op: str) -> Any:
    if reduction == "mean":
        return ops.mean(loss)
    if reduction == "sum":
        return ops.sum(loss)
    if reduction == "none":
        return loss
    raise ValueError(f"{op}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def _one_row(loss: Any, reduction: str) -> Any:
    """A loss computed on a batch of one unbatched row: with no reduction, the row's value."""
    return loss[0] if reduction == "none" else loss


def _check_class_targets(op: str, logits: Any, target: Any) -> Any:
    target = ops.asarray(target, device=logits.device) if not isinstance(target, ArrayBase) else target
    if target.dtype.kind not in "iu":
        raise DTypeError(f"{op}: class-index targets must be integers (int64), got {target.dtype}; "
                         "for class probabilities pass a float target of the input's shape")
    expected = (logits.shape[0],) + tuple(logits.shape[2:]) if logits.ndim > 1 else ()
    if tuple(target.shape) != expected:
        raise ShapeError(f"{op}: input of shape {_fmt_shape(tuple(logits.shape))} needs a target of shape "
                         f"{_fmt_shape(expected)}, got {_fmt_shape(tuple(target.shape))}")
    return target


def nll_loss(log_probs: Any, target: Any, weight: Any = None, ignore_index: int = -100,
             reduction: str = "mean") -> Any:
    """Negative log-likelihood of class indices, given log-probabilities ``(N, C, ...)``
    (or one unbatched ``(C,)`` row with a 0-d target, as PyTorch)."""
    target = _check_class_targets("nll_loss", log_probs, target)
    if log_probs.ndim == 1:
        return _one_row(nll_loss(log_probs[None], target[None], weight, ignore_index, reduction), reduction)
    classes = log_probs.shape[1]
    valid = target != ignore_index
    bad = _outside("nll_loss", target, classes, "label", "classes", allowed=ignore_index)
    safe = ops.where(valid if bad is None else valid & ~bad, target, 0)
    picked = ops.squeeze(ops.take_along_axis(log_probs, ops.expand_dims(safe, 1), axis=1), 1)
    w = ops.where(valid, 1.0, 0.0).astype(log_probs.dtype, copy=False)
    if weight is not None:
        w = w * ops.take(weight, safe)
    loss = -picked * w
    if bad is not None:
        loss = ops.where(bad, float("nan"), loss)
    if reduction == "mean":
        return ops.sum(loss) / ops.sum(w)
    return _reduce(loss, reduction, "nll_loss")


def linear_cross_entropy(input: Any, linear_weight: Any, target: Any, *, linear_bias: Any = None, weight: Any = None,
                         reduction: str = "mean", ignore_index: int | None = None, label_smoothing: float = 0.0,
                         options: Any = None) -> Any:
    """``cross_entropy`` of ``input @ linear_weight.T`` (PyTorch's): ``input`` (N, in) or (in,),
    ``linear_weight`` (C, *out_features, in), the logits (N, C, *out_features). ``options``
    (PyTorch's chunking strategy) is accepted; the logits are computed whole."""
    if input.ndim not in (1, 2):
        raise ShapeError(f"linear_cross_entropy: expected an input with 1 or 2 dimensions, got "
                         f"{_fmt_shape(tuple(input.shape))}")
    if linear_weight.ndim < 2 or linear_weight.shape[-1] != input.shape[-1]:
        raise ShapeError(f"linear_cross_entropy: linear_weight {_fmt_shape(tuple(linear_weight.shape))} must be "
                         f"(C, *out_features, {input.shape[-1]}) for an input of {_fmt_shape(tuple(input.shape))}")
    classes, extra = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (classes, *extra):
        raise ShapeError(f"linear_cross_entropy: linear_bias must have shape {(classes, *extra)}, got "
                         f"{_fmt_shape(tuple(linear_bias.shape))}")
    if extra and input.ndim == 1:
        raise ShapeError(f"linear_cross_entropy: out_features {extra} need a batched input (N, {input.shape[-1]}), "
                         f"got {_fmt_shape(tuple(input.shape))}")
    logits_shape = (*input.shape[:-1], classes, *extra)
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise ArgumentValueError("linear_cross_entropy: ignore_index cannot be given with class-probability targets")
    flat_bias = None if linear_bias is None else ops.reshape(linear_bias, (-1,))
    logits = ops.reshape(linear(input, ops.reshape(linear_weight, (-1, input.shape[-1])), flat_bias), logits_shape)
    return cross_entropy(logits, target, weight, -100 if ignore_index is None else ignore_index, reduction,
                         label_smoothing)


def cross_entropy(input: Any, target: Any, weight: Any = None, ignore_index: int = -100, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Any:
    """Softmax cross-entropy over dim 1 of ``(N, C, ...)`` logits, as PyTorch's (class-index
    targets: one fused primitive, the log-softmax and the pick, whose gradient is
    ``softmax - onehot``).

    Args:
        input: logits, ``(N, C, ...)`` or one unbatched ``(C,)`` row.
        target: class indices ``(N, ...)``, or class probabilities of ``input``'s shape.
        weight: a weight per class.
        ignore_index: a class index that contributes nothing (nor to the mean's count).
        reduction: ``"mean"``, ``"sum"`` or ``"none"``.
        label_smoothing: the share of the target spread evenly over the classes.

    Returns:
        The loss.

    Example:
        >>> logits, labels = fg.asarray([[2.0, 0.0, -1.0]]), fg.asarray([0])
        >>> round(fg.nn.functional.cross_entropy(logits, labels).item(), 6)   # PyTorch's
        0.169846
    """
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be in [0, 1], got {label_smoothing}")
    if getattr(input, "ndim", None) == 0:
        raise ShapeError("cross_entropy: the input has shape (), but it needs (N, C, ...) logits or one unbatched "
                         "(C,) row")
    if input.ndim == 1 and not (isinstance(target, ArrayBase) and target.dtype.kind == "f"):  # one unbatched row
        target = _check_class_targets("cross_entropy", input, target)
        return _one_row(cross_entropy(input[None], target[None], weight, ignore_index, reduction, label_smoothing),
                        reduction)
    if (input.ndim == 2 and weight is None and label_smoothing == 0.0 and reduction in ("mean", "sum", "none")
            and isinstance(target, ArrayBase) and target.dtype.kind in "iu"):
        target = _check_class_targets("cross_entropy", input, target)  # the common case: one fused primitive
        return bind(softmax_cross_entropy_p, input, target, reduction=reduction,
                    ignore_index=operator.index(ignore_index))
    logp = log_softmax(input, dim=1 if input.ndim > 1 else 0)
    if isinstance(target, ArrayBase) and target.dtype.kind == "f":  # probabilities
        if tuple(target.shape) != tuple(input.shape):
            raise ShapeError(f"cross_entropy: a float target is read as class probabilities and needs the input's "
                             f"shape {_fmt_shape(tuple(input.shape))}, got {_fmt_shape(tuple(target.shape))}; "
                             "class-index targets must be integers (int64)")
        c = input.shape[1] if input.ndim > 1 else input.shape[0]
        t = target * (1.0 - label_smoothing) + label_smoothing / c
        w = 1.0 if weight is None else ops.reshape(weight, (1, c) + (1,) * (input.ndim - 2))
        return _reduce(-ops.sum(t * logp * w, 1 if input.ndim > 1 else 0), reduction, "cross_entropy")
    nll = nll_loss(logp, target, weight, ignore_index, reduction)
    if label_smoothing == 0.0:
        return nll
    target = _check_class_targets("cross_entropy", input, target)
    c = input.shape[1]
    valid = ops.where(target != ignore_index, 1.0, 0.0).astype(input.dtype, copy=False)
    per_class = logp if weight is None else logp * ops.reshape(weight, (1, c) + (1,) * (input.ndim - 2))
    smooth = -ops.sum(per_class, 1) * valid
    if reduction == "mean":
        if weight is None:
            denom = ops.sum(valid)
        else:
            denom = ops.sum(ops.take(weight, ops.where(target != ignore_index, target, 0)) * valid)
        smooth_term = ops.sum(smooth) / denom
    else:
        smooth_term = _reduce(smooth, reduction, "cross_entropy")
    return (1.0 - label_smoothing) * nll + (label_smoothing / c) * smooth_term


def _check_same(op: str, input: Any, target: Any) -> Any:
    target = ops.asarray(target, device=input.device) if not isinstance(target, ArrayBase) else target
    if tuple(target.shape) != tuple(input.shape):
        raise ShapeError(f"{op}: input of shape {_fmt_shape(tuple(input.shape))} and target of shape "
                         f"{_fmt_shape(tuple(target.shape))} differ")
    if target.dtype.kind != "f":
        raise DTypeError(f"{op}: target must be floating point, got {target.dtype}")
    return target


def mse_loss(input: Any, target: Any, reduction: str = "mean") -> Any:
    """The mean squared error, as PyTorch's.

    Args:
        input: the predictions.
        target: the targets, ``input``'s shape.
        reduction: ``"mean"``, ``"sum"`` or ``"none"``.

    Returns:
        The loss.

    Example:
        >>> fg.nn.functional.mse_loss(fg.asarray([1.0, 2.0]), fg.zeros(2)).item()
        2.5
    """
    return _reduce(ops.square(input - _check_same("mse_loss", input, target)), reduction, "mse_loss")


def l1_loss(input: Any, target: Any, reduction: str = "mean") -> Any:
    """The mean absolute error (``reduction``: 'mean', 'sum' or 'none')."""
    return _reduce(ops.abs(input - _check_same("l1_loss", input, target)), reduction, "l1_loss")


def binary_cross_entropy(input: Any, target: Any, weight: Any = None, reduction: str = "mean") -> Any:
    """Binary cross-entropy of probabilities; each log is clamped at -100, as PyTorch's."""
    target = _check_same("binary_cross_entropy", input, target)
    if isinstance(input, _Array) and input.device.kind == "cpu":  # concrete: read for free, as PyTorch checks
        host = input._host()
        if not ((host >= 0) & (host <= 1)).all():
            raise ArgumentValueError("binary_cross_entropy: every element of the input must be a probability in "
                                     f"[0, 1], got {host[~((host >= 0) & (host <= 1))][0]!r}; for logits use "
                                     "binary_cross_entropy_with_logits")
    log_p = ops.maximum(ops.log(input), -100.0)
    log_q = ops.maximum(ops.log1p(-input), -100.0)
    loss = -(target * log_p + (1.0 - target) * log_q)
    return _reduce(loss if weight is None else loss * weight, reduction, "binary_cross_entropy")


def smooth_l1_loss(input: Any, target: Any, reduction: str = "mean", beta: float = 1.0) -> Any:
    """``0.5 d**2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 beta`` (``d = input - target``)."""
    d = ops.abs(input - _check_same("smooth_l1_loss", input, target))
    loss = d - 0.5 * beta if beta == 0 else ops.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta)
    return _reduce(loss, reduction, "smooth_l1_loss")


def huber_loss(input: Any, target: Any, reduction: str = "mean", delta: float = 1.0) -> Any:
    """``0.5 d**2`` where ``|d| < delta``, else ``delta (|d| - 0.5 delta)``."""
    d = ops.abs(input - _check_same("huber_loss", input, target))
    return _reduce(ops.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta)), reduction, "huber_loss")


def kl_div(input: Any, target: Any, reduction: str = "mean", log_target: bool = False) -> Any:
    """The KL divergence of ``target`` from the distribution whose log-probabilities are
    ``input``; ``reduction="batchmean"`` divides the sum by the batch size (the mathematical one)."""
    if log_target:
        loss = ops.exp(target) * (target - input)
    else:
        safe = ops.where(target > 0, target, 1.0)
        loss = ops.where(target > 0, target * (ops.log(safe) - input), 0.0)
    if reduction == "batchmean":
        return ops.sum(loss) / (input.shape[0] if input.ndim else 1)
    return _reduce(loss, reduction, "kl_div")


def margin_ranking_loss(input1: Any, input2: Any, target: Any, margin: float = 0.0, reduction: str = "mean") -> Any:
    """``max(0, -target * (input1 - input2) + margin)``."""
    return _reduce(ops.maximum(-target * (input1 - input2) + margin, 0.0), reduction, "margin_ranking_loss")


def pairwise_distance(x1: Any, x2: Any, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Any:
    """The ``p``-norm of ``x1 - x2 + eps`` along the last axis."""
    d = ops.abs(x1 - x2 + eps)
    if p == 2.0:
        return ops.sqrt(ops.sum(d * d, axis=-1, keepdims=keepdim))
    return ops.sum(d ** p, axis=-1, keepdims=keepdim) ** (1.0 / p)


def cosine_similarity(x1: Any, x2: Any, dim: int = 1, eps: float = 1e-8) -> Any:
    """``x1 . x2 / max(|x1| |x2|, eps)`` along ``dim``."""
    dot = ops.sum(x1 * x2, axis=dim)
    norms = ops.sqrt(ops.sum(x1 * x1, axis=dim) * ops.sum(x2 * x2, axis=dim))
    return dot / ops.maximum(norms, eps)


def triplet_margin_loss(anchor: Any, positive: Any, negative: Any, margin: float = 1.0, p: float = 2.0,
                        eps: float = 1e-6, swap: bool = False, reduction: str = "mean") -> Any:
    """``max(d(a, p) - d(a, n) + margin, 0)`` with ``pairwise_distance``."""
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = ops.minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce(ops.maximum(d_pos - d_neg + margin, 0.0), reduction, "triplet_margin_loss")


def cosine_embedding_loss(input1: Any, input2: Any, target: Any, margin: float = 0.0, reduction: str = "mean") -> Any:
    """``1 - cos`` for similar pairs (target 1), ``max(0, cos - margin)`` for dissimilar ones (-1)."""
    cos = cosine_similarity(input1, input2, dim=-1, eps=1e-12)
    return _reduce(ops.where(target > 0, 1.0 - cos, ops.maximum(cos - margin, 0.0)), reduction,
                   "cosine_embedding_loss")


def poisson_nll_loss(input: Any, target: Any, log_input: bool = True, full: bool = False, eps: float = 1e-8,
                     reduction: str = "mean") -> Any:
    """The Poisson negative log-likelihood of ``target`` given rates (or log-rates)."""
    loss = ops.exp(input) - target * input if log_input else input - target * ops.log(input + eps)
    if full:  # Stirling's term, where the target is above 1
        safe = ops.where(target > 1, target, 2.0)
        stirling = safe * ops.log(safe) - safe + 0.5 * ops.log(2 * math.pi * safe)
        loss = loss + ops.where(target > 1, stirling, 0.0)
    return _reduce(loss, reduction, "poisson_nll_loss")


def gaussian_nll_loss(input: Any, target: Any, var: Any, full: bool = False, eps: float = 1e-6,
                      reduction: str = "mean") -> Any:
    """The Gaussian negative log-likelihood of ``target`` given means and variances (clamped at ``eps``)."""
    var = ops.maximum(var, eps)
    loss = 0.5 * (ops.log(var) + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction, "gaussian_nll_loss")


def multilabel_soft_margin_loss(input: Any, target: Any, weight: Any = None, reduction: str = "mean") -> Any:
    """Binary cross-entropy of logits per label, averaged over the labels of each sample."""
    per_label = -(target * logsigmoid(input) + (1.0 - target) * logsigmoid(-input))
    if weight is not None:
        per_label = per_label * weight
    return _reduce(ops.mean(per_label, axis=-1), reduction, "multilabel_soft_margin_loss")


def binary_cross_entropy_with_logits(input: Any, target: Any, weight: Any = None, reduction: str = "mean",
                                     pos_weight: Any = None) -> Any:
    """Sigmoid + binary cross-entropy in one stable formula (PyTorch's)."""
    target = _check_same("binary_cross_entropy_with_logits", input, target)
    softplus_neg = ops.logaddexp(0.0, -input)  # log(1 + exp(-x)), stable
    if pos_weight is not None:
        loss = (1.0 - target) * input + (1.0 + (pos_weight - 1.0) * target) * softplus_neg
    else:
        loss = (1.0 - target) * input + softplus_neg
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction, "binary_cross_entropy_with_logits")


_PAD_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def pad(input: Any, pad: Any, mode: str = "constant", value: float | None = None) -> Any:
    """PyTorch's ``F.pad``: ``pad`` lists (before, after) amounts from the last axis
    backwards; ``mode`` ``"constant"`` (with ``value``), ``"reflect"``, ``"replicate"`` or
    ``"circular"`` (NumPy's ``constant``, ``reflect``, ``edge`` and ``wrap``). A negative
    amount crops, as in PyTorch."""
    if mode not in _PAD_MODES:
        raise ArgumentValueError(f"pad: mode must be one of {sorted(_PAD_MODES)}, got {mode!r}")
    amounts = [int(p) for p in pad]
    if len(amounts) % 2 or len(amounts) // 2 > input.ndim:
        raise ArgumentValueError(f"pad: expected pairs of amounts for at most {input.ndim} axes, got {tuple(pad)}")
    widths = [(0, 0)] * input.ndim
    for k in range(len(amounts) // 2):
        widths[input.ndim - 1 - k] = (amounts[2 * k], amounts[2 * k + 1])
    crop = tuple(slice(-lo if lo < 0 else None, hi if hi < 0 else None) for lo, hi in widths)
    x = input[crop] if any(lo < 0 or hi < 0 for lo, hi in widths) else input
    grow = [(max(lo, 0), max(hi, 0)) for lo, hi in widths]
    if mode == "constant":
        return ops.pad(x, grow, mode="constant", constant_values=0.0 if value is None else value)
    return ops.pad(x, grow, mode=_PAD_MODES[mode])


def hardshrink(input: Any, lambd: float = 0.5) -> Any:
    """``x`` where ``|x| > lambd``, else 0 (NaN stays NaN, as in PyTorch)."""
    return ops.where((input >= -lambd) & (input <= lambd), ops.zeros_like(input), input)


def softshrink(input: Any, lambd: float = 0.5) -> Any:
    """``x`` moved towards 0 by ``lambd``, and 0 within ``lambd`` of it: ``x * 0`` as
    PyTorch's kernel writes it (-0 for a negative ``x``, NaN for NaN)."""
    return ops.where(input > lambd, input - lambd,
                     ops.where(input < -lambd, input + lambd, ops.clip(input, -lambd, lambd) * 0.0))


def tanhshrink(input: Any) -> Any:
    """``x - tanh(x)``."""
    return input - ops.tanh(input)


def rms_norm(input: Any, normalized_shape: Any, weight: Any = None, eps: float | None = None) -> Any:
    """PyTorch's ``F.rms_norm``: ``x / sqrt(mean(x**2) + eps)`` over the last axes
    ``normalized_shape`` names, times ``weight`` (``eps`` by default the dtype's epsilon)."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(input.shape[input.ndim - len(shape):]) != shape:
        raise ShapeError(f"rms_norm: input of shape {_fmt_shape(tuple(input.shape))} does not end with "
                         f"normalized_shape {shape}")
    eps = float(_dtypes.finfo(input.dtype).eps) if eps is None else eps
    axes = tuple(range(input.ndim - len(shape), input.ndim))
    out = input * ops.rsqrt(ops.mean(input * input, axis=axes, keepdims=True) + eps)
    return out * weight if weight is not None else out


def channel_shuffle(input: Any, groups: int) -> Any:
    """The channels (axis 1) of ``(N, C, ...)`` inputs in ``groups`` interleaved, as ShuffleNet's."""
    n, c = input.shape[0], input.shape[1]
    if c % groups:
        raise ShapeError(f"channel_shuffle: {c} channels do not split into {groups} groups")
    rest = tuple(input.shape[2:])
    grouped = ops.reshape(input, (n, groups, c // groups, *rest))
    return ops.reshape(ops.swapaxes(grouped, 1, 2), (n, c, *rest))


def soft_margin_loss(input: Any, target: Any, reduction: str = "mean") -> Any:
    """``log(1 + exp(-y x))`` for targets ``y`` of +-1."""
    target = _check_same("soft_margin_loss", input, target)
    return _reduce(ops.logaddexp(0.0, -target * input), reduction, "soft_margin_loss")


def hinge_embedding_loss(input: Any, target: Any, margin: float = 1.0, reduction: str = "mean") -> Any:
    """``x`` where the target is 1, ``max(0, margin - x)`` where it is -1."""
    target = _check_same("hinge_embedding_loss", input, target)
    loss = ops.where(target == 1, input, 0.0) + ops.where(target == -1, ops.maximum(margin - input, 0.0), 0.0)
    return _reduce(loss, reduction, "hinge_embedding_loss")


def rrelu(input: Any, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False) -> Any:
    """Randomized leaky ReLU: negative values times a slope drawn uniformly from
    ``[lower, upper]`` per element while training (the default generator), times the mean
    slope ``(lower + upper) / 2`` otherwise."""
    if not training:
        return leaky_relu(input, (lower + upper) / 2)
    if input.__class__ is _Array and default_generator.key is None:
        # PyTorch's: a slope per value at most 0, in order, each a float64 uniform in the
        # bounds as the input's dtype holds them; the rest keep a slope of 1
        work = np.float64 if input.dtype == np.float64 else np.float32
        negative = input._host() <= 0
        slope = np.ones(negative.shape, work)
        slope[negative] = uniform_draw(int(negative.sum()), float(work(lower)), float(work(upper))).astype(work)
        return input * ops.asarray(slope.astype(input.dtype.np), device=input.device)
    slope = _random.uniform(default_generator.next_key(), tuple(input.shape), input.dtype, lower, upper)
    return ops.where(input >= 0, input, input * slope)


def _alpha_dropout(x: Any, p: float, training: bool, feature: bool, op: str) -> Any:
    """PyTorch's alpha dropout: dropped values become SELU's negative saturation value, and
    an affine map keeps the mean and variance (per element, or per channel with ``feature``)."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{op}: p must be in [0, 1], got {p}")
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return x * 0.0
    shape = tuple(x.shape[:2]) + (1,) * (x.ndim - 2) if feature else tuple(x.shape)
    keep = _mask(x, 1.0 - p, shape).astype(x.dtype)
    alpha = 1.7580993408473766
    a = 1.0 / math.sqrt((alpha * alpha * p + 1) * (1 - p))
    return x * (keep * a) + ((keep - 1.0) * (alpha * a) + alpha * a * p)


def alpha_dropout(input: Any, p: float = 0.5, training: bool = False) -> Any:
    """Dropout for SELU networks (PyTorch's): the mean and variance of the input survive."""
    return _alpha_dropout(input, p, training, False, "alpha_dropout")


def feature_alpha_dropout(input: Any, p: float = 0.5, training: bool = False) -> Any:
    """Alpha dropout of whole channels of (N, C, ...) inputs."""
    return _alpha_dropout(input, p, training, True, "feature_alpha_dropout")


def local_response_norm(input: Any, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> Any:
    """Each value divided by ``(k + alpha * mean(x^2 over size neighbouring channels))^beta``
    (PyTorch's window: ``size // 2`` channels before, ``(size - 1) // 2`` after, zeros past
    the ends), for (N, C, ...) inputs."""
    if input.ndim < 3:
        raise ShapeError(f"local_response_norm: expects (N, C, ...) with at least one spatial axis, got "
                         f"{_fmt_shape(tuple(input.shape))}")
    c = input.shape[1]
    square = ops.pad(input * input, [(0, 0), (size // 2, (size - 1) // 2)] + [(0, 0)] * (input.ndim - 2))
    total = square[:, 0:c]
    for t in range(1, size):
        total = total + square[:, t:t + c]
    return input / (total * (alpha / size) + k) ** beta


def _class_targets(op: str, input: Any, target: Any) -> Any:
    if input.ndim not in (1, 2):
        raise ShapeError(f"{op}: expects input (N, C) or (C,), got {_fmt_shape(tuple(input.shape))}")
    target = ops.asarray(target, device=input.device) if not isinstance(target, ArrayBase) else target
    if target.dtype.kind not in "iu":
        raise DTypeError(f"{op}: target must hold integer class indices, got {target.dtype}")
    return target


def multi_margin_loss(input: Any, target: Any, p: int = 1, margin: float = 1.0, weight: Any = None,
                      reduction: str = "mean") -> Any:
    """The multi-class hinge loss: ``sum over i != y of max(0, margin - x[y] + x[i])^p / C``,
    each sample's terms times ``weight[y]``."""
    if p not in (1, 2):
        raise ValueError(f"multi_margin_loss: p must be 1 or 2, got {p}")
    target = _class_targets("multi_margin_loss", input, target)
    x = input if input.ndim == 2 else ops.expand_dims(input, 0)
    y = ops.reshape(target, (x.shape[0], 1))
    picked = ops.take_along_axis(x, y, axis=1)
    terms = ops.maximum(margin - picked + x, 0.0)
    if p == 2:
        terms = terms * terms
    if weight is not None:
        terms = terms * ops.expand_dims(ops.take(weight, ops.reshape(target, (-1,))), 1)
    others = ops.arange(x.shape[1], device=x.device) != y
    loss = ops.sum(ops.where(others, terms, 0.0), axis=1) / x.shape[1]
    return _reduce(loss if input.ndim == 2 else loss[0], reduction, "multi_margin_loss")


def multilabel_margin_loss(input: Any, target: Any, reduction: str = "mean") -> Any:
    """The multi-label hinge loss: ``target`` lists each sample's classes, ended by the first
    -1; ``sum over the listed classes j (a repeat counts again, as in PyTorch) and the
    classes i not listed of max(0, 1 - (x[j] - x[i])) / C``."""
    target = _class_targets("multilabel_margin_loss", input, target)
    if tuple(target.shape) != tuple(input.shape):
        raise ShapeError(f"multilabel_margin_loss: target of shape {_fmt_shape(tuple(target.shape))} for input of "
                         f"shape {_fmt_shape(tuple(input.shape))}: they must match")
    x = input if input.ndim == 2 else ops.expand_dims(input, 0)
    t = target if target.ndim == 2 else ops.expand_dims(target, 0)
    n, c = x.shape
    listed = ops.cumprod((t >= 0).astype(_dtypes.int32), axis=1) > 0        # before the first -1
    member = ops.any(ops.logical_and(ops.expand_dims(listed, 2),
                                     ops.expand_dims(t, 2) == ops.arange(c, device=x.device)), axis=1)  # (N, C)
    picked = ops.take_along_axis(x, ops.where(listed, t, 0), axis=1)                  # x[t_k] (a repeat counts again)
    hinge = ops.maximum(1.0 - (ops.expand_dims(picked, 2) - ops.expand_dims(x, 1)), 0.0)  # [n, k, i]
    pairs = ops.logical_and(ops.expand_dims(listed, 2), ops.expand_dims(ops.logical_not(member), 1))
    loss = ops.sum(ops.where(pairs, hinge, 0.0), axis=(1, 2)) / c
    return _reduce(loss if input.ndim == 2 else loss[0], reduction, "multilabel_margin_loss")


def triplet_margin_with_distance_loss(anchor: Any, positive: Any, negative: Any, *, distance_function: Any = None,
                                      margin: float = 1.0, swap: bool = False, reduction: str = "mean") -> Any:
    """``max(d(a, p) - d(a, n) + margin, 0)`` with any distance ``d`` (``pairwise_distance``
    by default); ``swap`` takes ``min(d(a, n), d(p, n))`` as the negative distance."""
    if margin <= 0:
        raise ValueError(f"triplet_margin_with_distance_loss: margin must be greater than 0, got {margin}")
    d = distance_function if distance_function is not None else pairwise_distance
    d_pos, d_neg = d(anchor, positive), d(anchor, negative)
    if swap:
        d_neg = ops.minimum(d_neg, d(positive, negative))
    return _reduce(ops.maximum(margin + d_pos - d_neg, 0.0), reduction, "triplet_margin_with_distance_loss")


def _lp_pool(pool: Any, dims: int, input: Any, norm_type: float, kernel_size: Any, stride: Any,
             ceil_mode: bool) -> Any:
    """The ``norm_type``-norm of each window, PyTorch's way: ``(mean of x^p * window size)^(1/p)``
    through the average pooling ``pool`` of ``dims`` axes."""
    kernel = (kernel_size,) * dims if isinstance(kernel_size, int) else tuple(kernel_size)
    out = pool(input ** norm_type, kernel if dims > 1 else kernel[0], stride, 0, ceil_mode)
    return (ops.sign(out) * relu(ops.abs(out)) * math.prod(kernel)) ** (1.0 / norm_type)


def lp_pool1d(input: Any, norm_type: float, kernel_size: int, stride: Any = None, ceil_mode: bool = False) -> Any:
    """The ``norm_type``-norm of each window of the last axis."""
    return _lp_pool(avg_pool1d, 1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input: Any, norm_type: float, kernel_size: Any, stride: Any = None, ceil_mode: bool = False) -> Any:
    """The ``norm_type``-norm of each window of (N, C, H, W) inputs."""
    return _lp_pool(avg_pool2d, 2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input: Any, norm_type: float, kernel_size: Any, stride: Any = None, ceil_mode: bool = False) -> Any:
    """The ``norm_type``-norm of each window of (N, C, D, H, W) inputs."""
    return _lp_pool(avg_pool3d, 3, input, norm_type, kernel_size, stride, ceil_mode)


def max_unpool1d(input: Any, indices: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 output_size: Any = None) -> Any:
    """The inverse of ``max_pool1d`` (``max_unpool2d`` over a height of one)."""
    unbatched = input.ndim == 2
    x, at = (input[None], indices[None]) if unbatched else (input, indices)
    k = kernel_size if isinstance(kernel_size, int) else kernel_size[0]
    s = k if stride is None else stride if isinstance(stride, int) else stride[0]
    p = padding if isinstance(padding, int) else padding[0]
    size = None if output_size is None else (1, int(tuple(output_size)[-1]))
    out = max_unpool2d(ops.expand_dims(x, 2), ops.expand_dims(at, 2), (1, k), (1, s), (0, p), size)[:, :, 0]
    return out[0] if unbatched else out


def embedding_bag(input: Any, weight: Any, offsets: Any = None, max_norm: float | None = None,
                  norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights: Any = None, include_last_offset: bool = False,
                  padding_idx: int | None = None) -> Any:
    """The sum, mean or maximum of each bag of embedding rows (PyTorch's): bags are the rows
    of a 2-d ``input``, or the runs of a 1-d one that ``offsets`` start (the last runs to
    the end unless ``include_last_offset``). ``padding_idx`` entries belong to no bag; an
    empty bag is zeros; ``per_sample_weights`` scale the rows of a sum."""
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"embedding_bag: mode must be 'sum', 'mean' or 'max', got {mode!r}")
    if per_sample_weights is not None and mode != "sum":
        raise ValueError(f"embedding_bag: per_sample_weights is only supported for mode='sum', got mode={mode!r}")
    input = ops.asarray(input, device=weight.device) if not isinstance(input, ArrayBase) else input
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError("embedding_bag: offsets must be None when the input is 2-d (one bag per row)")
        bags, width = input.shape
        flat = ops.reshape(input, (-1,))
        bag_of = ops.reshape(ops.broadcast_to(ops.expand_dims(ops.arange(bags, device=weight.device), 1),
                                              (bags, width)), (-1,))
    elif input.ndim == 1:
        if offsets is None:
            raise ValueError("embedding_bag: a 1-d input needs offsets (where each bag starts)")
        starts = ops.asarray(offsets, device=weight.device) if not isinstance(offsets, ArrayBase) else offsets
        if include_last_offset:
            starts = starts[:-1]
        bags, flat = starts.shape[0], input
        bag_of = ops.searchsorted(starts, ops.arange(flat.shape[0], dtype=starts.dtype, device=weight.device),
                                  side="right") - 1
    else:
        raise ShapeError(f"embedding_bag: the input must be 1-d (with offsets) or 2-d, got shape "
                         f"{_fmt_shape(tuple(input.shape))}")
    rows = embedding(flat, weight, None, max_norm, norm_type, scale_grad_by_freq)
    dim = weight.shape[1]
    kept = ops.ones(tuple(flat.shape), weight.dtype, device=weight.device) if padding_idx is None else \
        (flat != padding_idx % weight.shape[0]).astype(weight.dtype)
    bag_of = ops.where(bag_of < 0, 0, bag_of)  # (entries before the first offset: PyTorch's kernels put them there)
    counts = ops.zeros((bags,), weight.dtype, device=weight.device).at[bag_of].add(kept)
    if mode == "max":
        low = ops.where(ops.expand_dims(kept, 1) > 0, rows, float("-inf"))
        top = ops.full((bags, dim), float("-inf"), weight.dtype, device=weight.device).at[bag_of].max(low)
        return ops.where(ops.expand_dims(counts, 1) > 0, top, 0.0)
    scale = kept if per_sample_weights is None else kept * per_sample_weights
    total = ops.zeros((bags, dim), weight.dtype, device=weight.device).at[bag_of].add(rows * ops.expand_dims(scale, 1))
    return total if mode == "sum" else total / ops.expand_dims(ops.maximum(counts, 1.0), 1)


def ctc_loss(log_probs: Any, targets: Any, input_lengths: Any, target_lengths: Any, blank: int = 0,
             reduction: str = "mean", zero_infinity: bool = False) -> Any:
    """The connectionist temporal classification loss (PyTorch's): minus the log of the
    summed probability of every alignment of each target to its inputs, by the forward
    recursion over the extended labels (blanks between and around the target's). ``log_probs``
    (T, N, C) or (T, C); ``targets`` (N, S) padded or 1-d concatenated; ``reduction='mean'``
    divides each loss by its target length, then averages. An impossible alignment costs
    ``inf`` (0, and no gradient, with ``zero_infinity``)."""
    unbatched = log_probs.ndim == 2
    lp = ops.expand_dims(log_probs, 1) if unbatched else log_probs
    t_max, n, _ = lp.shape
    in_len, tgt_len, raw = (np.asarray(v._host() if isinstance(v, ArrayBase) else v, np.int64)
                            for v in (input_lengths, target_lengths, targets))
    in_len, tgt_len = in_len.reshape(n), tgt_len.reshape(n)
    if raw.ndim == 2 or (unbatched and raw.ndim == 1 and raw.shape[0] >= tgt_len.sum() and n == 1):
        labels = [raw.reshape(n, -1)[i, :tgt_len[i]] for i in range(n)]
    else:
        ends = np.cumsum(tgt_len)
        labels = [raw[e - k:e] for e, k in zip(ends, tgt_len)]
    width = 2 * int(tgt_len.max(initial=0)) + 1
    extended = np.full((n, width), blank, np.int64)
    for i, lab in enumerate(labels):
        extended[i, 1:2 * len(lab):2] = lab
    # a step from s - 2: onto a label that differs from the one before it
    skip = np.zeros((n, width), bool)
    skip[:, 2:] = (extended[:, 2:] != blank) & (extended[:, 2:] != extended[:, :-2])
    reachable = np.arange(width)[None, :] <= 2 * tgt_len[:, None]
    very_low = -1e30  # (stands for log 0: a finite one, so gradients through it are 0, not NaN)
    picked = ops.take_along_axis(lp, ops.broadcast_to(ops.asarray(extended[None], device=lp.device),
                                                      (t_max, n, width)), axis=2)      # (T, N, 2S+1)
    start = np.full((n, width), very_low)
    start[:, 0] = 0.0
    start[:, 1] = np.where(tgt_len > 0, 0.0, very_low)
    alpha = picked[0] + ops.asarray(start, dtype=lp.dtype, device=lp.device)
    low = ops.full((n, 1), very_low, lp.dtype, device=lp.device)
    skip_mask = ops.asarray(skip, device=lp.device)
    for t in range(1, t_max):
        prev1 = ops.concatenate([low, alpha[:, :-1]], axis=1)
        prev2 = ops.where(skip_mask, ops.concatenate([low, low, alpha[:, :-2]], axis=1), very_low)
        step = ops.logsumexp(ops.stack([alpha, prev1, prev2]), axis=0) + picked[t]
        alpha = ops.where(ops.asarray((t < in_len)[:, None] & reachable, device=lp.device), step, alpha)
    last = ops.take_along_axis(alpha, ops.asarray(np.stack([2 * tgt_len, np.maximum(2 * tgt_len - 1, 0)], 1),
                                                  device=lp.device), axis=1)
    last = ops.where(ops.asarray(np.stack([np.ones(n, bool), tgt_len > 0], 1), device=lp.device), last, very_low)
    total = ops.logaddexp(last[:, 0], last[:, 1])
    impossible = total < very_low / 2
    loss = ops.where(impossible, 0.0 if zero_infinity else float("inf"), -ops.where(impossible, 0.0, total))
    if reduction == "mean":
        loss = ops.mean(loss / ops.asarray(np.maximum(tgt_len, 1), dtype=lp.dtype, device=lp.device))
        return loss
    return _reduce(loss[0] if unbatched and reduction == "none" else loss, reduction, "ctc_loss")


# Every public function names itself in the errors of bad arguments, and takes arrays only.
for _name in __all__:
    globals()[_name] = named_errors(_name, globals()[_name], array_input=True)
del _name
