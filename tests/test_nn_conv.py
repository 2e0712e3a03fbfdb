"""fg.nn convolution and pooling: PyTorch's geometry, padding modes, indices and unpooling; the convolution primitives' native and NumPy kernels."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import funcgrad as fg

from .nn_common import RNG, F, _compare, needs_torch, nn, torch


@pytest.mark.parametrize("make", [lambda: nn.Conv2d(2, 3, 3, padding=1), lambda: nn.MaxPool2d(2),
                                  lambda: nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True)])
def test_conv_and_pooling_take_one_unbatched_image(make) -> None:
    """(C, H, W) in, (C', H', W') out, as PyTorch: the same values and input gradient as a
    batch of one."""
    layer = make()
    image = RNG.standard_normal((2, 5, 6)).astype(np.float32)
    single = fg.asarray(image, requires_grad=True)
    batch = fg.asarray(image[None], requires_grad=True)
    out, out_batch = layer(single), layer(batch)
    np.testing.assert_array_equal(out.numpy(), out_batch.numpy()[0])
    out.sum().backward()
    out_batch.sum().backward()
    np.testing.assert_array_equal(single.grad.numpy(), batch.grad.numpy()[0])


@needs_torch
@pytest.mark.parametrize("kwargs", [dict(), dict(stride=2, padding=1), dict(dilation=2, padding=2),
                                    dict(groups=2, padding=1), dict(stride=(2, 1), bias=False),
                                    dict(padding="valid"), dict(padding="same", kernel_size=(4, 3), dilation=(1, 2)),
                                    dict(padding="same", kernel_size=2)])  # 'same' with an odd total: extra after
@pytest.mark.filterwarnings("ignore:Using padding='same'")  # PyTorch's note on its own zero-padded copy
def test_conv2d_matches_pytorch(kwargs) -> None:
    x = RNG.standard_normal((2, 4, 9, 8)).astype(np.float32)
    kwargs = {"kernel_size": 3, **kwargs}
    tm, fm = torch.nn.Conv2d(4, 6, **kwargs), nn.Conv2d(4, 6, **kwargs)
    assert repr(fm) == repr(tm)
    _compare(tm, fm, [x])


@needs_torch
@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("kwargs", [dict(padding=1), dict(padding=(2, 1), stride=2), dict(padding="same", dilation=2),
                                    dict(padding="same", kernel_size=(2, 4)), dict(padding=(3, 0), groups=2)])
@pytest.mark.filterwarnings("ignore:Using padding='same'")
def test_conv2d_padding_modes_match_pytorch(mode, kwargs) -> None:
    """The image's own values as padding, in PyTorch's three modes; batched and unbatched."""
    x = RNG.standard_normal((2, 4, 6, 5)).astype(np.float32)
    kwargs = {"kernel_size": 3, "padding_mode": mode, **kwargs}
    tm, fm = torch.nn.Conv2d(4, 6, **kwargs), nn.Conv2d(4, 6, **kwargs)
    assert repr(fm) == repr(tm)
    _compare(tm, fm, [x])
    np.testing.assert_allclose(fm(fg.asarray(x[0])).numpy(), tm(torch.tensor(x[0])).detach().numpy(),
                               rtol=1e-4, atol=1e-5)


@needs_torch
def test_conv2d_padding_mode_limits_match_pytorch() -> None:
    """A reflection must be narrower than the image and a wrap at most as wide, in both libraries."""
    x = RNG.standard_normal((1, 1, 3, 5)).astype(np.float32)
    for mode, padding, ok in (("reflect", 2, True), ("reflect", 3, False), ("circular", 3, True),
                              ("circular", 4, False), ("replicate", 6, True)):
        tm, fm = (m.Conv2d(1, 1, 3, padding=(padding, 0), padding_mode=mode) for m in (torch.nn, nn))
        if ok:
            _compare(tm, fm, [x])
            continue
        with pytest.raises(RuntimeError):
            tm(torch.tensor(x))
        with pytest.raises(ValueError, match=rf"padding_mode='{mode}' needs padding .* the input's H size; "
                                             rf"got padding \({padding}, {padding}\) for an input of shape \(1, 1, 3, 5\)"):
            fm(fg.asarray(x))


@settings(max_examples=40, deadline=None)
@given(h=st.integers(2, 6), w=st.integers(2, 6), k=st.integers(1, 3), ph=st.integers(0, 4), pw=st.integers(0, 4),
       mode=st.sampled_from(["reflect", "replicate", "circular"]))
def test_conv2d_padding_mode_matches_numpy_pad_then_correlate(h, w, k, ph, pw, mode) -> None:
    """Against an independent reference: NumPy's pad in the same mode, then a plain
    cross-correlation over NumPy's sliding windows; out-of-limit paddings raise instead."""
    assume(h + 2 * ph >= k and w + 2 * pw >= k)  # the kernel fits the padded image
    x = RNG.standard_normal((1, 2, h, w))
    conv = nn.Conv2d(2, 3, k, padding=(ph, pw), padding_mode=mode).to(fg.float64)
    too_wide = {"reflect": lambda p, n: p >= n, "circular": lambda p, n: p > n, "replicate": lambda p, n: False}[mode]
    if too_wide(ph, h) or too_wide(pw, w):
        with pytest.raises(ValueError, match=f"padding_mode='{mode}'"):
            conv(fg.asarray(x))
        return
    np_mode = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}[mode]
    padded = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)), mode=np_mode)
    windows = np.lib.stride_tricks.sliding_window_view(padded, (k, k), axis=(2, 3))  # (1, C, OH, OW, k, k)
    expected = np.einsum("nchwij,ocij->nohw", windows, conv.weight.numpy()) + conv.bias.numpy()[:, None, None]
    np.testing.assert_allclose(conv(fg.asarray(x)).numpy(), expected, rtol=1e-10, atol=1e-12)


