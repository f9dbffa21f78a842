"""Math answers: extraction, normalization, equivalence, safety and the time budget."""

from __future__ import annotations

import time
from fractions import Fraction

import pytest

from rlvr_gym.error import InvalidArgumentError
from rlvr_gym.verifiers import Reason
from rlvr_gym.verifiers.math import MathVerifier, extract_answer, fast_number, normalize
from rlvr_gym.verifiers.math.parse import TooLargeError, parse
from rlvr_gym.verifiers.testing import (
    HOSTILE_ANSWERS,
    check_verifier,
    completions,
    different_numbers,
    number_renderings,
    pi_renderings,
    radical_renderings,
)
from tests.support.timing import bound

TIMEOUT = 1.0


@pytest.fixture(scope="module")
def verifier() -> MathVerifier:
    v = MathVerifier(timeout=TIMEOUT)
    v.warm_up()
    return v


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        ("work\n#### 1,234", "1,234"),
        ("so $\\boxed{\\frac{1}{2}}$ done", "\\frac{1}{2}"),
        ("\\boxed{a{b}c} and then \\boxed{\\sqrt{\\frac{1}{2}}}", "\\sqrt{\\frac{1}{2}}"),
        ("<think>x</think><answer> 7 </answer>", "7"),
        ("<answer>\\boxed{7}</answer>", "7"),
        ("Thus the final answer is $42. Because reasons.", "$42"),
        ("The answer is 3.5.", "3.5"),
        ("$\\frac{3}{4}$", "$\\frac{3}{4}$"),
        ("long\nworking with 17 and 18", None),
    ],
)
def test_extract_answer(completion: str, expected: str | None) -> None:
    assert extract_answer(completion) == expected


def test_last_number_fallback_is_opt_in() -> None:
    assert extract_answer("long\nworking with 17 and then 18") is None
    assert extract_answer("long\nworking with 17 and then 18", last_number_fallback=True) == "18"


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        ("$1,234.00", Fraction(1234)),
        ("\\$18.90", Fraction(189, 10)),
        ("10,\\!080", Fraction(10080)),
        ("50\\%", Fraction(50)),
        ("72 dollars", Fraction(72)),
        ("5.4 \\text{ cents}", Fraction(27, 5)),
        ("106^\\circ", Fraction(106)),
        ("\\dfrac{3}{4}", Fraction(3, 4)),
        ("\\frac 34", Fraction(3, 4)),
        ("\\frac9{19}", Fraction(9, 19)),
        ("1\\frac{4}{5}", Fraction(9, 5)),
        ("137 \\frac{1}{2}", Fraction(275, 2)),
        ("2 1/2", Fraction(5, 2)),
        ("4.2e3", Fraction(4200)),
        ("3 \\times 10^{4}", Fraction(30000)),
        ("**18**", Fraction(18)),
        ("** $18", Fraction(18)),
        (".35625", Fraction(35625, 100000)),
        ("-\\frac{3}{8}", Fraction(-3, 8)),
        ("\\(12\\)", Fraction(12)),
        ("15\\mbox{ cm}^2", Fraction(15)),
        ("\\frac{270}7\\text{ degrees}", Fraction(270, 7)),
    ],
)
def test_normalize_and_fast_number(raw: str, value: Fraction) -> None:
    assert fast_number(normalize(raw)) == value


@pytest.mark.parametrize("raw", ["nan", "inf", "1e999", "17 or 18", "\\infty", "x", "1/0", "\\frac{1}{0}"])
def test_fast_number_refuses_non_numbers(raw: str) -> None:
    assert fast_number(normalize(raw)) is None


