"""``Primitive``, the registry, abstract values, and ``bind``.

Every operation funcgrad runs is a ``Primitive`` applied through ``bind``. A
primitive is data: a name, a shape/dtype rule (``abstract_eval`` on abstract
values), one kernel spec that each backend resolves, and slots for the
derivative and batching rules the transforms fill in. ``bind`` hands the primitive
to the current interpreter (a context variable), and when none is active it
evaluates eagerly.

View primitives differ in one way: instead of a kernel they carry a ``view``
rule that maps (shape, strides, offset) to new metadata over the *same* buffer.
Call-like primitives (checkpoint, custom rules) carry an ``impl`` that evaluates
them with further binds. With no interpreter active, the arguments evaluate the
primitive themselves (``arg._evaluate``): arrays run it eagerly (``array.py``), and a
tracer that escaped its transform raises. So nothing here knows which values exist
above this floor, nor which transform is running.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, NamedTuple

from ..backends import cc
from ..backends.device import CPU
from ..dtypes import DType, as_dtype
from ..errors import ArgumentTypeError, DTypeError, FuncgradError, LinAlgError, RegistryError
from .domains import REAL

if TYPE_CHECKING:
    from .ad import VJPRule

__all__ = [
    "Primitive", "ShapedArray", "bind", "current_interpreter", "aval_of",
    "Layout", "fmt_shape", "contiguous_strides", "FRESH", "OPERAND", "ANY", "annotate", "conforms",
]


class ShapedArray:
    """An abstract value: what is known about an array without its data (its shape, dtype
    and device), as a tracer's ``aval`` and a program's variables carry it.

    (A slotted class, not a dataclass: the VJP interpreter makes many of these.)

    ``weak``: a traced value that stands for a Python number (a number passed to
    ``fg.compile``, ``fori_loop``'s index, arithmetic among them): it promotes as the
    number would, taking the dtype of the arrays it meets (JAX's weak types).

    Example:
        >>> a = fg.ShapedArray((2, 3), fg.float32, fg.device("cpu"))
        >>> a, a.str_short()
        (ShapedArray(f32[2,3], cpu), 'f32[2,3]')
    """

    __slots__ = ("shape", "dtype", "device", "weak")

    def __init__(self, shape: tuple[int, ...], dtype: DType, device: Any, weak: bool = False) -> None:
        self.shape = shape
        self.dtype = dtype
        self.device = device
        self.weak = weak

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, ShapedArray) and self.shape == other.shape and self.dtype is other.dtype
                and self.device is other.device and self.weak == other.weak)

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype, self.device, self.weak))

    @property
    def ndim(self) -> int:
        """The number of axes."""
        return len(self.shape)

    @property
    def size(self) -> int:
        """The number of elements."""
        n = 1
        for d in self.shape:
            n *= d
        return n

    def str_short(self) -> str:
        """A short description, as ``f32[3,4]``."""
        return f"{_SHORT.get(self.dtype.name, self.dtype.name)}[{','.join(map(str, self.shape))}]" + \
            ("{weak}" if self.weak else "")

    def __repr__(self) -> str:
        return f"ShapedArray({self.str_short()}, {self.device})"


_SHORT = {"float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16", "int8": "i8",
          "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8", "bool": "bool"}


def fmt_shape(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


class Layout(NamedTuple):
    """Where a view's elements sit in its buffer, in elements (like PyTorch)."""

    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int


# What a primitive's outputs may share memory with (``Primitive.aliases``).
FRESH = "fresh"  # nothing: new memory each time (every kernel; the registry test checks it)
OPERAND = "operand"  # its first input (a view)
ANY = "any"  # any input, any constant it closes over, or memory it keeps (call-like primitives, collectives)


class Primitive:
    """One operation, with every fact about it (JAX's ``Primitive`` and its rule tables in
    one record). Define it in a family module, or your own (``docs/primitives.md``); it
    registers itself, and ``bind`` applies it.

    Attributes:
        name: the name printed in programs and errors.
        abstract_eval: ``(*avals_or_scalars, **params) -> ShapedArray`` (or a
            tuple when ``multiple_results``); raises typed errors on bad input.
        kernel: a function name in the array module (``"add"``) or
            ``f(xp, *arrays, **params)``; each backend resolves it once.
        gpu_kernel: an optional different spec for CuPy.
        view: for view primitives, ``(layout, **params) -> Layout``; no kernel runs.
        native: optionally, for a view primitive, a kernel-style spec making the
            same view of a raw backend array. LoweredFunction programs call it, and so do
            eager views of plain arrays (``view`` is the rule it must agree with:
            transforms, and views the backend declines to make, use the rule).
        impl: for call-like primitives, an eager implementation in terms of other binds.
        differentiable: ``False`` for comparisons, argmax, integer-valued ops...
        effectful: it does something besides computing its results (``fg.debug.callback``),
            so passes keep it even when nothing reads them.
        reads_values: ``False`` where its result depends on its inputs' types and devices
            alone (``full``, ``iota``): constant folding computes a small one without them.
        jvp, vjp: the derivative rules (``primitives.ad``: ``defjvp``, ``defvjp``).
        batch: the batching rule ``vmap`` will fill in.
        c_expr: for an elementwise primitive, its value as a C expression of ``{0}``,
            ``{1}``...: how a fused GPU kernel (``transforms.lower``) computes it.
        domain: the ``Domain`` a differentiable primitive's derivative is checked on.
        aliases: which memory its outputs may share, read by the memory planner of
            lowered programs (``transforms.lower``), which writes in place only into
            memory a program made and nothing else reaches: ``FRESH`` (a kernel: new
            memory, every time), ``OPERAND`` (a view: its first input's memory) or
            ``ANY`` (a call-like primitive, a collective: any input, any constant of the
            programs it runs, or memory it keeps). Derived from the kind unless given.

    The facts other subsystems read (``None`` where a primitive has none):
        autocast: what ``fg.autocast`` does to it: ``"lower"`` (runs in the low dtype: the
            products), ``"float32"`` (runs in float32: sums, exp/log, decompositions) or
            ``"widen"`` (an elementwise primitive: computed in float32, rounded back).
        flops: ``(args, out) -> int``, the floating-point operations of one application
            (``fg.profiler``'s ``with_flops``; primitives with a count are always counted).
        torch_name: PyTorch's name for its backward node, less ``Backward`` (``"Mm"``); the
            default is the name in CamelCase (``reduce_sum`` -> ``ReduceSum``).
        tags: labels policies select by: ``"dot"`` for matrix products (``dots_saveable``),
            ``"sum"``, ``"max"``, ``"min"`` for the reductions a native loop may end with
            (``compiler/native.py``).
        simplify: ``(eqn, ctx) -> atom | Eqn | list[Eqn] | None``, an algebraic identity the
            simplification pass applies (``transforms.passes``): an atom the output equals, a
            cheaper equation, several (the last computing the output), or ``None``. ``ctx``
            answers ``producer(atom)``, ``is_number(atom, v)``, ``same_type(a, b)`` and makes
            ``equation``, ``step`` (an intermediate one) and ``literal``.
        static_view: for a view, ``(params, x_aval, out_aval) -> f(raw) or None``: the view as a
            fixed indexing of a raw CPU array, worked out once when a program is lowered.
        onnx: its ONNX form: an operator name (``"Add"``: one node of the same inputs), or
            ``(graph, inputs, output, eqn) -> None`` emitting nodes through ``graph.node`` and
            ``graph.constant`` (``funcgrad.onnx``); ``None``: no ONNX form.
        label: ``(params) -> str``, the name events and backward nodes show for one
            application (``compiled_call[step]``); the primitive's name if not given.
        arity: (fewest, most) inputs; derived from the shape rule's signature unless given.
        loadable: whether ``load_exported`` may rebuild it from a file (every kernel and view;
            call-like primitives say so themselves, as they run programs a file holds).
        c_kernel: C source of its CPU kernel, for work no C expression describes (PyTorch's
            custom C++ operators): ``void fg_kernel(int64_t lo, int64_t hi, const int64_t *n,
            char **p)`` computing rows ``[lo, hi)`` of the output's first axis (all of them
            for a 0-d output), ``p`` the inputs' data then the output's (C order), ``n`` the
            output's dimensions then each input's. The shape rule must admit only the dtypes
            and ranks the C reads and writes. Built with the system compiler on first
            use and cached on disk (``backends/cc.py``); ``kernel=``, if also given, runs where
            no compiler can be used, which is otherwise a ``NativeBuildError``.
        native_eager: for an elementwise primitive whose C expression gives NumPy's bits, its
            eager kernel for large CPU arrays: ``(*raw) -> array | None``, one native loop
            (``cc.elementwise``), None where it does not apply (the NumPy kernel runs).
            Eager evaluation tries it for results of ``cc.EAGER_MIN`` elements or more.
        updates: for a kernel whose result is one operand with some elements changed
            (``scatter``: operand 0), that operand's index. Its CPU kernel takes ``out=``,
            memory of the result's type to write the result into: the memory planner of
            lowered programs hands it that operand's own buffer where nothing reads it
            again, so the copy is skipped.
        joins: ``{other: joined}``: where one program applies this primitive and ``other``
            to the same operands (``other``'s last ones), with the same parameters,
            ``joined`` computes both in one kernel: its inputs are ``other``'s, its results
            this primitive's then ``other``'s (a loss and its gradient from one pass over
            the logits). The compiler's ``join_siblings`` pass writes it.
        axis_batch: for a collective over a named axis (``fg.lax.psum``...), the batching
            rule ``(args, dims, **params) -> (out, out_dim)`` of the ``vmap`` that binds
            its ``axis_name``: the collective across that batch's members
            (``primitives/axes.py``). Other vmaps apply ``batch``.

    Example:
        >>> add = fg.registry_lookup("add")
        >>> add.name, add.c_expr, add.differentiable, add.aliases
        ('add', '{0} + {1}', True, 'fresh')
    """

    def __init__(
        self,
        name: str,
        abstract_eval: Callable[..., Any] | None,
        *,
        kernel: Any = None,
        gpu_kernel: Any = None,
        view: Callable[..., Layout] | None = None,
        multiple_results: bool = False,
        differentiable: bool = True,
        domain: Any = None,
        impl: Callable[..., Any] | None = None,
        native: Any = None,
        effectful: bool = False,
        reads_values: bool = True,
        aliases: str | None = None,
        c_expr: str | None = None,
        autocast: str | None = None,
        flops: Callable[..., int] | None = None,
        torch_name: str | None = None,
        tags: frozenset[str] = frozenset(),
        simplify: Callable[..., Any] | None = None,
        static_view: Callable[..., Any] | None = None,
        onnx: Any = None,
        label: Callable[..., str] | None = None,
        arity: tuple[int, int] | None = None,
        loadable: bool | None = None,
        c_kernel: str | None = None,
        axis_batch: Callable[..., Any] | None = None,
        updates: int | None = None,
        native_eager: Callable[..., Any] | None = None,
    ) -> None:
        if c_kernel is not None:
            kernel = _c_kernel(self, name, c_kernel, kernel)
        if (kernel is None) + (view is None) + (impl is None) != 2:
            raise ValueError(f"primitive {name!r} needs exactly one of kernel=, view= or impl=")
        if name in REGISTRY:
            raise ValueError(f"primitive {name!r} is already registered")
        self.name = name
        self.abstract_eval = abstract_eval if abstract_eval is not None else _view_abstract_eval(self)
        self.kernel_spec = kernel
        self.gpu_kernel_spec = gpu_kernel
        self.view = view
        self.native_spec = native
        self.impl = impl  # call-like primitives (checkpoint, custom rules): evaluate by calling Python
        self.multiple_results = multiple_results
        self.differentiable = differentiable
        self.effectful = effectful
        self.reads_values = reads_values
        self.domain = domain if domain is not None else (REAL if differentiable else None)
        if aliases is None:
            aliases = OPERAND if view is not None else ANY if impl is not None else FRESH
        if aliases not in (FRESH, OPERAND, ANY):
            raise ValueError(f"primitive {name!r}: aliases must be one of {FRESH!r}, {OPERAND!r}, {ANY!r}")
        self.aliases = aliases
        self.autocast = autocast
        self.flops = flops
        self.torch_name = torch_name
        self.tags = frozenset(tags)
        self.simplify = simplify
        self.static_view = static_view
        self.onnx = onnx
        self.label = label
        self._arity = arity
        self._schema: tuple[dict[str, tuple[Any, bool]], bool] | None = None
        self.loadable = impl is None if loadable is None else loadable
        self.jvp: Any = None  # a callable rule, or an object with one (VJPFromRules, a call-like primitive's)
        self.vjp: VJPRule | None = None  # every reverse-mode rule is a ``VJPRule`` (``primitives.ad``)
        self.batch: Any = None
        self.axis_batch = axis_batch
        self.updates = updates
        self.native_eager = native_eager
        self.joins: dict[Primitive, Primitive] = {}
        self.c_expr = c_expr
        self._kernels: dict[Any, Callable[..., Any]] = {}
        self._natives: dict[Any, Callable[..., Any] | None] = {}
        REGISTRY[name] = self

    def __repr__(self) -> str:
        return self.name

    @property
    def arity(self) -> tuple[int, int]:
        """How many inputs it takes: (fewest, most), from its shape rule's positional
        parameters unless declared (a rule of ``*args`` takes any number)."""
        if self._arity is None:
            self._arity = _arity_of(self.abstract_eval)
        return self._arity

    def params_schema(self) -> dict[str, tuple[Any, bool]]:
        """Its parameters, by name: (annotated type, required), from its shape rule's
        keyword-only parameters (read once); ``{}`` for a rule without readable annotations
        (its own checks stand alone)."""
        return self._signature()[0]

    def _signature(self) -> tuple[dict[str, tuple[Any, bool]], bool]:
        """The schema, and whether the rule also takes parameters it does not name (``**params``)."""
        if self._schema is None:
            self._schema = (_schema_of(self.abstract_eval), _takes_any_params(self.abstract_eval))
        return self._schema

    def check_params(self, params: dict[str, Any]) -> None:
        """Parameters of the declared names and types, none missing: the check a program
        read from a file passes before its shape rules run (they check values' ranges)."""
        schema, open_ended = self._signature()
        if not schema:
            return
        if not open_ended:
            unknown = sorted(set(params) - set(schema))
            if unknown:
                raise ArgumentTypeError(f"{self.name} takes no parameter(s) {unknown}")
        missing = sorted(n for n, (_, required) in schema.items() if required and n not in params)
        if missing:
            raise ArgumentTypeError(f"{self.name} needs the parameter(s) {missing}")
        for name, value in params.items():
            if name in schema and not conforms(value, schema[name][0]):
                raise ArgumentTypeError(f"{self.name}'s parameter {name}={value!r:.60} is not a {schema[name][0]}")

    def describe(self, params: dict[str, Any]) -> str:
        """The name one application shows in profiles and backward nodes."""
        return self.label(params) if self.label is not None else self.name

    def bind(self, *args: Any, **params: Any) -> Any:
        """Apply this primitive to ``args`` (``fg.bind``)."""
        return bind(self, *args, **params)

    def kernel_for(self, device: Any) -> Callable[..., Any]:
        """This primitive's kernel on ``device``'s backend (resolved once, then cached)."""
        try:
            return self._kernels[device]
        except KeyError:
            spec = self.gpu_kernel_spec if (device.kind != "cpu" and self.gpu_kernel_spec) else self.kernel_spec
            fn = self._kernels[device] = device.backend.kernel(spec)
            return fn


    def native_for(self, device: Any) -> Callable[..., Any] | None:
        """A view primitive's ``native`` call on ``device``'s backend, or ``None`` if it has
        none (resolved once, then cached)."""
        try:
            return self._natives[device]
        except KeyError:
            spec = self.native_spec
            fn = self._natives[device] = None if spec is None else device.backend.kernel(spec)
            return fn


def _c_kernel(prim: Primitive, name: str, source: str, fallback: Any) -> Callable[..., Any]:
    """The kernel of a primitive given as C (``Primitive(c_kernel=...)``): the output made by
    the shape rule's shape and dtype, the inputs C-contiguous, the C function built on first
    use; ``fallback`` (a NumPy kernel) where it cannot be built."""
    built: list[int] = []

    def run(xp: Any, *args: Any) -> Any:
        if xp.__name__ != "numpy":
            raise FuncgradError(f"{name}: its C kernel runs on the CPU; give gpu_kernel= for GPU arrays")
        arrays = [xp.ascontiguousarray(a) for a in args]  # (the rule runs first: the C reads only what it admits)
        out_aval = prim.abstract_eval(*(ShapedArray(a.shape, as_dtype(a.dtype), CPU) for a in arrays))
        if not built:
            try:
                built.append(cc.loop_kernel(source))
            except cc.NativeBuildError:
                if fallback is None:
                    raise
                built.append(0)
        if not built[0]:
            return getattr(xp, fallback)(*args) if isinstance(fallback, str) else fallback(xp, *args)
        out = xp.empty(out_aval.shape, out_aval.dtype.np)
        sizes = [*(out.shape or (1,)), *(d for a in arrays for d in a.shape)]
        cc.run(built[0], arrays, [out], sizes)
        return out

    run.__name__ = f"{name}_c_kernel"
    return run


REGISTRY: dict[str, Primitive] = {}


# the facts a family module may set by name (``annotate``)
ANNOTATABLE = frozenset({"c_expr", "autocast", "flops", "torch_name", "tags", "simplify", "static_view", "onnx",
                         "label", "native_eager"})


def annotate(field: str, values: dict[str, Any]) -> None:
    """Set one fact of several primitives by name (a family module's table: its C
    expressions, its autocast policy). A name no primitive has, or a field ``Primitive``
    does not declare, fails at import, so a table cannot drift from the registry."""
    if field not in ANNOTATABLE:
        raise RegistryError(f"annotate: Primitive has no field {field!r}")
    unknown = sorted(set(values) - set(REGISTRY))
    if unknown:
        raise RegistryError(f"annotate({field!r}): no primitive is called {', '.join(unknown)}")
    for name, value in values.items():
        setattr(REGISTRY[name], field, value)


def _arity_of(rule: Callable[..., Any]) -> tuple[int, int]:
    try:
        parameters = inspect.signature(rule).parameters.values()
    except (TypeError, ValueError):
        return 0, 1 << 16
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)]
    if any(p.kind is p.VAR_POSITIONAL for p in positional):
        return sum(p.kind is not p.VAR_POSITIONAL and p.default is p.empty for p in positional), 1 << 16
    return sum(p.default is p.empty for p in positional), len(positional)


