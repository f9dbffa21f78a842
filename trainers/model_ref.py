"""Refuse a model reference that can only be a missing local folder, before a run writes anything."""

from __future__ import annotations

from pathlib import Path

from rlvr_gym.error import MissingPath


def check_model_reference(model: str | Path) -> None:
    """Raise :class:`MissingPath` when ``model`` names a local folder that is not there.

    A Hugging Face hub id is ``name`` or ``org/name``; anything absolute, relative (``./``,
    ``../``, ``~``) or with more than one ``/`` can only be a path. Checking first means a typo
    costs one line, not a traceback from deep inside transformers, and leaves no half-made run
    folder behind to refuse the corrected retry.
    """
    text = str(model)
    path = Path(text).expanduser()
    if path.exists():
        if path.is_dir() and not (path / "config.json").is_file():
            raise MissingPath(
                f"model folder {text} has no config.json (is it a model saved by transformers?)"
            )
        return
    if isinstance(model, Path) or text.startswith(("/", ".", "~")) or text.count("/") > 1:
        raise MissingPath(f"model {text!r}: no such folder (and not a Hugging Face hub id like org/name)")