def test_conv2d_padding_errors() -> None:
    with pytest.raises(ValueError, match="padding_mode must be 'zeros', 'reflect', 'replicate' or 'circular', "
                                         "got 'mirror'"):
        nn.Conv2d(2, 2, 3, padding_mode="mirror")
    with pytest.raises(ValueError, match="padding='same' needs stride 1"):
        nn.Conv2d(2, 2, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="padding must be an int, a pair, 'same' or 'valid', got 'full'"):
        nn.functional.conv2d(fg.zeros((1, 2, 4, 4)), fg.zeros((2, 2, 3, 3)), padding="full")


@needs_torch
@pytest.mark.parametrize("make", [
    lambda m: m.MaxPool2d(2), lambda m: m.MaxPool2d(3, stride=2, padding=1),
    lambda m: m.MaxPool2d(3, stride=2, ceil_mode=True), lambda m: m.MaxPool2d(2, padding=1, dilation=1, ceil_mode=True),
    lambda m: m.AvgPool2d(2), lambda m: m.AvgPool2d(3, stride=1, padding=1),
    lambda m: m.AvgPool2d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    lambda m: m.AvgPool2d(2, ceil_mode=True), lambda m: m.AvgPool2d(3, stride=2, padding=1, ceil_mode=True),
    lambda m: m.AvgPool2d(3, divisor_override=4),
    lambda m: m.MaxPool2d(8, stride=2, ceil_mode=True), lambda m: m.MaxPool2d(3, stride=3, dilation=4, ceil_mode=True),
    lambda m: m.AvgPool2d(9, stride=3, ceil_mode=True), lambda m: m.AvgPool2d(9, stride=3, padding=1, ceil_mode=True,
                                                                               count_include_pad=False)])
def test_pooling_matches_pytorch(make) -> None:
    x = RNG.standard_normal((2, 3, 8, 7)).astype(np.float32)  # continuous values: no ties in max windows
    tm, fm = make(torch.nn), make(nn)
    if isinstance(tm, torch.nn.MaxPool2d):
        assert repr(fm) == repr(tm)
    _compare(tm, fm, [x])