def _takes_any_params(rule: Callable[..., Any]) -> bool:
    try:
        return any(p.kind is p.VAR_KEYWORD for p in inspect.signature(rule).parameters.values())
    except (TypeError, ValueError):  # an unreadable rule: it has no schema either
        return False


def _schema_of(rule: Callable[..., Any]) -> dict[str, tuple[Any, bool]]:
    try:
        signature = inspect.signature(rule)
        hints = typing.get_type_hints(rule)
    except Exception:  # a rule without readable annotations: its own checks stand alone
        return {}
    return {p.name: (hints.get(p.name, Any), p.default is p.empty)
            for p in signature.parameters.values() if p.kind is p.KEYWORD_ONLY}


def conforms(value: Any, kind: Any) -> bool:
    """Whether ``value`` is of the annotated type ``kind`` (what shape rules' annotations use)."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if kind is Any:
        return True
    if origin in (typing.Union, types.UnionType):
        return any(conforms(value, a) for a in args)
    if origin is tuple:
        if not isinstance(value, tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(conforms(v, args[0]) for v in value)
        return len(value) == len(args) and all(conforms(v, a) for v, a in zip(value, args))
    if origin is not None:  # list[...], dict[...]: the container's type
        return isinstance(value, origin)
    if kind is type(None):
        return value is None
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, kind) if isinstance(kind, type) else True


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= max(d, 1)
    return tuple(reversed(strides))


def _view_abstract_eval(prim: Primitive) -> Callable[..., ShapedArray]:
    """A view primitive's shape rule is its view rule applied to a contiguous layout."""

    def rule(x: ShapedArray, **params: Any) -> ShapedArray:
        layout = prim.view(Layout(x.shape, contiguous_strides(x.shape), 0), **params)  # type: ignore[misc]
        return ShapedArray(tuple(layout.shape), x.dtype, x.device)  # (a contiguous layout always has the view)

    return rule


