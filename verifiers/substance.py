"""The substance gate of instruction tasks: a response must answer the request, not only look right.

IFEval's instructions are about form, so on their own they pay content-free text: the request
echoed back with the required keywords appended and shaped to the instructions scored 1.0 on ~97%
of ``ifeval-v0``'s tasks (issue 34). :func:`substance_problem` says why a response is not an
attempt; every test is lexical, linear in the text and needs only what the task carries:

* it says something: :data:`MIN_WORDS` words, :data:`MIN_DISTINCT` distinct, counted in every
  script (Devanagari with its vowel signs, Hangul, Cyrillic; Han, kana and Thai one per character);
* it adds words of its own: :data:`MIN_OWN_WORDS` distinct words that are neither function words
  nor anywhere in the request (prompt, instruction texts, instruction arguments) — an echo, a
  copy or a salad of the request's words has none;
* it is not mostly copied: at most :data:`MAX_COPIED_SHARE` of its words lie in a word
  :data:`NGRAM`-gram of the request (a requested "repeat the request" is taken out first);
* it is not one passage repeated: at least :data:`MIN_FRESH_NGRAMS` of its word trigrams distinct;
* where it is English by the task's terms, it reads as English: at least
  :data:`MIN_FUNCTION_SHARE` of its words are function words (word lists and lorem ipsum have none);
* where the task carries them: one of its ``topic`` words, and :data:`MIN_CONTENT_WORDS` of its
  ``content_words`` — words a real answer uses and the request does not (``ifeval-v0`` takes them
  from the base prompt's reference body), the content the answer itself must supply.

What it cannot see: a fluent on-topic text that says nothing true. That needs a judge of meaning,
which a lexical gate is not; the residual is an answer-shaped essay using the task's vocabulary.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any

from rlvr_gym.verifiers.instructions import MAX_RESPONSE_CHARS

MIN_WORDS = 8
MIN_DISTINCT = 5
MIN_OWN_WORDS = 6
MAX_COPIED_SHARE = 0.5
NGRAM = 4
MIN_FRESH_NGRAMS = 0.5
MIN_FUNCTION_SHARE = 0.12
MIN_CONTENT_WORDS = 3
ASCII_SHARE = 0.8
"""A response whose words are at least this share ASCII is held to English's function words
(where the task does not ask for another language)."""


def _wordset(text: str) -> frozenset[str]:
    return frozenset(text.split())


FUNCTION_WORDS = _wordset(
    """a about after all also am an and any are as at be because been before but by can could did
    do does each for from had has have he her here his how i if in into is it its just may me might
    more most my no not now of on once one only or other our out over she should so some such than
    that the their them then there these they this those through to too under up us very was we
    were what when where which while who why will with would you your"""
)
"""English function words: a reply in English is about a third of them; word lists have none."""

COMMON_WORDS = FUNCTION_WORDS | _wordset(
    """many much lot lots great good well better best new old long short little big small first
    last next every thing things part parts way ways time times day days year years people person
    make makes made use uses used using help helps helped keep keeps get gets take takes give gives
    come comes go goes see know think say says said want need needs find like work works world
    life important matter matters topic subject deal care attention worth often always never ever
    sometimes simple single same different another others own even still back well really add
    check let lets until during near down away off along inside outside across few full rather
    start set look show shows try call called stay stays hold holds leave live free home hour hours
    week weeks night morning early late half four ten second act line point points anyone
    everything far room plan offer continue went wrong lost feels learn build builds grow move
    moving watch slow slowly steady easier useful local special normal clear"""
)
"""Words any filler uses: never counted as the content an answer supplies."""

_NO_SPACE = (  # scripts written without spaces between words: one word per character
    (0x0E00, 0x0EFF),  # Thai, Lao
    (0x1000, 0x109F),  # Myanmar
    (0x1780, 0x17FF),  # Khmer
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0x20000, 0x3134F),  # CJK extensions B-G
)


@functools.cache
def _word_pattern() -> re.Pattern[str]:
    """Letters and the combining marks that belong to them (Python's ``\\w`` drops Devanagari's
    vowel signs); characters of :data:`_NO_SPACE` scripts are words on their own."""
    marks = "".join(
        chr(c) for c in range(0x300, 0x10000) if unicodedata.category(chr(c)) in ("Mn", "Mc", "Me")
    )
    alone = "".join(f"{re.escape(chr(lo))}-{re.escape(chr(hi))}" for lo, hi in _NO_SPACE)
    letter = rf"(?:(?![{alone}])[^\W\d_]|[{re.escape(marks)}])"
    return re.compile(rf"[{alone}]|{letter}+")


def words(text: str) -> list[str]:
    """The words of ``text`` in any script, lower-cased (digits and punctuation are not words).

    >>> words("Honey bees — मधुमक्खियाँ, пчёлы 蜜蜂!")
    ['honey', 'bees', 'मधुमक्खियाँ', 'пчёлы', '蜜', '蜂']
    """
    return _word_pattern().findall(text.lower())


def _strings(value: Any) -> Iterable[str]:
    """Every string inside an instruction's arguments (keywords, phrases, the prompt to repeat)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


