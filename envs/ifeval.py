"""``ifeval``: verifiable instruction following — a base prompt plus 1-3 IFEval instructions.

The base prompts are a small set we wrote and ship as package data (``data/ifeval_prompts.jsonl``:
twelve everyday writing requests, each with topic words and a plain answer body); they are not
IFEval's prompts. A task draws a base prompt and instructions from IFEval's families with
IFEval's keyword names, and is kept only if a response *built* for it (the body rearranged and
decorated to follow every instruction) passes the strict checks, so the reference completion
always passes and no task asks for the impossible. The first instruction is always
``keywords:existence`` with words drawn for the task: an answer written for another task of the
same base prompt does not pass this one. Everything is a pure function of ``(seed, split,
index)``. ``language:response_language`` and ``detectable_format:constrained_response`` are
checked by the verifiers but not posed (the bodies are English; IFEval lets a constrained
response combine with nothing).
"""

from __future__ import annotations

import functools
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from rlvr_gym.envs.config import EnvConfig, configure, knob
from rlvr_gym.envs.env import SingleTurnEnv
from rlvr_gym.envs.generated import GeneratedTasks
from rlvr_gym.error import InvalidArgumentError
from rlvr_gym.verifiers import Rubric, Task
from rlvr_gym.verifiers.ifeval import InstructionsFollowed
from rlvr_gym.verifiers.instruction_shaping import CAPITALS, PLACEHOLDERS, shape_response
from rlvr_gym.verifiers.instructions import check, count_sentences, count_words, require_packages
from rlvr_gym.verifiers.substance import COMMON_WORDS, substance_problem, words

PROMPTS_PATH = Path(__file__).resolve().parent / "data" / "ifeval_prompts.jsonl"
MAX_TRIES = 40
WORD_LIST = (  # IFEval's keyword list (instructions_util.WORD_LIST, first entries)
    "western", "sentence", "signal", "dump", "spot", "opposite", "bottom", "potato", "administration",
    "working", "welcome", "morning", "good", "agency", "primary", "wish", "responsibility", "press",
    "problem", "president", "steal", "brush", "read", "type", "beat", "trainer",
)  # fmt: skip
ENDINGS = ("Any other questions?", "Is there anything else I can help with?")
STRUCTURE = frozenset(
    {
        "length_constraints:number_paragraphs",
        "length_constraints:nth_paragraph_first_word",
        "detectable_format:multiple_sections",
        "detectable_format:number_bullet_lists",
        "combination:two_responses",
        "detectable_format:json_format",
    }
)
CASE = frozenset(
    {"change_case:english_lowercase", "change_case:english_capital", "change_case:capital_word_frequency"}
)
JSON_FRIENDS = frozenset({"keywords:existence", "keywords:forbidden_words"})
ANCHOR = "keywords:existence"
FAMILIES = (
    "keywords:frequency",
    "keywords:forbidden_words",
    "keywords:letter_frequency",
    "length_constraints:number_sentences",
    "length_constraints:number_paragraphs",
    "length_constraints:number_words",
    "length_constraints:nth_paragraph_first_word",
    "detectable_content:number_placeholders",
    "detectable_content:postscript",
    "detectable_format:number_bullet_lists",
    "detectable_format:number_highlighted_sections",
    "detectable_format:multiple_sections",
    "detectable_format:json_format",
    "detectable_format:title",
    "combination:two_responses",
    "combination:repeat_prompt",
    "startend:end_checker",
    "startend:quotation",
    "change_case:english_capital",
    "change_case:english_lowercase",
    "change_case:capital_word_frequency",
    "punctuation:no_comma",
)
"""The families posed besides the anchor (``keywords:existence``)."""


@functools.cache
def base_prompts() -> tuple[dict[str, Any], ...]:
    """The shipped base prompts (read once)."""
    with PROMPTS_PATH.open(encoding="utf-8") as handle:
        return tuple(json.loads(line) for line in handle if line.strip())


def _relation(rng: random.Random) -> str:
    return rng.choice(("less than", "at least"))


