"""Every answer-form family a grader meets, exactness, and near misses that never pass."""

from __future__ import annotations

import time
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from rlvr_gym.error import InvalidArgumentError
from rlvr_gym.verifiers.math import MathVerifier, extract_answer
from rlvr_gym.verifiers.math.budget import Worker
from rlvr_gym.verifiers.math.equivalence import check
from rlvr_gym.verifiers.math.exactness import rounded_match
from rlvr_gym.verifiers.math.parse import ParseError, parse
from tests.support.math_forms import CASES
from tests.support.timing import bound

FAMILIES = sorted({family for family, *_ in CASES})


@pytest.fixture(scope="module")
def verifier() -> MathVerifier:
    v = MathVerifier(timeout=3.0)
    v.warm_up()
    return v


def test_every_family_has_passing_and_failing_cases() -> None:
    """The table is not one-sided: each family holds renderings that pass and near misses that fail."""
    for family in FAMILIES:
        labels = {label for name, _, _, label in CASES if name == family}
        assert labels == {True, False} or family == "none", family
    assert len(FAMILIES) >= 15 and len(CASES) >= 140


@pytest.mark.parametrize("family", FAMILIES)
def test_answer_form_family(verifier: MathVerifier, family: str) -> None:
    """Each case of the family gets the verdict a careful grader gives (one test per family)."""
    wrong = []
    for _, gold, completion, label in (case for case in CASES if case[0] == family):
        verdict = verifier(completion, {"answer": gold})
        if verdict.passed != label:
            wrong.append((gold, completion, label, verdict.reason.value, verdict.answer))
    assert not wrong, wrong


@pytest.mark.parametrize(
    ("gold", "pred"),
    [
        ("1000000001", "1000000000"),
        ("123456789012", "123456789000"),
        ("10^{20}+1", "10^{20}"),
        ("0", "10^{-400}"),
        ("0", "\\sqrt{2} \\cdot 10^{-300}"),
        ("x^{20}+1", "x^{20}"),
        ("\\pi \\cdot 10^{20}", "\\pi \\cdot 10^{20} + 1"),
        ("\\sin(10^{100})", "7"),
    ],
)
def test_exact_values_have_no_tolerance(verifier: MathVerifier, gold: str, pred: str) -> None:
    verdict = verifier(f"\\boxed{{{pred}}}", {"answer": gold})
    assert not verdict.passed, verdict


def test_decimal_rule_is_documented_both_ways() -> None:
    """A decimal of >= 6 places, rounded or truncated, stands for a non-terminating value."""
    assert rounded_match(Fraction(1, 3), Fraction("0.333333"), 6)
    assert rounded_match(Fraction(2, 3), Fraction("0.666667"), 6)
    assert not rounded_match(Fraction(1, 3), Fraction("0.33333"), 5)  # too few places
    assert not rounded_match(Fraction(1, 8), Fraction("0.1250001"), 7)  # 1/8 terminates: exact only
    assert not rounded_match(Fraction(2, 3), Fraction("0.666665"), 6)
    assert rounded_match(Fraction(2, 3), Fraction("0.666666"), 6)  # truncated
    assert not rounded_match(Fraction(2, 3), Fraction("0.666668"), 6)
    assert not rounded_match(Fraction(-2, 3), Fraction("-0.666665"), 6)
    assert rounded_match(Fraction(-2, 3), Fraction("-0.666666"), 6)


@pytest.mark.parametrize(
    ("gold", "pred", "same"),
    [
        ("2.74", "2,74", True),  # one or two digits after a comma: a decimal comma
        ("0.111", "0,111", True),  # a leading zero group is never a thousands group
        ("1000.99", "1.000,99", True),  # dot-grouped thousands, decimal comma
        ("1234", "1,234", True),  # three digits after a non-zero group: thousands
        ("1.234", "1,234", False),
        ("2, 74", "2,74", True),  # a gold list makes the comma a separator
    ],
)
def test_decimal_comma_rules(gold: str, pred: str, same: bool) -> None:
    result = check(gold, pred, timeout=3.0)
    assert (result.status == "equal") is same, result