EQUIVALENT = [
    ("18", "18.00"),
    ("\\frac{1}{2}", "0.5"),
    ("2\\sqrt{5}", "\\sqrt{20}"),
    ("11\\sqrt2", "11\\sqrt{2}"),
    ("1 \\pm \\sqrt{19}", "1-\\sqrt{19}, 1+\\sqrt{19}"),
    ("(3,4]", "(3, 4]"),
    ("y = 2x + 3", "y=3+2x"),
    ("x=5", "5"),
    ("\\text{Evelyn}", "Evelyn"),
    ("\\text{(B)}", "B"),
    ("-\\frac{\\pi}{6}", "-\\pi/6"),
    ("x^8 + x^7 + x^6 + x^5 + x^4 + x^3 + x^2 + x + 1", "(x^9-1)/(x-1)"),
    ("(a+5)(b+2)", "ab+2a+5b+10"),
    ("\\begin{pmatrix} 1/5 \\\\ -18/5 \\end{pmatrix}", "\\begin{pmatrix} 0.2 \\\\ -3.6 \\end{pmatrix}"),
    ("(-\\infty, 2) \\cup (3, \\infty)", "(3,\\infty)\\cup(-\\infty,2)"),
    ("\\{1\\pm\\sqrt{5},-2\\}", "-2, 1+\\sqrt5, 1-\\sqrt5"),
    ("-2 + 7i", "7i-2"),
    ("5x - 7y + 11z + 4 = 0", "-10x+14y-22z-8=0"),
    ("\\cot x", "\\cos x/\\sin x"),
    ("2516_8", "2516_{8}"),
    ("3, 5, 7", "7, 5, 3"),
    ("20", "18 + 2 = 20"),
    ("4", "x = 4"),
    ("\\frac{\\sqrt{3}}{3}", "\\frac{1}{\\sqrt{3}}"),
    ("\\frac{1}{3}", "0.333333333333"),
    ("\\pi", "3.14159265358979"),
    ("\\left( 3, \\frac{\\pi}{2} \\right)", "(3, \\pi/2)"),
    ("x \\in [-2,7]", "[-2, 7]"),
    ("15", "15\\%"),
]
DIFFERENT = [
    ("18", "19"),
    ("(3,4]", "[3,4]"),
    ("(2,4)", "(4,2)"),
    ("2\\sqrt{5}", "\\sqrt{5}"),
    ("7", "\\pm 7"),
    ("17", "17 or 18"),
    ("\\text{Evelyn}", "Navin"),
    ("x^2", "x^3"),
    ("5", "\\infty"),
    ("-2,1", "-2"),
    ("\\frac{1}{3}", "0.333"),
    ("1+2i", "1-2i"),
    ("y = 2x + 3", "y = 2x"),
    ("\\pi", "3.14159"),
    ("20", "18 + 2 = 21"),
    ("4", "2x = 4"),
]


@pytest.mark.parametrize(("gold", "pred"), EQUIVALENT)
def test_equivalent_answers_pass(verifier: MathVerifier, gold: str, pred: str) -> None:
    verdict = verifier(f"so \\boxed{{{pred}}}", {"answer": gold})
    assert verdict.passed, verdict
    assert verdict.score == 1.0


@pytest.mark.parametrize(("gold", "pred"), DIFFERENT)
def test_different_answers_fail(verifier: MathVerifier, gold: str, pred: str) -> None:
    verdict = verifier(f"so \\boxed{{{pred}}}", {"answer": gold})
    assert not verdict.passed and verdict.score == 0.0
    assert verdict.reason in (Reason.WRONG_ANSWER, Reason.BAD_FORMAT), verdict


def test_reasons(verifier: MathVerifier) -> None:
    assert verifier("I have no idea\n\nat all", {"answer": "3"}).reason is Reason.NO_ANSWER
    assert verifier("\\boxed{9**9**9**9}", {"answer": "3"}).reason is Reason.BAD_FORMAT
    assert verifier("\\boxed{" + "1" * 600 + "}", {"answer": "3"}).reason is Reason.BAD_FORMAT
    hedged = verifier("\\boxed{17 or 18}", {"answer": "17"})
    assert hedged.reason is Reason.WRONG_ANSWER and hedged.details["path"] == "hedge"
    assert verifier("#### 72", {"answer": "72"}).details["path"] in ("string", "numeric")


