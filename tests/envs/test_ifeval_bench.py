"""IFEval as published (``ifeval-bench``, ``instructions``): its 541 prompts, IFEval's semantics, its four numbers."""

from __future__ import annotations

import json

import pytest
from gymnasium.utils.env_checker import check_env as gymnasium_check_env

from rlvr_gym import envs
from rlvr_gym.envs.audit import audit
from rlvr_gym.envs.data import BadDataRowError
from rlvr_gym.envs.ifeval_responses import LANGUAGE_TEXT, compose, language_sentences
from rlvr_gym.trainers.evaluate import evaluate
from rlvr_gym.verifiers.ifeval import InstructionsFollowed
from rlvr_gym.verifiers.instructions import detect_language
from rlvr_gym.verifiers.substance import substance_problem
from rlvr_gym.verifiers.verdict import Verdict

# IFEval's row 2069 lists one id twice: "at least 100 words" and "less than 121 words" (with topic
# words, so the substance gate lets a real answer through to the instructions).
TWICE = {
    "prompt": "Write a blog post about the best way to get a good night's sleep with at least 100 words.",
    "topic": ["sleep"],
    "descriptions": [],
    "instructions": [
        {"id": "length_constraints:number_words", "kwargs": {"relation": "at least", "num_words": 100}},
        {"id": "length_constraints:number_words", "kwargs": {"relation": "less than", "num_words": 121}},
    ],
}
WORDS = ["a", "dark", "quiet", "room", "and", "a", "steady", "bedtime", "help", "sleep"]


def words(n):
    return " ".join(WORDS[i % len(WORDS)] for i in range(n)) + "."


@pytest.fixture(scope="module")
def bench():
    return envs.make("ifeval-bench")


def test_an_instruction_listed_twice_is_checked_twice():
    """Before: outcomes were keyed by id, the second overwrote the first, and 50 words passed.
    IFEval's semantics, so no gate (the cycled words below are filler to it)."""
    verdict = InstructionsFollowed(substance_gate=False)(words(50), TWICE)
    assert not verdict.passed
    assert verdict.details["followed"] == (
        ("length_constraints:number_words", False),
        ("length_constraints:number_words", True),
    )
    assert InstructionsFollowed("strict", "fraction", substance_gate=False)(words(50), TWICE).score == 0.5
    assert InstructionsFollowed(substance_gate=False)(words(110), TWICE).passed
    gated = InstructionsFollowed()(words(110), TWICE)  # on by default: a verdict, never a raise
    assert isinstance(gated, Verdict) and not gated.passed


def test_a_real_ifeval_row_is_scored_without_keyerror():
    """IFEval's rows carry no topic words: scored as IFEval scores them (was ``KeyError: 'topic'``)."""
    row = {"prompt": "Write a haiku.", "instructions": [{"id": "punctuation:no_comma", "kwargs": {}}]}
    ifeval = InstructionsFollowed(substance_gate=False)
    assert ifeval("Snow on the pine\nthe quiet of the dawn", row).passed
    assert not ifeval("Snow, pine", row).passed
    # the gate is on by default
    gated = InstructionsFollowed()("Snow on the pine\nthe quiet of the dawn", row)
    assert isinstance(gated, Verdict) and not gated.passed  # eight words, five of its own: says nothing


def test_ifeval_bench_poses_the_541_prompts_with_their_instructions(bench):
    tasks = bench.tasks("train")
    assert len(tasks) == 541
    assert sum(len(t["instructions"]) for t in tasks) == 834
    first = tasks[0]
    assert first["key"] == 1000 and bench.question(first) == first["prompt"]
    assert [i["id"] for i in first["instructions"]] == [
        "punctuation:no_comma",
        "detectable_format:number_highlighted_sections",
        "length_constraints:number_words",
    ]
    assert dict(first["instructions"][2]["kwargs"]) == {"relation": "at least", "num_words": 300}


