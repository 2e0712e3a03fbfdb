"""The process group under ``fg.distributed``: collectives on raw buffers, run by an engine
clusters already operate. MPI (through ``mpi4py``) moves host buffers; NCCL (through
``cupy.cuda.nccl``) moves GPU buffers on a CUDA stream.

Every collective starts without blocking and returns a ``Work``; waiting on it polls the
engine until the result is there or the group's ``timeout`` has passed, so a rank whose
peer died raises ``DistributedTimeoutError`` instead of hanging. Results are fresh
buffers (funcgrad's arrays are immutable); inputs are handed over as they are when they
are contiguous and of a dtype the engine knows.
"""

from __future__ import annotations

import os
import socket
import time
import zlib
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import ArgumentValueError, DistributedError, DistributedTimeoutError

__all__ = ["Work", "MPIGroup", "NCCLGroup", "OPS", "DEFAULT_TIMEOUT", "current", "join", "joined", "leave",
           "check_same"]

OPS = ("sum", "mean", "max", "min")
DEFAULT_TIMEOUT = 1800.0  # seconds, PyTorch's default

_STATE: dict[str, Any] = {}


def current() -> Any:
    """The group this process joined (``fg.distributed.init_process_group``)."""
    group = _STATE.get("group")
    if group is None:
        raise DistributedError("fg.distributed: this process is in no process group; call "
                               "fg.distributed.init_process_group() first")
    return group


def joined() -> Any:
    """The group this process joined, or ``None``."""
    return _STATE.get("group")


def join(group: Any) -> None:
    _STATE["group"] = group


def leave() -> None:
    _STATE.pop("group", None)


class Work:
    """An in-flight collective (PyTorch's ``async_op=True`` handle). ``wait()`` returns its
    result once every rank has taken part; ``is_completed()`` asks without waiting.

    Example (on two ranks: ``rank`` is each process's, ``dist`` is ``funcgrad.distributed``):
        >>> work = dist.all_reduce(fg.ones(2) * (rank + 1), async_op=True)
        >>> type(work).__name__, work.wait().tolist()
        ('Work', [3.0, 3.0])
    """

    def __init__(self, done: Callable[[], bool], result: Callable[[], Any], what: str, timeout: float) -> None:
        self._done, self._result, self.what, self.timeout = done, result, what, timeout
        self._value: Any = None
        self._finished = False

    def is_completed(self) -> bool:
        """Whether every rank has taken part (the result is then ready), without waiting."""
        if not self._finished and self._done():
            self._value, self._finished = self._result(), True
        return self._finished

    def wait(self, timeout: float | None = None) -> Any:
        """Block until done (at most ``timeout`` seconds, the group's by default) and return the result."""
        limit = self.timeout if timeout is None else float(timeout)
        start = time.perf_counter()
        pause = 0.0
        while not self.is_completed():
            waited = time.perf_counter() - start
            if waited > limit:
                raise DistributedTimeoutError(
                    f"{self.what}: waited {waited:.1f} s for the other ranks (timeout {limit:g} s); a rank has failed "
                    "or has not reached the same collective. Start jobs with `python -m funcgrad.distributed.run` "
                    "(or mpiexec) so that a failing rank aborts the others")
            if waited > 0.01:  # a short spin first (a collective usually finishes in microseconds), then naps
                pause = min(max(pause * 2, 1e-5), 1e-3)
                time.sleep(pause)
        return self._value

    def result(self) -> Any:
        """The result (waits for it)."""
        return self.wait()

    def then(self, fn: Callable[[Any], Any]) -> Work:
        """The same collective, whose result is ``fn`` of this one's (a raw buffer made an array)."""
        inner = self._result
        return Work(self._done, lambda: fn(inner()), self.what, self.timeout)


_SIGNATURE_BYTES = 72


