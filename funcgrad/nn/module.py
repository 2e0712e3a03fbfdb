"""``Module``: a tree of parameters, buffers and submodules (PyTorch's API).

Attribute assignment registers ``Parameter``s, ``Module``s and buffers (see
``register_buffer``); ``state_dict`` keys are dotted paths, as in PyTorch.
Modules are pytrees too (their parameters are the leaves), so
``fg.grad(loss)(model, x)`` returns a module-shaped gradient, and
``functional_call(module, params, *args)`` runs a module with other arrays
(tracers included) in place of its parameters.
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

from .. import tree as _tree
from ..array import Array, ArrayBase
from ..backends import random_state as random_state
from ..dtypes import DType, as_dtype
from ..errors import ArgumentTypeError, ArgumentValueError, ShapeError
from ..ops import asarray, zeros_like
from ..random import key_data
from ..transforms.autodiff.function import Function
from ..transforms.compiler.jit import compile as _compile
from .parameter import Parameter

__all__ = ["Module", "functional_call", "CompiledModule", "buffers_collected", "RemovableHandle"]

# Set while a compiled module traces its forward pass: its buffers' new values are outputs
# of the program, so a layer may store traced values in its buffers (BatchNorm's statistics).
_COLLECTING_BUFFERS: contextvars.ContextVar[bool] = contextvars.ContextVar("funcgrad_buffers", default=False)


def buffers_collected() -> bool:
    """Whether buffer updates are collected as outputs of a compiled module's program."""
    return _COLLECTING_BUFFERS.get()


def _check_name(module: str, method: str, name: Any) -> None:
    if not isinstance(name, str):
        raise ArgumentTypeError(f"{module}.{method}: the name must be a str, got {type(name).__name__} {name!r}")
    if not name or "." in name:
        raise ArgumentValueError(f"{module}.{method}: the name must be non-empty and contain no '.', got {name!r}")


class RemovableHandle:
    """What registering a hook returns (PyTorch's ``torch.utils.hooks.RemovableHandle``):
    ``remove()`` takes the hook away; as a context manager, at the block's end."""

    _ids = itertools.count()

    def __init__(self, store: dict[int, Any]) -> None:
        self.id = next(RemovableHandle._ids)
        self._store = store

    def remove(self) -> None:
        """Take the hook away (again: nothing happens)."""
        self._store.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.remove()


class _BackwardHooks:
    """One call's full backward hooks, as PyTorch runs them: the module's array inputs and
    outputs pass through identity functions (``fg.autograd.Function``); the outputs' one
    keeps the gradients it receives (``grad_output``), the inputs' one hands the hooks the
    gradients with respect to the inputs (``grad_input``) and returns what they return. With
    no input that needs a gradient, the hooks run from the outputs' one, with ``grad_input``
    all ``None``."""

    def __init__(self, module: Module, hooks: list[Callable[..., Any]], args: tuple[Any, ...]) -> None:
        self.module, self.hooks, self.args = module, hooks, args
        self.positions = [i for i, a in enumerate(args) if isinstance(a, ArrayBase)]
        self.grad_output: tuple[Any, ...] = ()
        self.tracked = any(getattr(args[i], "requires_grad", False) for i in self.positions)

    def _run(self, grad_input: tuple[Any, ...]) -> tuple[Any, ...]:
        for hook in self.hooks:
            result = hook(self.module, grad_input, self.grad_output)
            if result is not None:
                result = tuple(result) if isinstance(result, (tuple, list)) else (result,)
                if len(result) != len(grad_input):
                    raise RuntimeError(f"{type(self.module).__name__}: a backward hook returned {len(result)} "
                                       f"gradients for {len(grad_input)} inputs")
                grad_input = result
        return grad_input

    def inputs(self) -> tuple[Any, ...]:
        if not self.tracked:
            return self.args
        state = self

        class Inputs(Function):
            @staticmethod
            def forward(ctx: Any, *xs: Any) -> Any:
                return tuple(x.view_as(x) for x in xs)

            @staticmethod
            def backward(ctx: Any, *grads: Any) -> Any:
                return state._run(grads)

        passed = Inputs.apply(*(self.args[i] for i in self.positions))
        args = list(self.args)
        for i, value in zip(self.positions, passed if isinstance(passed, tuple) else (passed,)):
            args[i] = value
        return tuple(args)

    def outputs(self, out: Any) -> Any:
        leaves, tree = _tree.flatten(out)
        arrays = [k for k, leaf in enumerate(leaves) if isinstance(leaf, ArrayBase) and leaf.requires_grad]
        if not arrays:
            return out
        state = self

        class Outputs(Function):
            @staticmethod
            def forward(ctx: Any, *ys: Any) -> Any:
                return tuple(y.view_as(y) for y in ys)

            @staticmethod
            def backward(ctx: Any, *grads: Any) -> Any:
                state.grad_output = grads
                if not state.tracked:
                    state._run((None,) * len(state.positions))
                return grads

        passed = Outputs.apply(*(leaves[k] for k in arrays))
        for k, value in zip(arrays, passed if isinstance(passed, tuple) else (passed,)):
            leaves[k] = value
        return _tree.unflatten(tree, leaves)


