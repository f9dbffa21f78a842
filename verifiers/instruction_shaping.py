"""Shape sentences to IFEval instructions: decorate and rearrange a body so every check holds.

One piece serves two users: ``ifeval-v0`` shapes its base prompts' bodies into reference answers,
and the audit's ``instruction_echo`` family shapes an echo of the request, or filler, the same
way, so that what refuses those is the substance gate and not a missed instruction.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

PLACEHOLDERS = ("name", "date", "place", "time")
CAPITALS = ("NOTE", "TIP", "KEY", "IDEA")


def _groups(items: list[str], count: int) -> list[str]:
    """``items`` joined into exactly ``count`` runs of near-equal length (items repeat if too few)."""
    if len(items) < count:
        items = (items * count)[:count]
    size, extra = divmod(len(items), count)
    out, start = [], 0
    for n in range(count):
        end = start + size + (n < extra)
        out.append(" ".join(items[start:end]))
        start = end
    return out


def shape_response(
    body: Sequence[str], instructions: Sequence[Mapping[str, Any]], *, title: str = "A note"
) -> str:
    """``body`` (sentences) decorated and rearranged to follow every instruction in
    ``instructions`` (IFEval ids and kwargs): how ``ifeval-v0`` builds its reference answers, and
    how the audit shapes an echo or filler so that only the substance gate can refuse it."""
    kw = {i["id"]: i["kwargs"] for i in instructions}
    sentences = list(body)
    if (k := kw.get("keywords:existence")) is not None:
        sentences.append(f"This note also touches on {' and '.join(k['keywords'])}.")
    if (k := kw.get("keywords:frequency")) is not None and k["relation"] == "at least":
        sentences.append(" ".join([f"Think of {k['keyword']}."] * k["frequency"]))
    if (k := kw.get("detectable_content:number_placeholders")) is not None:
        sentences.append(
            "Fill in " + " and ".join(f"[{p}]" for p in PLACEHOLDERS[: k["num_placeholders"]]) + "."
        )
    if (k := kw.get("change_case:capital_word_frequency")) is not None and k[
        "capital_relation"
    ] == "at least":
        sentences.append(" ".join(CAPITALS[: k["capital_frequency"]]) + " comes last.")
    if (k := kw.get("detectable_format:number_highlighted_sections")) is not None:
        if len(sentences) < k["num_highlights"]:
            sentences = (sentences * k["num_highlights"])[: k["num_highlights"]]
        for i in range(k["num_highlights"]):
            sentences[i] = f"*{sentences[i]}*"
    if (k := kw.get("length_constraints:number_paragraphs")) is not None:
        text = "\n\n***\n\n".join(_groups(sentences, k["num_paragraphs"]))
    elif (k := kw.get("length_constraints:nth_paragraph_first_word")) is not None:
        groups = _groups(sentences, k["num_paragraphs"])
        groups[k["nth_paragraph"] - 1] = (
            f"{k['first_word'].capitalize()} first. {groups[k['nth_paragraph'] - 1]}"
        )
        text = "\n\n".join(groups)
    elif (k := kw.get("detectable_format:multiple_sections")) is not None:
        groups = _groups(sentences, k["num_sections"])
        text = "\n\n".join(f"{k['section_spliter']} {n}\n{g}" for n, g in enumerate(groups, 1))
    elif (k := kw.get("detectable_format:number_bullet_lists")) is not None:
        text = "\n".join(f"* {g}" for g in _groups(sentences, k["num_bullets"]))
    elif "combination:two_responses" in kw:
        half = len(sentences) // 2
        text = " ".join(sentences[:half]) + "\n******\n" + " ".join(sentences[half:])
    else:
        text = " ".join(sentences)
    if "detectable_format:title" in kw:
        text = f"<<{title}>>\n\n{text}"
    if (k := kw.get("combination:repeat_prompt")) is not None:
        text = f"{k['prompt_to_repeat']}\n\n{text}"
    if (k := kw.get("detectable_content:postscript")) is not None:
        text += f"\n\n{k['postscript_marker']} Thanks for reading."
    if (k := kw.get("startend:end_checker")) is not None:
        text += f"\n\n{k['end_phrase']}"
    if "change_case:english_lowercase" in kw:
        text = text.lower()
    if "change_case:english_capital" in kw:
        text = text.upper()
    if "detectable_format:json_format" in kw:
        text = json.dumps({"answer": text})
    if "startend:quotation" in kw:
        text = f'"{text}"'
    return text


__all__ = ["CAPITALS", "PLACEHOLDERS", "shape_response"]