def check_same(group: Any, buf: Any, what: str, arguments: str = "") -> None:
    """Raise on every rank at once if the ranks passed arrays of different shapes or dtypes,
    or different ``arguments`` (the reduction, the source rank), to one collective (MPI would
    read past the shorter ones, mix unlike bytes, or reduce with different operations, in
    silence): a small all-gather of each rank's description first."""
    text = f"{np.dtype(buf.dtype).name}{list(buf.shape)}{' ' + arguments if arguments else ''}".encode()
    meta = np.zeros(_SIGNATURE_BYTES, np.uint8)
    meta[:8] = np.frombuffer(zlib.crc32(text).to_bytes(8, "little"), np.uint8)
    meta[8:8 + min(len(text), _SIGNATURE_BYTES - 8)] = np.frombuffer(text[:_SIGNATURE_BYTES - 8], np.uint8)
    every = group.gather_bytes(meta, what)
    if not (every == every[0]).all():
        names = [bytes(row[8:]).rstrip(b"\0").decode(errors="replace") for row in every]
        parts = ", ".join(f"rank {r}: {name}" for r, name in enumerate(names))
        raise DistributedError(f"{what}: the ranks passed different arrays or arguments ({parts}); every rank "
                               "must pass the same shape, dtype and arguments")


# ---- MPI ----------------------------------------------------------------------------------

# dtypes MPI moves as they are; others travel as the first wider type here and come back
_MPI_KINDS = {np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
                                      np.uint64, np.float32, np.float64, np.complex64, np.complex128)}


_DTYPE_BYTES = 16  # a point-to-point message starts with its dtype's name, so recv can check it
_PERMUTE_TAG = 7301  # (ppermute's messages, apart from the user's sends and receives)


def _check_received(label: np.ndarray, nbytes: int, out: Any, src: int, what: str) -> None:
    """A point-to-point message fits the array given to receive it: as many bytes, and values
    of its dtype (not another dtype's bytes reinterpreted)."""
    if nbytes != out.nbytes:
        raise DistributedError(f"{what}: rank {src} sent {nbytes} bytes, but the {out.dtype.name}"
                               f"{list(out.shape)} array given to receive it holds {out.nbytes}")
    if not (np.asarray(label) == _dtype_label(np.dtype(out.dtype))).all():
        sent = bytes(np.asarray(label)).rstrip(b"\0").decode(errors="replace")
        raise DistributedError(f"{what}: rank {src} sent {sent} values, but the array given to receive them is "
                               f"{np.dtype(out.dtype).name}; the bytes would be reinterpreted")


def _p2p_header(dtype: Any, nbytes: int) -> np.ndarray:
    """What NCCL sends before a point-to-point message (which NCCL itself never checks): the
    dtype's name and the byte count, so ``recv`` can refuse a message that does not fit."""
    return np.concatenate([_dtype_label(np.dtype(dtype)), np.frombuffer(nbytes.to_bytes(8, "little"), np.uint8)])


def _dtype_label(dtype: np.dtype) -> np.ndarray:
    label = np.zeros(_DTYPE_BYTES, np.uint8)
    name = dtype.name.encode()[:_DTYPE_BYTES]
    label[:len(name)] = np.frombuffer(name, np.uint8)
    return label


def _mpi_dtype(dtype: np.dtype) -> np.dtype:
    if dtype in _MPI_KINDS:
        return dtype
    return np.dtype(np.uint8) if dtype == np.bool_ else np.dtype(np.float32)  # bool; float16 and bfloat16


