"""``fg.compile`` (alias ``fg.jit``): trace a function once per signature, optimise the
program, and run its generated code.

A call's *signature* is what the program depends on besides the values in its arrays: the
pytree structure of the arguments, each array's shape, dtype and device, and the static
values (static arguments, hashed by value, and Python scalars: a number is part of the
program, as a literal). A new signature traces ``f`` into a ``Program``, runs the passes
(``compiler.optimize``) and keeps it in the function's cache. Each call then binds one
call-like primitive, ``compiled_call`` (``call.py``), holding that program, so a
compiled function composes as a primitive does:

* with no transform around it, its ``impl`` runs the lowered program (one generated Python
  function of kernel calls, built on first use);
* under ``fg.trace`` or an enclosing ``compile`` it is one equation with a nested program;
* its JVP and VJP differentiate the program (``grad(compile(f))``, ``loss.backward()``
  through it, and higher orders).

Arrays ``f`` closes over that may change or carry derivatives (a ``Parameter``, an array
that requires grad, an enclosing transform's value) are inputs of the program, so an
optimizer step is seen without retracing and gradients reach them; other arrays it closes
over are constants, which the passes may fold.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ... import tree as _tree
from ...array import Array, ArrayBase, wrap_kernel_output
from ...backends import random_state as random_state
from ...config import config
from ...dtypes import PYTHON_DTYPES
from ...dtypes import PYTHON_SCALARS as _SCALARS
from ...errors import ArgumentTypeError, ArgumentValueError, DonatedArrayError, RetraceError
from ...ops import asarray
from ...primitives.core import ShapedArray, current_interpreter
from ...primitives.core import bind as _bind
from ..autocast import autocast_like, autocast_state
from ..autodiff.api import as_array
from ..core import USER_TRANSFORM, Tracer
from ..ir import Program, ProgramCache, lift_consts, make_program
from ..observe import observer
from .call import compiled_call_p, lowered_program
from .lower import lower, wrap_outputs
from .pipeline import optimize

__all__ = ["compile", "jit", "Compiled"]

RETRACE_WARNING_AFTER = 8  # traces of one function before a warning says what keeps changing
MAX_SIGNATURES = 64  # programs kept per compiled function (the least recently used goes first)

# ---- signatures --------------------------------------------------------------------------



def _describe(leaf: Any) -> Any:
    """What a dynamic leaf contributes to the signature."""
    if isinstance(leaf, ArrayBase):
        return (leaf.shape, leaf.dtype, leaf.device)
    if isinstance(leaf, _SCALARS) or leaf is None:
        return (type(leaf), leaf)  # a Python number is a literal of the program
    return ("static", _hashed("compile", f"a {type(leaf).__name__} among the arguments", leaf))


def _array_leaves(args: tuple[Any, ...]) -> tuple[Any, Any]:
    """The arrays of a call whose arguments are arrays and lists or tuples of arrays (a
    model's parameters, a batch), in pytree order, and the key's part for the structure;
    ``(None, None)`` for any other call (it takes the general path, through ``tree``)."""
    leaves: list[Array] = []
    structure: list[Any] = []
    for a in args:
        cls = a.__class__
        if cls is Array:
            leaves.append(a)
            structure.append(None)
        elif cls is list or cls is tuple:
            for b in a:
                if b.__class__ is not Array:
                    return None, None
            leaves.extend(a)
            structure.append((cls, len(a)))
        else:
            return None, None
    return leaves, tuple(structure)


def _show(part: Any) -> str:
    if isinstance(part, tuple) and len(part) == 3 and isinstance(part[0], tuple):
        return ShapedArray(part[0], part[1], part[2]).str_short()
    return repr(part[1]) if isinstance(part, tuple) and len(part) == 2 else repr(part)


class _Entry:
    """One traced signature: the optimised program, the traced one, and the closed-over
    values passed in as its first inputs."""

    def __init__(self, traced: Program, program: Program, lifted: list[Any], out_tree: Any, cacheable: bool,
                 keyed: bool) -> None:
        self.traced, self.program, self.lifted, self.out_tree = traced, program, lifted, out_tree
        self.cacheable = cacheable
        self.keyed = keyed  # it draws from the default generator: its key is the input after the lifted values
        # its lowered program, for calls on plain arrays with nothing around them (``direct``)
        self.lowered: Any = None
        self.direct = not keyed and not lifted and bool(program.invars)
        self.one_output = out_tree is not None and out_tree.node_type is None  # (a single array returned)
        self.one_new = False  # one new array out: once lowered, the quickest path (__call__)


def _thread_key(traced: Program) -> tuple[Program, bool, Any]:
    """A program traced with the default generator's key as its first input and the key's
    new value as its last output: as it is if it drew from the generator, else without
    both. Also whether it did, and its own outputs' tree."""
    key_in, key_out = traced.invars[0], traced.outvars[-1]
    user_tree = traced.out_tree.children[0]
    if key_out is key_in:  # untouched: nothing to thread
        return Program(traced.invars[1:], traced.constvars, traced.consts, traced.eqns, traced.outvars[:-1],
                       None, user_tree), False, user_tree
    return traced, True, user_tree


def _lifted(x: Any) -> bool:
    """A closed-over value that must be an input: it may change (a Parameter), carries a
    derivative (requires grad), or is an enclosing transform's value."""
    return x.__class__ is not Array or x._autograd is not None  # (a tracer or a Parameter is not an Array)


class Compiled:
    """What ``fg.compile(f)`` returns: call it like ``f``."""

    __name__: str  # (``f``'s, with its other attributes: ``functools.update_wrapper``)

    def __init__(self, fun: Callable[..., Any], static_argnums: Sequence[int] = (),
                 static_argnames: Sequence[str] = (), donate_argnums: Sequence[int] = (),
                 donate_argnames: Sequence[str] = ()) -> None:
        if not callable(fun):
            raise ArgumentTypeError(f"compile: expected a callable, got {type(fun).__name__}")
        functools.update_wrapper(self, fun)
        if not hasattr(self, "__name__"):  # (a functools.partial, a callable object: no __name__ to copy)
            self.__name__ = getattr(fun, "__name__", None) or getattr(getattr(fun, "func", None), "__name__", None) \
                or type(fun).__name__
        self.fun = fun
        self.static_argnums = _as_tuple("static_argnums", static_argnums, int)
        self.static_argnames = _as_tuple("static_argnames", static_argnames, str)
        self.donate_argnums = _as_tuple("donate_argnums", donate_argnums, int)
        self.donate_argnames = _as_tuple("donate_argnames", donate_argnames, str)
        both = set(self.static_argnums) & set(self.donate_argnums) or set(self.static_argnames) & set(
            self.donate_argnames)
        if both:
            raise ArgumentValueError(f"compile({self.__name__}): argument {sorted(both)[0]!r} is both static and "
                                     "donated; only arrays (traced arguments) can be donated")
        self._check_static_names()
        self._cache = ProgramCache(self.__name__, MAX_SIGNATURES)
        self._traces = 0
        self._last_signature: Any = None
        self._flat: dict[Any, _Entry] = {}  # the entries of calls with arrays alone, by their types
        self._plain = not (self.static_argnums or self.donate_argnums or self.donate_argnames)  # (nothing static)

    def _check_static_names(self) -> None:
        try:
            params = inspect.signature(self.fun).parameters
        except (TypeError, ValueError):
            return
        positional = [p for p in params.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        has_varargs = any(p.kind is p.VAR_POSITIONAL for p in params.values())
        for what, nums in (("static_argnums", self.static_argnums), ("donate_argnums", self.donate_argnums)):
            for n in nums:
                if not has_varargs and not -len(positional) <= n < len(positional):
                    raise ArgumentValueError(f"compile({self.__name__}): {what}={n} is out of range for a "
                                             f"function of {len(positional)} positional argument(s)")
        names = set(params)
        for what, given in (("static_argnames", self.static_argnames), ("donate_argnames", self.donate_argnames)):
            for name in given:
                if name not in names and not any(p.kind is p.VAR_KEYWORD for p in params.values()):
                    raise ArgumentValueError(f"compile({self.__name__}): {what} names {name!r}, which is not a "
                                             f"parameter of {self.__name__}{inspect.signature(self.fun)}")

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        if obj is None:
            return self
        return functools.partial(self, obj)

    def _split(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any, list[Any]]:
        """(static part, dynamic structure, dynamic leaves)."""
        nums = {n % len(args) for n in self.static_argnums if -len(args) <= n < len(args)}
        static = []
        for n in sorted(nums):
            static.append((n, _hashed(self.__name__, f"argument {n}", args[n])))
        for k in sorted(kwargs):
            if k in self.static_argnames:
                static.append((k, _hashed(self.__name__, f"argument {k!r}", kwargs[k])))
        dynamic_args = tuple(None if i in nums else a for i, a in enumerate(args))
        dynamic_kwargs = {k: v for k, v in kwargs.items() if k not in self.static_argnames}
        leaves, structure = _tree.flatten((dynamic_args, dynamic_kwargs))
        return tuple(static), structure, leaves

    def _donated_leaves(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[bool]:
        """Per dynamic leaf (in ``_split``'s order), whether its argument is donated."""
        nums = {n % len(args) for n in self.donate_argnums if -len(args) <= n < len(args)}
        static = {n % len(args) for n in self.static_argnums if -len(args) <= n < len(args)}
        mask = [i in nums for i, a in enumerate(args) if i not in static for _ in _tree.leaves(a)]
        return mask + [k in self.donate_argnames for k in sorted(kwargs) if k not in self.static_argnames
                       for _ in _tree.leaves(kwargs[k])]

    def _entry(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[_Entry, list[Any], list[Any]]:
        """The entry for this call's signature (traced now if new), its arrays, and its dynamic leaves."""
        static, structure, leaves = self._split(args, kwargs)
        amp = autocast_state()
        if amp is not None:  # (traced inside an autocast block: its casts are part of the program)
            static = (*static, ("autocast", amp))
        arrays = [as_array(x) if _is_array_like(x) else x for x in leaves]
        device = next((a.device for a in arrays if isinstance(a, ArrayBase)), None)
        weak = frozenset(i for i, x in enumerate(leaves) if _weak_number(x))
        arrays = [_weak_input(x, device) if i in weak else x for i, x in enumerate(arrays)]
        signature = (static, structure, tuple(("weak", type(leaves[i]).__name__) if i in weak else _describe(x)
                                              for i, x in enumerate(arrays)))
        entry = self._cache.get(signature)
        if entry is ProgramCache.MISSING:
            if config.no_retrace and self._last_signature is not None:
                raise RetraceError(f"fg.compile({self.__name__}) would trace again (fg.config.no_retrace is set): "
                                   f"{_changes(self._last_signature, signature)}")
            entry = self._trace(args, kwargs, static, structure, arrays, weak)
            self._explain(signature)
            if entry.cacheable:
                self._cache.put(signature, entry)
        return entry, [x for x in arrays if isinstance(x, ArrayBase)], leaves

    def _trace(self, args: tuple[Any, ...], kwargs: dict[str, Any], static: Any, structure: Any,
               arrays: list[Any], weak: frozenset[int] = frozenset()) -> _Entry:
        positions = [i for i, x in enumerate(arrays) if isinstance(x, ArrayBase)]
        nums = {n for n, _ in static if isinstance(n, int)}
        amp = dict(static).get("autocast")

        # The default generator's key: an input, and its new value an output (dropped below
        # where the function draws nothing). Outside ``functional_call(rng=)`` there is none:
        # each call then passes a fresh key made from the generator's words, on the device of
        # its first array (so that draws meet the arrays there).
        previous = random_state.default_key()
        key = previous if previous is not None else \
            asarray(np.zeros(2, np.uint32), device=_key_device([arrays[i] for i in positions]))

        def flat_fun(key: Any, *dynamic: Any) -> Any:
            random_state.set_default_key(key)
            leaves = list(arrays)
            for i, d in zip(positions, dynamic):
                leaves[i] = d
            dyn_args, dyn_kwargs = _tree.unflatten(structure, leaves)
            full = [args[i] if i in nums else a for i, a in enumerate(dyn_args)]
            with autocast_like(amp):
                out = self.fun(*full, **{**dyn_kwargs, **{k: kwargs[k] for k in kwargs if k in self.static_argnames}})
            out = _tree.map(lambda o: asarray(o) if isinstance(o, _SCALARS) else o, out)  # numbers: as arrays
            return out, random_state.default_key()

        inputs = [key] + [arrays[i] for i in positions]
        avals = [key.aval] + [ShapedArray((), arrays[i].dtype, arrays[i].device, weak=True) if i in weak
                                      else arrays[i].aval for i in positions]
        token = USER_TRANSFORM.set("compile")  # errors while tracing name fg.compile
        try:
            traced, _ = make_program(flat_fun, avals, _tree.flatten(tuple(inputs))[1])
        finally:
            USER_TRANSFORM.reset(token)
            random_state.set_default_key(previous)
        traced, keyed, out_tree = _thread_key(traced)
        opened, lifted = lift_consts(traced, [_lifted(c) for c in traced.consts])
        self._traces += 1
        cacheable = not any(isinstance(c, Tracer) for c in lifted)  # an enclosing transform's value: this call's own
        return _Entry(traced, optimize(opened), lifted, out_tree, cacheable, keyed)

    def _explain(self, signature: Any) -> None:
        previous, self._last_signature = self._last_signature, signature
        if previous is None:
            return
        changes = _changes(previous, signature)
        if config.explain_cache_misses:
            warnings.warn(f"fg.compile({self.__name__}) traced again: {changes}", RuntimeWarning, stacklevel=4)
        if self._traces == RETRACE_WARNING_AFTER:
            warnings.warn(f"fg.compile({self.__name__}) has traced {self._traces} times; the last change: {changes}. "
                          "Each new shape, dtype, pytree structure or static value traces again: pass values that "
                          "change as arrays of one shape, or mark them static only if they take few values.",
                          RuntimeWarning, stacklevel=4)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not kwargs and self._plain:
            # the common call, arrays alone: its signature without flattening a pytree
            key: Any = None
            device: Any = None
            arrays: Any = args  # (the program's inputs: the pytree's leaves, in order)
            if len(args) == 1 and args[0].__class__ is Array:  # (one and two arrays spelled out: the key is
                a = args[0]                                    # most of a small call's cost)
                device, plain = a._device, a._autograd is None
                key = (autocast_state(), a._data.shape, a._data.dtype, device)
            elif len(args) == 2 and args[0].__class__ is Array and args[1].__class__ is Array:
                a, b = args
                device, plain = a._device, a._autograd is None and b._autograd is None and b._device is a._device
                key = (autocast_state(), a._data.shape, a._data.dtype, device, b._data.shape, b._data.dtype,
                       b._device)
            else:
                arrays, structure = _array_leaves(args)
                if arrays is not None:
                    device = arrays[0]._device if arrays else None
                    plain = all(a._autograd is None and a._device is device for a in arrays)
                    key = (autocast_state(), structure, *[(a._data.shape, a._data.dtype, a._device) for a in arrays])
            if key is not None:
                entry = self._flat.get(key)
                if entry is None:
                    entry = self._entry(args, kwargs)[0]
                    if entry.cacheable:
                        if len(self._flat) >= MAX_SIGNATURES:
                            self._flat.clear()
                        self._flat[key] = entry
                if entry.direct and plain and current_interpreter.get() is None and observer.get() is None \
                        and not config.write_guard:
                    if entry.one_new:  # (once lowered: one new array out, the lowered code on the data)
                        return wrap_kernel_output(entry.lowered.fn([a._data for a in arrays], device.stats)[0],
                                                  device)
                    out = self._direct(entry, arrays, device)
                    return out[0] if entry.one_output else _tree.unflatten(entry.out_tree, out)
                return _tree.unflatten(entry.out_tree, self._call_entry(entry, arrays))
        if self.donate_argnums or self.donate_argnames:
            return self._call_donating(args, kwargs)
        entry, dynamic, _ = self._entry(args, kwargs)
        return _tree.unflatten(entry.out_tree, self._call_entry(entry, dynamic))

    def _direct(self, entry: _Entry, args: Sequence[Array], device: Any) -> list[Any]:
        """The call's lowered program run on the arrays' data, as ``compiled_call``'s eager
        evaluation would run it, without the primitive's dispatch (a compiled ``(1,)`` add is
        mostly that), for plain arrays on one device with nothing around the call."""
        lowered = entry.lowered
        if lowered is None:
            lowered = entry.lowered = lowered_program(entry.program, self.__name__)
            entry.one_new = entry.one_output and lowered.all_new
        raw = lowered.fn([a._data for a in args], device.stats)  # (LoweredFunction.run, its checks made above)
        return wrap_outputs(lowered, raw, list(args), device)

    def _call_entry(self, entry: _Entry, dynamic: Any, donated: tuple[int, ...] = ()) -> list[Any]:
        if entry.keyed:  # the default generator's key in (a fresh one unless it has its own), its new value out
            params = {"donated": donated} if donated else {}
            key = random_state.default_key()
            fresh = asarray(random_state.generator().key_data(), device=_key_device(dynamic)) if key is None else None
            outs = list(_bind(compiled_call_p, *entry.lifted, key if fresh is None else fresh, *dynamic,
                              name=self.__name__, program=entry.program, **params))
            new_key = outs.pop()
            if fresh is None:
                random_state.set_default_key(new_key)
            return outs
        if not entry.lifted and not len(dynamic):  # no array in: the program reads constants alone
            return entry.program.eval_flat([])
        params = {"donated": donated} if donated else {}
        return list(_bind(compiled_call_p, *entry.lifted, *dynamic, name=self.__name__, program=entry.program,
                          **params))

    def _call_donating(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """A call whose donated arrays the program may write into, and that are unusable after."""
        entry, dynamic, leaves = self._entry(args, kwargs)
        mask = [m for x, m in zip(leaves, self._donated_leaves(args, kwargs)) if _is_array_like(x) or _weak_number(x)]
        given = [i for i, m in enumerate(mask) if m]
        offset = len(entry.lifted) + entry.keyed  # (the program's inputs: lifted values, the key, the arguments)
        for i in given:
            if any(entry.program.invars[offset + i] is v for v in entry.program.outvars):
                raise ArgumentValueError(f"compile({self.__name__}): donated input {i} is also returned; a donated "
                                         "array is unusable after the call, so return a new array instead")
        if current_interpreter.get() is not None:  # traced: there is no memory to hand over
            given = []
        for i in given:
            x = dynamic[i]
            if x.__class__ is not Array or x._autograd is not None:
                raise ArgumentValueError(f"compile({self.__name__}): donated input {i} is a {type(x).__name__}"
                                         f"{' that requires grad' if x._autograd is not None else ''}; only plain "
                                         "arrays can be donated (a Parameter's memory belongs to its module)")
            if sum(y is x for y in dynamic) > 1:
                raise ArgumentValueError(f"compile({self.__name__}): donated input {i} is passed more than once; "
                                         "a donated array can be used only by that argument")
        outs = self._call_entry(entry, dynamic, tuple(offset + i for i in given))
        for i in given:
            _invalidate(dynamic[i])
        return _tree.unflatten(entry.out_tree, outs)

    def lower(self, *args: Any, **kwargs: Any) -> Lowered:
        """The program this call runs, after the passes (``.traced``: before them)."""
        entry = self._entry(args, kwargs)[0]
        return Lowered(entry.traced, entry.program)

    def cache_size(self) -> int:
        return len(self._cache)

    def clear_cache(self) -> None:
        self._cache.clear()
        self._flat.clear()
        self._last_signature = None

    def __repr__(self) -> str:
        return f"<compiled {self.__name__}>"


class _Donated:
    """What a donated array holds after the call: every use raises."""

    def _raise(self, *args: Any, **kwargs: Any) -> Any:
        raise DonatedArrayError("this array was donated to a compiled call (donate_argnums), which may have written "
                                "its result into its memory; use the call's results instead")

    __getattr__ = __array__ = __len__ = __iter__ = _raise


_DONATED = _Donated()


def _invalidate(x: Array) -> None:
    if x._buf is None:  # it owned its memory: the bytes now belong to the call's results
        x._device.stats.allocated -= x._data.nbytes
    x._buf = _DONATED  # type: ignore[assignment]  # (never None again, so nothing is uncounted twice)
    x._data = _DONATED


class Lowered:
    """``compiled.lower(*args)``: the traced program, the optimised one (what runs), and
    the generated source of the optimised one."""

    def __init__(self, traced: Program, program: Program) -> None:
        self.traced, self.program = traced, program

    @property
    def source(self) -> str:
        return lower(self.program).source

    def __str__(self) -> str:
        return str(self.program)

    __repr__ = __str__


def _weak_number(x: Any) -> bool:
    """A Python number traced as a weakly typed 0-d input (``jax.jit``'s rule): one trace
    serves every value. (An int beyond int64 stays a literal of the program.)"""
    return type(x) in PYTHON_DTYPES and (type(x) is not int or -(1 << 63) <= x < 1 << 63)


def _weak_input(x: Any, device: Any) -> Array:
    """A Python number as the 0-d array the program receives, in 64 bits (Python's precision)."""
    return asarray(x, dtype=PYTHON_DTYPES[type(x)], device=device)


def _is_array_like(x: Any) -> bool:
    return isinstance(x, ArrayBase) or hasattr(x, "__array__") and not isinstance(x, _SCALARS)


def _hashed(name: str, what: str, value: Any) -> Any:
    try:
        hash(value)
    except TypeError:
        raise ArgumentTypeError(f"compile({name}): {what} is static, so it must be hashable (it is part of the cache "
                                f"key), got {type(value).__name__}; pass arrays as regular (traced) arguments, and "
                                "lists as tuples") from None
    return value


def _changes(old: Any, new: Any) -> str:
    """Which part of the signature changed, and how."""
    (s0, t0, d0), (s1, t1, d1) = old, new
    if s0 != s1:
        return f"static arguments {dict(s0)!r} -> {dict(s1)!r}"
    if t0 != t1:
        return f"argument structure {t0!r} -> {t1!r}"
    diffs = [f"leaf {i}: {_show(a)} -> {_show(b)}" for i, (a, b) in enumerate(zip(d0, d1)) if a != b]
    return ", ".join(diffs) or "nothing (the cache dropped this signature)"


def _as_tuple(what: str, value: Any, kind: type) -> tuple[Any, ...]:
    if isinstance(value, kind):
        values: tuple[Any, ...] = (value,)
    elif isinstance(value, (str, bytes)) and kind is not str or not hasattr(value, "__iter__"):
        raise ArgumentTypeError(f"compile: {what} must be {kind.__name__}s, got {value!r}")
    else:
        values = tuple(value)
    for v in values:
        if not isinstance(v, kind) or isinstance(v, bool):
            raise ArgumentTypeError(f"compile: {what} must be {kind.__name__}s, got {v!r}")
    return values


def _key_device(arrays: Sequence[Any]) -> Any:
    """Where a compiled call's fresh key lives: its first array's device (the CPU without one)."""
    return arrays[0].device if len(arrays) else None


def compile(fun: Callable[..., Any] | None = None, *, static_argnums: Sequence[int] | int = (),
            static_argnames: Sequence[str] | str = (), donate_argnums: Sequence[int] | int = (),
            donate_argnames: Sequence[str] | str = ()) -> Any:
    """``f`` traced once per signature (shapes, dtypes, devices, pytree structure, static
    values) into one program, optimized and run natively (``fg.jit`` is the same).

    Used as ``fg.compile(f)``, ``@fg.compile`` or ``@fg.compile(static_argnames=...)``; an
    ``nn.Module`` compiles its ``forward``.

    Args:
        fun: the function (or module).
        static_argnums: positional arguments taken as constants (hashed by value: each
            new value traces again).
        static_argnames: keyword arguments taken as constants.
        donate_argnums: positional arguments whose arrays' memory the call may write its
            results into; the arrays are unusable afterwards.
        donate_argnames: keyword arguments donated so.

    Returns:
        A ``Compiled`` function, called as ``f`` is.

    Example:
        >>> f = fg.compile(lambda x, n: x * n, static_argnums=1)
        >>> f(fg.ones(2), 3).tolist()
        [3.0, 3.0]
    """
    options = dict(static_argnums=static_argnums, static_argnames=static_argnames, donate_argnums=donate_argnums,
                   donate_argnames=donate_argnames)
    if fun is None:
        return lambda f: compile(f, **options)  # type: ignore[arg-type]
    if hasattr(type(fun), "__fg_compile__"):  # an object that compiles itself (an nn.Module)
        return fun.__fg_compile__(**options)  # type: ignore[attr-defined]
    return Compiled(fun, static_argnums, static_argnames, donate_argnums, donate_argnames)  # type: ignore[arg-type]


jit = compile