def test_ifeval_bench_passes_check_env_gymnasium_and_the_audit(bench):
    envs.check_env(bench)
    gymnasium_check_env(bench, skip_render_check=True)
    report = audit(bench)
    assert report.ok, report.render()


@pytest.mark.slow
def test_every_satisfiable_prompt_has_a_reference_that_passes(bench):
    """Five IFEval prompts contradict themselves (repeat a request that holds a comma or a
    forbidden word, with "no commas"/"don't say it"); every other one gets a passing response."""
    impossible = []
    for task in bench.tasks("train"):
        try:
            bench.reference_completion(task)
        except NotImplementedError:  # the env convention for "no oracle for this task"
            impossible.append(task["key"])
    assert sorted(impossible) == [374, 1627, 3369, 3371, 3718]


def test_a_contradictory_prompt_is_given_up_without_writing_giant_drafts(bench, monkeypatch):
    """With no upper word bound, compose also drafted sentences sized for 10**6 words (each
    impossible prompt built millions of clauses; the bench's 541 references took 34 s, now 5)."""
    from rlvr_gym.envs import ifeval_responses

    made = []
    clause = ifeval_responses._clause
    monkeypatch.setattr(ifeval_responses, "_clause", lambda *a: made.append(1) or clause(*a))
    (task,) = [t for t in bench.tasks("train") if t["key"] == 374]
    with pytest.raises(NotImplementedError):
        bench.reference_completion(task)
    assert 0 < len(made) < 2_000, f"{len(made)} clauses drafted"  # 202 here; 361,588 before


def test_language_texts_read_as_their_language():
    for code, text in LANGUAGE_TEXT.items():
        assert detect_language(text) == code
        assert len(set(language_sentences(code))) >= 6, code  # a several-paragraph answer repeats none


# IFEval prompts whose composed reference the substance gate refused before the references were
# generated sentences: 1200 words, 100 sentences in 4 sections, 20 sentences with 5 capital words,
# no letter "e", "the" at most once, at least 2 "climatic" in 400 words, Marathi in 3 paragraphs,
# Hindi after an English request repeated.
GATED_BEFORE = [3425, 3429, 1834, 1883, 2716, 2246, 3063, 3305]


def test_composed_references_pass_the_substance_gate(bench):
    """``compose`` alone (no ``accept`` retry) writes text that follows every instruction and that
    the gated rubric passes: sentences with function words, no passage repeated, a topic word."""
    tasks = {t["key"]: t for t in bench.tasks("train")}
    for key in GATED_BEFORE:
        task = tasks[key]
        text = compose(task["prompt"], task["instructions"], topic=task["topic"])
        assert text is not None, key
        verdict = bench.verify(text, task)
        assert verdict.passed, (key, verdict.details, text[:300])
        assert substance_problem(text, task) is None


def test_two_responses_laid_out_in_sections_are_two_texts(bench):
    """IFEval 3324: two itineraries of seven "Day" sections each. The second was the first again
    (plus "Again."): half its trigrams repeated, one step from the gate's "filler"."""
    task = next(t for t in bench.tasks("train") if t["key"] == 3324)
    text = compose(task["prompt"], task["instructions"], topic=task["topic"])
    first, second = text.split("\n******\n")
    assert set(first.split(".")) & set(second.split(".")) <= {""}
    assert bench.verify(text, task).passed


def test_hub_none_padding_is_dropped(tmp_path):
    """The hub's google/IFEval pads every kwargs dict with all keyword names, None where unused."""
    padded = {"num_highlights": None, "relation": "at least", "num_words": 20, "keywords": None}
    path = tmp_path / "hub.jsonl"
    path.write_text(
        json.dumps(
            {
                "key": 1,
                "prompt": "Write about tea.",
                "instruction_id_list": ["length_constraints:number_words"],
                "kwargs": [padded],
            }
        )
        + "\n"
    )
    env = envs.make("instructions", data=str(path))
    task = env.tasks("train")[0]
    assert dict(task["instructions"][0]["kwargs"]) == {"relation": "at least", "num_words": 20}
    assert env.verify(env.reference_completion(task), task).passed