class Module:
    """Base class of layers. Subclasses call ``super().__init__()`` and define ``forward``.

    Example:
        >>> class Affine(fg.nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.w = fg.nn.Parameter(fg.ones(2))
        ...         self.register_buffer("shift", fg.zeros(2))
        ...     def forward(self, x):
        ...         return x * self.w + self.shift
        >>> m = Affine()
        >>> m(fg.asarray([1.0, 2.0])).tolist(), [n for n, _ in m.named_parameters()], list(m.state_dict())
        ([1.0, 2.0], ['w'], ['w', 'shift'])
    """

    training: bool

    def __init__(self) -> None:
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "training", True)

    # -- registration ------------------------------------------------------------
    def __setattr__(self, name: str, value: Any) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError("call super().__init__() in your Module's __init__ before assigning attributes")
        if isinstance(value, Parameter):
            target = "_parameters"
        elif isinstance(value, Module):
            target = "_modules"
        elif name in self.__dict__.get("_buffer_names", ()):
            target = "_buffers"
        else:
            target = None
        for store in ("_parameters", "_buffers", "_modules"):
            if store != target:  # (replacing a member of the same kind keeps its place, as in PyTorch)
                self.__dict__[store].pop(name, None)
        if target is None:
            object.__setattr__(self, name, value)
            _CONFIGURATION_VERSION[0] += 1  # (compiled modules read their modules' settings again)
        else:
            self.__dict__[target][name] = value

    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            if store in d and name in d[store]:
                return d[store][name]
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")

    def __delattr__(self, name: str) -> None:
        for store in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__[store]:
                del self.__dict__[store][name]
                return
        object.__delattr__(self, name)

    def register_buffer(self, name: str, value: Array | None, persistent: bool = True) -> None:
        """A non-parameter array that belongs to the module's state (running stats, masks)."""
        _check_name(type(self).__name__, "register_buffer", name)
        if value is not None and not isinstance(value, ArrayBase):
            raise ArgumentTypeError(f"{type(self).__name__}.register_buffer: cannot register a "
                                    f"{type(value).__name__} as buffer {name!r} (an array or None required)")
        names = self.__dict__.setdefault("_buffer_names", set())
        names.add(name)
        if not persistent:
            self.__dict__.setdefault("_non_persistent", set()).add(name)
        self._buffers[name] = value

    def register_parameter(self, name: str, value: Parameter | None) -> None:
        """Register ``value`` (a Parameter, or None) as the parameter ``name``."""
        _check_name(type(self).__name__, "register_parameter", name)
        if value is not None and not isinstance(value, Parameter):
            raise ArgumentTypeError(f"{type(self).__name__}.register_parameter: cannot register a "
                                    f"{type(value).__name__} as parameter {name!r} (an fg.nn.Parameter or None "
                                    "required: wrap it as fg.nn.Parameter(x))")
        self._parameters[name] = value

    def add_module(self, name: str, module: Module | None) -> None:
        """Register ``module`` (or None) as the submodule ``name``."""
        if module is not None and not isinstance(module, Module):
            kind = "a function" if callable(module) else type(module).__name__
            raise ArgumentTypeError(f"{type(self).__name__}: {name!r} is {kind}, not a Module; wrap a function in a "
                                    "Module subclass (PyTorch refuses it too)")
        self._modules[name] = module

    # -- running -----------------------------------------------------------------
    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """The computation, called by ``module(*args)``: every subclass defines it."""
        raise NotImplementedError(f"{type(self).__name__} does not define forward()")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        d = self.__dict__
        if "_forward_pre_hooks" in d or "_forward_hooks" in d or "_backward_hooks" in d:
            return self._call_with_hooks(args, kwargs)
        return self.forward(*args, **kwargs)

    # -- hooks (PyTorch's) --------------------------------------------------------
    def _hooks(self, kind: str, entry: tuple[Any, ...], prepend: bool) -> RemovableHandle:
        store = self.__dict__.setdefault(kind, OrderedDict())
        handle = RemovableHandle(store)
        store[handle.id] = entry
        if prepend:
            store.move_to_end(handle.id, last=False)
        return handle

    def register_forward_pre_hook(self, hook: Callable[..., Any], *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """``hook(module, args)`` runs before ``forward``, and may return new positional
        arguments (a tuple, or one value); with ``with_kwargs``, ``hook(module, args, kwargs)``
        may return ``(args, kwargs)``. ``prepend`` runs it before the hooks already there.
        Returns a handle whose ``remove()`` takes the hook away."""
        return self._hooks("_forward_pre_hooks", (hook, with_kwargs), prepend)

    def register_forward_hook(self, hook: Callable[..., Any], *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False) -> RemovableHandle:
        """``hook(module, args, output)`` (``hook(module, args, kwargs, output)`` with
        ``with_kwargs``) runs after ``forward``, and may return a new output. With
        ``always_call`` it runs even when ``forward`` raised (with the output ``None``)."""
        return self._hooks("_forward_hooks", (hook, with_kwargs, always_call), prepend)

    def register_full_backward_hook(self, hook: Callable[..., Any], prepend: bool = False) -> RemovableHandle:
        """``hook(module, grad_input, grad_output)`` runs when the gradients with respect to the
        module's array inputs are computed (``grad_input`` holds ``None`` for the others), and
        may return new ``grad_input``: PyTorch's full backward hook, for the tape
        (``loss.backward()``)."""
        return self._hooks("_backward_hooks", (hook,), prepend)

    def _call_with_hooks(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """``forward`` between its pre-hooks and hooks, its array inputs and outputs passed
        through the backward hooks' identity functions when there are any."""
        for hook, with_kwargs in list(self.__dict__.get("_forward_pre_hooks", {}).values()):
            if with_kwargs:
                result = hook(self, args, kwargs)
                if result is not None:
                    if not (isinstance(result, tuple) and len(result) == 2):
                        raise RuntimeError(f"{type(self).__name__}: a forward pre-hook with kwargs must return None "
                                           f"or a tuple (new_args, new_kwargs), got {type(result).__name__}")
                    args, kwargs = tuple(result[0]), dict(result[1])
            else:
                result = hook(self, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)
        post = list(self.__dict__.get("_forward_hooks", {}).values())
        backward = list(self.__dict__.get("_backward_hooks", {}).values())
        try:
            if backward:
                state = _BackwardHooks(self, [h for (h,) in backward], args)
                out = state.outputs(self.forward(*state.inputs(), **kwargs))
            else:
                out = self.forward(*args, **kwargs)
        except BaseException:
            for hook, with_kwargs, always_call in post:
                if always_call:
                    hook(self, args, kwargs, None) if with_kwargs else hook(self, args, None)
            raise
        for hook, with_kwargs, _ in post:
            result = hook(self, args, kwargs, out) if with_kwargs else hook(self, args, out)
            if result is not None:
                out = result
        return out

    def __fg_compile__(self, **options: Any) -> CompiledModule:
        """``fg.compile(model)``: the module with its forward pass compiled."""
        if any(v != () for v in options.values()):
            raise ArgumentValueError(f"compile({type(self).__name__}): static or donated arguments of a module's "
                                     "forward are not supported; compile a function that calls the module instead")
        return CompiledModule(self)

    # -- traversal ---------------------------------------------------------------
    def named_modules(self, prefix: str = "", memo: set[int] | None = None,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Module]]:
        """Every module of the tree, this one first; one reached twice (shared) comes once
        unless ``remove_duplicate=False``, as in PyTorch."""
        if remove_duplicate:
            memo = set() if memo is None else memo
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is not None:
                yield from m.named_modules(f"{prefix}.{name}" if prefix else name, memo, remove_duplicate)

    def modules(self) -> Iterator[Module]:
        """This module and every submodule, each once."""
        return (m for _, m in self.named_modules())

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """The direct submodules with their names."""
        return ((n, m) for n, m in self._modules.items() if m is not None)

    def children(self) -> Iterator[Module]:
        """The direct submodules."""
        return (m for _, m in self.named_children())

    def named_parameters(self, prefix: str = "", recurse: bool = True) -> Iterator[tuple[str, Parameter]]:
        """Every parameter with its dotted name, each once."""
        seen: set[int] = set()
        mods = self.named_modules(prefix) if recurse else iter([(prefix, self)])
        for mod_prefix, m in mods:
            for name, p in m._parameters.items():
                if p is not None and id(p) not in seen:
                    seen.add(id(p))
                    yield (f"{mod_prefix}.{name}" if mod_prefix else name), p

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """Every parameter, each once."""
        return (p for _, p in self.named_parameters(recurse=recurse))

    def named_buffers(self, prefix: str = "", recurse: bool = True) -> Iterator[tuple[str, Array]]:
        """Every buffer with its dotted name."""
        mods = self.named_modules(prefix) if recurse else iter([(prefix, self)])
        for mod_prefix, m in mods:
            for name, b in m._buffers.items():
                if b is not None:
                    yield (f"{mod_prefix}.{name}" if mod_prefix else name), b

    def buffers(self, recurse: bool = True) -> Iterator[Array]:
        """Every buffer."""
        return (b for _, b in self.named_buffers(recurse=recurse))

    def get_submodule(self, target: str) -> Module:
        """The submodule at a dotted path (``"encoder.0"``); ``""`` is this module."""
        module = self
        for i, part in enumerate(target.split(".") if target else []):
            child = module._modules.get(part)
            if child is None:
                walked = ".".join(target.split(".")[:i]) or type(self).__name__
                raise AttributeError(f"get_submodule({target!r}): {walked} has no submodule {part!r}")
            module = child
        return module

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at a dotted path (``"encoder.0.weight"``)."""
        return self._get_entry(target, "_parameters", "parameter")  # type: ignore[no-any-return]

    def get_buffer(self, target: str) -> Array:
        """The buffer at a dotted path (``"bn.running_mean"``)."""
        return self._get_entry(target, "_buffers", "buffer")  # type: ignore[no-any-return]

    def _get_entry(self, target: str, store: str, kind: str) -> Any:
        path, _, name = target.rpartition(".")
        entry = getattr(self.get_submodule(path), store).get(name)
        if entry is None:
            raise AttributeError(f"get_{kind}({target!r}): no {kind} {name!r} there")
        return entry

    # -- state -------------------------------------------------------------------
    def state_dict(self, destination: Any = None, prefix: str = "", keep_vars: bool = False) -> Any:
        """Parameters and persistent buffers by dotted name (``prefix`` before each), into
        ``destination`` if given. Values are detached unless ``keep_vars``."""
        out: Any = OrderedDict() if destination is None else destination
        for mod_prefix, m in self.named_modules():
            skip = m.__dict__.get("_non_persistent", set())
            path = f"{prefix}{mod_prefix}." if mod_prefix else prefix
            for name, p in m._parameters.items():
                if p is not None:
                    out[path + name] = p if keep_vars else p.detach()
            for name, b in m._buffers.items():
                if b is not None and name not in skip:
                    out[path + name] = b
        return out

    def load_state_dict(self, state_dict: dict[str, Any], strict: bool = True) -> tuple[list[str], list[str]]:
        """Copy values in (re-pointing parameters). With ``strict``, any missing key, unexpected
        key or shape mismatch raises one error that lists them all. Returns (missing, unexpected)."""
        if not hasattr(state_dict, "keys") or not hasattr(state_dict, "__getitem__"):
            raise ArgumentTypeError(f"{type(self).__name__}.load_state_dict: expected a dict of arrays (what "
                                    f"state_dict() returns), got {type(state_dict).__name__}")
        for mod_prefix, m in list(self.named_modules()):  # (lazy modules learn their sizes from the checkpoint)
            initialize = getattr(m, "_initialize_from_state", None)
            if initialize is not None:
                initialize(state_dict, f"{mod_prefix}." if mod_prefix else "")
        own = self.state_dict()
        optional = {f"{mod_prefix}.{name}" if mod_prefix else name  # state older checkpoints may lack
                    for mod_prefix, m in self.named_modules() for name in getattr(m, "_optional_state", ())}
        missing = [k for k in own if k not in state_dict and k not in optional]
        unexpected = [k for k in state_dict if k not in own]
        mismatched = [f"{k}: checkpoint {tuple(asarray(state_dict[k]).shape)} vs model {tuple(own[k].shape)}"
                      for k in own if k in state_dict and tuple(asarray(state_dict[k]).shape) != tuple(own[k].shape)]
        if mismatched or (strict and (missing or unexpected)):
            problems = []
            if missing:
                problems.append("missing keys: " + ", ".join(missing))
            if unexpected:
                problems.append("unexpected keys: " + ", ".join(unexpected))
            if mismatched:
                problems.append("shape mismatches: " + "; ".join(mismatched))
            raise (ShapeError if mismatched else KeyError)(
                f"load_state_dict for {type(self).__name__}: " + " | ".join(problems))
        for mod_prefix, m in self.named_modules():
            for name in list(m._parameters):
                key = f"{mod_prefix}.{name}" if mod_prefix else name
                if key in state_dict and m._parameters[name] is not None:
                    value = asarray(state_dict[key], device=m._parameters[name].device)
                    m._parameters[name]._assign(value.astype(m._parameters[name].dtype, copy=False))
            for name in list(m._buffers):
                key = f"{mod_prefix}.{name}" if mod_prefix else name
                if key in state_dict and m._buffers[name] is not None:
                    m._buffers[name] = asarray(state_dict[key], device=m._buffers[name].device)
        return missing, unexpected

    # -- modes, devices, grads -----------------------------------------------------
    def train(self, mode: bool = True) -> Module:
        """Training mode (Dropout drops, BatchNorm uses batch statistics) for this module and its submodules."""
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        _CONFIGURATION_VERSION[0] += 1
        return self

    def eval(self) -> Module:
        """Evaluation mode: ``train(False)``."""
        return self.train(False)

    def to(self, target: Any = None, dtype: Any = None) -> Module:
        """Move parameters and buffers to a device and/or floating dtype (in place, like PyTorch)."""
        wanted = dtype if dtype is not None else target if _is_dtype(target) else None
        if wanted is not None and as_dtype(wanted, op="Module.to").kind not in "fc":
            raise ArgumentTypeError(f"{type(self).__name__}.to: only floating-point and complex dtypes, got "
                                    f"{as_dtype(wanted, op='Module.to')} (as in PyTorch)")
        for m in self.modules():
            for p in m._parameters.values():
                if p is not None:
                    moved = p.detach().to(target, dtype) if dtype is not None or target is not None else p
                    if p.dtype.kind == "f" or dtype is None:
                        p._assign(moved)
                    else:
                        p._assign(p.detach().to(target))
            for name, b in list(m._buffers.items()):
                if b is not None:
                    b2 = b.to(target) if target is not None and not _is_dtype(target) else b
                    if (dtype is not None or _is_dtype(target)) and b2.dtype.kind == "f":
                        b2 = b2.astype(dtype if dtype is not None else target)
                    m._buffers[name] = b2
        return self

    # PyTorch's shorthands for ``to``
    def cpu(self) -> Module:
        """The module with its parameters and buffers on the CPU."""
        return self.to("cpu")

    def cuda(self, device: Any = None) -> Module:
        """The module with its parameters and buffers on the GPU."""
        return self.to("gpu" if device is None else f"gpu:{device}" if isinstance(device, int) else device)

    def float(self) -> Module:
        """The module's floating-point parameters and buffers as float32."""
        return self.to(dtype="float32")

    def double(self) -> Module:
        """The module's floating-point parameters and buffers as float64."""
        return self.to(dtype="float64")

    def half(self) -> Module:
        """The module's floating-point parameters and buffers as float16."""
        return self.to(dtype="float16")

    def bfloat16(self) -> Module:
        """The module's floating-point parameters and buffers as bfloat16."""
        return self.to(dtype="bfloat16")

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear the gradients (set them to None)."""
        for p in self.parameters():
            if p.grad is not None:
                p.grad = None if set_to_none else zeros_like(p.grad)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Set whether the parameters require gradients."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def apply(self, fn: Callable[[Module], Any]) -> Module:
        """Call ``fn`` on every submodule and then on this module."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    # -- printing ----------------------------------------------------------------
    def extra_repr(self) -> str:
        """The constructor arguments shown in the module's repr."""
        return ""

    def __repr__(self) -> str:
        lines = []
        for name, m in self._modules.items():
            child = repr(m).replace("\n", "\n  ")
            lines.append(f"({name}): {child}")
        extra = self.extra_repr()
        if not lines:
            return f"{type(self).__name__}({extra})"
        body = "\n  ".join(([extra] if extra else []) + lines)
        return f"{type(self).__name__}(\n  {body}\n)"


def _is_dtype(x: Any) -> bool:
    return isinstance(x, DType) or (isinstance(x, str) and x in ("float16", "bfloat16", "float32", "float64"))


# ---- modules as pytrees: parameters are the leaves --------------------------------

class _ModuleAux:
    """Tree structure of a module: its class and parameter names; compares by that."""

    def __init__(self, module: Module) -> None:
        self.module = module
        self.key = (type(module), tuple(module._parameters), tuple(module._modules))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _ModuleAux) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)


