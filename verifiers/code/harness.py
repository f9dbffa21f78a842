"""Layer 3 of the code sandbox: the judge, which decides pass/fail outside the submission.

The judge runs in the worker, a process the submission cannot reach (another uid, not
dumpable, no shared memory). It holds the tests and the expected values; the sandbox never sees
them. Test code runs *here*, with every name the tests take from the submission replaced by a
proxy that asks the sandbox over a pipe and gets back plain data (:mod:`rlvr_gym.verifiers.code.codec`).
Hence:

* exiting early (``os._exit(0)``, a killed process) ends the conversation: unanswered tests fail;
* patching ``assert``, ``__eq__``, builtins or "the harness" changes only the sandbox's process,
  not the judge's; an always-equal object is not plain data: it stays in the sandbox and the
  judge holds a handle that equals only itself (:mod:`.remote`);
* the exit code and stdout of the sandbox are never read as a verdict (stdout is data for the
  stdin/stdout test kind, compared here against output the sandbox never saw);
* no outcome shows before the verdict: every answer planned ahead is read in full before any
  test code runs (a judge that read answer i+1 only once assert i held told a submission that
  blocked on a large answer which asserts passed), and where the plan covers every call the
  sandbox is closed before judging begins; calls the plan cannot cover (computed arguments) go
  by round trip, and since test code's asserts record a failure and go on (:func:`_soften`),
  which of them arrive does not follow from which asserts held;
* verdict details name no expected value and no test source unless the env opts in
  (``reveal_tests``): a failing case says which case and what the submission did.

Test kinds (``task["tests"]``): ``assert`` (test code run against the submission's names, e.g.
HumanEval's ``check(candidate)``; ``setup`` is trusted code from the task such as the prompt's
helper functions, whose own free names are the submission's too: MBPP's setups build trees of
the submission's ``Node`` class), ``calls`` (function name, args, expected value per case), ``stdio`` (stdin,
expected stdout per case; the program runs once per case) and ``run`` (one case, a stdin; nothing
is compared: the capped stdout and how the program ended come back as ``output`` — the
``run_python`` tool of :mod:`rlvr_gym.verifiers.code.tool`).
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import functools
import math
import os
import re
import signal
import time
import types
from collections import Counter, deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rlvr_gym.error import (
    InvalidTestsError,  # noqa: F401 - defined with the whole tree
)
from rlvr_gym.verifiers.code.codec import (
    Budget,
    ChannelClosedError,
    CodecError,
    FrameReader,
    dumps,
    encode_value,
    write_all,
)
from rlvr_gym.verifiers.code.remote import Remote

KINDS = ("assert", "calls", "stdio", "run")
FLOAT_REL_TOL = 1e-6
REASON_CHARS = 160
MAX_AHEAD = 256
"""At most this many requests are answered ahead (see :func:`plan_ahead`)."""
JUDGING_GRACE_S = 0.5
"""Time the judge may take on the answers it has once the sandbox is closed (the sandbox's own
budget may be spent by then): trusted test code only, no submission runs."""
_PATH = re.compile(r"(?<![\w)\]])/[^\s'\",:;)\]]+")


def short_reason(text: str, limit: int = REASON_CHARS) -> str:
    """Submission-made text as it may leave the worker: capped, one line, no paths.

    Verdict details end up in rollout logs; what a submission raised or returned is its own
    text, so it is cut short and anything path-like becomes ``<path>``.
    """
    text = _PATH.sub("<path>", text[: limit * 4])
    return "".join(c if c.isprintable() else " " for c in text)[:limit]


class SandboxGone(BaseException):
    """The submission's process stopped answering. A BaseException so test code cannot swallow it."""


class JudgeTimeout(BaseException):
    """The wall-clock budget ran out (raised by the alarm or by a read past the deadline)."""


