"""Device objects: where a buffer lives.

A ``Device`` is a small interned value (``cpu``, ``gpu:0``): two arrays are on the
same device exactly when their devices are the same object, so the eager path
checks devices with ``is``. Each device carries its memory counters.
"""

from __future__ import annotations

from typing import Any

from ..errors import ArgumentValueError, DeviceUnavailableError
from .base import Backend
from .cupy_backend import CupyBackend, check_gpu, gpu_count
from .numpy_backend import NumpyBackend

__all__ = ["Device", "DeviceUnavailableError", "device", "devices", "MemoryStats"]




class MemoryStats:
    """Live and peak bytes of the buffers on one device."""

    __slots__ = ("allocated", "peak")

    def __init__(self) -> None:
        self.allocated = 0
        self.peak = 0


class Device:
    """A place where buffers live and kernels run. Use ``fg.device(...)`` to get one.

    Example:
        >>> d = fg.device("cpu")
        >>> d, d.type, fg.ones(2).device is d
        (cpu, 'cpu', True)
    """

    __slots__ = ("kind", "index", "stats", "_backend")

    def __init__(self, kind: str, index: int) -> None:
        self.kind = kind
        self.index = index
        self.stats = MemoryStats()
        self._backend: Backend | None = None

    @property
    def backend(self) -> Backend:
        """The backend that runs kernels here (created on first use)."""
        if self._backend is None:
            self._backend = NumpyBackend(self) if self.kind == "cpu" else CupyBackend(self)
        return self._backend

    @property
    def type(self) -> str:
        """PyTorch's name of the device's kind: ``"cpu"`` or ``"cuda"``."""
        return "cpu" if self.kind == "cpu" else "cuda"

    @property
    def platform(self) -> str:
        """The backend's name: 'cpu' or 'gpu'."""
        return self.kind

    def __repr__(self) -> str:
        return "cpu" if self.kind == "cpu" else f"{self.kind}:{self.index}"

    def __str__(self) -> str:
        return repr(self)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            try:
                return device(other) is self
            except (ValueError, DeviceUnavailableError):
                return False
        return other is self

    # Devices are interned (one object per device), so identity hashing is consistent and
    # C-fast: every eager operation looks its kernel up by device.
    __hash__ = object.__hash__

    def __reduce__(self) -> tuple[Any, ...]:
        return (device, (repr(self),))


_DEVICES: dict[tuple[str, int], Device] = {}
CPU = Device("cpu", 0)
_DEVICES["cpu", 0] = CPU
_ALIASES = {"cpu": "cpu", "gpu": "gpu", "cuda": "gpu"}


def device(spec: Any = "cpu") -> Device:
    """Look up a device (``torch.device``, ``jax.devices()[i]``).

    Args:
        spec: a name (``"cpu"``, ``"gpu"``, ``"gpu:1"``; ``"cuda"`` is an alias of
            ``"gpu"``), a ``Device`` (returned as it is), ``None`` (the CPU) or an object
            that prints as a name (a ``torch.device``).

    Returns:
        The ``Device``. An unknown name or index raises ``ArgumentValueError``; asking for
        a GPU checks that CuPy and a GPU are present and says which is missing.

    Example:
        >>> fg.device("cpu")
        cpu
        >>> fg.device(None) is fg.device("cpu"), fg.device("cpu").type
        (True, 'cpu')
    """
    if isinstance(spec, Device):
        return spec
    if spec is None:
        return CPU
    if not isinstance(spec, str):
        # torch.device and similar objects print as "cuda:0"
        spec = str(spec)
    name, _, idx = spec.strip().lower().partition(":")
    kind = _ALIASES.get(name)
    if kind is None:
        raise ArgumentValueError(f"device: unknown device {spec!r}; expected 'cpu', 'gpu', 'gpu:N' or 'cuda'")
    try:
        index = int(idx) if idx else 0
    except ValueError:
        raise ArgumentValueError(f"device: bad device index in {spec!r}") from None
    if kind == "cpu":
        if index != 0:
            raise ArgumentValueError(f"device: there is one cpu device, got {spec!r}")
        return CPU
    found = _DEVICES.get((kind, index))
    if found is None:
        check_gpu(index)
        found = _DEVICES.setdefault((kind, index), Device(kind, index))
    return found


def devices() -> list[Device]:
    """The devices usable in this process: the CPU, then every GPU CuPy can see.

    Returns:
        A list of ``Device``, the CPU first.

    Example:
        >>> fg.devices()[0]
        cpu
    """
    return [CPU] + [device(f"gpu:{i}") for i in range(gpu_count())]