POOLS_WITH_INDICES = [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                      dict(kernel_size=3, stride=2, ceil_mode=True),
                      dict(kernel_size=(2, 3), stride=(1, 2), dilation=(2, 1), padding=(1, 1))]


def _awkward_image(shape: tuple[int, ...]) -> np.ndarray:
    """Values with ties (rounded), a window of -inf and a window of two NaNs: where the
    rules for which maximum an index names differ between implementations."""
    x = np.round(RNG.standard_normal(shape) * 2).astype(np.float32)
    x[0, 0, :2, :2] = -np.inf
    x[-1, -1, 0, :2] = np.nan
    return x


@needs_torch
@pytest.mark.parametrize("kwargs", POOLS_WITH_INDICES)
def test_max_pool_indices_and_unpool_match_pytorch(kwargs) -> None:
    x = _awkward_image((2, 3, 7, 6))
    tout, tidx = torch.nn.MaxPool2d(**kwargs, return_indices=True)(torch.tensor(x))
    fout, fidx = nn.MaxPool2d(**kwargs, return_indices=True)(fg.asarray(x))
    np.testing.assert_array_equal(fout.numpy(), tout.numpy())
    assert fidx.dtype == fg.int64
    np.testing.assert_array_equal(fidx.numpy(), tidx.numpy())
    if "dilation" in kwargs:  # PyTorch's MaxUnpool2d has no dilation
        return
    unpool_args = (kwargs["kernel_size"], kwargs.get("stride"), kwargs.get("padding", 0))
    tu, fu = torch.nn.MaxUnpool2d(*unpool_args), nn.MaxUnpool2d(*unpool_args)
    assert repr(fu) == repr(tu)
    y = RNG.standard_normal(tuple(tout.shape)).astype(np.float32)  # any values: unpool puts them back
    ty, fy = torch.tensor(y, requires_grad=True), fg.asarray(y, requires_grad=True)
    tres, fres = tu(ty, tidx, output_size=x.shape[2:]), fu(fy, fidx, output_size=x.shape[2:])
    np.testing.assert_array_equal(fres.numpy(), tres.detach().numpy())
    w = RNG.standard_normal(x.shape).astype(np.float32)
    (tres * torch.tensor(w)).sum().backward()
    (fres * fg.asarray(w)).sum().backward()
    # Overlapping windows can name one position twice; unpooling keeps the last value there
    # (PyTorch too), so only that one reaches the output and has a derivative. PyTorch's
    # backward gathers for every duplicate; funcgrad gives the others 0 (docs/nn.md).
    flat = fidx.numpy().reshape(fidx.shape[0], fidx.shape[1], -1)
    kept = np.zeros(flat.shape, bool)
    for n, c in np.ndindex(*flat.shape[:2]):
        last = {p: k for k, p in enumerate(flat[n, c])}
        kept[n, c, list(last.values())] = True
    want = np.where(kept, ty.grad.numpy().reshape(flat.shape), 0.0).reshape(y.shape)
    np.testing.assert_array_equal(fy.grad.numpy(), want)