@dataclass(slots=True)
class Outcome:
    """What the judge found. ``passed``/``total`` count test cases; the score is their ratio."""

    passed: int = 0
    total: int = 0
    timed_out: bool = False
    load_error: str | None = None
    failures: list[str] = field(default_factory=list)
    output: str | None = None  # the ``run`` kind only: what the program printed (capped)
    reveal: bool = False
    """Whether ``secret`` parts (expected values, test code's own messages) go in the details."""

    def fail(self, message: str, secret: str = "") -> None:
        if len(self.failures) < 3:
            self.failures.append(short_reason(f"{message}: {secret}" if secret and self.reveal else message))

    def as_dict(self) -> dict[str, Any]:
        """Plain fields for the outcome frame (``dataclasses.asdict`` deep-copies: slower, same)."""
        return {
            "passed": self.passed,
            "total": self.total,
            "timed_out": self.timed_out,
            "load_error": self.load_error,
            "failures": list(self.failures),
            **({"output": self.output} if self.output is not None else {}),
        }


class Session:
    """The judge's end of the pipe pair to one sandboxed process.

    Reads block without a deadline of their own: :func:`judge` arms a SIGALRM timer for the
    whole budget, which interrupts a read with :class:`JudgeTimeout` (no ``select`` per message).

    ``ahead`` are the requests the sandbox was given at fork (:func:`plan_ahead`) and answers,
    in order, right after loading, without waiting to be asked: a request equal to one of them
    takes its answer from the stream instead of a round trip. The judge still decides everything
    from the plain data it gets back; only the number of process switches changes.
    """

    def __init__(
        self,
        request_fd: int,
        reply_fd: int,
        deadline: float,
        ahead: Sequence[bytes] = (),
        setup: bytes = b"",
        close: Callable[[], int | None] | None = None,
    ) -> None:
        self.request_fd, self.deadline, self.setup = request_fd, deadline, setup
        self.replies = FrameReader(reply_fd, values=True, budget=Budget(), refs=self._remote)
        self.handed: bool = False  # whether an answer held a handle (the sandbox must stay up)
        self.gone: str | None = None
        self._close, self.closed, self.status = close, False, None
        self.planned = len(ahead)
        self.ahead: deque[bytes] = deque(ahead)  # answered ahead, not read yet, in stream order
        self.unread: Counter[bytes] = Counter(ahead)
        self.ready: dict[bytes, deque[Any]] = {}  # read, not asked for yet

    def _read_ahead(self) -> None:
        key = self.ahead[0]
        reply = self.replies.read()
        self.ahead.popleft()
        self.unread[key] -= 1
        self.ready.setdefault(key, deque()).append(reply)

    def read_ahead(self) -> None:
        """Read every answer planned ahead, in full, before any is judged (see the module). A
        sandbox that stops answering, or breaks the protocol, leaves the rest unanswered."""
        if self.gone:
            return
        try:
            while self.ahead:
                self._read_ahead()
        except JudgeTimeout:
            self.gone = "timed out"
            raise
        except (ChannelClosedError, OSError, CodecError) as exc:
            self.gone = f"the sandbox stopped answering ({type(exc).__name__}: {exc})"

    def close(self) -> int | None:
        """End the sandbox (once): what the worker's handle does, and its wait status."""
        if not self.closed:
            self.closed = True
            self.gone = self.gone or "the sandbox was closed after its planned answers"
            if self._close is not None:
                self.status = self._close()
        return self.status

    def ask(self, message: Mapping[str, Any]) -> dict[str, Any]:
        """The sandbox's answer to ``message``: one read ahead if it was planned, else a round
        trip (only while the sandbox is still there)."""
        try:
            frame = dumps(message)
        except CodecError as exc:
            raise SandboxGone(f"a request could not be sent ({exc})") from None
        if not self.ready.get(frame) and self.unread[frame] > 0 and not self.gone:
            self.read_ahead()
        if self.ready.get(frame):
            reply = self.ready[frame].popleft()
        elif self.gone:
            raise SandboxGone(self.gone)
        else:  # a round trip; every answer ahead was read already
            try:
                write_all(self.request_fd, frame)
                reply = self.replies.read()
            except JudgeTimeout:
                self.gone = "timed out"
                raise
            except (ChannelClosedError, OSError, CodecError) as exc:
                self.gone = f"the sandbox stopped answering ({type(exc).__name__}: {exc})"
                raise SandboxGone(self.gone) from None
        if not isinstance(reply, dict):
            self.gone = "the sandbox broke the protocol"
            raise SandboxGone(self.gone)
        return reply

    def send_setup(self) -> None:
        """Send the sandbox its program and plan (:func:`.spawner.setup_blob`), if there is one."""
        try:
            write_all(self.request_fd, self.setup)
        except JudgeTimeout:
            self.gone = "timed out"
            raise
        except OSError as exc:
            self.gone = f"the sandbox exited before it got its program ({type(exc).__name__})"
            raise SandboxGone(self.gone) from None

    def hello(self) -> dict[str, Any]:
        """The load report the sandbox sends after running the program's top level."""
        try:
            reply = self.replies.read()
        except JudgeTimeout:
            self.gone = "timed out"
            raise
        except (ChannelClosedError, CodecError) as exc:
            self.gone = f"the sandbox exited while loading ({type(exc).__name__})"
            raise SandboxGone(self.gone) from None
        return reply if isinstance(reply, dict) else {"ok": False, "exc": "ProtocolError", "msg": ""}

    def call(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        try:
            request = call_request(name, args, kwargs, self._handle)
        except CodecError as exc:
            raise TypeError(f"argument cannot be sent to the sandbox: {exc}") from None
        return self._value(self.ask(request))

    # what a :class:`.remote.Remote` of this sandbox asks: always a round trip (never planned)

    def call_ref(self, number: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        request = {"op": "call", "ref": number}
        return self._value(self.ask({**request, **self._arguments(args, kwargs)}))

    def get_attribute(self, number: int, name: str) -> Any:
        return self._value(self.ask({"op": "getattr", "ref": number, "name": name}))

    def set_attribute(self, number: int, name: str, value: Any) -> None:
        try:
            encoded = encode_value(value, other=self._handle, ordered=True)
        except CodecError as exc:
            raise TypeError(f"value cannot be sent to the sandbox: {exc}") from None
        self._value(self.ask({"op": "setattr", "ref": number, "name": name, "value": encoded}))

    def truth(self, number: int) -> bool:
        value = self._value(self.ask({"op": "bool", "ref": number}))
        if type(value) is not bool:
            raise TypeError("the sandbox answered a truth value that is not a bool")
        return value

    def _remote(self, number: int, type_name: str) -> Remote:
        """The judge's ``refs``: a fresh handle per ``r`` value (see :mod:`.remote`)."""
        self.handed = True
        return Remote(self, number, type_name)

    def _handle(self, value: Any) -> Any:
        """How a value that is not plain data goes to the sandbox: a handle of its own, back."""
        if type(value) is not Remote:
            raise CodecError(f"a {type(value).__name__} cannot cross the sandbox boundary")
        return value.encoded_for(self)

    def _arguments(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        try:
            return {
                "args": encode_value(list(args), other=self._handle, ordered=True),
                "kwargs": encode_value(dict(kwargs), other=self._handle, ordered=True),
            }
        except CodecError as exc:
            raise TypeError(f"argument cannot be sent to the sandbox: {exc}") from None

    @staticmethod
    def _value(reply: Mapping[str, Any]) -> Any:
        if reply.get("ok") is True:
            return reply.get("value")  # plain data or handles, rebuilt by the frame reader
        raise _rebuild(reply)

    def run_main(self, stdin: str) -> tuple[str, str | None]:
        reply = self.ask({"op": "main", "stdin": stdin})
        stdout = reply.get("stdout")
        stdout = stdout if isinstance(stdout, str) else ""
        return stdout, None if reply.get("ok") is True else f"{reply.get('exc')}: {reply.get('msg')}"


def call_request(
    name: str, args: Sequence[Any], kwargs: Mapping[str, Any], other: Callable[[Any], Any] | None = None
) -> dict[str, Any]:
    """The request for one call, the same whether planned ahead or made by running test code
    (``other``: how the judge sends back a handle, :class:`.remote.Remote`)."""
    return {
        "op": "call",
        "name": name,
        "args": encode_value(list(args), other=other, ordered=True),
        "kwargs": encode_value(dict(kwargs), other=other, ordered=True),
    }


CONTROL_FLOW_EXCEPTIONS = frozenset({"StopIteration", "StopAsyncIteration"})
"""Builtin exceptions that steer the judge's own test code instead of failing it: raised from a
proxy inside ``map``/``filter``/an iterator protocol, ``StopIteration`` ends the iteration early
and the asserts after it never run (``all(map(check, xs))`` held on an empty run). The
submission's raising one is rebuilt as a ``RuntimeError``, a plain failure of that call."""


def _rebuild(reply: Mapping[str, Any]) -> Exception:
    """The sandbox's exception as a *builtin* exception class (never one the submission made),
    never one of :data:`CONTROL_FLOW_EXCEPTIONS`."""
    name, message = str(reply.get("exc"))[:60], short_reason(str(reply.get("msg")))
    cls = getattr(builtins, name, None)
    error: Exception = RuntimeError(f"{name}: {message}")
    if isinstance(cls, type) and issubclass(cls, Exception) and name not in CONTROL_FLOW_EXCEPTIONS:
        with contextlib.suppress(Exception):  # e.g. UnicodeDecodeError needs more arguments
            error = cls(message)
    error._from_sandbox = True  # type: ignore[attr-defined] - its message is the submission's own
    return error


def _describe(exc: BaseException, reveal: bool) -> tuple[str, str]:
    """How a failed test reads: the exception's type, and its message as shown or as secret
    (a message the test code made may hold an expected value; the submission's own may show)."""
    if getattr(exc, "_from_sandbox", False):
        return f"{type(exc).__name__} from the submission: {exc}", ""
    return type(exc).__name__, str(exc)


def safe_repr(value: Any, limit: int = 100) -> str:
    """``repr`` that a submission's value cannot make fail (an int past the digit limit)."""
    try:
        return repr(value)[:limit]
    except (ValueError, RecursionError, MemoryError):
        return f"<{type(value).__name__} too large to show>"


# ----- test kinds ----------------------------------------------------------------------------------


ASSERT_NAME = "__judge_assert__"
"""The name test code's ``assert`` statements call instead (see :func:`_soften`)."""


_STATEMENT_LISTS = ("body", "orelse", "finalbody")


def _soften(node: ast.AST) -> None:
    """Every ``assert test, msg`` directly in ``node``'s statement lists becomes
    ``__judge_assert__(test, lambda: msg)``: a failed assert is recorded and the test goes on.

    Why: a sandbox answers computed-argument calls one at a time, and a test that stopped at its
    first failing assert made every later call arrive only if the one before had passed — the
    submission learnt which asserts held. With every assert run to the end, which calls arrive,
    and in what order, depends only on the test code and the submission's own answers; the
    verdict is the same (a case fails on its first failed assert). Done in place, node by node,
    during the walk :func:`_compile_trusted` makes anyway (an ``ast.NodeTransformer`` pass
    doubled the cost of compiling a test)."""
    for name in _STATEMENT_LISTS:
        statements = getattr(node, name, None)
        if not isinstance(statements, list):
            continue
        for index, statement in enumerate(statements):
            if isinstance(statement, ast.Assert):
                statements[index] = _soft_assert(statement)


def _soft_assert(node: ast.Assert) -> ast.Expr:
    message: ast.expr = ast.copy_location(ast.Constant(None), node)
    if node.msg is not None:
        empty = ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[])
        message = ast.copy_location(ast.Lambda(args=empty, body=node.msg), node.msg)
    name = ast.copy_location(ast.Name(ASSERT_NAME, ast.Load()), node)
    call = ast.copy_location(ast.Call(name, [node.test, message], []), node)
    return ast.copy_location(ast.Expr(call), node)


@dataclass(slots=True)
class _Asserts:
    """The ``__judge_assert__`` of one case: the first failure, kept; the test runs on.

    The message (test code, maybe holding an expected value or a call) is evaluated only when it
    may be shown (``reveal``) and only for the first failure."""

    reveal: bool
    failure: AssertionError | None = None

    def __call__(self, test: object, message: Callable[[], object] | None) -> None:
        if test or self.failure is not None:
            return
        text = ""
        if self.reveal and message is not None:
            try:
                text = str(message())
            except Exception as exc:  # noqa: BLE001 - a message that fails is still a failure
                text = f"<message raised {type(exc).__name__}>"
        self.failure = AssertionError(text)


@functools.lru_cache(maxsize=1024)
def _compile_trusted(source: str, label: str, soft: bool = False) -> tuple[types.CodeType, frozenset[str]]:
    """Test code compiled once, with the names it reads but never binds (to proxy); ``soft``:
    its asserts record and go on (:func:`_soften`), and the tree is the one its plan read
    (:func:`_test_tree`)."""
    try:
        tree = _test_tree(source) if soft else ast.parse(source, label)
    except SyntaxError:
        tree = ast.parse(source, label)  # raises again, naming the test
    loaded, bound = set(), set()
    for node in ast.walk(tree):  # (children are queued before a node is seen: _soften is safe)
        if soft:
            _soften(node)
        if isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
    free = loaded - bound - set(dir(builtins)) - {ASSERT_NAME}  # (a tree softened before shows it)
    return compile(tree, label, "exec"), frozenset(free)


@functools.lru_cache(maxsize=16)
def _test_tree(source: str) -> ast.Module:
    """One parse of a case's test code for its plan (:func:`_target_calls`) and its softened code
    (:func:`_compile_trusted`), which a job asks for one after the other. Softening leaves what the
    plan reads as it was (the calls, their arguments and positions, the names), so either may come
    first; a tree is kept only that long."""
    return ast.parse(source)


def _proxy(session: Session, name: str) -> Callable[..., Any]:
    def proxy(*args: Any, **kwargs: Any) -> Any:
        return session.call(name, args, kwargs)

    proxy.__name__ = proxy.__qualname__ = name
    return proxy


def _run_asserts(spec: Mapping[str, Any], session: Session, outcome: Outcome) -> None:
    setup = spec.get("setup") or ""
    entry_point = spec.get("entry_point")
    for index, case in enumerate(spec["cases"]):
        namespace: dict[str, Any] = {"__name__": "__judge__", "__builtins__": builtins}
        code, free = _compile_trusted(case, f"<test {index}>", soft=True)
        setup_code, setup_free = _compile_trusted(setup, "<setup>") if setup else (None, frozenset())
        if setup_code is not None and not setup_free:  # its own failure is the task's: an error
            exec(setup_code, namespace)  # noqa: S102 - trusted task code
        asserts = namespace[ASSERT_NAME] = _Asserts(outcome.reveal)
        failure: Exception | None = None
        try:
            if setup_code is not None and setup_free:  # it uses the submission's names (MBPP's
                # ``root = Node(1)``): the submission's doing may fail it, as any test line
                namespace.update((name, _proxy(session, name)) for name in setup_free)
                exec(_compile_trusted(setup, "<setup>", soft=True)[0], namespace)  # noqa: S102 - trusted
            for name in free | ({entry_point} if entry_point else set()):
                if name == entry_point or name not in namespace:
                    namespace[name] = _proxy(session, name)
            exec(code, namespace)  # noqa: S102 - trusted test code; submission values are plain data or handles
        except Exception as exc:  # noqa: BLE001 - a failing test, whatever it raised
            failure = exc
        except SandboxGone:  # an answer the case needed only after it had failed: decided
            if asserts.failure is None:
                raise
        except JudgeTimeout:
            if asserts.failure is not None:
                shown, secret = _describe(asserts.failure, outcome.reveal)
                outcome.fail(f"test {index}: {shown}", secret)
            raise
        failure = asserts.failure or failure  # the first failed assert, as a stopping test saw it
        if failure is None:
            outcome.passed += 1
        else:
            shown, secret = _describe(failure, outcome.reveal)
            outcome.fail(f"test {index}: {shown}", secret)


def same_value(got: Any, expected: Any) -> bool:
    """Equality for JSON-given expectations: tuples match lists, floats match within 1e-6 (relative).

    Never raises on what a submission returned (an int too large for a float is simply unequal)."""
    try:
        return _same_value(got, expected)
    except (ArithmeticError, ValueError, TypeError, RecursionError, MemoryError):
        return False


def _same_value(got: Any, expected: Any) -> bool:
    if isinstance(expected, float) or (
        isinstance(got, float) and isinstance(expected, int) and not isinstance(expected, bool)
    ):
        return type(got) in (int, float) and math.isclose(
            got, expected, rel_tol=FLOAT_REL_TOL, abs_tol=FLOAT_REL_TOL
        )
    if isinstance(expected, list | tuple):
        return (
            type(got) in (list, tuple) and len(got) == len(expected) and all(map(_same_value, got, expected))
        )
    if isinstance(expected, dict):
        return (
            type(got) is dict
            and got.keys() == expected.keys()
            and all(_same_value(got[k], expected[k]) for k in expected)
        )
    return type(got) is type(expected) and got == expected


def _run_calls(spec: Mapping[str, Any], session: Session, outcome: Outcome) -> None:
    for index, case in enumerate(spec["cases"]):
        try:
            got = session.call(spec["fn"], tuple(case.get("args", ())), dict(case.get("kwargs", {})))
        except Exception as exc:  # noqa: BLE001
            shown, secret = _describe(exc, outcome.reveal)
            outcome.fail(f"case {index}: {shown}", secret)
            continue
        if same_value(got, case["expected"]):
            outcome.passed += 1
        else:
            outcome.fail(
                f"case {index}: wrong answer {safe_repr(got)}", f"expected {safe_repr(case['expected'])}"
            )


def normalize_output(text: str) -> str:
    """Output compared line by line, ignoring trailing spaces and trailing blank lines."""
    return "\n".join(line.rstrip() for line in text.rstrip().splitlines())


def _run_stdio(spec: Mapping[str, Any], session: Session, outcome: Outcome) -> None:
    for index, case in enumerate(spec["cases"]):
        stdout, error = session.run_main(case.get("stdin", ""))
        if error is not None:
            outcome.fail(f"case {index}: the program raised {error}")
        elif normalize_output(stdout) == normalize_output(case["stdout"]):
            outcome.passed += 1
        else:
            outcome.fail(f"case {index}: wrong output {stdout[:100]!r}", f"expected {case['stdout'][:100]!r}")


def _run_program(spec: Mapping[str, Any], session: Session, outcome: Outcome) -> None:
    """``run``: execute once on the case's stdin and keep the output; it "passes" if it ended cleanly."""
    stdout, error = session.run_main(spec["cases"][0].get("stdin", ""))
    outcome.output = stdout
    if error is None:
        outcome.passed += 1
    else:
        outcome.fail(error)


_RUNNERS = {"assert": _run_asserts, "calls": _run_calls, "stdio": _run_stdio, "run": _run_program}


# ----- answers ahead ---------------------------------------------------------------------------------


def _literal(node: ast.expr) -> tuple[bool, Any]:
    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None


def _aliases(nodes: Sequence[ast.AST], target: str) -> tuple[set[str], set[int]]:
    """The names ``target`` goes by in test code (``nodes``: all of its tree): itself, and each
    parameter of a function the test defines that it is passed into (HumanEval's
    ``check(candidate)``); with the ``id`` of every node that passes it, so a caller can tell
    those uses from others."""
    defs = {n.name: n for n in nodes if isinstance(n, ast.FunctionDef)}
    names, passes = {target}, set()
    for node in nodes:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in defs:
            params = defs[node.func.id].args.posonlyargs + defs[node.func.id].args.args
            for arg, param in zip(node.args, params, strict=False):
                if isinstance(arg, ast.Name) and arg.id == target:
                    names.add(param.arg)
                    passes.add(id(arg))
    return names, passes


Calls = tuple[tuple[tuple[Any, ...], tuple[tuple[str, Any], ...]], ...]
"""Calls with literal arguments: each its positional arguments and its keyword arguments."""


@functools.lru_cache(maxsize=1024)
def _target_calls(source: str, target: str) -> tuple[Calls, int]:
    """How test code ``source`` calls ``target``, from one parse and one walk of it: the calls
    with literal arguments, in source order (see :func:`_literal_calls`), and how many calls there
    are if every one has literal arguments and ``target`` is used in no other way, ``-1``
    otherwise (see :func:`_literal_only`). Every task's test code is read here once per worker:
    the two used to parse it, walk it and evaluate its literals each on their own, and the
    softened code compiled from it parsed it a third time (now it takes this parse)."""
    nodes = list(ast.walk(_test_tree(source)))
    names, passes = _aliases(nodes, target)
    calls, count = [], 0
    for node in nodes:
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names):
            continue
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            count = -1
            continue
        parsed = [_literal(a) for a in node.args] + [_literal(k.value) for k in node.keywords]
        if not all(ok for ok, _ in parsed):
            count = -1
            continue
        values = [v for _, v in parsed]
        kwargs = tuple((k.arg, v) for k, v in zip(node.keywords, values[len(node.args) :], strict=True))
        calls.append(((node.lineno, node.col_offset), tuple(values[: len(node.args)]), kwargs))
        passes.add(id(node.func))
        if count >= 0:
            count += 1
    if count >= 0 and not all(id(n) in passes for n in nodes if isinstance(n, ast.Name) and n.id in names):
        count = -1
    calls.sort(key=lambda c: c[0])
    return tuple((args, kwargs) for _, args, kwargs in calls), count


def _literal_calls(source: str, target: str) -> Calls:
    """Calls of ``target`` with literal arguments in test code, in source order.

    A call counts when it names ``target`` or a parameter that ``target`` is passed into
    (HumanEval's ``def check(candidate)`` ... ``check(f)``). Calls the test never makes are
    harmless (their answers are never read), so this may over-approximate.
    """
    return _target_calls(source, target)[0]


def plan_ahead(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Requests the sandbox can answer before it is asked: every case of a ``calls`` or ``stdio``
    test, and the literal-argument calls of the entry point in ``assert`` tests.

    They hold only what the sandbox would be sent anyway (arguments, stdin), never an expected
    value. Order follows the tests', so an answer is usually read just when it is needed.
    """
    planned: list[dict[str, Any]] = []
    try:
        if spec["kind"] == "calls":
            for case in spec["cases"]:
                planned.append(call_request(spec["fn"], case.get("args", ()), case.get("kwargs", {})))
        elif spec["kind"] in ("stdio", "run"):
            planned = [{"op": "main", "stdin": case.get("stdin", "")} for case in spec["cases"]]
        elif isinstance(spec.get("entry_point"), str):
            for case in spec["cases"]:
                for args, kwargs in _literal_calls(case, spec["entry_point"]):
                    planned.append(call_request(spec["entry_point"], args, dict(kwargs)))
    except (CodecError, SyntaxError, ValueError, TypeError, RecursionError, MemoryError):
        pass  # whatever could be planned is; the rest goes by round trips
    return planned[:MAX_AHEAD]


def validate_tests(spec: object) -> Mapping[str, Any]:
    """Check the shape of ``task["tests"]`` (a task bug must be an ``error``, not a zero)."""
    if not isinstance(spec, Mapping) or spec.get("kind") not in KINDS:
        raise InvalidTestsError(f"task tests must be a mapping with kind in {KINDS}, got {spec!r:.200}")
    cases = spec.get("cases")
    if not isinstance(cases, list | tuple) or not cases:
        raise InvalidTestsError("task tests need a non-empty list of cases")
    if spec["kind"] == "calls" and not isinstance(spec.get("fn"), str):
        raise InvalidTestsError("'calls' tests need the function name in 'fn'")
    if spec["kind"] == "assert" and not all(isinstance(c, str) for c in cases):
        raise InvalidTestsError("'assert' cases must be test code strings")
    if spec["kind"] == "run" and (
        len(cases) != 1 or not isinstance(cases[0], Mapping) or not isinstance(cases[0].get("stdin", ""), str)
    ):
        raise InvalidTestsError("'run' tests take exactly one case, a mapping with an optional 'stdin' string")
    if spec["kind"] == "stdio" and not all(
        isinstance(c, Mapping) and isinstance(c.get("stdout"), str) for c in cases
    ):
        raise InvalidTestsError("'stdio' cases need an expected 'stdout' string")
    return spec


def mode_of(spec: Mapping[str, Any]) -> str:
    """``script`` programs run once per case on stdin; ``module`` programs load once."""
    return "script" if spec["kind"] in ("stdio", "run") else "module"


_ALARM_SET = False


def _on_alarm(signum: int, frame: object) -> None:
    raise JudgeTimeout


def _arm(seconds: float) -> None:
    signal.setitimer(signal.ITIMER_REAL, max(1e-3, seconds))


def judge(spec: Mapping[str, Any], session: Session, *, reveal: bool = False) -> Outcome:
    """Run every case of ``spec`` against the sandbox behind ``session`` before its deadline.

    Two phases, so that nothing the sandbox can observe depends on an outcome: first the program
    is sent and every answer planned ahead is read (the sandbox's whole budget); then, with the
    sandbox already closed where the plan covers every call (:func:`covers_every_call`), the test
    code runs on those answers. ``reveal``: failures may quote expected values and test messages.
    """
    outcome = Outcome(total=len(spec["cases"]), reveal=reveal)
    global _ALARM_SET
    if not _ALARM_SET:  # once per process (signal.getsignal costs an enum lookup per call)
        signal.signal(signal.SIGALRM, _on_alarm)
        _ALARM_SET = True
    try:
        _arm(session.deadline - time.monotonic())
        try:
            session.send_setup()
            if mode_of(spec) == "module":
                hello = session.hello()
                if hello.get("ok") is not True:
                    outcome.load_error = short_reason(f"{hello.get('exc')}: {hello.get('msg')}")
            session.read_ahead()
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)  # an alarm racing this lands in the handler below
    except JudgeTimeout:
        outcome.timed_out = True
        session.gone = session.gone or "timed out"
    except SandboxGone:
        pass  # session.gone says why; the cases it leaves unanswered fail below
    # a handle in a planned answer may be asked about (its truth, an attribute): no early close
    closes = session.gone or (covers_every_call(spec, session.planned) and not session.handed)
    if closes and cpu_exhausted(session.close()):
        outcome.timed_out = True  # RLIMIT_CPU's twin of the wall alarm: a hang, unless unneeded
    try:
        left = session.deadline - time.monotonic()
        _arm(max(left, JUDGING_GRACE_S) if session.closed else left)
        try:
            _RUNNERS[spec["kind"]](spec, session, outcome)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except JudgeTimeout:
        outcome.timed_out = True
    except SandboxGone as exc:
        if not outcome.timed_out:
            outcome.fail(str(exc))
    else:  # every case was decided on answers that came in time: a hang the tests never needed
        outcome.timed_out = False
    return outcome


def cpu_exhausted(status: int | None) -> bool:
    """Whether a sandbox's wait status says RLIMIT_CPU ended it (SIGXCPU at the soft limit).

    A busy loop can reach its CPU limit before the wall-clock alarm: the judge then sees the
    channel close, and without this a hang the tests needed would read as a crash."""
    return status is not None and os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGXCPU


def covers_every_call(spec: Mapping[str, Any], planned: int) -> bool:
    """Whether the ``planned`` requests are every request the tests can make: then the sandbox
    can be closed before any test code runs. ``calls``/``stdio``/``run``: one per case. ``assert``: only
    when every use of the entry point in the test code is a call with literal arguments (or
    passes it to a function the test defines, HumanEval's ``check(candidate)``) and the tests
    name nothing else of the submission's, nor does the setup."""
    kind, cases = spec["kind"], spec["cases"]
    if kind in ("calls", "stdio", "run"):
        return planned == len(cases)
    entry_point = spec.get("entry_point")
    if not isinstance(entry_point, str):
        return False
    setup = spec.get("setup") or ""
    try:
        if setup and _compile_trusted(setup, "<setup>")[1]:
            return False  # the setup itself calls the submission (MBPP's ``Node(1)``)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    bound = _top_level_names(setup)
    total = 0
    for index, case in enumerate(cases):
        try:
            count = _literal_only(case, entry_point)
            free = _compile_trusted(case, f"<test {index}>", soft=True)[1]
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return False
        if count < 0 or free - bound - {entry_point}:
            return False
        total += count
    return total == planned


@functools.lru_cache(maxsize=1024)
def _top_level_names(source: str) -> frozenset[str]:
    """Names the trusted setup code binds at its top level (they are not proxied)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return frozenset()
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        else:
            names.update(
                n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
            )
    return frozenset(names)


def _literal_only(source: str, target: str) -> int:
    """How many calls of ``target`` (or of a parameter it is passed into) ``source`` makes, if
    each has literal arguments and ``target`` is used in no other way; ``-1`` otherwise."""
    return _target_calls(source, target)[1]
