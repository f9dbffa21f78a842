"""Layer 1 of the code sandbox: a RestrictedPython compile with our policy.

This is a *first filter*, never the wall: it rejects obviously hostile programs cheaply (verdict
``unsafe``) before any process is forked, and the guards it installs make escapes harder at run
time. The OS process (:mod:`rlvr_gym.verifiers.code.sandbox`) and the out-of-process judge
(:mod:`rlvr_gym.verifiers.code.harness`) still hold when this layer is bypassed; the hostile-corpus tests
run with the policy switched off to prove it.

Policy: RestrictedPython's own rules (no ``_``-prefixed names or attributes, no ``exec``, guarded
item/attribute writes) plus an import allowlist, ``str.format`` that cannot reach attributes
starting with ``_``, and ``eval`` only of restricted code under the same guards.
"""

from __future__ import annotations

import ast
import builtins
import operator as _op
import os
import string
import sys
import types
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from RestrictedPython import compile_restricted_eval, compile_restricted_exec
from RestrictedPython.Guards import (
    full_write_guard,
    guarded_iter_unpack_sequence,
    guarded_unpack_sequence,
    safe_builtins,
    safer_getattr,
)
from RestrictedPython.transformer import RestrictingNodeTransformer

from rlvr_gym.verifiers.code import clock

ALLOWED_IMPORTS: frozenset[str] = frozenset(
    {
        "array", "bisect", "cmath", "collections", "copy", "dataclasses", "datetime", "decimal",
        "enum", "fractions", "functools", "hashlib", "heapq", "itertools", "json", "math",
        "numbers", "operator", "random", "re", "statistics", "string", "sys", "typing",
    }
)  # fmt: skip
"""Top-level modules a submission may import: pure computation, no files, processes or sockets."""

PRELOADED_SUBMODULES: tuple[str, ...] = (
    "collections.abc", "json.decoder", "json.encoder", "encodings.ascii", "encodings.latin_1",
    "encodings.utf_16", "encodings.utf_32", "encodings.idna", "unicodedata",
)  # fmt: skip
"""Imported in the worker too: the sandbox uid may not be able to read the Python install."""

MAX_SOURCE_CHARS = 100_000
"""Longer programs are refused before compiling: the compiler itself is a resource."""

_EVAL_NAME = "restricted_eval"
_SYS_NAMES = (
    "stdin",
    "stdout",
    "stderr",
    "maxsize",
    "setrecursionlimit",
    "getrecursionlimit",
    "exit",
    "argv",
)


@dataclass(frozen=True, slots=True)
class PolicyResult:
    """A compiled program, or the reasons the policy refused it (``code`` is then ``None``)."""

    code: types.CodeType | None
    errors: tuple[str, ...] = ()
    syntax_error: bool = False

    @property
    def ok(self) -> bool:
        return self.code is not None