def _near_misses(value: int) -> list[int]:
    text = str(abs(value))
    changed = [int(text[:i] + str((int(text[i]) + 1) % 10) + text[i + 1 :]) for i in range(len(text))]
    return [value + 1, value - 1, -value, value * 10, *(c if value >= 0 else -c for c in changed)]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(-(10**30), 10**30))
@example(1000000001)
@example(123456789012)
def test_integer_near_misses_never_pass(verifier: MathVerifier, value: int) -> None:
    """Off by one, sign flip, one digit changed, x10: wrong in every rendering we accept."""
    gold = str(value)
    assert verifier(f"\\boxed{{{value}}}", {"answer": gold}).passed
    for miss in _near_misses(value):
        if miss == value:
            continue
        for rendering in (
            f"\\boxed{{{miss}}}",
            f"The answer is {miss}.",
            f"#### {miss}",
            f"\\boxed{{{miss}.0}}",
        ):
            verdict = verifier(rendering, {"answer": gold})
            assert not verdict.passed, (gold, rendering, verdict)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(-999, 999), st.integers(2, 97))
def test_fraction_near_misses_never_pass(verifier: MathVerifier, numerator: int, denominator: int) -> None:
    gold = Fraction(numerator, denominator)
    text = f"\\frac{{{gold.numerator}}}{{{gold.denominator}}}"
    misses = {gold + 1, gold - 1, -gold, gold * 10, gold + Fraction(1, gold.denominator * 1000)} - {gold}
    for miss in misses:
        rendering = f"\\boxed{{\\frac{{{miss.numerator}}}{{{miss.denominator}}}}}"
        assert not verifier(rendering, {"answer": text}).passed, (text, rendering)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(1, 50), st.integers(2, 40))
def test_symbolic_near_misses_never_pass(verifier: MathVerifier, coefficient: int, power: int) -> None:
    """Exact symbolic forms (powers of ten, radicals) off by one unit never pass."""
    gold = f"{coefficient}\\sqrt{{2}} + 10^{{{power}}}"
    assert verifier(f"\\boxed{{10^{{{power}}} + \\sqrt{{{2 * coefficient**2}}}}}", {"answer": gold}).passed
    for miss in (
        f"{coefficient}\\sqrt{{2}} + 10^{{{power}}} + 1",
        f"{coefficient}\\sqrt{{2}} + 10^{{{power + 1}}}",
        f"{coefficient}\\sqrt{{3}} + 10^{{{power}}}",
        f"-{coefficient}\\sqrt{{2}} + 10^{{{power}}}",
    ):
        assert not verifier(f"\\boxed{{{miss}}}", {"answer": gold}).passed, (gold, miss)


def test_extraction_order_and_strict_mode() -> None:
    text = "We get $x=3$.\nThe answer is 4.\n\\boxed{5}"
    assert extract_answer(text) == "5"
    assert extract_answer("Working 6 * 7 = 42 and then") is None
    assert (
        extract_answer("Working: $6 \\cdot 7 = 42$ and then", last_number_fallback=True) == "6 \\cdot 7 = 42"
    )
    assert extract_answer("The answer is 4.", strict=True) is None
    assert extract_answer("<answer>4</answer>", strict=True) == "4"
    assert extract_answer("Final Answer: The largest $n$ is 34.") == "34"
    assert extract_answer("The answer is 18, which is 3 more than 15.") == "18"
    assert extract_answer("So the answer is $\\frac{1}{2}$ because it is half.") == "$\\frac{1}{2}$"
    assert extract_answer("The answer is 1,234 because 1,000 is too few.") == "1,234"
    assert extract_answer("So the final answer is\n\\[\n9\n\\]") == "9"
    assert extract_answer("$\\boxed{1}$ and $\\boxed{2}$") == "1, 2"
    assert extract_answer("\\boxed{1} because of the rule, so \\boxed{2}") == "2"