class MPIGroup:
    """Collectives through ``mpi4py`` on host buffers (a GPU buffer goes through the host)."""

    backend = "mpi"
    device = "cpu"  # (where results that belong to no array go: ``fg.lax.axis_index``'s)

    def __init__(self, comm: Any, mpi: Any, timeout: float) -> None:
        self.comm, self.mpi, self.timeout = comm, mpi, timeout
        self.rank, self.size = int(comm.Get_rank()), int(comm.Get_size())
        self._ops = {"sum": mpi.SUM, "mean": mpi.SUM, "max": mpi.MAX, "min": mpi.MIN}

    def _work(self, request: Any, result: Callable[[], Any], what: str) -> Work:
        return Work(request.Test, result, f"{what} (rank {self.rank} of {self.size}, MPI)", self.timeout)

    @staticmethod
    def _host(xp: Any, buf: Any) -> tuple[np.ndarray, Callable[[np.ndarray], Any]]:
        """``buf`` as a contiguous host array of a dtype MPI moves, and the way back to ``buf``'s kind."""
        host = np.ascontiguousarray(buf if xp is np else xp.asnumpy(buf))
        dtype = host.dtype
        wire = _mpi_dtype(dtype)
        if wire != dtype:
            host = host.astype(wire)

        def back(out: np.ndarray) -> Any:
            out = out.astype(dtype) if wire != dtype else out
            return out if xp is np else xp.asarray(out)

        return host, back

    def all_reduce(self, xp: Any, buf: Any, op: str, out: Any = None) -> Work:
        send, back = self._host(xp, buf)
        out = np.empty_like(send) if out is None or xp is not np else out
        request = self.comm.Iallreduce(send, out, op=self._ops[op])
        return self._work(request, lambda: back(_mean(out, self.size) if op == "mean" else out), f"all_reduce({op})")

    def broadcast(self, xp: Any, buf: Any, src: int) -> Work:
        send, back = self._host(xp, buf)
        out = send.copy() if self.rank == src else np.empty_like(send)
        return self._work(self.comm.Ibcast(out, root=src), lambda: back(out), f"broadcast(src={src})")

    def all_gather(self, xp: Any, buf: Any) -> Work:
        send, back = self._host(xp, buf)
        out = np.empty((self.size, *send.shape), send.dtype)
        return self._work(self.comm.Iallgather(send, out), lambda: back(out), "all_gather")

    def reduce_scatter(self, xp: Any, buf: Any, op: str) -> Work:
        send, back = self._host(xp, buf)  # (world, *shape): block r goes to rank r
        out = np.empty(send.shape[1:], send.dtype)
        request = self.comm.Ireduce_scatter_block(send, out, op=self._ops[op])
        return self._work(request, lambda: back(_mean(out, self.size) if op == "mean" else out),
                          f"reduce_scatter({op})")

    def all_to_all(self, xp: Any, buf: Any) -> Work:
        send, back = self._host(xp, buf)  # (world, *shape): block j goes to rank j, block k comes from rank k
        out = np.empty_like(send)
        return self._work(self.comm.Ialltoall(send, out), lambda: back(out), "all_to_all")

    def permute(self, xp: Any, buf: Any, perm: tuple[tuple[int, int], ...]) -> Work:
        """For each pair ``(s, t)`` of ``perm``, rank s's ``buf`` to rank t; a rank no pair
        sends to gets zeros. (Every rank passes the same shape and dtype, as in ``ppermute``.)"""
        send, back = self._host(xp, buf)
        out = np.zeros_like(send)
        requests = [self.comm.Isend(send, dest=t, tag=_PERMUTE_TAG) for s, t in perm if s == self.rank] + \
            [self.comm.Irecv(out, source=s, tag=_PERMUTE_TAG) for s, t in perm if t == self.rank]
        return Work(lambda: bool(self.mpi.Request.Testall(requests)), lambda: (send, back(out))[1],
                    f"ppermute (rank {self.rank} of {self.size}, MPI)", self.timeout)  # (send lives until sent)

    def split(self, color: int, key: int) -> MPIGroup:
        """The ranks of this group with the same ``color`` as a group of their own, ordered by
        ``key`` (every rank of this group calls it, in the same order)."""
        return MPIGroup(self.comm.Split(color, key), self.mpi, self.timeout)

    def reduce(self, xp: Any, buf: Any, op: str, dst: int) -> Work:
        send, back = self._host(xp, buf)  # the reduction on dst
        out = np.empty_like(send)
        request = self.comm.Ireduce(send, out if self.rank == dst else None, op=self._ops[op], root=dst)

        def result() -> Any:  # (None on the other ranks)
            return back(_mean(out, self.size) if op == "mean" else out) if self.rank == dst else None

        return self._work(request, result, f"reduce({op}, dst={dst})")

    def gather(self, xp: Any, buf: Any, dst: int) -> Work:
        send, back = self._host(xp, buf)  # (world, *shape) on dst, None elsewhere
        out = np.empty((self.size, *send.shape), send.dtype) if self.rank == dst else None
        request = self.comm.Igather(send, out, root=dst)
        return self._work(request, lambda: back(out) if out is not None else None, f"gather(dst={dst})")

    def scatter(self, xp: Any, stacked: Any, like: Any, src: int) -> Work:
        """Block r of ``stacked`` (src's (world, *shape) array; ignored elsewhere) to rank r."""
        into, back = self._host(xp, like)
        send = self._host(xp, stacked)[0] if self.rank == src else None
        out = np.empty_like(into)
        return self._work(self.comm.Iscatter(send, out, root=src), lambda: back(out), f"scatter(src={src})")

    def send(self, xp: Any, buf: Any, dst: int, tag: int) -> Work:
        send, _ = self._host(xp, buf)
        message = np.empty(_DTYPE_BYTES + send.nbytes, np.uint8)  # the dtype's name, then the bytes
        message[:_DTYPE_BYTES] = _dtype_label(np.dtype(buf.dtype))
        message[_DTYPE_BYTES:] = send.reshape(-1).view(np.uint8)
        return self._work(self.comm.Isend(message, dest=dst, tag=tag), lambda: None, f"send(dst={dst}, tag={tag})")

    def recv(self, xp: Any, like: Any, src: int, tag: int) -> Work:
        into, back = self._host(xp, like)
        message = np.empty(_DTYPE_BYTES + into.nbytes, np.uint8)
        out = message[_DTYPE_BYTES:].view(into.dtype).reshape(into.shape)
        request, status = self.comm.Irecv(message, source=src, tag=tag), self.mpi.Status()
        what = f"recv(src={src}, tag={tag}) (rank {self.rank} of {self.size}, MPI)"

        def done() -> bool:
            try:
                return bool(request.Test(status))
            except self.mpi.Exception as exc:  # a longer message than the array holds
                raise DistributedError(f"{what}: rank {src} sent more than the {out.nbytes} bytes of the "
                                       f"{out.dtype.name}{list(out.shape)} array given to receive it ({exc})") from None

        def result() -> Any:
            _check_received(message[:_DTYPE_BYTES], status.Get_count(self.mpi.BYTE) - _DTYPE_BYTES, out, src, what)
            return back(out)

        return Work(done, result, what, self.timeout)

    def barrier(self) -> Work:
        return self._work(self.comm.Ibarrier(), lambda: None, "barrier")

    def gather_bytes(self, meta: np.ndarray, what: str) -> np.ndarray:
        """Every rank's ``meta`` (a small uint8 array), waited for with the timeout."""
        every = np.empty((self.size, meta.size), np.uint8)
        return self._work(self.comm.Iallgather(meta, every), lambda: every, what).wait()  # type: ignore[no-any-return]

    def all_gather_bytes(self, data: bytes, what: str) -> list[bytes]:
        """Every rank's ``data`` (of any length), in rank order: the lengths first, then the bytes."""
        sizes = self.gather_bytes(np.frombuffer(len(data).to_bytes(8, "little"), np.uint8), what)
        counts = [int.from_bytes(bytes(row), "little") for row in sizes]
        out = np.empty(sum(counts), np.uint8)
        offsets = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(int).tolist()
        mine = np.frombuffer(data, np.uint8)
        self._work(self.comm.Iallgatherv(mine, [out, counts, offsets, self.mpi.BYTE]), lambda: None, what).wait()
        return [out[o:o + c].tobytes() for o, c in zip(offsets, counts)]

    def abort(self, code: int = 1) -> None:
        """End every rank of the job (MPI's abort: the launcher kills the others)."""
        self.comm.Abort(code)


