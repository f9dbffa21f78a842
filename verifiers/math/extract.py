"""Find the final answer a completion commits to.

Looks, in order of how explicit the commitment is: the last ``<answer>...</answer>``, the last
``\\boxed{...}`` (nested braces, scanned in linear time), GSM8K's ``#### x``, "the (final)
answer is x", a completion that is only the answer, and, when asked, the last number.
"""

from __future__ import annotations

import re
from collections import deque

MAX_ANSWER_CHARS = 500
"""Longer extractions are not answers; later steps refuse them as ``bad_format``."""
MAX_COMPLETION_CHARS = 200_000
"""Longer completions are refused before any extraction (``bad_format``): the extractors are
linear but not free (10 MB of ``$`` cost 2 s), and a reply this long is not a worked answer."""

_BOXED = re.compile(r"\\(?:boxed|fbox)\s*\{")
_BOXED_SPACE = re.compile(r"\\boxed +([^\s$]+)")
_HASHES = re.compile(r"####\s*([^\n]*)")
_SAYS = re.compile(r"answer(?:\*\*)?\s*(?:is|:|=)\s*:?\s*([^\n]*)", re.IGNORECASE)
"""Catches "the (final) answer is x" and "Answer: x"; starting at the literal keeps the scan fast."""
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")
_BOX_GAP = re.compile(r"(?:[\s,;$.]|\\[()]|\\q?quad|\\text\{\s*(?:and|or)\s*\}|\band\b|\bor\b)*")
MAX_JOINED_BOXES = 10
MAX_JOINING_PHRASE = 40
_JOINING_WORD = re.compile(r"\b(?:and|or)\b")
_SEQUENCE_WORD = re.compile(r"\b(?:then|so|thus|hence|therefore|but|wait|again|instead|actually|not)\b", re.I)
_ANSWER_WORD = re.compile(r"^(?:final\s+)?answer\b", re.IGNORECASE)
"""A reply "Answer" then a display on the next lines (``Answer \\[ 9 \\]``): the word goes."""
_OPENERS = re.compile(r"\$\$|\\\[|\\\(|\$|:")
_DISPLAY = re.compile(
    r"\s*:?\s*(?:\$\$(?P<a>[^$]{1,500}?)\$\$|\\\[(?P<b>.{1,500}?)\\\]|\\\((?P<c>.{1,500}?)\\\)|\$(?P<d>[^$]{1,500}?)\$)",
    re.DOTALL,
)
_ANY_MATH = re.compile(
    r"\$\$([^$]{1,500}?)\$\$|\\\[((?s:.){1,500}?)\\\]|\\\((.{1,500}?)\\\)"
    r"|(?<!\\)\$([^$\n]{1,500}?)(?<!\\)\$(?!\d)"
)
"""Display math may span lines; inline ``$..$`` and ``\\(..\\)`` may not (a stray ``$`` is text).

A ``$`` with a digit right after it does not close inline math (Pandoc's rule for TeX math): it
opens an amount. Currency is then text: in "$30 + $300 = $330" no pair is math (read as math,
"$300 = $" gave ``300 =``)."""
_COPULA = re.compile(r"\s(?:is|are|equals|was|be)\s+(?:equal to\s+)?")
_WORDY = re.compile(r"[A-Za-z]{2,}")
_LEADING_VALUE = re.compile(
    r"\s*(\$?[-+]?\d(?:[\d.,/]*\d)?\$?|\$[^$]{1,100}\$)(?:,\s|\s+(?:because|since|as|which|so|for|from)\b)"
)
_WORD = re.compile(r"\b[A-Za-z]{2,}\b")
_COMMAND = re.compile(r"\\[a-zA-Z]+")
_END_TOKEN = re.compile(r"<\|(?:im_start|im_end|endoftext|end_of_text|eot_id|start_header_id)\|>")
"""A chat template's turn marker: what follows it is a next turn the model made up, not its answer."""
MAX_BARE_WORDS = 3
"""A one-line completion of three or more words is a sentence (often cut off), not an answer."""


def last_tagged(text: str, tag: str) -> str | None:
    """Contents of the last ``<tag>...</tag>`` (case-insensitive), found in linear time.

    A regex like ``<answer>(.*?)</answer>`` rescans the rest of the text from every opening
    tag, which is quadratic on a completion of many unclosed tags.
    """
    close = _last(re.compile(rf"</{re.escape(tag)}>", re.IGNORECASE), text, len(text))
    if close is None:
        return None
    opening = _last(re.compile(rf"<{re.escape(tag)}>", re.IGNORECASE), text, close.start())
    if opening is None:
        return None
    return text[opening.end() : close.start()]


def _last(pattern: re.Pattern[str], text: str, end: int) -> re.Match[str] | None:
    """The last match before ``end`` (one left-to-right scan, no backtracking from the end)."""
    last = deque(pattern.finditer(text, 0, end), maxlen=1)
    return last[0] if last else None