def test_truncated_completions_are_decided_in_process(
    verifier: MathVerifier, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No committed answer never reaches the symbolic worker."""

    def forbidden(self: Worker, *args: object, **kwargs: object) -> None:
        raise AssertionError("the worker was consulted")

    monkeypatch.setattr(Worker, "call", forbidden)
    for completion in (
        "Let me think. First we compute 6 * 7 = 42, and then we need to",
        "The answer is the product of the two numbers 6 and 7, which we find by",
        "<think>We have $x^2 = 49$ so $x = 7$ or",
        "So the final answer is $\\boxed{42",
        "So the answer is 42 +",
        "The answer is $\\frac{3",
        "Therefore the answer is \\[ 4",
    ):
        verdict = verifier(completion, {"answer": "42"})
        assert not verdict.passed


def test_verifier_pickles_without_its_worker(verifier: MathVerifier) -> None:
    import pickle

    copy = pickle.loads(pickle.dumps(verifier))
    assert copy("\\boxed{x^2}", {"answer": "x \\cdot x"}).passed


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(1000, 10**12), st.sampled_from([",", ",\\!", "{,}", "\\,", "\\;"]))
def test_thousands_renderings_pass_and_their_near_misses_fail(
    verifier: MathVerifier, value: int, separator: str
) -> None:
    grouped = f"{value:,}".replace(",", separator)
    assert verifier(f"\\boxed{{{grouped}}}", {"answer": str(value)}).passed, grouped
    assert not verifier(f"\\boxed{{{grouped}}}", {"answer": str(value + 1)}).passed, grouped
    assert not verifier(f"\\boxed{{{grouped}}}", {"answer": str(value * 10)}).passed, grouped


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(1, 99_999), st.integers(1, 99))
def test_decimal_comma_renderings(verifier: MathVerifier, whole: int, cents: int) -> None:
    """``2,74`` is 2.74 against a one-number gold; 2.75 and 27.4 are not."""
    gold = f"{whole}.{cents:02d}"
    comma = f"{whole},{cents:02d}"
    if whole >= 1000:
        comma = f"{whole:,}".replace(",", ".") + f",{cents:02d}"  # 1.000,99
    assert verifier(f"\\boxed{{{comma}}}", {"answer": gold}).passed, (gold, comma)
    other = Fraction(gold) + Fraction(1, 100)
    assert not verifier(f"\\boxed{{{comma}}}", {"answer": str(float(other))}).passed, (other, comma)
    assert not verifier(f"\\boxed{{{comma}}}", {"answer": str(Fraction(gold) * 10)}).passed


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(-50, 50), st.integers(1, 50), st.booleans(), st.booleans())
def test_interval_renderings(
    verifier: MathVerifier, low: int, width: int, lo_open: bool, hi_open: bool
) -> None:
    """An interval written with fractions equals its decimal rendering; a flipped end does not."""
    lo, hi = Fraction(low, 4), Fraction(low, 4) + width
    gold = f"{'(' if lo_open else '['}\\frac{{{lo.numerator}}}{{{lo.denominator}}}, {hi.numerator}/{hi.denominator}{')' if hi_open else ']'}"
    same = f"{'(' if lo_open else '['}{float(lo)}, {float(hi)}{')' if hi_open else ']'}"
    flipped = f"{'[' if lo_open else '('}{float(lo)}, {float(hi)}{')' if hi_open else ']'}"
    assert verifier(f"\\boxed{{{same}}}", {"answer": gold}).passed, (gold, same)
    assert not verifier(f"\\boxed{{{flipped}}}", {"answer": gold}).passed, (gold, flipped)


@pytest.mark.parametrize(("gold", "pred"), [("1,5", "1.5"), ("0,5", "0.5"), ("1, 22", "1.22")])
def test_a_gold_list_is_never_read_as_a_decimal_comma(verifier: MathVerifier, gold: str, pred: str) -> None:
    assert not verifier(f"\\boxed{{{pred}}}", {"answer": gold}).passed


# ---- the precision option -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("precision", "gold", "completion", "label"),
    [
        (6, "\\frac{1}{3}", "\\boxed{0.33}", False),  # the default: a decimal needs 6 places
        (2, "\\frac{1}{3}", "\\boxed{0.33}", True),
        (2, "\\frac{1}{3}", "\\boxed{0.34}", False),
        (2, "\\frac{1}{3}", "\\boxed{0.3}", False),  # one place is fewer than 2
        (2, "\\frac{8}{3}", "\\boxed{2.6667}", True),
        (2, "\\frac{8}{3}", "\\boxed{2.6668}", False),
        (2, "0.333", "\\boxed{0.33}", False),  # two written decimals still compare exactly
        (2, "\\frac{1}{8}", "\\boxed{0.13}", True),  # 1/8 does not stop within 2 places
        (2, "\\frac{1}{8}", "\\boxed{0.12}", True),  # truncated
        (2, "\\frac{1}{8}", "\\boxed{0.14}", False),
        (2, "(\\frac{3}{5},\\frac{8}{3}]", "\\boxed{(0.6,2.6667]}", True),
        (2, "(\\frac{3}{5},\\frac{8}{3}]", "\\boxed{(0.6,2.6668]}", False),
        (6, "(\\frac{3}{5},\\frac{8}{3}]", "\\boxed{(0.6,2.6667]}", False),
        (
            2,
            "\\begin{pmatrix} \\frac{1}{3} \\\\ \\frac{1}{5} \\end{pmatrix}",
            "\\boxed{\\begin{pmatrix} 0.33 \\\\ 0.2 \\end{pmatrix}}",
            True,
        ),
        (
            2,
            "\\begin{pmatrix} \\frac{1}{3} \\\\ \\frac{1}{5} \\end{pmatrix}",
            "\\boxed{\\begin{pmatrix} 0.33 \\\\ 0.21 \\end{pmatrix}}",
            False,
        ),
        (
            6,
            "(\\frac{1}{3}, -\\frac{2}{3})",
            "\\boxed{(0.333333, -0.666667)}",
            True,
        ),  # the default rule, inside a tuple
        (6, "(\\frac{1}{3}, -\\frac{2}{3})", "\\boxed{(0.333, -0.667)}", False),
        (3, "\\sqrt{2}", "\\boxed{1.414}", True),
        (3, "\\sqrt{2}", "\\boxed{1.415}", False),
        (3, "1000", "\\boxed{999.999}", False),  # an exact integer stops within any places: exact only
    ],
)
def test_precision_option(precision: int, gold: str, completion: str, label: bool) -> None:
    """``precision=p``: a written decimal of >= p places stands for the value it rounds or truncates."""
    verifier = MathVerifier(timeout=3.0, precision=precision)
    verdict = verifier(completion, {"answer": gold})
    assert verdict.passed is label, verdict


@pytest.mark.parametrize("precision", [0, 31, True, 2.5, "2", None])
def test_precision_is_validated(precision: object) -> None:
    with pytest.raises(InvalidArgumentError, match="precision"):
        MathVerifier(precision=precision)  # type: ignore[arg-type]


def test_prose_number_only_for_a_one_number_gold_and_not_in_strict_mode(verifier: MathVerifier) -> None:
    completion = "the number is not 10 which is 1,000.99€"
    assert verifier(completion, {"answer": "1000.99"}).passed
    assert not verifier(completion, {"answer": "x + 1000.99"}).passed  # gold not one number: no answer
    assert not MathVerifier(strict=True)(completion, {"answer": "1000.99"}).passed
    assert extract_answer(completion) is None  # the extractor alone still finds no committed answer


def test_hedged_prose_numbers_fail_under_single_answer() -> None:
    """SingleAnswer's hedge refusal holds for prose numbers too (no box, no tag: the inner verifier)."""
    from rlvr_gym.verifiers.single_answer import SingleAnswer

    single = SingleAnswer(MathVerifier(timeout=3.0))
    assert single("so the total is $1,000.99.", {"answer": "1000.99"}).passed
    for hedge in ("it is 10 or 1,000.99", "it is 10, or maybe it is 1,000.99", "it is 1,000.99 or 10"):
        assert not single(hedge, {"answer": "1000.99"}).passed, hedge


# ---- hostile inputs of each structured family stay within the worker's budget -------------------------
@pytest.fixture(scope="module")
def hostile_verifier() -> MathVerifier:
    v = MathVerifier(timeout=1.0)
    v.warm_up()
    return v


HOSTILE_FORMS = [
    ("7", "\\boxed{\\prod_{i=1}^{1000000} i}"),
    ("7", "\\boxed{\\sum_{i=1}^{10^{100}} i}"),
    ("7", "\\boxed{\\prod_{i=1}^{\\infty} i}"),
    ("\\prod_{i=1}^{n} i", "\\boxed{\\prod_{i=1}^{n^{100}} i}"),
    ("7", "\\boxed{" + "\\sum_{a=1}^{n}" * 40 + "a}"),
    ("7", "\\boxed{" + "\\int_0^1" * 40 + "x" + "dx" * 40 + "}"),
    ("7", "\\boxed{\\int_0^1 x^{x^{x^{x}}} dx}"),
    ("7", "\\boxed{\\sum_{i=1}^{n} F_{F_{F_{F_{F_{F_{i}}}}}}}"),
    ("[1,2]", "\\boxed{" + "1<x<" * 120 + "2}"),
    ("[1,2]", "\\boxed{x \\ge " + "9" * 5_000 + "}"),
    ("(-\\infty,1)\\cup(2,\\infty)", "\\boxed{" + "x<1 \\text{ or } " * 60 + "x>2}"),
    ("(5,2),(7,2)", "\\boxed{" + "p=5,q=2;" * 60 + "}"),
    ("(5,2),(7,2)", "\\boxed{(p,q)=" + "(5,2)," * 80 + "(7,2)}"),
    ("1000.99", "which is 1 " * 1_000_000),
    ("1000.99", "the total is " + "9" * 10_000),
    ("1000.99", "the total is " + "1," * 5_000 + "0.99"),
    ("7", "\\boxed{" + "\\\\frac{" * 2_000 + "1" + "}{2}" * 2_000 + "}"),
    ("7", "\\boxed{" + "\\\\" * 200_000 + "}"),
    ("7", "<|im_start|>" * 500_000 + "\\boxed{7}"),
    ("7", "<|im_" * 1_000_000),
]


@pytest.mark.parametrize(("gold", "completion"), HOSTILE_FORMS, ids=range(len(HOSTILE_FORMS)))
def test_hostile_forms_come_back_within_budget(
    hostile_verifier: MathVerifier, gold: str, completion: str
) -> None:
    verifier = hostile_verifier
    started = time.perf_counter()
    verdict = verifier(completion, {"answer": gold})
    assert time.perf_counter() - started <= verifier.timeout + bound(0.5)
    assert not verdict.passed, verdict


@pytest.mark.parametrize(
    "text",
    [
        "\\prod_{i=1}^{1000000} i",
        "\\sum_{i=1}^{10^{100}} i",
        "\\prod_{i=1}^{\\infty} i",
        "\\sum_{a=1}^{n}" * 9 + "a",
    ],
)
def test_big_operators_too_large_are_refused_before_sympy(text: str) -> None:
    """Numeric bounds over 10,000 terms, an infinite product, more than 8 operators: refused at once."""
    started = time.perf_counter()
    with pytest.raises(ParseError):
        parse(text)
    assert time.perf_counter() - started < bound(0.1)


@pytest.mark.slow
def test_new_forms_never_reach_a_string_evaluator(monkeypatch: pytest.MonkeyPatch) -> None:
    """The structured forms (big operators, indexed names, intervals, solution sets) are built by named
    constructors only: the worker-side comparison runs in-process with every string evaluator trapped."""
    import builtins

    from sympy.parsing import sympy_parser

    from rlvr_gym.verifiers.math.normalize import normalize
    from rlvr_gym.verifiers.math.symbolic import compare_symbolic

    pairs = [(gold, extract_answer(completion) or "") for family, gold, completion, _ in CASES]
    pairs = [(normalize(g), normalize(p)) for g, p in pairs if p and ("\\sum" in g + p or "\\int" in g + p)]
    pairs += [
        (normalize(g), normalize(p)) for family, g, p, _ in CASES if family in ("inequality", "solutions")
    ]
    for gold, pred in pairs:  # sympy's lazy imports sympify its own constants: let them happen first
        compare_symbolic(gold, pred)
    answers = {text for pair in pairs for text in pair if len(text) >= 3}

    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"a string reached an evaluator: {args[:1]!r:.80}")

    def trap(real):
        def guarded(source, *args, **kwargs):
            text = source.decode(errors="replace") if isinstance(source, bytes) else source
            if isinstance(text, str) and any(answer in text for answer in answers):
                forbidden(source)
            return real(source, *args, **kwargs)

        return guarded

    monkeypatch.setattr(sympy_parser, "parse_expr", forbidden)
    monkeypatch.setattr(builtins, "eval", trap(builtins.eval))
    monkeypatch.setattr(builtins, "exec", trap(builtins.exec))
    assert len(pairs) >= 20
    for gold, pred in pairs:
        compare_symbolic(gold, pred)