def test_a_bad_row_names_its_file_line_and_key(tmp_path):
    path = tmp_path / "mine.jsonl"
    good = {"prompt": "Write about tea.", "instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]}
    bad = {"prompt": "Write about tea.", "instruction_id_list": ["keywords:existence"], "kwargs": [{}]}
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(BadDataRowError, match=rf"{path}:2: .*'keywords'"):
        envs.make("instructions", data=str(path)).tasks("train")
    path.write_text(json.dumps(good) + "\n" + json.dumps({"prompt": "x"}) + "\n")
    with pytest.raises(BadDataRowError, match=rf"{path}:2: missing key 'instruction_id_list'"):
        envs.make("instructions", data=str(path)).tasks("train")


class Fixed:
    """A sampler that answers every prompt with the response ``compose`` builds, or a broken one."""

    engine = "fixed"

    def __init__(self, env, broken_keys):
        self.env, self.broken = env, broken_keys

    def sample(self, prompt, n, seed):
        task = next(t for t in self.env.tasks("train") if self.env.prompt(t) == prompt)
        text = compose(task["prompt"], task["instructions"]) or "x"
        return [text.replace("*", "") if task["key"] in self.broken else text] * n


def test_evaluate_reports_ifevals_four_numbers(tmp_path, bench):
    """Ten prompts; on three the response loses its ``*`` marks. The figures are counted by hand
    from the per-instruction outcomes, as lm-eval's prompt- and instruction-level accuracies."""
    tasks = list(bench.tasks("train"))[:10]
    broken = {tasks[i]["key"] for i in (0, 3, 5)}
    result = evaluate(
        bench,
        "unused",
        n=1,
        split="train",
        limit=10,
        output_dir=tmp_path,
        sampler=Fixed(bench, broken),
        progress=False,
    )
    strict = InstructionsFollowed("strict", substance_gate=False)
    loose = InstructionsFollowed("loose", substance_gate=False)
    expected = {}
    for mode, verifier in (("strict", strict), ("loose", loose)):
        outcomes = [
            verifier(row["completion"], tasks[row["index"]]).details["followed"] for row in result.rollouts
        ]
        expected[f"prompt_level_{mode}_acc"] = sum(all(ok for _, ok in o) for o in outcomes) / 10
        expected[f"inst_level_{mode}_acc"] = sum(ok for o in outcomes for _, ok in o) / sum(
            map(len, outcomes)
        )
    assert result.summary["benchmark"] == pytest.approx(expected)
    assert result.summary["benchmark"]["prompt_level_strict_acc"] < 1.0  # the broken ones count
    assert json.loads((tmp_path / "summary.json").read_text())["benchmark"] == pytest.approx(expected)


@pytest.mark.parametrize(
    ("ids", "kwargs", "message"),
    [
        (["no_such:instruction"], [{}], "unknown instruction id 'no_such:instruction'"),
        (["punctuation:no_comma"], [{}, {}], "kwargs must be a list of 1 dicts"),
        ("punctuation:no_comma", [{}], "instruction ids must be a non-empty list"),
        (
            ["length_constraints:number_words"],
            [{"relation": "about", "num_words": 5}],
            "relation must be one of",
        ),
    ],
)
def test_every_row_is_checked_when_the_split_loads(tmp_path, ids, kwargs, message):
    path = tmp_path / "rows.jsonl"
    path.write_text(
        json.dumps({"prompt": "Write about tea.", "instruction_id_list": ids, "kwargs": kwargs}) + "\n"
    )
    with pytest.raises(BadDataRowError, match=rf"{path}:1: .*{message}"):
        envs.make("instructions", data=str(path)).tasks("train")