# The interpreter that handles ``bind``; ``None`` means evaluate eagerly. The
# transforms (next layers) set it; a context variable keeps it per thread/task.
current_interpreter: ContextVar[Any] = ContextVar("funcgrad_interpreter", default=None)
_get_interpreter = current_interpreter.get


def bind(prim: Primitive, *args: Any, **params: Any) -> Any:
    """Apply ``prim`` to ``args``: the one way every operation runs (JAX's
    ``Primitive.bind``).

    The current interpreter processes it; with none, the first argument that can
    evaluate it does (an array: eager evaluation).

    Args:
        prim: the ``Primitive``.
        *args: its operands (arrays, tracers, Python numbers).
        **params: its parameters.

    Returns:
        Its result (a tuple for a primitive with several).

    Example:
        >>> add = fg.registry_lookup("add")
        >>> fg.bind(add, fg.ones(2), fg.ones(2)).tolist()
        [2.0, 2.0]
        >>> print(fg.make_jaxpr(lambda x: fg.bind(add, x, x))(fg.ones(2)))
        { lambda a:f32[2]; let
            b:f32[2] = add a a
          in (b,) }
    """
    interpreter = _get_interpreter()
    if interpreter is not None:
        return interpreter.process(prim, args, params)
    try:
        evaluate = args[0]._evaluate
    except (AttributeError, IndexError):  # a Python scalar first (``2.0 * x``), or nothing at all
        evaluate = _evaluator(prim, args)
    return evaluate(prim, args, params)