# ---- property checks of the structured families (renderings pass, every near miss fails) ---------------
_LESS = {True: "<", False: "\\le"}
_MORE = {True: ">", False: "\\ge"}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(-20, 20), st.integers(1, 20), st.booleans(), st.booleans())
def test_inequality_interval_renderings(
    verifier: MathVerifier, low: int, width: int, lo_open: bool, hi_open: bool
) -> None:
    """``x \\in [a,b)`` and ``a \\le x < b`` pass both ways; a flipped end or a moved bound never does."""
    hi = low + width
    interval = f"x \\in {'(' if lo_open else '['}{low}, {hi}{')' if hi_open else ']'}"
    chain = f"{low} {_LESS[lo_open]} x {_LESS[hi_open]} {hi}"
    assert verifier(f"\\boxed{{{chain}}}", {"answer": interval}).passed, (interval, chain)
    assert verifier(f"\\boxed{{{interval}}}", {"answer": chain}).passed, (chain, interval)
    misses = [
        f"{low} {_LESS[not lo_open]} x {_LESS[hi_open]} {hi}",
        f"{low} {_LESS[lo_open]} x {_LESS[not hi_open]} {hi}",
        f"{low - 1} {_LESS[lo_open]} x {_LESS[hi_open]} {hi}",
        f"{low} {_LESS[lo_open]} x {_LESS[hi_open]} {hi + 1}",
        f"x {_MORE[lo_open]} {low}",
        f"x {_LESS[hi_open]} {hi}",
    ]
    for miss in misses:
        for gold in (interval, chain):
            assert not verifier(f"\\boxed{{{miss}}}", {"answer": gold}).passed, (gold, miss)