def _mean(out: Any, n: int) -> Any:
    if out.dtype.kind in "fc":
        out /= n  # (the result buffer is the group's own, not yet seen by anyone)
        return out
    return out // n


# ---- NCCL ---------------------------------------------------------------------------------

_NCCL_DTYPES = {"int8": "NCCL_INT8", "uint8": "NCCL_UINT8", "int32": "NCCL_INT32", "uint32": "NCCL_UINT32",
                "int64": "NCCL_INT64", "uint64": "NCCL_UINT64", "float16": "NCCL_FLOAT16",
                "float32": "NCCL_FLOAT32", "float64": "NCCL_FLOAT64", "bfloat16": "NCCL_BFLOAT16"}
_NCCL_OPS = {"sum": "NCCL_SUM", "mean": "NCCL_SUM", "max": "NCCL_MAX", "min": "NCCL_MIN"}


NCCL_ID_BYTES = 128


def nccl_id_bytes(uid: Any) -> bytes:
    """NCCL's unique id as bytes (CuPy spells it as a tuple of signed chars)."""
    return bytes(b & 0xFF for b in uid)


def nccl_id(data: bytes) -> tuple[int, ...]:
    """NCCL's unique id as CuPy spells it, from its bytes."""
    return tuple(b - 256 if b > 127 else b for b in data)