def _evaluator(prim: Primitive, args: tuple[Any, ...]) -> Callable[..., Any]:
    for a in args:
        evaluate = getattr(a, "_evaluate", None)
        if evaluate is not None:
            return evaluate  # type: ignore[no-any-return]
    raise TypeError(f"{prim.name}: no array among its arguments {args!r}")


def layout_kind(x: Any) -> str | None:
    """How a value's elements lie in memory: ``"C"`` (row-major), ``"F"`` (column-major
    only) or ``"strided"``; ``None`` when unknown (a traced value).

    A rule may choose *how* to compute by its inputs' layout (never by their values), so
    that its result is laid out like the input (see ``matmul``'s VJP). Backward plans key on
    the layouts of the arrays they read, and their traced inputs report them here.
    """
    data = getattr(x, "_data", None)
    if data is None:
        return getattr(x, "layout_hint", None)
    flags = data.flags
    return "C" if flags.c_contiguous else "F" if flags.f_contiguous else "strided"


def aval_of(x: Any) -> Any:
    """The abstract value of an argument; Python scalars stay as they are (weak)."""
    data = getattr(x, "_data", None)  # a concrete array's backend array (read here: the recorders' hot path)
    if data is not None:
        return ShapedArray(data.shape, x._dtype, x._device)
    if isinstance(x, (bool, int, float)) or x is None:
        return x
    return x.aval


def explain_failure(prim: Primitive, args: tuple[Any, ...], params: dict[str, Any], exc: Exception) -> Exception:
    """Turn a kernel's exception into a typed error that names the operation."""
    avals = [aval_of(a) for a in args]
    try:
        prim.abstract_eval(*avals, **params)
    except FuncgradError as typed:
        return typed
    except Exception:  # a rule that fails on input its kernel also rejects
        pass
    described = ", ".join(a.str_short() if isinstance(a, ShapedArray) else repr(a) for a in avals)
    if isinstance(exc, OverflowError):  # a Python int too large for the array's dtype
        return DTypeError(f"{prim.name}({described}): {exc}")
    if type(exc).__name__ == "LinAlgError":  # NumPy's or CuPy's: no answer for this matrix
        text = str(exc)
        return LinAlgError(f"{prim.name}({described}): {text[:1].lower() + text[1:]}")
    message = f"{prim.name}({described}): {exc}"
    try:
        return type(exc)(message)
    except Exception:
        return FuncgradError(message)