def _ngrams(tokens: list[str], n: int) -> list[tuple[str, ...]]:
    return [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]


def _copied_share(tokens: list[str], request: list[str]) -> float:
    """The share of ``tokens`` inside an :data:`NGRAM`-gram that also occurs in ``request``."""
    seen = set(_ngrams(request, NGRAM))
    covered = [False] * len(tokens)
    for i, gram in enumerate(_ngrams(tokens, NGRAM)):
        if gram in seen:
            covered[i : i + NGRAM] = [True] * NGRAM
    return sum(covered) / len(tokens)


def _without_requested_repeat(text: str, task: Mapping[str, Any]) -> str:
    """``text`` less the prompt it was asked to repeat (``combination:repeat_prompt``), once."""
    for instruction in task.get("instructions", ()):
        if instruction.get("id") == "combination:repeat_prompt":
            repeat = str((instruction.get("kwargs") or {}).get("prompt_to_repeat") or "").strip()
            start = text.lower().find(repeat.lower()) if repeat else -1
            if start >= 0:
                text = text[:start] + " " + text[start + len(repeat) :]
    return text


def _expects_english(task: Mapping[str, Any]) -> bool:
    for instruction in task.get("instructions", ()):
        if instruction.get("id") == "language:response_language":
            return (instruction.get("kwargs") or {}).get("language") == "en"
    return True


def substance_problem(text: str, task: Mapping[str, Any]) -> str | None:
    """Why ``text`` is not an attempt at ``task`` (``None`` if it is one).

    ``task`` needs ``prompt``; ``descriptions``, ``instructions``, ``topic`` and
    ``content_words`` are used where present.
    """
    if len(text) > MAX_RESPONSE_CHARS:
        return f"longer than {MAX_RESPONSE_CHARS} characters"
    tokens = words(text)
    if len(tokens) < MIN_WORDS or len(set(tokens)) < MIN_DISTINCT:
        return f"fewer than {MIN_WORDS} words ({MIN_DISTINCT} distinct): says nothing"
    instructions = task.get("instructions", ())
    request_text = "\n".join(
        [str(task.get("prompt", "")), *map(str, task.get("descriptions", ()))]
        + [s for i in instructions for s in _strings(i.get("kwargs") or {})]
    )
    request = words(request_text)
    own = set(tokens) - set(request) - FUNCTION_WORDS
    if len(own) < MIN_OWN_WORDS:
        return f"fewer than {MIN_OWN_WORDS} words of its own: repeats the request back"
    body = words(_without_requested_repeat(text, task))
    if len(body) >= NGRAM and _copied_share(body, request) > MAX_COPIED_SHARE:
        return f"more than {MAX_COPIED_SHARE:.0%} of it copied from the request"
    trigrams = _ngrams(body, 3)
    if len(trigrams) >= 12 and len(set(trigrams)) < MIN_FRESH_NGRAMS * len(trigrams):
        return "one passage repeated: filler"
    ascii_words = sum(t.isascii() for t in tokens)
    english = _expects_english(task) and ascii_words >= ASCII_SHARE * len(tokens)
    if english and sum(t in FUNCTION_WORDS for t in tokens) < MIN_FUNCTION_SHARE * len(tokens):
        return "not sentences: too few function words for English (a word list or filler)"
    topic = {t.lower() for t in task.get("topic", ())}
    if topic and not topic & set(tokens):
        return "off topic: none of the prompt's topic words"
    content = {c.lower() for c in task.get("content_words", ())}
    if content and len(content & set(tokens)) < MIN_CONTENT_WORDS:
        return f"fewer than {MIN_CONTENT_WORDS} of the words an answer to it uses: no answer given"
    normal = " ".join(text.lower().split())
    if any(" ".join(str(d).lower().split()) in normal for d in task.get("descriptions", ())):
        return "repeats the instructions back"
    return None


__all__ = [
    "COMMON_WORDS",
    "FUNCTION_WORDS",
    "MAX_COPIED_SHARE",
    "MIN_CONTENT_WORDS",
    "MIN_DISTINCT",
    "MIN_OWN_WORDS",
    "MIN_WORDS",
    "substance_problem",
    "words",
]