def _close_of(text: str, start: int) -> int | None:
    """Index of the ``}`` closing the group opened just before ``start``, or ``None``."""
    depth = 1
    for position in range(start, len(text)):
        char = text[position]
        if char == "{" and text[position - 1] != "\\":
            depth += 1
        elif char == "}" and text[position - 1] != "\\":
            depth -= 1
            if depth == 0:
                return position
    return None


def _joins(gap: str) -> bool:
    """Boxes side by side: only separators between them, or a short phrase with "and"/"or"."""
    if _BOX_GAP.fullmatch(gap):
        return True
    return (
        len(gap) <= MAX_JOINING_PHRASE
        and _JOINING_WORD.search(gap) is not None
        and _SEQUENCE_WORD.search(gap) is None  # "\\boxed{1} and then \\boxed{2}": a correction
    )


def find_boxed(text: str, *, join_all: bool = False) -> str | None:
    """Contents of the last ``\\boxed{...}`` with balanced braces, or ``None`` (unbalanced too).

    Boxes written side by side (``\\boxed{1}\\boxed{2}``, ``$\\boxed{1}$ and $\\boxed{2}$``)
    are one answer of several values: their contents are joined with commas. ``join_all``
    joins every box (a reference solution's boxes are all part of the answer).
    """
    matches = list(_BOXED.finditer(text))
    if not matches:
        match = _last(_BOXED_SPACE, text, len(text))
        return match.group(1) if match else None
    close = _close_of(text, matches[-1].end())
    if close is None:
        return None
    parts = [text[matches[-1].end() : close]]
    for index in range(len(matches) - 2, max(-1, len(matches) - MAX_JOINED_BOXES - 1), -1):
        earlier_close = _close_of(text, matches[index].end())
        gap = (earlier_close or 0) + 1, matches[index + 1].start()
        if earlier_close is None or not (join_all or _joins(text[gap[0] : gap[1]])):
            break
        parts.append(text[matches[index].end() : earlier_close])
    return ", ".join(reversed(parts))


def _sentence(rest: str) -> str:
    """The answer part of "the answer is X. Because ..." : up to a sentence end."""
    rest = rest.strip()[: MAX_ANSWER_CHARS + 1]  # a longer "sentence" is refused as too long anyway
    match = re.match(r"(.*?)(?:\.\s+[A-Z]|\.$|$)", rest)
    return (match.group(1) if match else rest).strip().rstrip(".").strip()


def answer_tag(text: str) -> str | None:
    """Step 1: the last ``<answer>...</answer>`` (a ``\\boxed{}`` inside it wins)."""
    inner = last_tagged(text, "answer")
    if inner is None:
        return None
    inner = inner.strip()
    return find_boxed(inner) or inner


def boxed(text: str) -> str | None:
    """Step 2: the last ``\\boxed{...}`` (adjacent boxes joined)."""
    found = find_boxed(text)
    return found.strip() if found is not None else None


def hashes(text: str) -> str | None:
    """Step 3: GSM8K's ``#### x``."""
    found = _HASHES.findall(text)
    return found[-1].strip() if found else None


def answer_phrase(text: str) -> str | None:
    """Step 4: "the (final) answer is x", "Final Answer: ...", with the value after a last "is".

    "Final Answer: The largest $n$ is 34." gives ``34``; a phrase that ends its line and is
    followed by a display (``\\[ 9 \\]`` on the next lines) gives the display's contents.
    """
    match = _last(_SAYS, text, len(text))
    if match is None:
        return None
    rest = match.group(1).strip()
    if not rest or _OPENERS.fullmatch(rest):
        display = _DISPLAY.match(text, match.start(1))
        return _body(display) if display else None
    said = _sentence(rest)
    if lead := _LEADING_VALUE.match(said):  # "18, which is 3 more than 15": the value comes first
        return lead.group(1)
    copula = _last(_COPULA, said, len(said))
    if copula is not None and _WORDY.search(said[: copula.start()]):
        said = said[copula.end() :].strip()
    return said


def whole_answer(text: str) -> str | None:
    """Step 5: a completion that is only the answer (one short line, or one display block)."""
    bare = text.strip()
    if bare and "\n" not in bare and len(_ANY_MATH.sub("", bare)) <= 100:  # the prose is short
        pieces = _ANY_MATH.findall(bare)
        if len(pieces) > 1:
            return None  # "$1$ and $2$ and $3$", "$5$ or $6$": several values, not one answer
        only = _ANY_MATH.fullmatch(bare)
        if pieces and only is None:
            return last_math(bare)  # "Answer \\( 9 \\)": the math in a one-line reply
        words = _WORD.findall(_COMMAND.sub(" ", bare))
        if len(words) < MAX_BARE_WORDS:
            return bare
        return _body(only) if only else None  # one math block and nothing else, however wordy
    said = _ANSWER_WORD.sub("", bare, count=1)
    display = _DISPLAY.fullmatch(said)
    if display is None or (said != bare and display.group("a") is None and display.group("b") is None):
        return None  # after "Answer", inline math (``$..$``, ``\\(..\\)``) split over lines is not read
    return _body(display)