def split_members(colors_and_keys: list[list[int]], rank: int) -> list[int]:
    """The ranks of ``rank``'s new group after a split, in their new order (MPI's
    ``Comm.Split``): those with its color, by key and then by old rank. ``colors_and_keys``
    has each rank's ``(color, key)``."""
    color = colors_and_keys[rank][0]
    return [r for _, r in sorted((k, r) for r, (c, k) in enumerate(colors_and_keys) if c == color)]


def _pointer(buf: Any) -> int:
    """A device buffer's address (CUDA's array interface; a host stand-in's own)."""
    face = getattr(buf, "__cuda_array_interface__", None) or buf.__array_interface__
    return int(face["data"][0])


class NCCLGroup:
    """Collectives through NCCL (``cupy.cuda.nccl``) on GPU buffers, queued on the current
    CUDA stream; a ``Work`` is done when an event recorded after the call has passed."""

    backend = "nccl"

    def __init__(self, cupy: Any, rank: int, size: int, unique_id: Any, timeout: float) -> None:
        self.cupy, self.nccl, self.timeout = cupy, cupy.cuda.nccl, timeout
        self.rank, self.size = rank, size
        self.device = f"gpu:{cupy.cuda.Device().id}"  # (the current GPU, whose buffers this group moves)
        self.comm = self.nccl.NcclCommunicator(size, unique_id, rank)

    def _code(self, dtype: Any, what: str) -> int:
        name = _NCCL_DTYPES.get(np.dtype(dtype).name)
        if name is None:
            raise ArgumentValueError(f"{what}: NCCL does not move {np.dtype(dtype).name} arrays; cast to one of "
                                     f"{sorted(_NCCL_DTYPES)}")
        return int(getattr(self.nccl, name))

    def _queued(self, result: Callable[[], Any], what: str) -> Work:
        stream = self.cupy.cuda.get_current_stream()
        event = self.cupy.cuda.Event(disable_timing=True)
        event.record(stream)
        return Work(lambda: bool(event.done), result, f"{what} (rank {self.rank} of {self.size}, NCCL)",
                    self.timeout)

    def _stream(self) -> int:
        return int(self.cupy.cuda.get_current_stream().ptr)

    def all_reduce(self, xp: Any, buf: Any, op: str, out: Any = None) -> Work:
        send = xp.ascontiguousarray(buf)
        out = xp.empty_like(send) if out is None else out
        self.comm.allReduce(_pointer(send), _pointer(out), send.size, self._code(send.dtype, "all_reduce"),
                            int(getattr(self.nccl, _NCCL_OPS[op])), self._stream())
        return self._queued(lambda: _mean(out, self.size) if op == "mean" else out, f"all_reduce({op})")

    def broadcast(self, xp: Any, buf: Any, src: int) -> Work:
        send = xp.ascontiguousarray(buf)
        out = xp.empty_like(send)
        self.comm.broadcast(_pointer(send), _pointer(out), send.size, self._code(send.dtype, "broadcast"), src,
                            self._stream())
        return self._queued(lambda: out, f"broadcast(src={src})")

    def all_gather(self, xp: Any, buf: Any) -> Work:
        send = xp.ascontiguousarray(buf)
        out = xp.empty((self.size, *send.shape), send.dtype)
        self.comm.allGather(_pointer(send), _pointer(out), send.size, self._code(send.dtype, "all_gather"),
                            self._stream())
        return self._queued(lambda: out, "all_gather")

    def reduce_scatter(self, xp: Any, buf: Any, op: str) -> Work:
        send = xp.ascontiguousarray(buf)
        out = xp.empty(send.shape[1:], send.dtype)
        self.comm.reduceScatter(_pointer(send), _pointer(out), out.size, self._code(send.dtype, "reduce_scatter"),
                                int(getattr(self.nccl, _NCCL_OPS[op])), self._stream())
        return self._queued(lambda: _mean(out, self.size) if op == "mean" else out, f"reduce_scatter({op})")

    def reduce(self, xp: Any, buf: Any, op: str, dst: int) -> Work:
        send = xp.ascontiguousarray(buf)
        out = xp.empty_like(send)
        self.comm.reduce(_pointer(send), _pointer(out), send.size, self._code(send.dtype, "reduce"),
                         int(getattr(self.nccl, _NCCL_OPS[op])), dst, self._stream())
        return self._queued(lambda: (_mean(out, self.size) if op == "mean" else out) if self.rank == dst else None,
                            f"reduce({op}, dst={dst})")

    def gather(self, xp: Any, buf: Any, dst: int) -> Work:
        """(NCCL has no gather: an all-gather, kept on dst.)"""
        work = self.all_gather(xp, buf)
        return work.then(lambda out: out if self.rank == dst else None)

    def scatter(self, xp: Any, stacked: Any, like: Any, src: int) -> Work:
        """(NCCL has no scatter: src broadcasts the stacked blocks, each rank keeps its own.)"""
        blocks = xp.ascontiguousarray(stacked) if self.rank == src else xp.empty((self.size, *like.shape), like.dtype)
        return self.broadcast(xp, blocks, src).then(lambda out: xp.ascontiguousarray(out[self.rank]))

    def send(self, xp: Any, buf: Any, dst: int, tag: int) -> Work:
        send = xp.ascontiguousarray(buf)
        code, byte = self._code(send.dtype, "send"), int(self.nccl.NCCL_UINT8)
        header = xp.asarray(_p2p_header(send.dtype, send.nbytes))
        self.comm.send(_pointer(header), header.size, byte, dst, self._stream())
        self.comm.send(_pointer(send), send.size, code, dst, self._stream())
        return self._queued(lambda: (header, send) and None, f"send(dst={dst})")  # (both live until sent)

    def recv(self, xp: Any, like: Any, src: int, tag: int) -> Work:
        """The header first, read on the host: a message that does not fit ``like`` is still
        received (into scratch bytes, so the sender is not left waiting) and then refused."""
        out = xp.empty_like(xp.ascontiguousarray(like))
        code, byte = self._code(out.dtype, "recv"), int(self.nccl.NCCL_UINT8)
        header = xp.empty(_DTYPE_BYTES + 8, np.uint8)
        self.comm.recv(_pointer(header), header.size, byte, src, self._stream())
        self.cupy.cuda.get_current_stream().synchronize()
        got = np.asarray(self.cupy.asnumpy(header))
        nbytes = int.from_bytes(bytes(got[_DTYPE_BYTES:]), "little")
        what = f"recv(src={src}) (rank {self.rank} of {self.size}, NCCL)"
        try:
            _check_received(got[:_DTYPE_BYTES], nbytes, out, src, what)
        except DistributedError:
            scratch = xp.empty(nbytes, np.uint8)
            self.comm.recv(_pointer(scratch), nbytes, byte, src, self._stream())
            self.cupy.cuda.get_current_stream().synchronize()
            raise
        self.comm.recv(_pointer(out), out.size, code, src, self._stream())
        return self._queued(lambda: out, f"recv(src={src})")

    def _grouped(self, sends: list[tuple[Any, int]], receives: list[tuple[Any, int]], code: int) -> None:
        """``(buffer, peer)`` sends and receives queued as one NCCL group (``groupStart``/
        ``groupEnd``), as NCCL's own all-to-all is written: a rank that sends to a peer it
        also receives from would otherwise wait on itself."""
        stream = self._stream()
        self.nccl.groupStart()
        try:
            for buf, peer in sends:
                self.comm.send(_pointer(buf), buf.size, code, peer, stream)
            for buf, peer in receives:
                self.comm.recv(_pointer(buf), buf.size, code, peer, stream)
        finally:
            self.nccl.groupEnd()

    def all_to_all(self, xp: Any, buf: Any) -> Work:
        """Block j of ``buf`` (its first axis) to rank j; block k of the result from rank k."""
        send = xp.ascontiguousarray(buf)
        out = xp.empty_like(send)
        peers = range(self.size)
        self._grouped([(send[j], j) for j in peers], [(out[j], j) for j in peers], self._code(send.dtype, "all_to_all"))
        return self._queued(lambda: (send, out)[1], "all_to_all")  # (send lives until the transfer is done)

    def permute(self, xp: Any, buf: Any, perm: tuple[tuple[int, int], ...]) -> Work:
        """For each pair ``(s, t)`` of ``perm``, rank s's ``buf`` to rank t; a rank no pair
        sends to gets zeros."""
        send = xp.ascontiguousarray(buf)
        out = xp.zeros_like(send)
        self._grouped([(send, t) for s, t in perm if s == self.rank], [(out, s) for s, t in perm if t == self.rank],
                      self._code(send.dtype, "ppermute"))
        return self._queued(lambda: (send, out)[1], "ppermute")

    def split(self, color: int, key: int) -> NCCLGroup:
        """The ranks of this group with the same ``color`` as a group of their own, ordered by
        ``key`` (then by rank), as MPI's ``Comm.Split``; every rank of this group calls it,
        in the same order. The colors and keys travel through this group first; then each
        new group's first rank makes its NCCL id, which travels the same way."""
        mine = np.frombuffer(np.asarray([color, key], np.int64).tobytes(), np.uint8)
        every = self.gather_bytes(mine, "split").copy().view(np.int64)  # (size, 2): each rank's color and key
        members = split_members(every.tolist(), self.rank)
        uid = np.frombuffer(nccl_id_bytes(self.nccl.get_unique_id()), np.uint8) if members[0] == self.rank else \
            np.zeros(NCCL_ID_BYTES, np.uint8)
        ids = self.gather_bytes(uid, "split")
        return NCCLGroup(self.cupy, members.index(self.rank), len(members), nccl_id(bytes(ids[members[0]])),
                         self.timeout)

    def barrier(self) -> Work:
        one = self.cupy.ones(1, np.float32)
        return self.all_reduce(self.cupy, one, "sum")

    def gather_bytes(self, meta: np.ndarray, what: str) -> np.ndarray:
        """Every rank's ``meta`` (a small uint8 array), through the GPU."""
        every = self.all_gather(self.cupy, self.cupy.asarray(meta)).wait()
        return np.asarray(self.cupy.asnumpy(every))

    def abort(self, code: int = 1) -> None:
        self.comm.abort()
        os._exit(code)