def test_max_unpool_bad_arguments_and_unbatched_input() -> None:
    x = fg.asarray(np.arange(32.0, dtype=np.float32).reshape(2, 1, 4, 4))
    out, idx = F.max_pool2d(x, 2, return_indices=True)
    assert F.max_unpool2d(out, idx, 2).shape == (2, 1, 4, 4)
    assert F.max_unpool2d(out, idx, 2, output_size=(5, 5)).shape == (2, 1, 5, 5)
    single_out, single_idx = F.max_pool2d(x[0], 2, return_indices=True)   # (C, H, W) in, no batch axis out
    np.testing.assert_array_equal(single_idx.numpy(), idx.numpy()[0])
    np.testing.assert_array_equal(F.max_unpool2d(single_out, single_idx, 2).numpy(),
                                  F.max_unpool2d(out, idx, 2).numpy()[0])
    with pytest.raises(IndexError, match=r"max_unpool2d: index 21 is out of range for 16 output cells \(H, W\)"):
        F.max_unpool2d(out, idx + 16, 2)
    with pytest.raises(ValueError, match=r"output_size \(6, 6\) must give \(H, W\) within one stride"):
        F.max_unpool2d(out, idx, 2, output_size=(6, 6))
    with pytest.raises(fg.DTypeError, match="max_unpool2d: indices must be integers"):
        F.max_unpool2d(out, idx.astype(fg.float32), 2)
    with pytest.raises(fg.ShapeError, match=r"indices of shape \(2, 1, 1, 2\) for an input of shape \(2, 1, 2, 2\)"):
        F.max_unpool2d(out, idx[:, :, :1], 2)
    # traced (as on a GPU), a bad index cannot be read on the host: its channel comes out NaN, never wrong
    prog = fg.trace(lambda o, i: F.max_unpool2d(o, i, 2))(out, idx)
    bad = idx.at[1, 0, 0, 0].set(99)
    result = prog(out, bad)
    result = (result[0] if isinstance(result, (tuple, list)) else result).numpy()
    assert np.isnan(result[1]).all()
    np.testing.assert_array_equal(result[0], F.max_unpool2d(out, idx, 2).numpy()[0])


@settings(max_examples=40, deadline=None)
@given(shape=st.tuples(st.integers(1, 2), st.integers(1, 2), st.integers(2, 7), st.integers(2, 7)),
       kernel=st.integers(1, 3), stride=st.integers(1, 3), padding=st.integers(0, 1),
       dilation=st.integers(1, 2), ceil_mode=st.booleans(), seed=st.integers(0, 2**16))