def sample_kwargs(family: str, rng: random.Random, base: dict[str, Any]) -> dict[str, Any]:
    """IFEval keyword arguments for ``family``, drawn so the base body can meet them."""
    body = " ".join(base["body"])
    lowered = body.lower()
    if family == "keywords:existence":
        return {"keywords": rng.sample([w for w in WORD_LIST if w not in lowered], rng.randint(1, 2))}
    if family == "keywords:frequency":
        relation = _relation(rng)
        keyword = rng.choice([w for w in WORD_LIST if w not in lowered])
        return {"keyword": keyword, "relation": relation, "frequency": rng.randint(1, 3)}
    if family == "keywords:forbidden_words":
        return {"forbidden_words": rng.sample([w for w in WORD_LIST if w not in lowered], 2)}
    if family == "keywords:letter_frequency":
        letter = rng.choice("aeinorst")
        have = lowered.count(letter)
        if rng.random() < 0.5:
            return {"letter": letter, "let_relation": "at least", "let_frequency": rng.randint(1, have)}
        return {"letter": letter, "let_relation": "less than", "let_frequency": have + rng.randint(20, 40)}
    if family == "length_constraints:number_sentences":
        have = count_sentences(body)
        if rng.random() < 0.5:
            return {"relation": "at least", "num_sentences": rng.randint(2, have)}
        return {"relation": "less than", "num_sentences": have + rng.randint(6, 12)}
    if family == "length_constraints:number_words":
        have = count_words(body)
        if rng.random() < 0.5:
            return {"relation": "at least", "num_words": max(10, have // 20 * 10)}
        return {"relation": "less than", "num_words": (have // 50 + 4) * 50}
    if family == "length_constraints:number_paragraphs":
        return {"num_paragraphs": rng.randint(2, 4)}
    if family == "length_constraints:nth_paragraph_first_word":
        count = rng.randint(2, 4)
        return {
            "num_paragraphs": count,
            "nth_paragraph": rng.randint(1, count),
            "first_word": rng.choice(WORD_LIST),
        }
    if family == "detectable_content:number_placeholders":
        return {"num_placeholders": rng.randint(1, len(PLACEHOLDERS))}
    if family == "detectable_content:postscript":
        return {"postscript_marker": rng.choice(("P.S.", "P.P.S"))}
    if family == "detectable_format:number_bullet_lists":
        return {"num_bullets": rng.randint(2, 5)}
    if family == "detectable_format:number_highlighted_sections":
        return {"num_highlights": rng.randint(1, 3)}
    if family == "detectable_format:multiple_sections":
        return {"section_spliter": rng.choice(("Section", "SECTION")), "num_sections": rng.randint(2, 4)}
    if family == "combination:repeat_prompt":
        return {"prompt_to_repeat": base["prompt"]}
    if family == "startend:end_checker":
        return {"end_phrase": rng.choice(ENDINGS)}
    if family == "change_case:capital_word_frequency":
        if rng.random() < 0.5:
            return {"capital_relation": "at least", "capital_frequency": rng.randint(1, len(CAPITALS))}
        return {"capital_relation": "less than", "capital_frequency": rng.randint(3, 6)}
    return {}  # json_format, title, two_responses, quotation, english_capital/lowercase, no_comma


def describe(family: str, kw: dict[str, Any]) -> str:
    """The instruction as the model reads it (IFEval's wording)."""
    plural = lambda n, word: f"{n} {word}" if n == 1 else f"{n} {word}s"  # noqa: E731
    match family:
        case "keywords:existence":
            return f"Include the keywords {' and '.join(kw['keywords'])} in the response."
        case "keywords:frequency":
            return f"In your response, the word {kw['keyword']} should appear {kw['relation']} {kw['frequency']} times."
        case "keywords:forbidden_words":
            return f"Do not include the keywords {' or '.join(kw['forbidden_words'])} in the response."
        case "keywords:letter_frequency":
            return f"In your response, the letter {kw['letter']} should appear {kw['let_relation']} {kw['let_frequency']} times."
        case "length_constraints:number_sentences":
            return f"Your response should contain {kw['relation']} {plural(kw['num_sentences'], 'sentence')}."
        case "length_constraints:number_words":
            return f"Answer with {kw['relation']} {kw['num_words']} words."
        case "length_constraints:number_paragraphs":
            return f"There should be {kw['num_paragraphs']} paragraphs. Paragraphs are separated with the markdown divider: ***"
        case "length_constraints:nth_paragraph_first_word":
            return (
                f"There should be {kw['num_paragraphs']} paragraphs. Paragraphs and only paragraphs are separated "
                f"with each other by two new lines. Paragraph {kw['nth_paragraph']} must start with the word "
                f"{kw['first_word']}."
            )
        case "detectable_content:number_placeholders":
            return (
                f"The response must contain at least {plural(kw['num_placeholders'], 'placeholder')} represented by "
                "square brackets, such as [address]."
            )
        case "detectable_content:postscript":
            return f"At the end of your response, please explicitly add a postscript starting with {kw['postscript_marker']}"
        case "detectable_format:number_bullet_lists":
            return (
                f"Your answer must contain exactly {plural(kw['num_bullets'], 'bullet point')}. Use the markdown "
                "bullet points such as:\n* This is point 1.\n* This is point 2"
            )
        case "detectable_format:number_highlighted_sections":
            return (
                f"Highlight at least {plural(kw['num_highlights'], 'section')} in your answer with markdown, "
                "i.e. *highlighted section*."
            )
        case "detectable_format:multiple_sections":
            s = kw["section_spliter"]
            return (
                f"Your response must have {kw['num_sections']} sections. Mark the beginning of each section with "
                f"{s} X, such as:\n{s} 1\n[content of section 1]\n{s} 2\n[content of section 2]"
            )
        case "detectable_format:json_format":
            return "Entire output should be wrapped in JSON format. You can use markdown ticks such as ```."
        case "detectable_format:title":
            return "Your answer must contain a title, wrapped in double angular brackets, such as <<poem of joy>>."
        case "combination:two_responses":
            return "Give two different responses. Responses and only responses should be separated by 6 asterisk symbols: ******."
        case "combination:repeat_prompt":
            return (
                "First repeat the request word for word without change, then give your answer (1. do not say any "
                "words or characters before repeating the request; 2. the request you need to repeat does not "
                "include this sentence)"
            )
        case "startend:end_checker":
            return f"Finish your response with this exact phrase {kw['end_phrase']} No other words should follow this phrase."
        case "startend:quotation":
            return "Wrap your entire response with double quotation marks."
        case "change_case:english_capital":
            return "Your entire response should be in English, and in all capital letters."
        case "change_case:english_lowercase":
            return "Your entire response should be in English, and in all lowercase letters. No capital letters are allowed."
        case "change_case:capital_word_frequency":
            return (
                f"In your response, words with all capital letters should appear {kw['capital_relation']} "
                f"{kw['capital_frequency']} times."
            )
        case "punctuation:no_comma":
            return "In your entire response, refrain from the use of any commas."
    raise InvalidArgumentError(f"no description for instruction {family!r}")


def build_response(base: dict[str, Any], instructions: list[dict[str, Any]]) -> str:
    """A response meant to follow every instruction: the base body, decorated and rearranged."""
    return shape_response(base["body"], instructions, title=f"On {base['id']}")


def content_words(base: dict[str, Any]) -> list[str]:
    """Words the base body (an answer) uses and the request does not: the substance gate wants
    some of them, so an echo of the request, or filler, is no answer."""
    request = set(words(base["prompt"])) | {t.lower() for t in base["topic"]}
    return sorted(set(words(" ".join(base["body"]))) - request - COMMON_WORDS)


def _compatible(family: str, chosen: list[str]) -> bool:
    if family in chosen:
        return False
    if family in STRUCTURE and STRUCTURE & set(chosen):
        return False
    if family in CASE and CASE & set(chosen):
        return False
    json_format = "detectable_format:json_format"
    if family == json_format and set(chosen) - JSON_FRIENDS:
        return False
    return not (json_format in chosen and family not in JSON_FRIENDS)


def generate_task(
    seed: int,
    split: str,
    index: int,
    *,
    min_instructions: int,
    max_instructions: int,
    families: tuple[str, ...],
) -> dict[str, Any]:
    """The task at ``index``: a base prompt, its instructions, and the response built to follow them."""
    rng = random.Random(f"rlvr-gym/ifeval/{seed}/{split}/{index}")
    bases = base_prompts()
    base = bases[rng.randrange(len(bases))]
    for attempt in range(MAX_TRIES):
        count = rng.randint(min_instructions, max_instructions) if attempt < MAX_TRIES - 1 else 1
        chosen = [ANCHOR]
        while len(chosen) < count:
            options = [f for f in families if _compatible(f, chosen)]
            if not options:
                break
            chosen.append(rng.choice(options))
        instructions = [{"id": f, "kwargs": sample_kwargs(f, rng, base)} for f in chosen]
        task = {
            "prompt": base["prompt"],
            "base": base["id"],
            "topic": list(base["topic"]),
            "content_words": content_words(base),
            "instructions": instructions,
            "descriptions": [describe(i["id"], i["kwargs"]) for i in instructions],
            "split": split,
            "index": index,
        }
        response = build_response(base, instructions)
        if substance_problem(response, task) is None and all(
            check(i["id"], i["kwargs"], response, base["prompt"]) for i in instructions
        ):
            return {**task, "response": response}
    raise InvalidArgumentError(
        f"ifeval could not build a task at {split}[{index}] (seed {seed})"
    )  # pragma: no cover


class IFEvalTasks(GeneratedTasks):
    """A lazy, indexable sequence of generated tasks (nothing is stored)."""

    def __init__(self, size: int, **params: Any) -> None:
        self.size, self.params = size, params

    def task(self, index: int) -> dict[str, Any]:
        return _cached_task(index=index, **self.params)


@functools.lru_cache(maxsize=4096)
def _cached_task(**params: Any) -> dict[str, Any]:
    return generate_task(**params)


@dataclass(frozen=True)
class IFEvalConfig(EnvConfig):
    """``ifeval``'s knobs: how many instructions a prompt carries, and from which families."""

    seed: int = knob(0, "tasks are a pure function of (seed, split, index)")
    min_instructions: int = knob(1, "fewest instructions per prompt (1 to 4)")
    max_instructions: int = knob(3, "most instructions per prompt (up to 4)")
    families: tuple[str, ...] | None = knob(None, "the instruction families posed (none: all of them)")
    train_size: int = knob(10_000, "train tasks")
    test_size: int = knob(500, "test tasks")

    def validate(self) -> None:
        for name in ("train_size", "test_size"):
            if getattr(self, name) < 1:
                raise InvalidArgumentError(f"{name} must be an integer >= 1, got {getattr(self, name)!r}")
        if not 1 <= self.min_instructions <= self.max_instructions <= 4:
            raise InvalidArgumentError(
                "need 1 <= min_instructions <= max_instructions <= 4, "
                f"got {self.min_instructions!r}, {self.max_instructions!r}"
            )
        chosen = FAMILIES if self.families is None else self.families
        unknown = sorted(set(chosen) - set(FAMILIES))
        if unknown or (not chosen and self.max_instructions > 1):
            raise InvalidArgumentError(
                f"unknown or no instruction families {unknown}; posed families: {list(FAMILIES)}"
            )


class IFEvalEnv(SingleTurnEnv):
    """Verifiable instructions (IFEval's families): a base prompt with 1-3 checkable instructions."""

    config_class: ClassVar[type[IFEvalConfig]] = IFEvalConfig

    def __init__(self, config: IFEvalConfig | None = None, /, **knobs: Any) -> None:
        require_packages()
        config = configure(self, config, knobs)
        super().__init__(**config.env_options())
        self.params = {
            "seed": config.seed,
            "min_instructions": config.min_instructions,
            "max_instructions": config.max_instructions,
            "families": FAMILIES if config.families is None else config.families,
        }
        self.sizes = {"train": config.train_size, "test": config.test_size}
        self.rubric = Rubric(
            {
                "all": InstructionsFollowed("strict", "all"),
                "each": InstructionsFollowed("strict", "fraction"),
                "loose": InstructionsFollowed("loose", "all"),
            },
            weights={"all": 1.0, "each": 0.5, "loose": 0.0},
        )

    def load_tasks(self, split: str) -> Sequence[Task]:
        return IFEvalTasks(self.sizes[split], split=split, **self.params)

    def question(self, task: Task) -> str:
        return task["prompt"] + "\n\n" + "\n".join(task["descriptions"])

    def reference_completion(self, task: Task) -> str:
        return task["response"]

    def wrong_completions(self, task: Task) -> list[str]:
        response = task["response"]
        keywords = task["instructions"][0]["kwargs"]["keywords"]
        dropped = response
        for word in keywords:  # the anchor broken: the required keywords removed
            dropped = dropped.replace(word, "").replace(word.upper(), "")
        return [*super().wrong_completions(task), dropped, self.question(task), " ".join(task["topic"])]