def exchange_id(unique_id: bytes | None, rank: int, size: int, timeout: float) -> bytes:
    """Rank 0's NCCL id on every rank, through a TCP rendezvous at ``MASTER_ADDR:MASTER_PORT``
    (PyTorch's environment variables): rank 0 listens and hands the id to each rank that
    connects. Used when the ranks were not started by an MPI launcher."""
    host, port = os.environ.get("MASTER_ADDR", "127.0.0.1"), int(os.environ.get("MASTER_PORT", "29500"))
    deadline = time.monotonic() + timeout
    if rank == 0:
        assert unique_id is not None
        with socket.create_server((host, port), reuse_port=False) as server:
            server.settimeout(timeout)
            for _ in range(size - 1):
                peer, _ = server.accept()
                with peer:
                    peer.sendall(len(unique_id).to_bytes(4, "big") + unique_id)
        return unique_id
    while True:
        try:
            with socket.create_connection((host, port), timeout=max(0.1, deadline - time.monotonic())) as peer:
                n = int.from_bytes(_read(peer, 4), "big")
                return _read(peer, n)
        except OSError as exc:
            if time.monotonic() > deadline:
                raise DistributedTimeoutError(f"init_process_group: rank {rank} found no rank 0 at {host}:{port} "
                                              f"within {timeout:g} s ({exc})") from exc
            time.sleep(0.05)


def _read(peer: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = peer.recv(n - len(data))
        if not chunk:
            raise ConnectionError("the rendezvous closed early")
        data += chunk
    return data