def test_numbers_never_reach_the_worker(verifier: MathVerifier, monkeypatch: pytest.MonkeyPatch) -> None:
    """The GSM8K case stays in-process: a broken worker must not matter to plain numbers."""

    def boom(*args: object, **kwargs: object) -> None:
        raise AssertionError("worker called for a plain number")

    monkeypatch.setattr(verifier.worker, "call", boom)
    for completion in [
        "#### 1,234",
        "The answer is $1234.00.",
        "\\boxed{1234}",
        "<answer>1235</answer>",
        "1234 dollars",
    ]:
        verifier(completion, {"answer": "1234"})


def test_model_text_never_reaches_a_string_evaluator(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run the worker-side comparison in-process with every string evaluator booby-trapped.

    ``sympify`` of a string always goes through ``sympy.parsing.sympy_parser.parse_expr``
    (imported at call time), so trapping that module attribute catches every string path.
    """
    import builtins

    from sympy.parsing import sympy_parser

    from rlvr_gym.verifiers.math.symbolic import compare_symbolic

    current = {"answer": ""}

    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"a string reached an evaluator: {args[:1]!r:.80}")

    def trap(real):  # sympy execs its own generated code; the model's text must never be in it
        def guarded(source, *args, **kwargs):
            text = source.decode(errors="replace") if isinstance(source, bytes) else source
            if isinstance(text, str) and len(current["answer"]) >= 3 and current["answer"] in text:
                forbidden(source)
            return real(source, *args, **kwargs)

        return guarded

    answers = [gold for gold, _ in EQUIVALENT] + [pred for _, pred in EQUIVALENT + DIFFERENT]
    answers += [a for a in HOSTILE_ANSWERS if len(a) < 300 and a not in ("(x+1)^{999}", "e^{e^{e^{e^{10}}}}")]

    def compare_all(trapped: bool) -> None:
        for answer in answers:
            current["answer"] = normalize(answer) if trapped else ""
            compare_symbolic(normalize("x+1"), normalize(answer))
            compare_symbolic(normalize(answer), normalize("2\\sqrt{5}"))

    compare_all(trapped=False)  # sympy's lazy imports sympify its own constants ("yotta"); let them happen
    monkeypatch.setattr(sympy_parser, "parse_expr", forbidden)
    monkeypatch.setattr(builtins, "eval", trap(builtins.eval))
    monkeypatch.setattr(builtins, "exec", trap(builtins.exec))
    compare_all(trapped=True)


@pytest.mark.parametrize(
    "text", ["9**9**9**9", "10^{10^{10}}", "100000!", "2^{2^{2^{2^{2^{2}}}}}", "1" * 200]
)
def test_parser_refuses_huge_numbers_fast(text: str) -> None:
    started = time.perf_counter()
    with pytest.raises(TooLargeError):
        parse(text)
    assert time.perf_counter() - started < bound(0.1)


def test_hostile_answers_come_back_as_verdicts_within_budget(verifier: MathVerifier) -> None:
    """>= 30 hostile answers, each boxed and bare: a Verdict that does not pass, within budget + 0.5 s."""
    assert len(HOSTILE_ANSWERS) >= 30
    allowed = {Reason.TIMEOUT, Reason.BAD_FORMAT, Reason.WRONG_ANSWER, Reason.NO_ANSWER}
    for answer in HOSTILE_ANSWERS:
        for completion in (f"\\boxed{{{answer}}}", answer, f"<answer>{answer}</answer>"):
            started = time.perf_counter()
            verdict = verifier(completion, {"answer": "7"})
            elapsed = time.perf_counter() - started
            assert elapsed <= TIMEOUT + bound(0.5), (answer[:40], elapsed)
            assert not verdict.passed and verdict.reason in allowed, (answer[:40], verdict)


def test_timeout_kills_the_worker_and_the_next_call_works(verifier: MathVerifier) -> None:
    before = verifier.worker.restarts
    started = time.perf_counter()
    verdict = verifier("\\boxed{(x+y+z+1)^{300} - 1}", {"answer": "(x+y+z+1)^{299}"})
    assert time.perf_counter() - started <= TIMEOUT + bound(0.5)
    assert verdict.reason is Reason.TIMEOUT and verifier.worker.restarts == before + 1
    started = time.perf_counter()
    assert verifier("\\boxed{2\\sqrt{5}}", {"answer": "\\sqrt{20}"}).passed
    assert time.perf_counter() - started <= TIMEOUT + bound(0.5)


@pytest.mark.parametrize(
    ("gold", "equivalent", "different"),
    [
        ("72", number_renderings(72), different_numbers(72)),
        ("-3", number_renderings(-3), different_numbers(-3)),
        ("12000", number_renderings(12000), different_numbers(12000)),
        ("\\frac{3}{4}", number_renderings(Fraction(3, 4)), different_numbers(Fraction(3, 4))),
        ("\\frac{7}{3}", number_renderings(Fraction(7, 3)), different_numbers(Fraction(7, 3))),
        ("2\\sqrt{5}", radical_renderings(2, 5), radical_renderings(3, 5)),
        ("\\frac{3\\pi}{4}", pi_renderings(3, 4), pi_renderings(5, 4)),
    ],
)
def test_check_verifier_on_math_verifier(verifier: MathVerifier, gold: str, equivalent, different) -> None:
    check_verifier(
        verifier,
        {"answer": gold},
        equivalent=completions(equivalent),
        different=completions(different),
        time_budget=TIMEOUT + bound(0.5),
        max_examples=25,
    )


def test_constructor_validates() -> None:
    with pytest.raises(ValueError):
        MathVerifier(timeout=0)
    with pytest.raises(ValueError):
        MathVerifier(answer_key="")


@pytest.mark.parametrize(
    "completion",
    [
        "<answer>" * 20_000,
        "\\boxed{" * 20_000,
        "####" * 50_000,
        "the answer is " * 20_000,
        "{" * 100_000,
        "<think>" * 20_000 + "</think>" * 20_000,
        "The answer is \n" * 20_000,
    ],
    ids=["open-answer-tags", "open-boxes", "hashes", "says", "braces", "think-tags", "says-lines"],
)
def test_huge_completions_are_linear(verifier: MathVerifier, completion: str) -> None:
    """Extraction must not rescan from every opening tag (a quadratic regex took 20 s here)."""
    started = time.perf_counter()
    verdict = verifier(completion, {"answer": "7"})
    assert not verdict.passed
    assert time.perf_counter() - started < bound(0.5)


@pytest.mark.parametrize("completion", ["the answer is " * 700_000, "1 " * 5_000_000, "answer: " * 1_200_000])
def test_ten_megabyte_completions_stay_fast(verifier: MathVerifier, completion: str) -> None:
    started = time.perf_counter()
    assert not verifier(completion, {"answer": "7"}).passed
    assert time.perf_counter() - started < bound(0.5)


@pytest.mark.parametrize(
    ("solution", "gold"),
    [  # GSM8K's own worked solutions (test split), ending on their result with a currency sign
        (
            "the mini cheesecakes was 6 x $55 = $330.\nTherefore the total amount Toula paid was $204 + $160 + $330 = $694.",
            "694",
        ),
        (
            "Her regular weekly earning is $10 x 40 = $400.\nThus, Eliza will receive $400 + $60 = $460 for this week's work.",
            "460",
        ),
        ("since $125 > $96, he will choose to purchase jewelry, thereby making a profit of $125", "125"),
    ],
)
def test_a_currency_sign_is_not_inline_math(solution: str, gold: str) -> None:
    """Before: "$204 + $" and "$160 + $" read as TeX math, so the fallback answered ``330 =``."""
    assert extract_answer(solution, last_number_fallback=True) == gold
    assert MathVerifier(last_number_fallback=True)(solution, {"answer": gold}).passed


def test_inline_math_still_reads_after_the_currency_rule() -> None:
    assert extract_answer("so we get $x = 5$ in the end", last_number_fallback=True) == "x = 5"
    assert extract_answer("the value is $\\frac{1}{2}$, done", last_math_fallback=True) == "\\frac{1}{2}"


@pytest.fixture(scope="module")
def question_aware() -> MathVerifier:
    """MATH-500's settings: the question in ``problem``, the last-math fallback on."""
    v = MathVerifier(timeout=TIMEOUT, last_math_fallback=True, question_key="problem")
    v.warm_up()
    return v


COPIED = [  # MATH-500 problems whose own expression equals the gold: the echo of the question once scored 1.0
    ("Evaluate $(1+2i)6-3i$.", "6+9i"),
    ("Compute $99^2+99+1$ in your head.", "9901"),
    ("Simplify $\\sqrt{242}$.", "11\\sqrt2"),
    ("Express $\\frac{3}{20}$ as a decimal.", "0.15"),
    ("Simplify the following expression in $k$: $(-k + 4) + (-2 + 3k)$.", "2k+2"),
    ("Compute: $\\displaystyle \\frac{66,666^4}{22,222^4}$.\nWhat is $|(1-i)^8|$?", "16"),
]


@pytest.mark.parametrize(("question", "gold"), COPIED)
@pytest.mark.parametrize("shape", ["{q}", "\\boxed{{{q}}}", "<answer>{q}</answer>", "Solve it.\n\n{q}"])
def test_the_questions_own_expression_echoed_back_is_not_an_answer(
    question_aware: MathVerifier, question: str, gold: str, shape: str
) -> None:
    """Before: echoing "Evaluate $(1+2i)6-3i$." answered ``(1+2i)6-3i``, equal to ``6+9i``: 1.0."""
    task = {"problem": question, "answer": gold}
    verdict = question_aware(shape.format(q=question), task)
    assert not verdict.passed and verdict.score == 0.0, verdict
    copied = question_aware(f"\\boxed{{{extract_answer(question, last_math_fallback=True)}}}", task)
    assert not copied.passed and copied.details.get("path") == "copied", copied
    assert question_aware(f"so \\boxed{{{gold}}}", task).passed


@pytest.mark.parametrize(
    ("question", "gold", "answer"),
    [
        ("Which is larger, $2^{10}$ or $10^3$?", "2^{10}", "2^{10}"),  # the gold is in the question
        ("Which is larger, $2^{10}$ or $10^3$?", "2^{10}", "$2^{10}$"),
        ("Which is larger, $2^{10}$ or $10^3$?", "2^{10}", "1024"),
        ("Which point is on the line, $A$, $B$ or $C$?", "\\text{(C)}", "C"),  # a choice named
        ("If $x = 5$, what is $x + 1$?", "6", "6"),
        ("Evaluate $(1+2i)6-3i$.", "6+9i", "9i + 6"),
    ],
)
def test_an_answer_the_question_mentions_still_passes(
    question_aware: MathVerifier, question: str, gold: str, answer: str
) -> None:
    assert question_aware(f"work\n\\boxed{{{answer}}}", {"problem": question, "answer": gold}).passed


@pytest.mark.parametrize(
    ("question", "gold"),
    [  # MATH-500 problems whose math is the gold itself: the copy is the answer, the echo is not
        ("What is $\\sqrt{53}$ in simplest radical form?", "\\sqrt{53}"),
        ("Let $N$ be the units digit of the number $21420N$. Which nonzero value of $N$ makes it divisible by $6$?", "6"),
    ],
)
@pytest.mark.parametrize("shape", ["{q}", "\\boxed{{{q}}}", "<answer>{q}</answer>", "Solve it.\n\n{q}"])
def test_a_question_echoed_verbatim_has_no_answer_even_when_its_math_is_the_gold(
    question_aware: MathVerifier, question: str, gold: str, shape: str
) -> None:
    task = {"problem": question, "answer": gold}
    assert not question_aware(shape.format(q=question), task).passed
    assert question_aware(f"{question}\n\nRestated; so \\boxed{{{gold}}}", task).passed


def test_question_key_must_name_a_field() -> None:
    with pytest.raises(InvalidArgumentError):
        MathVerifier(question_key="")
