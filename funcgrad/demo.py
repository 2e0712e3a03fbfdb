"""``python -m funcgrad.demo``: a short tour of funcgrad's arrays.

It shows the foundation everything else stands on: one buffer, many views
(shape, strides, offset), immutability with functional updates, dtypes, the
primitive registry, devices and memory counters. Later layers (transforms,
the tape, nn) extend this tour into a training demo.
"""

from __future__ import annotations

import argparse
import sys

import funcgrad as fg


def _show(label: str, value: object) -> None:
    print(f"  {label:<34} {value}")


def tour(device: str = "cpu") -> None:
    print("funcgrad", fg.__version__, "- arrays are immutable views over shared buffers\n")

    x = fg.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], device=device)
    print("x = fg.array([[1., 2., 3.], [4., 5., 6.]])")
    _show("x.shape, x.dtype, x.device", (x.shape, x.dtype, x.device))
    _show("x.stride(), x.storage_offset()", (x.stride(), x.storage_offset()))
    _show("x.buffer", x.buffer)

    print("\nViews: new (shape, strides, offset) over the same buffer, O(1), no copy")
    views = [("x.T", x.T), ("x[1, ::2]", x[1, ::2]), ("x[::-1]", x[::-1]), ("x.reshape(3, 2)", x.reshape(3, 2)),
             ("fg.broadcast_to(x[0], (4, 3))", fg.broadcast_to(x[0], (4, 3)))]
    for label, v in views:
        _show(label, f"shape={v.shape} strides={v.stride()} offset={v.storage_offset()} "
                     f"same buffer={v.buffer is x.buffer}")

    print("\nWhen a view is impossible, view() explains and reshape() copies")
    try:
        x.T.view(6)
    except fg.ViewError as err:
        _show("x.T.view(6)", f"ViewError: {str(err)[:72]}...")
    _show("x.T.reshape(6).buffer is x.buffer", x.T.reshape(6).buffer is x.buffer)

    print("\nImmutability: no write can reach a shared buffer")
    try:
        x[0, 0] = 5.0  # type: ignore[index]
    except TypeError as err:
        _show("x[0, 0] = 5.0", f"TypeError: {str(err)[:60]}...")
    y = x.at[0, 0].set(5.0)
    _show("x.at[0, 0].set(5.0)[0]", y[0].tolist())
    _show("x[0] (unchanged)", x[0].tolist())

    print("\nArithmetic, promotion (NumPy 2 rules, weak Python scalars), advanced indexing")
    _show("(x * 2.0).dtype", (x * 2.0).dtype)
    _show("(x + fg.ones(3, fg.float64)).dtype", (x + fg.ones(3, fg.float64, device=device)).dtype)
    _show("x[x > 2]", x[x > 2].tolist())
    _show("(x @ x.T).sum(axis=0)", (x @ x.T).sum(axis=0).tolist())

    names = sorted(p.name for p in fg.registry())
    print(f"\nThe primitive registry: {len(names)} primitives, every operation goes through fg.bind")
    print("  " + ", ".join(names[:14]) + ", ...")

    print("\nTransforms: derivatives and programs from the same primitives")
    w = fg.array([[0.5, -1.0], [2.0, 0.1], [0.3, 0.3]], device=device)
    loss = lambda w: fg.tanh(x @ w).sum()  # noqa: E731
    _show("fg.grad(loss)(w)", fg.grad(loss)(w).tolist())
    _show("fg.hessian(sum(v**3))([1, 2])", fg.hessian(lambda v: (v ** 3).sum())(fg.array([1.0, 2.0])).tolist())
    print("  fg.trace(loss)(w):")
    print("\n".join("    " + line for line in str(fg.trace(loss)(w)).splitlines()))

    print("\nDevices and memory")
    _show("fg.devices()", fg.devices())
    _show(f"fg.memory.allocated({device!r})", f"{fg.memory.allocated(device)} bytes in live buffers")
    try:
        fg.device("gpu")
        _show("GPU", "available: try --device gpu")
    except fg.DeviceUnavailableError as err:
        _show("fg.device('gpu')", str(err)[:80])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m funcgrad.demo", description=__doc__)
    parser.add_argument("--device", default="cpu", help="cpu or gpu (needs CuPy and a GPU)")
    args = parser.parse_args(argv)
    tour(args.device)
    return 0


if __name__ == "__main__":
    sys.exit(main())