def test_max_pool_indices_name_the_first_maximum_inside_the_input(shape, kernel, stride, padding, dilation,
                                                                   ceil_mode, seed) -> None:
    """Against a loop over every window: the index is the row-major first position, inside
    the input, that holds the window's maximum (values with many ties); reading the input
    there gives the pooled output; and unpooling puts each maximum back where it was, with
    zeros everywhere else."""
    span = dilation * (kernel - 1) + 1
    counts = [(size + 2 * padding - span + (stride - 1 if ceil_mode else 0)) // stride + 1 for size in shape[2:]]
    assume(padding <= span // 2 and min(counts) >= 1)  # PyTorch's output sizes (ceil_mode may reach past the input)
    x = np.random.default_rng(seed).integers(-2, 3, shape).astype(np.float64)
    out, idx = F.max_pool2d(fg.asarray(x), kernel, stride, padding, dilation, ceil_mode, return_indices=True)
    out, idx = out.numpy(), idx.numpy()
    h, w = shape[2:]
    for n, c, i, j in np.ndindex(*idx.shape):
        cells = [(r, q) for r in range(i * stride - padding, i * stride - padding + span, dilation)
                 for q in range(j * stride - padding, j * stride - padding + span, dilation)
                 if 0 <= r < h and 0 <= q < w]
        best = max(x[n, c, r, q] for r, q in cells)
        first = next(r * w + q for r, q in cells if x[n, c, r, q] == best)
        assert idx[n, c, i, j] == first and out[n, c, i, j] == best
    flat_idx = idx.reshape(shape[0], shape[1], -1)
    np.testing.assert_array_equal(np.take_along_axis(x.reshape(shape[0], shape[1], -1), flat_idx, -1),
                                  out.reshape(flat_idx.shape))
    default = [(o - 1) * stride - 2 * padding + kernel for o in out.shape[2:]]
    if dilation == 1 and all(d - stride < size < d + stride for d, size in zip(default, (h, w))):
        back = F.max_unpool2d(fg.asarray(out), fg.asarray(idx), kernel, stride, padding, output_size=(h, w)).numpy()
        back = back.reshape(flat_idx.shape[:2] + (-1,))
        np.testing.assert_array_equal(np.take_along_axis(back, flat_idx, -1), out.reshape(flat_idx.shape))
        untouched = np.ones(back.shape, bool)
        np.put_along_axis(untouched, flat_idx, False, -1)
        assert (back[untouched] == 0).all()


def test_pooling_padding_must_leave_every_window_some_input() -> None:
    with pytest.raises(ValueError, match="max_pool2d: padding .* must be at most half the kernel"):
        nn.MaxPool2d(2, padding=2)(fg.zeros((1, 1, 4, 4)))
    with pytest.raises(fg.ShapeError, match="avg_pool2d: an input of shape .* is smaller than the kernel"):
        nn.AvgPool2d(5)(fg.zeros((1, 1, 4, 4)))


def test_conv2d_is_one_conv_primitive() -> None:
    """Without padding or bias, ``conv2d`` binds ``conv`` alone (no window copy the size of
    the batch: the native kernel lays out one image's windows at a time)."""
    from funcgrad.primitives.core import current_interpreter

    x = fg.ones((1, 2, 6, 6))
    names = []

    class Rec:
        def process(self, prim, args, params):
            names.append(prim.name)
            token = current_interpreter.set(None)
            try:
                return fg.bind(prim, *args, **params)
            finally:
                current_interpreter.reset(token)

    token = current_interpreter.set(Rec())
    try:
        nn.functional.conv2d(x, fg.ones((3, 2, 3, 3)))
    finally:
        current_interpreter.reset(token)
    assert names == ["conv"]
    pooled = nn.functional.max_pool2d(fg.arange(16.0).reshape(1, 1, 4, 4), 2)
    assert pooled.tolist() == [[[[5.0, 7.0], [13.0, 15.0]]]]


@needs_torch
@pytest.mark.parametrize("size", [1, (2, 3), (3, None), (4, 5)])  # divides, does not, keeps an axis, overlaps
def test_adaptive_avg_pool_matches_pytorch(size) -> None:
    tm, fm = torch.nn.AdaptiveAvgPool2d(size), nn.AdaptiveAvgPool2d(size)
    assert repr(fm) == repr(tm)
    _compare(tm, fm, [RNG.standard_normal((2, 3, 7, 6)).astype(np.float32)])


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_the_native_convolution_kernels_compute_what_numpy_does(data) -> None:
    """``conv``, ``conv_input_grad`` and ``conv_weight_grad`` as native loops (at stride 1
    direct, else im2col by chunks of images and one BLAS product) against the NumPy kernels
    (the whole batch's windows, batched products): any geometry, zero images included,
    channels across the direct loop's vector blocks, and an infinity or NaN in an operand
    (the direct loops compute columns past each row's windows and zeros around the cotangent,
    which must not reach a result)."""
    from funcgrad.backends import cc
    from funcgrad.primitives.convolution import conv_input_grad_p, conv_p, conv_weight_grad_p, out_size

    if cc.blas() is None:
        pytest.skip("no BLAS found for native programs")
    dtype = data.draw(st.sampled_from([np.float32, np.float64]))
    n, c, o = data.draw(st.integers(0, 5)), data.draw(st.integers(1, 6)), data.draw(st.sampled_from([1, 2, 3, 4, 17, 40]))
    k = (data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3)))
    s = (data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3)))
    d = (data.draw(st.integers(1, 2)), data.draw(st.integers(1, 2)))
    hw = (data.draw(st.integers(1, 12)), data.draw(st.integers(1, 12)))
    out = out_size(hw, k, s, d)
    assume(min(out) >= 1)
    params = {"strides": s, "dilations": d, "groups": 1}
    operands = [RNG.standard_normal(shape).astype(dtype) for shape in ((n, c, *hw), (o, c, *k), (n, o, *out))]
    special = data.draw(st.sampled_from([None, np.inf, -np.inf, np.nan]))
    if special is not None:
        target = operands[data.draw(st.integers(0, 2))]
        if target.size:
            target.flat[data.draw(st.integers(0, target.size - 1))] = special
    x, w, g = (fg.asarray(a) for a in operands)
    runs = {}
    kept = fg.config.compile_backend
    try:
        for backend in ("c", "numpy"):
            fg.config.compile_backend = backend
            with np.errstate(invalid="ignore"):  # (NumPy's products warn of an infinity times 0)
                runs[backend] = [fg.bind(conv_p, x, w, **params).numpy(),
                                 fg.bind(conv_input_grad_p, g, w, shape=hw, **params).numpy(),
                                 fg.bind(conv_weight_grad_p, x, g, sizes=k, **params).numpy()]
    finally:
        fg.config.compile_backend = kept
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for native, plain in zip(runs["c"], runs["numpy"]):
        assert native.shape == plain.shape and native.dtype == plain.dtype
        np.testing.assert_allclose(native, plain, rtol=tol, atol=tol)