def _flatten_module(m: Module) -> tuple[list[Any], _ModuleAux]:
    return [dict(m._parameters), dict(m._modules)], _ModuleAux(m)


def _unflatten_module(aux: _ModuleAux, children: list[Any]) -> Module:
    original = aux.module
    new = object.__new__(type(original))
    new.__dict__.update(original.__dict__)
    new.__dict__["_parameters"] = OrderedDict((k, children[0][k]) for k in original._parameters)
    new.__dict__["_modules"] = OrderedDict((k, children[1][k]) for k in original._modules)
    new.__dict__["_buffers"] = OrderedDict(original._buffers)
    return new


def _register_subclass(cls: type) -> None:
    _tree.register(cls, _flatten_module, _unflatten_module)


def _init_subclass(cls: type, **kwargs: Any) -> None:
    _register_subclass(cls)


Module.__init_subclass__ = classmethod(_init_subclass)  # type: ignore[assignment]
_register_subclass(Module)


@contextlib.contextmanager
def _swapped(module: Module, params: dict[str, Any]) -> Iterator[None]:
    saved: list[tuple[Module, str, str, Any]] = []
    modules = dict(module.named_modules())
    try:
        for key, value in params.items():
            owner_name, _, attr = key.rpartition(".")
            owner = modules.get(owner_name)
            if owner is None:
                raise KeyError(f"functional_call: no submodule {owner_name!r} for key {key!r}")
            store = "_parameters" if attr in owner._parameters else "_buffers" if attr in owner._buffers else None
            if store is None:
                raise KeyError(f"functional_call: {type(owner).__name__} has no parameter or buffer {attr!r}")
            saved.append((owner, store, attr, owner.__dict__[store][attr]))
            owner.__dict__[store][attr] = value
        yield
    finally:
        for owner, store, attr, old in reversed(saved):
            owner.__dict__[store][attr] = old