def _pairs(text: str) -> set[tuple[int, ...]]:
    """The integer tuples of ``(a,b),(c,d)`` (test helper)."""
    return {tuple(int(v) for v in pair.split(",")) for pair in text.strip("()").split("),(")}


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(st.tuples(st.integers(-9, 9), st.integers(-9, 9)), min_size=2, max_size=4, unique=True),
    st.randoms(use_true_random=False),
)
def test_labelled_solution_sets(verifier: MathVerifier, solutions: list[tuple[int, int]], rng) -> None:
    """``p=..,q=..;p=..,q=..`` equals its tuples in any order; a missing, extra, changed or reversed one never."""
    gold = ";".join(f"p={p},q={q}" for p, q in solutions)
    shuffled = solutions[:]
    rng.shuffle(shuffled)
    tuples = ",".join(f"({p},{q})" for p, q in shuffled)
    assert verifier(f"\\boxed{{{tuples}}}", {"answer": gold}).passed, (gold, tuples)
    assert verifier(f"\\boxed{{(p,q)={tuples}}}", {"answer": gold}).passed, (gold, tuples)
    first_p, first_q = shuffled[0]
    misses = [
        ",".join(f"({p},{q})" for p, q in shuffled[1:]),
        ",".join(f"({p},{q})" for p, q in [(first_p + 1, first_q), *shuffled[1:]]),
        tuples + ",(10,10)",
        ",".join(f"({q},{p})" for p, q in shuffled),
    ]
    for miss in misses:
        if _pairs(miss) != set(solutions):
            assert not verifier(f"\\boxed{{{miss}}}", {"answer": gold}).passed, (gold, miss)


