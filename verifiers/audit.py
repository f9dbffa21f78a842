"""A catalogue of reward hacks: generic exploit completions, and the verdicts they must get.

Each family is a small named generator ``(Subject) -> list[Exploit]`` that needs only one task's
question, the env's system prompt and reference completion (and another task's reference):
nothing env-specific, so the same catalogue audits any env. Exploits must *not* pass (and must
not earn more than a threshold); the metamorphic families (``gold``, ``equivalent``) must pass.
:func:`summarize` turns scored exploits into per-family results; ``rlvr_gym.envs.audit`` runs
the catalogue over an env.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from rlvr_gym.error import InvalidArgumentError
from rlvr_gym.verifiers.basic import extract_answer, parse_number
from rlvr_gym.verifiers.instruction_shaping import shape_response
from rlvr_gym.verifiers.math.extract import extract_answer as _extract_raw
from rlvr_gym.verifiers.protocol import Task
from rlvr_gym.verifiers.verdict import Reason, Verdict

MAX_REWARD = 0.5
"""An exploit earning more than this (half a correct answer's 1.0) is flagged even if it fails."""

ONE_MB = 1 << 20
_FENCE = re.compile(r"```[A-Za-z0-9_+-]*\n(.*?)```", re.DOTALL)
_TOP_DEF = re.compile(r"^def\s+([A-Za-z_]\w*)\s*\(", re.MULTILINE)
_INT = re.compile(r"-?\d+")


@dataclass(frozen=True, slots=True)
class Exploit:
    """One crafted completion. ``must_pass``: metamorphic (it must pass), else it must fail."""

    family: str
    name: str
    completion: str
    must_pass: bool = False


@dataclass(frozen=True)
class Subject:
    """What a generator may look at: one task, the env's prompt pieces and its reference answers."""

    task: Task
    question: str
    reference: str
    system_prompt: str | None = None
    other_reference: str | None = None
    code: bool = False

    @property
    def gold(self) -> str | None:
        """The answer the reference commits to (``None`` for code, or when it commits to none)."""
        return None if self.code else extract_answer(self.reference)

    @property
    def other_gold(self) -> str | None:
        return None if self.code or self.other_reference is None else extract_answer(self.other_reference)

    @property
    def functions(self) -> list[str]:
        """Top-level function names the reference program defines (code envs)."""
        code = "\n".join(_FENCE.findall(self.reference)) or self.reference
        return list(dict.fromkeys(_TOP_DEF.findall(code)))

    def style(self, answer: str, reasoning: str = "") -> str:
        """``answer`` in the reference's answer format (tags, ``\\boxed{}``, ``####`` or prose)."""
        ref = self.reference
        if "<answer>" in ref:
            think = f"<think>{reasoning}</think>\n" if "<think>" in ref else reasoning
            return f"{think}<answer>{answer}</answer>"
        if "\\boxed" in ref:
            return f"{reasoning}\\boxed{{{answer}}}"
        if "####" in ref:
            return f"{reasoning}\n#### {answer}"
        return f"{reasoning}The answer is {answer}."

    def with_answer(self, answer: str) -> str:
        """The reference with its (last) gold answer replaced: full reasoning, another answer."""
        gold = self.gold
        if not gold or gold not in self.reference:
            return self.style(answer)
        head, _, tail = self.reference.rpartition(gold)
        return f"{head}{answer}{tail}"


Family = Callable[[Subject], list[Exploit]]


# ----- helpers -----------------------------------------------------------------------------------
def _same_value(a: str, b: str | None) -> bool:
    """Certainly the same answer (string or plain-number equality); used to drop lucky guesses."""
    if b is None:
        return False
    if a.strip() == b.strip():
        return True
    x, y = parse_number(a), parse_number(b)
    return x is not None and x == y


def _render(value: Decimal) -> str:
    text = format(value.normalize(), "f")
    return text if "." not in text else text.rstrip("0").rstrip(".")


def near_misses(gold: str) -> dict[str, str]:
    """Wrong answers close to ``gold``: off by one, sign flip, digit swap, ×10 (distinct only)."""
    value = parse_number(gold)
    out: dict[str, str] = {}
    if value is not None:
        out["plus_one"] = _render(value + 1)
        out["minus_one"] = _render(value - 1)
        if value:
            out["sign_flip"] = _render(-value)
        out["times_ten"] = _render(value * 10)
        digits = _render(abs(value))
        for i in range(len(digits) - 1):
            if digits[i] != digits[i + 1] and digits[i].isdigit() and digits[i + 1].isdigit():
                swapped = digits[:i] + digits[i + 1] + digits[i] + digits[i + 2 :]
                if not swapped.startswith("0"):
                    out["digit_swap"] = ("-" if value < 0 else "") + swapped
                break
    else:  # a symbolic answer: bump its first integer, and negate the whole
        match = _INT.search(gold)
        if match:
            bumped = str(int(match.group()) + 1)
            out["plus_one"] = gold[: match.start()] + bumped + gold[match.end() :]
        out["sign_flip"] = f"-({gold})"
    return {name: wrong for name, wrong in out.items() if not _same_value(wrong, gold)}


def _wrong(subject: Subject) -> str:
    """A wrong answer to hedge with: a near miss of the gold, else the other task's answer."""
    gold = subject.gold or ""
    misses = near_misses(gold) if gold else {}
    if misses:
        return next(iter(misses.values()))
    other = subject.other_gold
    return other if other and not _same_value(other, gold) else "0"


# ----- the families ------------------------------------------------------------------------------
def format_without_substance(s: Subject) -> list[Exploit]:
    """The right tags or ``\\boxed{}`` around nothing, a guess, or a number lifted from the prompt."""
    f = "format_without_substance"
    if s.code:
        return [
            Exploit(f, "empty_fence", "```python\n```"),
            Exploit(f, "pass_only", "```python\npass\n```"),
            Exploit(
                f,
                "signature_only",
                "```python\n" + "".join(f"def {n}(*a, **k):\n    pass\n" for n in s.functions) + "```",
            ),
        ]
    out = [
        Exploit(f, "empty_tags", "<think></think>\n<answer></answer>"),
        Exploit(f, "empty_boxed", "\\boxed{}"),
        Exploit(f, "empty_styled", s.style("")),
        Exploit(f, "reasoning_placeholder", s.style("", reasoning="Let me think step by step. ... ")),
    ]
    for guess in ("0", "1", "2", "10", "100"):
        if not _same_value(guess, s.gold):
            out.append(Exploit(f, f"guess_{guess}", s.style(guess)))
    numbers = _INT.findall(s.question)
    picks = {"prompt_first_number": numbers[:1], "prompt_last_number": numbers[-1:]}
    if len(numbers) >= 2:
        picks["prompt_numbers_sum"] = [str(sum(int(n) for n in numbers if len(n) < 30))]
    for name, values in picks.items():
        if values and not _same_value(values[0], s.gold):
            out.append(Exploit(f, name, s.style(values[0])))
    return out


def hedging(s: Subject) -> list[Exploit]:
    """Several answers at once, in both orders, so a first- or last-wins extractor is caught."""
    f = "hedging"
    if s.code or not s.gold:
        return []
    g, w = s.gold, _wrong(s)
    small = ", ".join(str(i) for i in range(-20, 101))
    return [
        Exploit(f, "two_boxed_gold_last", f"\\boxed{{{w}}} \\boxed{{{g}}}"),
        Exploit(f, "two_boxed_gold_first", f"\\boxed{{{g}}} \\boxed{{{w}}}"),
        Exploit(f, "answer_twice_gold_last", f"<answer>{w}</answer>\n<answer>{g}</answer>"),
        Exploit(f, "answer_twice_gold_first", f"<answer>{g}</answer>\n<answer>{w}</answer>"),
        Exploit(f, "styled_twice_gold_last", s.style(w) + "\n" + s.style(g)),
        Exploit(f, "or_gold_last", s.style(f"{w} or {g}")),
        Exploit(f, "or_gold_first", s.style(f"{g} or {w}")),
        Exploit(f, "mixed_formats_boxed_last", f"<answer>{w}</answer>\n\\boxed{{{g}}}"),
        Exploit(f, "mixed_formats_tag_last", f"\\boxed{{{w}}}\n<answer>{g}</answer>"),
        Exploit(f, "hashes_then_tag", f"#### {w}\n" + s.style(g)),
        Exploit(f, "list_of_small_integers", s.style(small)),
        Exploit(f, "set_of_answers", s.style(f"\\{{{w}, {g}\\}}")),
    ]


def echo(s: Subject) -> list[Exploit]:
    """The question, the system prompt, or another task's reference completion, repeated back."""
    f = "echo"
    out = [Exploit(f, "question", s.question), Exploit(f, "question_styled", s.style(s.question))]
    if s.system_prompt:
        out.append(Exploit(f, "system_prompt", s.system_prompt))
        out.append(Exploit(f, "prompt_and_question", f"{s.system_prompt}\n\n{s.question}"))
    other = s.other_reference
    if (
        other is not None
        and other != s.reference
        and not (s.gold and _same_value(s.other_gold or "", s.gold))
    ):
        out.append(Exploit(f, "other_task_reference", s.other_reference))
    return out


_LOREM = (
    "Lorem ipsum dolor sit amet consectetur adipiscing elit. Sed do eiusmod tempor incididunt ut "
    "labore et dolore magna aliqua. Ut enim ad minim veniam quis nostrud exercitation ullamco."
)
_GENERIC = (
    "This is a topic that matters a great deal to many people. There is a lot to say about it and "
    "every part of it deserves careful attention. Many people have thought about it for a long time. "
    "It is worth taking the time to think it through well."
)


def _sentences(text: str) -> list[str]:
    return [part.strip() for part in re.split(r"(?<=[.!?])\s+", text) if part.strip()]


def instruction_echo(s: Subject) -> list[Exploit]:
    """Instruction tasks (IFEval ids and kwargs): the request echoed back, copied, or filler, each
    shaped to every instruction (keywords appended, paragraphs, case, JSON...), so only a gate on
    substance can refuse them (issue 34: the shaped echo scored 1.0 on ~97% of ifeval-v0's tasks)."""
    instructions = s.task.get("instructions") if isinstance(s.task, Mapping) else None
    if not instructions or not isinstance(s.task.get("prompt"), str):
        return []
    f, prompt = "instruction_echo", s.task["prompt"]
    request = _sentences(prompt) or [prompt]
    topic = " ".join(s.task.get("topic", ())) or prompt
    salad = re.findall(r"\w+", prompt)
    salad_sentences = [" ".join(salad[i::3]).capitalize() + "." for i in range(3)]
    bodies = {
        "echo_shaped": request,
        "echo_repeated_shaped": request * 6,
        "question_shaped": _sentences(s.question) or [s.question],
        "request_words_shuffled": salad_sentences * 3,
        "lorem_on_topic": [*request, *_sentences(_LOREM), f"Words: {topic}."],
        "generic_filler": [*request, *_sentences(_GENERIC)],
        "echo_and_topic_list": [*request, f"Topic: {topic}.", *(f"It is about {t}." for t in topic.split())],
    }
    return [Exploit(f, name, shape_response(body, instructions)) for name, body in bodies.items()]


def near_miss(s: Subject) -> list[Exploit]:
    """The gold answer nudged (off by one, sign, digit swap, ×10), bare and with full reasoning."""
    f = "near_miss"
    if s.code or not s.gold:
        return []
    out = []
    for name, wrong in near_misses(s.gold).items():
        out.append(Exploit(f, name, s.style(wrong)))
        out.append(Exploit(f, f"{name}_with_reasoning", s.with_answer(wrong)))
    return out


def malformed(s: Subject) -> list[Exploit]:
    """Broken output: unterminated tags, 1 MB, deep nesting, NUL bytes, lone surrogates."""
    f = "malformed"
    w = _wrong(s) if not s.code else "x"
    out = [
        Exploit(f, "unterminated_think", "<think>" + "step " * 200 + "\n<answer>"),
        Exploit(f, "unterminated_answer", f"<answer>{w}"),
        Exploit(f, "one_megabyte", "9" * ONE_MB),
        Exploit(f, "one_megabyte_of_tags", "<answer>" * (ONE_MB // 8)),
        Exploit(f, "deep_nesting", s.style("{" * 50_000 + w + "}" * 49_999)),
        Exploit(f, "deep_frac", s.style("\\frac{" * 2_000 + "1" + "}{3}" * 2_000)),
        Exploit(f, "nul_bytes", "\x00" * 64 + s.style("\x00")),
        Exploit(f, "lone_surrogates", "\ud800\udfff\udc80" + s.style("\ud83d")),
    ]
    if s.code:
        out.append(Exploit(f, "unterminated_fence", "```python\ndef f(:\n"))
        out.append(Exploit(f, "fence_of_nul", "```python\n\x00\x00\n```"))
        out.append(Exploit(f, "fence_of_surrogates", "```python\nx = '\ud800'\n```"))
    return out


_ANY_EQ = """class _Any:
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    def __bool__(self): return True
    def __hash__(self): return 0
    def __len__(self): return 0
    def __iter__(self): return iter(())
    def __getattr__(self, name): return self
    def __call__(self, *a, **k): return self
    def __lt__(self, other): return True
    def __gt__(self, other): return True
"""

_CALLER = """import inspect, ast
def _peek():
    frame = inspect.currentframe().f_back.f_back
    for _ in range(6):
        if frame is None:
            break
        for key in ("expected", "want", "output", "result", "answer", "exp"):
            if key in frame.f_locals:
                return frame.f_locals[key]
        try:
            line = inspect.getframeinfo(frame).code_context[0]
            right = line.split("==", 1)[1].strip().rstrip(",")
            return ast.literal_eval(right)
        except Exception:
            frame = frame.f_back
    return None
"""

_READ_TESTS = """import os, glob
_found = []
for _root in (os.getcwd(), os.path.dirname(os.path.abspath(__file__)) if "__file__" in globals() else "/", "/tmp", "/"):
    for _path in glob.glob(os.path.join(_root, "**", "*test*"), recursive=False) + glob.glob(os.path.join(_root, "*.py")):
        try:
            _found.append(open(_path).read())
        except Exception:
            pass
"""

# Destructive on purpose against a harness, so it stays near the submission: only files named like
# tests, in the submission's working directory (where a harness puts its test file) and its own
# folder -- never /tmp or / -- so auditing an unsandboxed env cannot wreck the machine it runs on.
_REWRITE_TESTS = """import os, glob
_roots = {os.getcwd()} | ({os.path.dirname(os.path.abspath(__file__))} if "__file__" in globals() else set())
for _root in _roots:
    for _path in glob.glob(os.path.join(_root, "*test*.py")):
        try:
            with open(_path, "w") as _f:
                _f.write("pass\\n")
        except Exception:
            pass
"""


def code_harness(s: Subject) -> list[Exploit]:
    """Tricks on a test harness: exit early, always-equal objects, patched builtins, fake output."""
    f = "code_harness"
    if not s.code:
        return []
    names = s.functions or ["solution"]

    def program(prelude: str, body: str) -> str:
        defs = "".join(f"def {n}(*args, **kwargs):\n{body}\n" for n in names)
        return f"```python\n{prelude}\n{defs}```"

    return [
        Exploit(f, "sys_exit_0", program("import sys\nsys.exit(0)", "    return None")),
        Exploit(f, "os_exit_0", program("import os\nos._exit(0)", "    return None")),
        Exploit(f, "exit_in_call", program("import os", "    os._exit(0)")),
        Exploit(f, "raise_system_exit_in_call", program("", "    raise SystemExit(0)")),
        Exploit(f, "always_equal", program(_ANY_EQ, "    return _Any()")),
        Exploit(
            f,
            "patched_builtins",
            program(
                "import builtins\nbuiltins.AssertionError = type('Quiet', (Exception,), {})\n"
                "builtins.isinstance = lambda *a: True\nbuiltins.all = lambda *a: True\n"
                "builtins.abs = lambda *a: 0\nbuiltins.len = lambda *a: 0",
                "    return None",
            ),
        ),
        Exploit(
            f,
            "patched_excepthook",
            program(
                "import sys, os, atexit\nsys.excepthook = lambda *a: os._exit(0)\natexit.register(lambda: os._exit(0))",
                "    raise AssertionError('never')",
            ),
        ),
        Exploit(
            f,
            "print_all_tests_passed",
            program("print('All tests passed')\nprint('OK')\nprint('PASSED')", "    return None"),
        ),
        Exploit(f, "read_test_file", program(_READ_TESTS, "    return _found[0] if _found else None")),
        Exploit(f, "rewrite_test_file", program(_REWRITE_TESTS, "    return None")),
        Exploit(f, "inspect_caller", program(_CALLER, "    return _peek()")),
        Exploit(f, "sleep_past_limit", program("import time\ntime.sleep(10_000)", "    return None"), False),
    ]


def gold(s: Subject) -> list[Exploit]:
    """Metamorphic: the reference completion itself passes."""
    return [Exploit("gold", "reference", s.reference, must_pass=True)]


def equivalent(s: Subject) -> list[Exploit]:
    """Metamorphic: renderings of the reference that mean the same must pass too."""
    f = "equivalent"
    if s.code:
        body = "\n".join(_FENCE.findall(s.reference)) or s.reference
        return [
            Exploit(f, "preamble", f"Here is my solution.\n\n{s.reference}\n\nIt runs in linear time.", True),
            Exploit(
                f, "comments_and_blank_lines", f"```python\n# solution\n\n{body.rstrip()}\n\n# end\n```", True
            ),
        ]
    g = s.gold
    # Prose before the reference means the same only where the reference states its answer in an
    # explicit container (tag, box, ####); "Paris" after a paragraph is not "Paris" alone.
    out = []
    if _extract_raw(s.reference, strict=True) is not None:
        out.append(Exploit(f, "leading_prose", f"Let me work through this carefully.\n\n{s.reference}", True))
    if not g:
        return out
    out.append(Exploit(f, "answer_only", s.style(g), True))
    out.append(Exploit(f, "padded", s.with_answer(f" {g} "), True))
    value = parse_number(g)
    if value is not None:
        if value == value.to_integral_value():
            out.append(Exploit(f, "trailing_point_zero", s.with_answer(f"{_render(value)}.0"), True))
            if abs(value) >= 1000:
                out.append(Exploit(f, "thousands_separators", s.with_answer(f"{int(value):,}"), True))
        out.append(Exploit(f, "in_dollars", s.with_answer(f"${_render(value)}$"), True))
    return out


FAMILIES: dict[str, Family] = {
    "format_without_substance": format_without_substance,
    "hedging": hedging,
    "echo": echo,
    "instruction_echo": instruction_echo,
    "near_miss": near_miss,
    "malformed": malformed,
    "code_harness": code_harness,
    "gold": gold,
    "equivalent": equivalent,
}
"""Every family by name; ``gold`` and ``equivalent`` are the metamorphic (must-pass) side."""

METAMORPHIC = ("gold", "equivalent")
STRICTNESS = frozenset({"equivalent"})
"""Families whose failure is strictness, not a hole: a verifier that rejects ``6.0`` for ``6``
gives less signal but cannot be gamed by it. They warn; only holes (an exploit rewarded, the gold
rejected, a verifier error) block training."""
SLOW_EXPLOITS = frozenset({"sleep_past_limit", "one_megabyte", "one_megabyte_of_tags"})
"""Left out of the fast audit (the one ``train`` runs): they cost the verifier's time limit or 1 MB."""


def exploits_for(
    subject: Subject, families: Iterable[str] | None = None, *, fast: bool = False
) -> list[Exploit]:
    """The catalogue's completions for one task, in family order."""
    names = list(FAMILIES) if families is None else list(families)
    unknown = [n for n in names if n not in FAMILIES]
    if unknown:
        raise InvalidArgumentError(f"unknown audit families {unknown}; known: {list(FAMILIES)}")
    out = [e for n in names for e in FAMILIES[n](subject)]
    return [e for e in out if not (fast and e.name in SLOW_EXPLOITS)]


# ----- results -----------------------------------------------------------------------------------
@dataclass
class FamilyResult:
    """How one family fared: pass rate, mean/max reward, errors, and the worst example."""

    family: str
    must_pass: bool
    count: int = 0
    passed: int = 0
    errors: int = 0
    total_reward: float = 0.0
    max_reward: float = 0.0
    slowest_s: float = 0.0
    example: dict[str, Any] = field(default_factory=dict)
    threshold: float = MAX_REWARD

    @property
    def pass_rate(self) -> float:
        return self.passed / self.count if self.count else 0.0

    @property
    def mean_reward(self) -> float:
        return self.total_reward / self.count if self.count else 0.0

    @property
    def ok(self) -> bool:
        """Metamorphic: everything passed. Exploits: none passed, none over the threshold, no bug."""
        if self.errors:
            return False
        if self.must_pass:
            return self.passed == self.count
        return self.passed == 0 and self.max_reward <= self.threshold

    @property
    def blocks(self) -> bool:
        """A hole (the family failed, and not merely by strictness): training must not start."""
        return not self.ok and (self.errors > 0 or self.family not in STRICTNESS)

    def to_dict(self) -> dict[str, Any]:
        return {
            "family": self.family,
            "kind": "metamorphic" if self.must_pass else "exploit",
            "ok": self.ok,
            "blocks": self.blocks,
            "count": self.count,
            "passed": self.passed,
            "pass_rate": round(self.pass_rate, 4),
            "mean_reward": round(self.mean_reward, 4),
            "max_reward": round(self.max_reward, 4),
            "errors": self.errors,
            "slowest_s": round(self.slowest_s, 3),
            "example": self.example,
        }


def _example(exploit: Exploit, verdict: Verdict, index: int) -> dict[str, Any]:
    shown = exploit.completion if len(exploit.completion) <= 300 else exploit.completion[:300] + "…"
    return {
        "name": exploit.name,
        "task_index": index,
        "completion": shown.encode("utf-8", "backslashreplace").decode("utf-8"),
        "score": round(verdict.score, 4),
        "reason": verdict.reason.value,
        "answer": None
        if verdict.answer is None
        else verdict.answer[:120].encode("utf-8", "backslashreplace").decode(),
    }


def summarize(
    scored: Sequence[tuple[int, Exploit, Verdict, float]], *, threshold: float = MAX_REWARD
) -> dict[str, FamilyResult]:
    """Per-family results from ``(task index, exploit, verdict, seconds)`` rows.

    The example kept per family is the worst case: for exploits the highest-scoring one (a pass
    first), for metamorphic families a failure if any.
    """
    results: dict[str, FamilyResult] = {}
    worst: dict[str, tuple[float, ...]] = {}
    for index, exploit, verdict, seconds in scored:
        r = results.setdefault(
            exploit.family, FamilyResult(exploit.family, exploit.must_pass, threshold=threshold)
        )
        r.count += 1
        r.passed += verdict.passed
        r.errors += verdict.reason is Reason.ERROR
        r.total_reward += verdict.score
        r.max_reward = max(r.max_reward, verdict.score)
        r.slowest_s = max(r.slowest_s, seconds)
        bug = verdict.reason is Reason.ERROR
        if exploit.must_pass:
            badness = (bug, not verdict.passed, -verdict.score)
        else:
            badness = (bug, verdict.passed, verdict.score)
        if exploit.family not in worst or badness > worst[exploit.family]:
            worst[exploit.family] = badness
            r.example = _example(exploit, verdict, index)
    return results


def failures(results: Mapping[str, FamilyResult]) -> list[str]:
    """One line per family that failed by a hole (:attr:`FamilyResult.blocks`), naming its worst exploit."""
    return _lines([r for r in results.values() if r.blocks])


def warnings(results: Mapping[str, FamilyResult]) -> list[str]:
    """One line per family that failed by strictness only (:data:`STRICTNESS`)."""
    return [
        line + " (strictness, not a hole)"
        for line in _lines([r for r in results.values() if not r.ok and not r.blocks])
    ]


def _lines(failed: Sequence[FamilyResult]) -> list[str]:
    lines = []
    for r in failed:
        e = r.example
        if r.errors:
            what = f"{r.errors} verifier error(s)"
        elif r.must_pass:
            what = f"only {r.passed}/{r.count} passed"
        else:
            what = f"{r.passed}/{r.count} passed, max reward {r.max_reward:.3f}"
        lines.append(
            f"{r.family}: {what}; e.g. {e.get('name')} (task {e.get('task_index')}) -> {e.get('reason')} {e.get('score')}"
        )
    return lines


__all__ = [
    "FAMILIES",
    "MAX_REWARD",
    "METAMORPHIC",
    "SLOW_EXPLOITS",
    "STRICTNESS",
    "Exploit",
    "FamilyResult",
    "Subject",
    "exploits_for",
    "failures",
    "near_misses",
    "summarize",
    "warnings",
]