def functional_call(module: Module, params: dict[str, Any], *args: Any, rng: Any = None, **kwargs: Any) -> Any:
    """Run ``module(*args)`` with ``params`` (dotted names -> arrays, tracers included) in place of
    its parameters and buffers; the module itself is unchanged afterwards. ``rng``: a key
    (``fg.random.key``) that the call's random layers (``Dropout``) draw from instead of the
    default generator, which it leaves as it was: the functional style's explicit randomness.

    Example:
        >>> m = fg.nn.Linear(2, 1, bias=False)
        >>> fg.nn.functional_call(m, {"weight": fg.asarray([[2.0, 3.0]])}, fg.ones((1, 2))).tolist()
        [[5.0]]
    """
    if not isinstance(params, dict):
        params = dict(params)
    for k, v in params.items():
        if not isinstance(v, ArrayBase):
            raise TypeError(f"functional_call: value for {k!r} is a {type(v).__name__}, not an array")
    previous = random_state.default_key()
    if rng is not None:
        random_state.set_default_key(key_data(rng))
    try:
        with _swapped(module, params):
            return module(*args, **kwargs)
    finally:
        random_state.set_default_key(previous)


# Bumped whenever any module's plain attribute (``Dropout.p``, ``training``...) is set: a
# compiled module then reads its modules' settings again, and traces again if they changed.
_CONFIGURATION_VERSION = [0]
_SETTING_TYPES = (bool, int, float, complex, str, type(None))


