"""The fenced code blocks of the README and the docs pages, and the markers that steer them.

A block is run as written unless an HTML comment right above it says otherwise:
``<!-- not-run: REASON -->`` (the reason is required), or ``<!-- slow -->`` (runs in the slow
tests only). Any other word in such a comment names the block (``<!-- capitals-env -->``), so a
test can take the very block a page shows instead of keeping an edited copy of it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[2]
RUNNABLE = {"python": "python", "py": "python", "bash": "bash", "sh": "bash", "shell": "bash"}
# The README's two commands: what they are is said here, once, rather than above each block.
NAMED_NOT_RUN = {
    "main-command": "the main job builds a fresh venv and trains for minutes; tests/trainers/test_learning.py runs its training",
    "test-command": "the test command is what CI runs; running it here would run this test inside itself",
}


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    lang: str  # "python", "bash" or whatever the fence says
    code: str
    names: tuple[str, ...] = ()
    not_run: str | None = None  # the reason, when the block is not run
    slow: bool = False

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"

    @property
    def runs(self) -> bool:
        return self.lang in ("python", "bash") and self.not_run is None


@dataclass
class _Markers:
    names: list[str] = field(default_factory=list)
    not_run: str | None = None
    slow: bool = False


def doc_files() -> list[Path]:
    """Every Markdown page a reader is sent to: the README, docs/ and the benchmark results."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), ROOT / "bench" / "README.md"]


def _markers(comments: list[str]) -> _Markers:
    found = _Markers()
    for comment in comments:
        body = comment.strip().removeprefix("<!--").removesuffix("-->").strip()
        if body.startswith("not-run:"):
            found.not_run = body.removeprefix("not-run:").strip()
            if not found.not_run:
                raise ValueError("<!-- not-run: --> needs a reason")
        elif body == "slow":
            found.slow = True
        else:
            found.names.append(body)
            found.not_run = found.not_run or NAMED_NOT_RUN.get(body)
    return found


def blocks(path: Path) -> list[Block]:
    """The fenced code blocks of one page, in order, with their markers."""
    tokens = MarkdownIt("commonmark").parse(path.read_text(encoding="utf-8"))
    found: list[Block] = []
    comments: list[str] = []
    for token in tokens:
        if token.type == "html_block" and token.content.lstrip().startswith("<!--"):
            comments.append(token.content)
            continue
        if token.type == "fence":
            lang = token.info.split()[0].lower() if token.info.strip() else ""
            markers = _markers(comments)
            found.append(
                Block(
                    path=path,
                    line=token.map[0] + 1 if token.map else 0,
                    lang=RUNNABLE.get(lang, lang),
                    code=token.content,
                    names=tuple(markers.names),
                    not_run=markers.not_run,
                    slow=markers.slow,
                )
            )
        comments = []
    return found


def named(path: Path, name: str) -> Block:
    """The one block of ``path`` marked ``<!-- name -->``."""
    matches = [block for block in blocks(path) if name in block.names]
    if len(matches) != 1:
        raise LookupError(f"{path.relative_to(ROOT)} has {len(matches)} blocks marked <!-- {name} -->")
    return matches[0]