@pytest.mark.slow
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(1, 9), st.integers(-9, 9), st.integers(0, 3), st.sampled_from(["\\sum", "\\prod"]))
def test_big_operator_renderings(verifier: MathVerifier, a: int, b: int, start: int, op: str) -> None:
    """A sum or product with its body's terms swapped and its variable renamed passes; a changed
    constant, coefficient or bound never does."""
    assume(op == "\\sum" or b > 0)  # a product whose factor vanishes is 0 for every bound: equal
    gold = f"{op}_{{i={start}}}^{{n}} ({a}i + {b})"
    same = f"{op}_{{k={start}}}^{{n}} ({b} + {a}k)"
    assert verifier(f"\\boxed{{{same}}}", {"answer": gold}).passed, (gold, same)
    for miss in (
        f"{op}_{{k={start}}}^{{n}} ({b + 1} + {a}k)",
        f"{op}_{{k={start}}}^{{n+1}} ({b} + {a}k)",
        f"{op}_{{k={start}}}^{{n}} ({b} + {a + 1}k)",
    ):
        assert not verifier(f"\\boxed{{{miss}}}", {"answer": gold}).passed, (gold, miss)


A = r"\begin{pmatrix}1 & 2 \\ 3 & 4\end{pmatrix}"
B = r"\begin{pmatrix}5 & 6 \\ 7 & 8\end{pmatrix}"
COL = r"\begin{pmatrix}1 \\ 2\end{pmatrix}"
FRACTIONS = r"\begin{pmatrix}\frac{1}{2} & \frac{3}{4} \\ \frac{5}{6} & \frac{7}{8}\end{pmatrix}"