def last_math(text: str) -> str | None:
    """Fallback step 6: the contents of the last display or inline math in the text."""
    found = _last(_ANY_MATH, text, len(text))
    return _body(found) if found else None


def math_spans(text: str) -> list[str]:
    """The contents of every display or inline math in ``text``, in order (``last_math`` reads the last)."""
    return [_body(found) for found in _ANY_MATH.finditer(text)]


def _body(match: re.Match[str]) -> str:
    """The contents of whichever delimiter pair matched."""
    return next((group for group in match.groups() if group is not None), "").strip()


def last_number(text: str) -> str | None:
    """Fallback step 7: the last number written anywhere."""
    found = _last(_NUMBER, text, len(text))
    return found.group().rstrip(",") if found else None


_FINAL_NUMBER = re.compile(
    r"(?:\b(?:is|are|was|were|equals|it['’]s|that['’]s)|:)\s+(?:equal\s+to\s+)?"
    r"(?P<currency>[$€£]|\\\$)?\s?(?P<number>[-+]?\d(?:[\d.,]*\d)?(?:/\d+)?)"
    r"\s?(?P<unit>[$€£%]|[A-Za-zµ²³]{1,10}[23²³]?)?\s*[.!]?\s*",
    re.IGNORECASE,
)
_UNCOMMITTED = re.compile(
    r"\b(?:or|either|maybe|perhaps|possibly|probably|likely|might|could|would|should|guess|assume|if|"
    r"approximately|about|around|roughly|nearly|almost|between|and|to|than|from|per|times)\b|[?±…]|\\pm|\.\.|~",
    re.IGNORECASE,
)
"""Words that make a final number a hedge, a list, a range or an estimate, not a commitment."""
MAX_FINAL_SENTENCE = 200
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|\s+(?=(?:Therefore|Thus|Hence|So),?\s)")
"""Where a sentence ends: after ``.!?``, or before a capitalised "Therefore"/"Thus"/"Hence"/"So"
that opens a conclusion whose full stop was left out (``P(A) = 2/3 Therefore, ... is 2/3.``)."""


def own_turn(text: str) -> str:
    """``text`` up to the first chat-template turn marker (``<|im_start|>user`` and what follows go)."""
    end = _END_TOKEN.search(text)
    return text[: end.start()] if end else text


def final_number(text: str) -> str | None:
    """A number the text ends on, committed after "is"/"it's" (``which is 1,000.99€``), or ``None``.

    Only the last sentence of the last line is read (at most :data:`MAX_FINAL_SENTENCE`
    characters), and only when nothing in it hedges, lists or estimates (:data:`_UNCOMMITTED`:
    "10 or 1,000.99", "it is 3 and it is 5", "about 12", "is it 7?"). The verifier asks this only
    when the gold is one number and no other step found an answer. The unit or currency goes;
    a percent sign stays (``15%`` may be the fraction 0.15).
    """
    line = own_turn(text).rstrip()[-(MAX_FINAL_SENTENCE * 2) :].rpartition("\n")[2]
    sentence = _SENTENCE_BREAK.split(line)[-1]
    if len(sentence) > MAX_FINAL_SENTENCE or _UNCOMMITTED.search(sentence):
        return None
    match = _last(_FINAL_NUMBER, sentence, len(sentence))
    if match is None or match.end() != len(sentence):
        return None
    return match.group("number") + ("%" if match.group("unit") == "%" else "")


STRICT_STEPS = (answer_tag, boxed, hashes)
"""What a strict env accepts: an explicit answer container only."""
STEPS = (*STRICT_STEPS, answer_phrase, whole_answer)
FALLBACK_STEPS = (last_math, last_number)


def reference_answer(gold: str) -> str:
    """The answer a gold field states: the last (adjacent) ``\\boxed{}`` of a worked solution, else the field."""
    if "\\boxed" in gold or "\\fbox" in gold:
        boxes = find_boxed(gold)
        if boxes:
            return boxes
    return gold


def extract_answer(
    text: str, *, last_number_fallback: bool = False, last_math_fallback: bool = False, strict: bool = False
) -> str | None:
    """The answer string ``text`` commits to, or ``None`` when it commits to none.

    The steps run in the order of :data:`STEPS` (``strict``: :data:`STRICT_STEPS` only); the
    first that finds something wins. ``last_number_fallback`` adds :data:`FALLBACK_STEPS` (the last
    math, then the last number), which a completion cut off mid-reasoning also "has";
    ``last_math_fallback`` adds only the last display or inline math (what Math-Verify reads).
    """
    text = own_turn(text)
    steps = STRICT_STEPS if strict else STEPS
    if last_number_fallback and not strict:
        steps = (*steps, *FALLBACK_STEPS)
    elif last_math_fallback and not strict:
        steps = (*steps, last_math)
    for step in steps:
        found = step(text)
        if found is not None and found.strip():
            return found
    return None