def _configuration(module: Module) -> tuple[Any, ...]:
    """What a forward pass may read besides arrays: every module's type and its plain
    settings (numbers, strings, flags and tuples of them), the guard of a compiled module
    (as ``torch.compile`` guards the attributes a trace read)."""

    def setting(v: Any) -> bool:
        return isinstance(v, _SETTING_TYPES) or (isinstance(v, tuple) and all(setting(e) for e in v))

    return tuple((name, type(m).__name__, tuple((k, v) for k, v in vars(m).items()
                                               if not k.startswith("_") and setting(v)))
                 for name, m in module.named_modules())


class CompiledModule:
    """``fg.compile(model)``, as ``torch.compile(model)``: called like the module, it runs its
    forward pass as a compiled program. The parameters and buffers are inputs of the program,
    not constants, so an optimizer step takes effect without tracing again; the buffers a
    forward pass updates (BatchNorm's running statistics) are outputs, assigned back after
    each call. Every module's plain settings (``training``, ``Dropout.p``, any number, string
    or flag) are part of the signature, so changing one traces again (``train()`` and
    ``eval()`` trace once each). Every other attribute (``state_dict``, ``parameters``,
    submodules...) is the module's."""

    def __init__(self, module: Module) -> None:
        self._module = module
        self._program = _compile(self._forward, static_argnames=("configuration",))
        self._version, self._configuration = -1, ()

    def _forward(self, state: dict[str, Any], args: tuple[Any, ...], kwargs: dict[str, Any], *,
                 configuration: Any) -> tuple[Any, dict[str, Any]]:
        token = _COLLECTING_BUFFERS.set(True)
        try:
            with _swapped(self._module, state):
                out = self._module(*args, **kwargs)
                return out, dict(self._module.named_buffers())
        finally:
            _COLLECTING_BUFFERS.reset(token)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        module = self._module
        if self._version != _CONFIGURATION_VERSION[0]:  # a module's setting changed somewhere: read them again
            self._version, self._configuration = _CONFIGURATION_VERSION[0], _configuration(module)
        buffers = dict(module.named_buffers())
        out, updated = self._program({**dict(module.named_parameters()), **buffers}, args, kwargs,
                                     configuration=self._configuration)
        changed = [(name, value) for name, value in updated.items() if value is not buffers[name]]
        if changed:
            owners = dict(module.named_modules())
            for name, value in changed:  # (a buffer carries no history, as in PyTorch)
                owner, _, attr = name.rpartition(".")
                owners[owner]._buffers[attr] = value.detach()
        return out

    def cache_size(self) -> int:
        return self._program.cache_size()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._module, name)

    def __repr__(self) -> str:
        return f"CompiledModule({self._module!r})"