@pytest.mark.parametrize(
    ("completion", "gold", "passed"),
    [
        # Math-Verify's rows: "Answer" then a display over lines.
        ("Answer \\[ \n 9 \n \\]", "9", True),
        ("Answer $$ \n 9 \n $$", "9", True),
        ("Answer $$ \n 8 \n $$", "9", False),
        ("Answer $ \n 9 \n $", "9", False),  # inline math does not span lines (their label too)
        ("Answer \\( \n 9 \n \\)", "9", False),
        # One math block and nothing else is the answer, however many words it holds.
        (
            "$$\\text{The midpoints form a regular hexagon}$$",
            "\\text{The midpoints form a regular hexagon}",
            True,
        ),
        (
            "$$\\text{The midpoints form a regular pentagon}$$",
            "\\text{The midpoints form a regular hexagon}",
            False,
        ),
        # Several math pieces on one line are several values, never the last one alone.
        ("$1$ and $2$ and $3$", "3", False),
        ("$5$ or $6$", "6", False),
        ("$\\boxed{1,2,3}$", "$1$ and $2$ and $3$", True),  # as a gold, all three are the answer
        ("$\\boxed{3}$", "$1$ and $2$ and $3$", False),
        # The prose around one math piece is what must be short, not the matrix.
        (f"Matrix with fractions: $ {FRACTIONS} $", FRACTIONS, True),  # 112 characters
        (f"Matrix with fractions: $ {FRACTIONS} $ or $ {A} $", A, False),
        # TeX's braced thousands comma with spaces.
        ("The final answer is $14 {, }916$.", "14916", True),
        ("The final answer is $14 {, }916$.", "14.916", False),
        ("The final answer is $14 {, }91$.", "1491", False),  # not a group of three
        ("The final answer is $14 {, }9160$.", "149160", False),
        # Matrix sums and products written out are evaluated exactly.
        (f"The sum is ${A} + {B}$", r"\begin{pmatrix}6 & 8 \\ 10 & 12\end{pmatrix}", True),
        (f"The sum is ${A} + {B}$", r"\begin{pmatrix}6 & 8 \\ 10 & 13\end{pmatrix}", False),
        (f"The difference is ${B} - {A}$", r"\begin{pmatrix}4 & 4 \\ 4 & 4\end{pmatrix}", True),
        (f"The product is ${A} {B}$", r"\begin{pmatrix}19 & 22 \\ 43 & 50\end{pmatrix}", True),
        (f"The product is ${B} {A}$", r"\begin{pmatrix}19 & 22 \\ 43 & 50\end{pmatrix}", False),  # AB != BA
        (f"The product is ${A} {COL}$", r"\begin{pmatrix}5 \\ 11\end{pmatrix}", True),
        (f"The product is ${COL} {A}$", r"\begin{pmatrix}5 \\ 11\end{pmatrix}", False),  # shapes do not fit
        (
            f"The sum is ${A} + {COL}$",
            r"\begin{pmatrix}2 & 3 \\ 5 & 6\end{pmatrix}",
            False,
        ),  # no broadcasting
    ],
)
def test_mathverify_rows_and_their_near_misses(
    verifier: MathVerifier, completion: str, gold: str, passed: bool
) -> None:
    """Math-Verify's labelled rows we accept, each next to the near misses that stay out."""
    assert verifier(completion, {"answer": gold}).passed is passed, (completion, gold)