class SubmissionPolicy(RestrictingNodeTransformer):
    """RestrictedPython's transformer plus our import allowlist; two relaxations normal code needs.

    * ``a[i] += 1`` and ``self.n += 1`` are allowed: the target still goes through the
      ``_write_`` guard, and attribute names are still checked here (none starting with ``_``).
    * ``eval(x)`` is allowed as a call to a restricted eval (same policy, same guards).
    """

    def _check_module(self, node: ast.AST, module: str | None) -> None:
        top = (module or "").split(".")[0]
        if top not in ALLOWED_IMPORTS:
            self.error(
                node, f"import of {module!r} is not allowed (allowed: {', '.join(sorted(ALLOWED_IMPORTS))})"
            )

    def visit_Import(self, node: ast.Import) -> Any:
        for alias in node.names:
            self._check_module(node, alias.name)
        return super().visit_Import(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> Any:
        if node.level:
            self.error(node, "relative imports are not allowed")
        self._check_module(node, node.module)
        return super().visit_ImportFrom(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> Any:
        if isinstance(node.target, ast.Subscript | ast.Attribute):
            return self.node_contents_visit(node)  # the target becomes _write_(x)[i] / _write_(x).name
        return super().visit_AugAssign(node)

    def visit_Call(self, node: ast.Call) -> Any:
        if isinstance(node.func, ast.Name) and node.func.id == "eval":
            node.func = ast.copy_location(ast.Name(_EVAL_NAME, ast.Load()), node.func)
        return super().visit_Call(node)


def compile_submission(source: str, filename: str = "<submission>") -> PolicyResult:
    """Compile ``source`` under the policy. Never raises on model text (deep nesting included)."""
    if len(source) > MAX_SOURCE_CHARS:
        return PolicyResult(None, (f"program has {len(source)} characters; the limit is {MAX_SOURCE_CHARS}",))
    if "\x00" in source:
        return PolicyResult(None, ("program contains a NUL byte",))
    try:
        tree = ast.parse(source, filename)
    except SyntaxError as exc:
        return PolicyResult(None, (f"SyntaxError: {exc}",), syntax_error=True)
    except (RecursionError, MemoryError, ValueError, OverflowError) as exc:  # parser limits
        return PolicyResult(None, (f"the parser gave up: {type(exc).__name__}: {exc}",))
    try:
        result = compile_restricted_exec(tree, filename, policy=SubmissionPolicy)
    except SyntaxError as exc:  # what only the compiler checks (``*0``: a starred expression alone)
        return PolicyResult(None, (f"SyntaxError: {exc}",), syntax_error=True)
    except (RecursionError, MemoryError, ValueError, OverflowError) as exc:  # compiler limits
        return PolicyResult(None, (f"the compiler gave up: {type(exc).__name__}: {exc}",))
    if result.errors or result.code is None:
        return PolicyResult(None, tuple(result.errors) or ("does not compile",))
    return PolicyResult(result.code)


PRELOAD_ENV = "RLVR_GYM_SANDBOX_PRELOAD"
"""Comma-separated extra modules the workers import before their walls go up (say ``numpy``
for tasks whose tests use it): installed packages are otherwise invisible in the sandbox, all but
those the worker itself loaded."""


def preload_modules() -> list[str]:
    """Import every allowed module in the (trusted) worker, before any fork, and the extra ones
    named in :data:`PRELOAD_ENV`.

    A submission's ``import`` then never touches the file system, which the sandbox uid may not
    be allowed to read (here Python lives under ``/root``), and costs nothing per submission.
    Returns the modules that failed to import.
    """
    missing = []
    extra = [name.strip() for name in os.environ.get(PRELOAD_ENV, "").split(",") if name.strip()]
    for name in (*sorted(ALLOWED_IMPORTS), *PRELOADED_SUBMODULES, *extra):
        try:
            __import__(name)
        except Exception:  # noqa: BLE001 - an extra module broken at import: reported, not fatal
            missing.append(name)
    try:
        clock.datetime_module()
    except ImportError:
        missing.append("datetime (pure Python, the policy's clock)")
    return missing


# ----- run-time guards (installed in the sandboxed process) -----------------------------------------


class _SafeFormatter(string.Formatter):
    """``str.format`` whose fields may not name attributes or keys starting with ``_``."""

    def get_field(self, field_name: str, args: Any, kwargs: Any) -> Any:
        for part in field_name.replace("[", ".").replace("]", "").split(".")[1:]:
            if part.startswith("_"):
                raise AttributeError(f"format field {field_name!r} reaches a private attribute")
        return super().get_field(field_name, args, kwargs)


_FORMATTER = _SafeFormatter()


_MISSING = object()


def guarded_getattr(obj: Any, name: str, *default: Any) -> Any:
    """RestrictedPython's ``safer_getattr`` with Python's semantics for missing attributes
    (``AttributeError`` unless a default is given), and a ``str.format`` that uses a safe formatter."""
    if isinstance(obj, str) and name == "format":
        return lambda *a, **k: _FORMATTER.vformat(obj, a, k)
    if isinstance(obj, str) and name == "format_map":
        return lambda mapping: _FORMATTER.vformat(obj, (), mapping)
    value = safer_getattr(obj, name, _MISSING)
    if value is _MISSING:
        if default:
            return default[0]
        raise AttributeError(f"{type(obj).__name__!r} object has no attribute {name!r}")
    return value


_PROGRAM_MODULES = frozenset({"submission", "__main__"})


def guarded_write(obj: Any) -> Any:
    """``_write_``: RestrictedPython's full write guard, except that instances of classes the
    program defined itself may have attributes set (``self.x = 1``), as ordinary Python needs.
    Modules, builtins and library objects stay read-only."""
    cls = type(obj)
    if getattr(cls, "__module__", None) in _PROGRAM_MODULES and not isinstance(obj, type):
        return obj
    return full_write_guard(obj)


def _guarded_getitem(obj: Any, key: Any) -> Any:
    return obj[key]


def _inplacevar(op: str, x: Any, y: Any) -> Any:
    return _INPLACE[op](x, y)


_INPLACE = {
    "+=": _op.iadd, "-=": _op.isub, "*=": _op.imul, "/=": _op.itruediv, "//=": _op.ifloordiv,
    "%=": _op.imod, "**=": _op.ipow, "<<=": _op.ilshift, ">>=": _op.irshift, "&=": _op.iand,
    "|=": _op.ior, "^=": _op.ixor, "@=": _op.imatmul,
}  # fmt: skip


class _Printer:
    """RestrictedPython's ``print`` hook that writes to ``sys.stdout`` like the real ``print``."""

    def __init__(self, _getattr: Any = None) -> None:
        pass

    def _call_print(self, *objects: Any, **kwargs: Any) -> None:
        print(*objects, **kwargs)

    def __call__(self) -> str:
        return ""


def _restricted_sys() -> types.SimpleNamespace:
    return types.SimpleNamespace(**{name: getattr(sys, name) for name in _SYS_NAMES}, modules={})


HIDDEN_NAMES: Mapping[str, frozenset[str]] = {
    # these take attribute names as strings, past the attribute guard
    "operator": frozenset({"attrgetter", "methodcaller"}),
    # these evaluate annotation strings with a plain, unguarded eval
    "typing": frozenset({"get_type_hints", "ForwardRef"}),
    "functools": frozenset({"singledispatch", "singledispatchmethod"}),
}
"""Names an allowed module does not show a submission, because they open a way around the guards."""


def _module_view(name: str) -> types.SimpleNamespace:
    """The public names of module ``name``, less its :data:`HIDDEN_NAMES`."""
    module = sys.modules[name] if name in sys.modules else __import__(name)
    hidden = HIDDEN_NAMES[name]
    return types.SimpleNamespace(
        **{k: v for k, v in vars(module).items() if not k.startswith("_") and k not in hidden}
    )


def _guarded_import(
    name: str, globs: Any = None, locs: Any = None, fromlist: Any = (), level: int = 0
) -> Any:
    """``__import__`` for submissions: the allowlist again, at run time, a pared-down ``sys``,
    and views of modules with :data:`HIDDEN_NAMES`."""
    if level or name.split(".")[0] not in ALLOWED_IMPORTS:
        raise ImportError(f"import of {name!r} is not allowed")
    if name == "sys":
        return _restricted_sys()
    if name == "datetime":  # its clock shows elapsed time only (see .clock)
        return clock.datetime_module()
    if name in HIDDEN_NAMES:
        return _module_view(name)
    return __import__(name, globs, locs, fromlist, level)


_EXTRA_BUILTINS = (
    "all", "any", "bin", "bytearray", "bytes", "dict", "enumerate", "filter", "format", "frozenset",
    "input", "iter", "list", "map", "max", "min", "next", "object", "print", "reversed", "set",
    "sorted", "sum", "super", "tuple", "type", "zip", "hasattr", "StopIteration", "ArithmeticError",
    "RecursionError", "NotImplemented", "staticmethod", "classmethod", "property", "ascii",
)  # fmt: skip


def _builtins_table() -> dict[str, Any]:
    table = dict(safe_builtins)
    for builtin in _EXTRA_BUILTINS:
        table[builtin] = getattr(builtins, builtin)
    table["getattr"] = guarded_getattr
    table["__import__"] = _guarded_import
    return table


def restricted_globals(name: str = "__main__") -> dict[str, Any]:
    """Fresh globals for running a policy-compiled program: safe builtins and the guards."""
    table = dict(_BUILTINS)
    globals_: dict[str, Any] = {
        "__builtins__": table,
        "__name__": name,
        "__metaclass__": type,
        "_getattr_": guarded_getattr,
        "_getitem_": _guarded_getitem,
        "_getiter_": iter,
        "_write_": guarded_write,
        "_inplacevar_": _inplacevar,
        "_print_": _Printer,
        "_iter_unpack_sequence_": guarded_iter_unpack_sequence,
        "_unpack_sequence_": guarded_unpack_sequence,
        "_apply_": lambda f, *a, **k: f(*a, **k),
    }

    def eval_restricted(
        expression: str, _globals: Mapping[str, Any] | None = None, _locals: Mapping[str, Any] | None = None
    ) -> Any:
        # The submission's own globals/locals are ignored on purpose: it gets the guarded ones.
        result = compile_restricted_eval(expression, "<eval>", policy=SubmissionPolicy)
        if result.errors or result.code is None:
            raise SyntaxError("; ".join(result.errors) or "eval of this expression is not allowed")
        return eval(result.code, globals_)  # restricted code, under the same guards

    globals_[_EVAL_NAME] = eval_restricted
    return globals_


_BUILTINS = _builtins_table()
_PREPARED: dict[str, dict[str, Any]] = {}


def prepare_globals(*names: str) -> None:
    """Build restricted globals once in the worker, for forked children to take as they are."""
    for name in names:
        _PREPARED[name] = restricted_globals(name)


def prepared_globals(name: str) -> dict[str, Any]:
    """Globals for a program in a forked child: the worker's prepared dict on first use, else fresh.

    The child is a throw-away copy of the worker, so what a program does to the prepared dict
    never reaches the worker or the next child; taking it instead of building one saves the
    page faults of touching every builtin after ``fork``.
    """
    return _PREPARED.pop(name, None) or restricted_globals(name)


def plain_globals(name: str = "__main__") -> dict[str, Any]:
    """Globals for running a program compiled *without* the policy (tests of the deeper layers)."""
    return {"__name__": name, "__builtins__": builtins}


def compile_plain(source: str, filename: str = "<submission>") -> PolicyResult:
    """Compile without any policy: only for proving the OS layers hold on their own."""
    try:
        return PolicyResult(compile(source, filename, "exec"))
    except SyntaxError as exc:
        return PolicyResult(None, (f"SyntaxError: {exc}",), syntax_error=True)
    except (RecursionError, MemoryError, ValueError, OverflowError) as exc:
        return PolicyResult(None, (f"{type(exc).__name__}: {exc}",))


__all__ = [
    "ALLOWED_IMPORTS",
    "PolicyResult",
    "SubmissionPolicy",
    "compile_plain",
    "compile_submission",
    "restricted_globals",
]
