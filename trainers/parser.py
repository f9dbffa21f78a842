"""The command line's argparse parser: no silent abbreviations, and a "did you mean" for a typo.

argparse (before Python 3.14) accepts any unambiguous prefix of a flag (``--max-step`` for
``--max-steps``), so a typo of a flag that later gains a sibling changes meaning without a word;
and an unknown flag is refused without naming the one meant (``--lr``). Every parser here is
:class:`Parser`: prefixes are refused, and an unknown flag names the closest ones of the command
it was given to.
"""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Iterable, Sequence
from typing import Any, NoReturn


def _initials(flag: str) -> str:
    """``--learning-rate`` -> ``lr``: what users abbreviate a flag to."""
    return "".join(word[:1] for word in flag.lstrip("-").split("-") if word)


def close_flags(typed: str, known: Iterable[str], n: int = 3) -> list[str]:
    """The flags of ``known`` a user most likely meant by ``typed``: by spelling, then by initials."""
    name = typed.split("=", 1)[0]
    bare = name.lstrip("-")
    longs = sorted({k for k in known if k.startswith("--") and k != "--help"})
    close = [k for k in longs if len(bare) > 1 and _initials(k) == bare]
    close += [k for k in difflib.get_close_matches(name, longs, n=n, cutoff=0.6) if k not in close]
    close += [k for k in longs if k not in close and len(bare) > 2 and k.lstrip("-").startswith(bare)]
    return close[:n]


class Parser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` with ``allow_abbrev=False`` and flag suggestions.

    Subcommand parsers are made of this class too (``add_subparsers`` uses the parent's class).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            self._refuse_unknown(parsed, extras)
        return parsed

    def _refuse_unknown(self, parsed: argparse.Namespace, extras: list[str]) -> NoReturn:
        """Refuse ``extras`` through the subcommand's own parser, naming the flags it has."""
        target: argparse.ArgumentParser = self
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                chosen = getattr(parsed, action.dest, None)
                target = action.choices.get(chosen, self)
        known = [s for a in target._actions for s in a.option_strings]
        hints = []
        for extra in extras:
            if extra.startswith("-"):
                close = close_flags(extra, known)
                if close:
                    hints.append(f"{extra.split('=', 1)[0]}: did you mean {' or '.join(close)}?")
        message = f"unrecognized arguments: {' '.join(extras)}"
        target.error(message + ("" if not hints else " (" + "; ".join(hints) + ")"))