@pytest.mark.parametrize("case", ["kernel larger than the input", "cotangent of another size", "weight gradient"])
def test_convolution_kernels_refuse_operands_that_do_not_fit(case) -> None:
    """Eager evaluation runs the kernels without the shape rule: each checks its operands'
    geometry itself (the windows and the native loop would read past them), and the shape
    rule names the problem."""
    from funcgrad.primitives.convolution import conv_input_grad_p, conv_p, conv_weight_grad_p

    p = {"strides": (1, 1), "dilations": (1, 1), "groups": 1}
    with pytest.raises(fg.ShapeError, match="does not fit"):
        if case == "kernel larger than the input":
            fg.bind(conv_p, fg.ones((1, 1, 2, 2)), fg.ones((1, 1, 3, 3)), **p)
        elif case == "cotangent of another size":
            fg.bind(conv_input_grad_p, fg.ones((1, 1, 5, 5)), fg.ones((1, 1, 3, 3)), shape=(4, 4), **p)
        else:
            fg.bind(conv_weight_grad_p, fg.ones((1, 1, 4, 4)), fg.ones((1, 1, 5, 5)), sizes=(3, 3), **p)


@pytest.mark.parametrize("c, o, hw", [(32, 64, (26, 26)), (3, 20, (33, 17)), (64, 32, (12, 12))])
def test_the_direct_convolution_at_a_real_layers_size(c, o, hw) -> None:
    """The direct loops over whole blocks of pixels and channels (MNIST's second layer among
    them), where the small geometries of the property above take only the short paths: the
    three kernels against the NumPy ones, and the operands left as they were."""
    from funcgrad.backends import cc
    from funcgrad.primitives.convolution import conv_input_grad_p, conv_p, conv_weight_grad_p, out_size

    if cc.blas() is None:
        pytest.skip("no BLAS found for native programs")
    out = out_size(hw, (3, 3), (1, 1), (1, 1))
    operands = [RNG.standard_normal(shape).astype(np.float32) for shape in ((8, c, *hw), (o, c, 3, 3), (8, o, *out))]
    kept = [a.copy() for a in operands]
    x, w, g = (fg.asarray(a) for a in operands)
    params = {"strides": (1, 1), "dilations": (1, 1), "groups": 1}
    runs = {}
    before = fg.config.compile_backend
    try:
        for backend in ("c", "numpy"):
            fg.config.compile_backend = backend
            runs[backend] = [fg.bind(conv_p, x, w, **params).numpy(),
                             fg.bind(conv_input_grad_p, g, w, shape=hw, **params).numpy(),
                             fg.bind(conv_weight_grad_p, x, g, sizes=(3, 3), **params).numpy()]
    finally:
        fg.config.compile_backend = before
    for native, plain in zip(runs["c"], runs["numpy"]):
        np.testing.assert_allclose(native, plain, rtol=1e-4, atol=1e-4 * float(np.abs(plain).max()))
    for a, b in zip(operands, kept):
        np.testing.assert_array_equal(a, b)
