"""Find the program in a completion: fenced code blocks, with the usual messes handled."""

from __future__ import annotations

import ast
import re
import textwrap

_FENCE = re.compile(r"^[ \t]*```[ \t]*([\w+.-]*)[^\n]*\n(.*?)(?:^[ \t]*```|\Z)", re.DOTALL | re.MULTILINE)
_PYTHON_TAGS = ("python", "py", "python3", "py3")
MAX_COMPLETION_CHARS = 200_000


def _parses(code: str) -> bool:
    try:
        ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def extract_code(text: str, must_define: str | None = None) -> str | None:
    """The program a completion offers, or ``None``.

    * Fenced blocks tagged ``python``/``py`` win over untagged ones; other languages are ignored.
    * With several candidates, the last one that defines ``must_define`` (the entry point) is
      taken, else the last one: models tend to finish with their final answer.
    * An unclosed fence (a truncated completion) runs to the end of the text; blocks indented
      as a whole (inside a list item) are dedented.
    * No fence at all: the whole completion, if it parses as Python and is not empty.
    """
    text = text[:MAX_COMPLETION_CHARS]
    blocks = [(tag.lower(), body) for tag, body in _FENCE.findall(text)]
    candidates = [body for tag, body in blocks if tag in _PYTHON_TAGS] or [
        body for tag, body in blocks if not tag
    ]
    candidates = [textwrap.dedent(body) for body in candidates if body.strip()]
    if candidates:
        if must_define:
            pattern = re.compile(rf"^\s*(?:async\s+)?def\s+{re.escape(must_define)}\s*\(", re.MULTILINE)
            defining = [body for body in candidates if pattern.search(body)]
            if defining:
                return defining[-1]
        return candidates[-1]
    if blocks or not text.strip() or "```" in text:
        return None
    return text if _parses(text) else None