RUN_ON = (
    "We can rewrite the equation as: P(A) = 1/2 + (1/2) * (1/2) * P(A) Now, we can solve for P(A): "
    "P(A) - (1/4) * P(A) = 1/2 (3/4) * P(A) = 1/2 P(A) = (1/2) / (3/4) P(A) = (1/2) * (4/3) P(A) = 2/3 "
)


@pytest.mark.parametrize(
    ("completion", "gold", "passed"),
    [
        (RUN_ON + "Therefore, the probability that Alice wins the game is 2/3.", "2/3", True),
        (
            RUN_ON + "Therefore, the probability that Alice wins the game is 2/3. <|im_start|>user",
            "$2/3$",
            True,
        ),
        (RUN_ON + "Thus the probability is 2/3.", "2/3", True),
        (RUN_ON + "Therefore, the probability that Alice wins the game is 2/3.", "1/3", False),
        (RUN_ON + "Therefore, the probability is 1/3 or 2/3.", "2/3", False),
        (RUN_ON + "Therefore, the probability is about 2/3.", "2/3", False),
        ("P(A) is 1/3 or 2/3 therefore, it is 2/3.", "2/3", False),  # lower case: one sentence, a hedge
    ],
)
def test_conclusion_without_its_full_stop_is_its_own_sentence(
    verifier: MathVerifier, completion: str, gold: str, passed: bool
) -> None:
    """A capitalised "Therefore"/"Thus" opens the last sentence even when the one before lacks its full stop."""
    assert verifier(completion, {"answer": gold}).passed is passed, completion[-60:]
