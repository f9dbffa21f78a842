"""Property-testing kit for verifiers: hypothesis strategies and :func:`check_verifier`.

Strategies render one value in many equivalent ways (as answers and as whole completions) and
produce hostile strings. ``check_verifier`` fuzzes a verifier with them and raises
:class:`VerifierCheckError` naming the broken property: it raised, the score left [0, 1], two
calls disagreed, a call overran its time budget, an equivalent rendering failed, or a
different value passed.

>>> check_verifier(MathVerifier(), {"answer": "3/4"}, equivalent=completions(number_renderings(Fraction(3, 4))))
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence
from fractions import Fraction

try:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
except ImportError as exc:  # hypothesis is a test-time tool, not a core dependency
    raise ImportError(
        "verifiers.testing needs hypothesis: pip install 'rlvr-gym[dev]' (or hypothesis)"
    ) from exc

from rlvr_gym.error import (
    InvalidArgumentError,
    InvalidTypeError,
    VerifierCheckError,  # noqa: F401 - defined with the whole tree
)
from rlvr_gym.verifiers.protocol import Task, Verifier
from rlvr_gym.verifiers.verdict import Verdict

SearchStrategy = st.SearchStrategy


# ----- equivalent renderings -------------------------------------------------------------------
def _decimal(value: Fraction) -> str | None:
    """The exact terminating decimal of ``value``, or ``None`` when it does not terminate."""
    den = value.denominator
    twos = fives = 0
    while den % 2 == 0:
        den //= 2
        twos += 1
    while den % 5 == 0:
        den //= 5
        fives += 1
    if den != 1:
        return None
    places = max(twos, fives)
    scaled = abs(value.numerator) * (10**places // value.denominator)
    digits = str(scaled).rjust(places + 1, "0")
    text = digits if places == 0 else f"{digits[:-places]}.{digits[-places:]}"
    return ("-" if value < 0 else "") + text


def number_renderings(value: int | Fraction) -> SearchStrategy[str]:
    """Equivalent answer strings for a rational number: integer forms, decimals, fractions..."""
    value = Fraction(value)
    sign = "-" if value < 0 else ""
    magnitude = abs(value)
    forms: list[str] = []
    if value.denominator == 1:
        n = value.numerator
        forms += [
            str(n),
            f"{n}.0",
            f"{n}.00",
            f"{n:,}",
            f"\\${n}" if n >= 0 else str(n),
            f"{n} units",
            f"\\frac{{{2 * n}}}{{2}}",
            f"{n}\\%" if n >= 0 else f"{n}.000",
            f"{{{n}}}",
            f"\\text{{{n}}}",
        ]
        if n and n % 1000 == 0:
            forms += [f"{n // 1000}e3", f"{n // 1000} \\times 10^{{3}}"]
    else:
        p, q = magnitude.numerator, magnitude.denominator
        forms += [
            f"{sign}\\frac{{{p}}}{{{q}}}",
            f"{sign}\\dfrac{{{p}}}{{{q}}}",
            f"{sign}{p}/{q}",
            f"{sign}\\frac{{{2 * p}}}{{{2 * q}}}",
            f"\\frac{{{sign}{p}}}{{{q}}}",
        ]
        if p > q and not sign:
            whole, rest = divmod(p, q)
            forms += [f"{whole}\\frac{{{rest}}}{{{q}}}", f"{whole} {rest}/{q}"]
    decimal = _decimal(value)
    if decimal is not None:
        forms += [decimal, decimal + "0" if "." in decimal else decimal + ".0"]
    return st.sampled_from(sorted(set(forms)))


def radical_renderings(coefficient: int, radicand: int) -> SearchStrategy[str]:
    """Equivalent strings for ``coefficient * sqrt(radicand)`` (radicand square-free, > 1)."""
    c, r = coefficient, radicand
    return st.sampled_from(
        [
            f"{c}\\sqrt{{{r}}}",
            f"{c} \\sqrt {{{r}}}",
            f"\\sqrt{{{c * c * r}}}",
            f"{c}\\cdot\\sqrt{{{r}}}",
            f"{c}*{r}^{{1/2}}",
            f"\\sqrt{{{r}}} \\times {c}",
            f"\\frac{{{2 * c}\\sqrt{{{r}}}}}{{2}}",
            f"{c}√{r}",
        ]
    )


def pi_renderings(numerator: int, denominator: int) -> SearchStrategy[str]:
    """Equivalent strings for ``numerator * pi / denominator``."""
    p, q = numerator, denominator
    return st.sampled_from(
        [
            f"\\frac{{{p}\\pi}}{{{q}}}",
            f"\\frac{{{p}}}{{{q}}}\\pi",
            f"{p}\\pi/{q}",
            f"\\dfrac{{{p} \\pi}}{{{q}}}",
            f"\\pi \\cdot \\frac{{{p}}}{{{q}}}",
            f"{p}π/{q}",
            f"\\frac{{{2 * p}\\pi}}{{{2 * q}}}",
        ]
    )


COMPLETION_TEMPLATES: tuple[str, ...] = (
    "{a}",
    "${a}$",
    "The answer is {a}.",
    "So the final answer is {a}",
    "Let me think.\nStep 1: work.\n#### {a}",
    "We compute carefully.\nTherefore the answer is $\\boxed{{{a}}}$.",
    "<think>working</think>\n<answer>{a}</answer>",
    "<answer>\\boxed{{{a}}}</answer>",
    "Final answer: \\({a}\\)",
    "**Answer:** {a}",
    "So the answer is **{a}**.",
)


def completions(
    answers: SearchStrategy[str], templates: Sequence[str] = COMPLETION_TEMPLATES
) -> SearchStrategy[str]:
    """Whole completions that commit to an answer drawn from ``answers``, in many styles."""
    return st.tuples(answers, st.sampled_from(list(templates))).map(lambda pair: pair[1].format(a=pair[0]))


ANSWER_KINDS = ("text", "number", "math", "code")

TEMPLATES: dict[str, tuple[str, ...]] = {
    "text": (
        "{a}",
        "The answer is {a}.",
        "**Answer:** {a}",
        "So the answer is **{a}**.",
        "<answer>{a}</answer>",
        "<think>Let me recall.</think>\n<answer>{a}</answer>",
        "Final answer: {a}",
    ),
    "number": (
        "{a}",
        "${a}$",
        "The answer is {a}.",
        "**Answer:** {a}",
        "So the answer is **{a}**.",
        "<answer>{a}</answer>",
        "<answer>${a}$</answer>",
        "\\boxed{{{a}}}",
        "Step 1: add.\nStep 2: check.\n#### {a}",
        "Final answer: \\({a}\\)",
    ),
    "math": COMPLETION_TEMPLATES,
    "code": (
        "```python\n{a}\n```",
        "Here is the function.\n\n```python\n{a}\n```\nIt runs in linear time.",
        "```python\n# solution\n{a}\n\n```",
    ),
}
"""Completion templates per answer kind: the styles a verifier of that kind must accept."""


def plain_number_renderings(value: int | Fraction) -> SearchStrategy[str]:
    """Renderings a plain-number verifier must accept: ``3000``, ``3000.0``, ``3,000``, ``3000.``."""
    value = Fraction(value)
    decimal = _decimal(value)
    if decimal is None:
        raise InvalidArgumentError(f"{value} has no terminating decimal: use number_renderings for fractions")
    forms = [decimal, decimal + "0" if "." in decimal else decimal + ".0", f"+{decimal}".replace("+-", "-")]
    if value.denominator == 1:
        n = value.numerator
        forms += [f"{n:,}", f"{n}."]
    return st.sampled_from(sorted(set(forms)))


def text_renderings(text: str) -> SearchStrategy[str]:
    """Renderings a case- and space-folding text verifier must accept."""
    return st.sampled_from(sorted({text, text.upper(), text.lower(), f"  {text} ", " ".join(text.split())}))


def different_texts(text: str) -> SearchStrategy[str]:
    """Answers that differ from ``text`` after case and space folding (edits, near misses)."""
    fold = " ".join(text.split()).casefold()
    edits = [text + "s", "not " + text, text[::-1], text[:-1] or "x", text + " " + text]
    return st.one_of(st.sampled_from(edits), st.text(min_size=1, max_size=20)).filter(
        lambda t: " ".join(t.split()).casefold() != fold and t.strip() != ""
    )


def kind_defaults(kind: str, gold: str) -> dict[str, SearchStrategy[str] | None]:
    """The ``equivalent`` and ``different`` strategies of an answer kind for a gold answer.

    ``number``: plain numeric renderings (a plain-number verifier need not read ``\\frac``);
    ``math``: :func:`number_renderings` when ``gold`` is a rational number, else the gold as is;
    ``text``: case/space variants; ``code``: the gold program in each template (no ``different``:
    a wrong program is task-specific).
    """
    if kind not in TEMPLATES:
        raise InvalidArgumentError(f"unknown answer kind {kind!r}; kinds are {list(ANSWER_KINDS)}")
    templates = TEMPLATES[kind]
    if kind == "code":
        return {"equivalent": completions(st.just(gold), templates), "different": None}
    if kind == "text":
        return {
            "equivalent": completions(text_renderings(gold), templates),
            "different": completions(different_texts(gold), templates),
        }
    try:
        value = Fraction(gold.replace(",", ""))
    except (ValueError, ZeroDivisionError):
        if kind == "number":
            raise InvalidArgumentError(f"gold {gold!r} is not a number (answer kind 'number')") from None
        return {"equivalent": completions(st.just(gold), templates), "different": None}
    if kind == "number":
        near = st.sampled_from([value + 1, value - 1, value * 10, -value - 1]).filter(lambda v: v != value)
        different = near.filter(lambda v: _decimal(v) is not None).flatmap(plain_number_renderings)
        return {
            "equivalent": completions(plain_number_renderings(value), templates),
            "different": completions(different, templates),
        }
    return {
        "equivalent": completions(number_renderings(value), templates),
        "different": completions(different_numbers(value), templates),
    }


def different_numbers(value: int | Fraction) -> SearchStrategy[str]:
    """Answer strings for rational numbers other than ``value`` (near misses included)."""
    value = Fraction(value)
    near = st.sampled_from([value + 1, value - 1, value * 2 + 1, -value - 1, value + Fraction(1, 7)])
    far = st.fractions(max_denominator=50).filter(lambda v: v != value)
    return st.one_of(near, far).flatmap(number_renderings)


# ----- hostile strings --------------------------------------------------------------------------
HOSTILE_ANSWERS: tuple[str, ...] = (
    "9**9**9**9",
    "9^{9^{9^{9}}}",
    "10^{10^{10}}",
    "2^{2^{2^{2^{2^{2}}}}}",
    "(10^{100})!",
    "100000!",
    "{" * 50_000 + "1" + "}" * 50_000,
    "\\frac{" * 2_000 + "1" + "}{2}" * 2_000,
    "(" * 5_000 + "1" + ")" * 5_000,
    "\\sqrt{" * 3_000 + "2" + "}" * 3_000,
    "nan",
    "NaN",
    "inf",
    "-inf",
    "\\infty",
    "1/0",
    "\\frac{1}{0}",
    "0^{-1}",
    "__import__('os').system('echo pwned')",
    "eval('1+1')",
    "exec('import os')",
    "lambda: 0",
    "().__class__.__bases__[0].__subclasses__()",
    "\\input{/etc/passwd}",
    "\\def\\x{\\x}\\x",
    "1" * 5_000,
    "x" * 10_000,
    "(x+1)^{999}",
    "(x+y+z)^{200} - (x+y+z)^{200}",
    "\\sin(10^{100})",
    "e^{e^{e^{e^{10}}}}",
    "1e999999",
    "\x00\x01\x02",
    "<answer><answer>9</answer>",
    "\\boxed{\\boxed{\\boxed{",
    "17 or 18",
    "\\pm 7",
    "7 \\text{ or } 8",
    "\U0001f4a9" * 100,
    "\\begin{pmatrix}" * 300,
)
"""Answers no verifier may crash on, hang on, or execute (more than 30, by design)."""


def hostile_strings() -> SearchStrategy[str]:
    """Hostile answers and completions: the fixed list, deep nesting, and random text."""
    nested = st.tuples(
        st.sampled_from(["{", "(", "\\frac{1}{", "\\sqrt{", "2^{"]), st.integers(1, 2_000)
    ).map(lambda pair: pair[0] * pair[1] + "1" + "}" * pair[1])
    fixed = st.sampled_from(HOSTILE_ANSWERS)
    return st.one_of(
        fixed,
        fixed.map(lambda a: f"\\boxed{{{a}}}"),
        fixed.map(lambda a: f"<answer>{a}</answer>"),
        nested,
        st.text(max_size=300),
    )


# ----- the checker -------------------------------------------------------------------------------
def _call(verifier: Verifier, completion: str, task: Task, time_budget: float) -> Verdict:
    started = time.perf_counter()
    try:
        verdict = verifier(completion, task)
    except Exception as exc:
        raise VerifierCheckError(
            f"[never raises] {verifier!r} raised {type(exc).__name__}: {exc} on {completion!r:.120}"
        ) from exc
    elapsed = time.perf_counter() - started
    if not isinstance(verdict, Verdict):
        raise VerifierCheckError(f"[returns Verdict] got {type(verdict).__name__} on {completion!r:.120}")
    if not 0.0 <= verdict.score <= 1.0:
        raise VerifierCheckError(f"[score bounds] score {verdict.score} on {completion!r:.120}")
    if elapsed > time_budget:
        raise VerifierCheckError(
            f"[bounded time] {elapsed:.2f} s > {time_budget:.2f} s on {completion!r:.120}"
        )
    return verdict


def _check_one(verifier: Verifier, completion: str, task: Task, time_budget: float) -> Verdict:
    first = _call(verifier, completion, task, time_budget)
    second = _call(verifier, completion, task, time_budget)
    if (first.score, first.reason, first.answer) != (second.score, second.reason, second.answer):
        raise VerifierCheckError(f"[deterministic] {first} then {second} on {completion!r:.120}")
    return first


def _run(strategy: SearchStrategy[str], body: Callable[[str], None], max_examples: int) -> None:
    @settings(
        max_examples=max_examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def property_(completion: str) -> None:
        body(completion)

    with warnings.catch_warnings():  # hostile inputs are large by design; their repr warning is noise
        warnings.filterwarnings("ignore", message="Generating overly large repr")
        property_()


def check_verifier(
    verifier: Verifier,
    task: Task,
    *,
    equivalent: SearchStrategy[str] | None = None,
    different: SearchStrategy[str] | None = None,
    hostile: SearchStrategy[str] | None = None,
    time_budget: float = 5.0,
    max_examples: int = 40,
    kind: str | None = None,
    answer_key: str = "answer",
) -> None:
    """Fuzz ``verifier`` on ``task``; raise :class:`VerifierCheckError` at the first broken property.

    * every call returns a :class:`Verdict` with a score in [0, 1], and never raises;
    * two calls on one input give the same verdict (deterministic);
    * every call takes at most ``time_budget`` seconds (the verifier's own budget plus slack);
    * completions from ``equivalent`` pass (equivalent renderings agree);
    * completions from ``different`` do not pass (distinct values disagree);
    * ``hostile`` inputs (default :func:`hostile_strings`) obey the first three rules.

    ``kind`` (one of :data:`ANSWER_KINDS`) fills ``equivalent``/``different`` left as ``None``
    with that kind's defaults for ``task[answer_key]`` (:func:`kind_defaults`), e.g.
    ``check_verifier(NumberMatch(), {"answer": "3000"}, kind="number")``.
    """
    if kind is not None:
        defaults = kind_defaults(kind, str(task[answer_key]))
        equivalent = defaults["equivalent"] if equivalent is None else equivalent
        different = defaults["different"] if different is None else different
    if not callable(verifier):
        raise InvalidTypeError(f"verifier must be callable, got {verifier!r}")
    if isinstance(time_budget, bool) or not isinstance(time_budget, int | float) or time_budget <= 0:
        raise InvalidArgumentError(f"time_budget must be a positive number of seconds, got {time_budget!r}")

    def must_pass(completion: str) -> None:
        verdict = _check_one(verifier, completion, task, time_budget)
        if not verdict.passed:
            raise VerifierCheckError(f"[equivalent renderings agree] {completion!r:.120} got {verdict}")

    def must_fail(completion: str) -> None:
        verdict = _check_one(verifier, completion, task, time_budget)
        if verdict.passed:
            raise VerifierCheckError(
                f"[distinct values disagree] {completion!r:.120} passed for gold {dict(task)!r:.120}"
            )

    def survives(completion: str) -> None:
        _check_one(verifier, completion, task, time_budget)

    if equivalent is not None:
        _run(equivalent, must_pass, max_examples)
    if different is not None:
        _run(different, must_fail, max_examples)
    _run(hostile if hostile is not None else hostile_strings(), survives, max_examples)


__all__ = [
    "ANSWER_KINDS",
    "COMPLETION_TEMPLATES",
    "TEMPLATES",
    "HOSTILE_ANSWERS",
    "VerifierCheckError",
    "check_verifier",
    "completions",
    "different_numbers",
    "different_texts",
    "kind_defaults",
    "plain_number_renderings",
    "text_renderings",
    "hostile_strings",
    "number_renderings",
    "pi_renderings",
    "radical_renderings",
]
