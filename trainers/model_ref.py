"""Refuse a model reference that can only be a missing local folder, before a run writes anything."""

from __future__ import annotations

from pathlib import Path

from rlvr_gym.envs.data import hub_offline, hub_unreachable
from rlvr_gym.error import MissingPathError, NotAvailableError


def check_model_reference(model: str | Path) -> None:
    """Raise :class:`MissingPathError` when ``model`` names a local folder that is not there.

    A Hugging Face hub id is ``name`` or ``org/name``; anything absolute, relative (``./``,
    ``../``, ``~``) or with more than one ``/`` can only be a path, and so is ``runs/typo`` when
    ``runs/`` is a folder here (the hub would only answer that it is unreachable). Checking first means a typo
    costs one line, not a traceback from deep inside transformers, and leaves no half-made run
    folder behind to refuse the corrected retry.
    """
    text = str(model)
    path = Path(text).expanduser()
    if path.exists():
        if path.is_dir() and not (path / "config.json").is_file():
            raise MissingPathError(
                f"model folder {text} has no config.json (is it a model saved by transformers?)"
            )
        return
    if isinstance(model, Path) or text.startswith(("/", ".", "~")) or text.count("/") > 1:
        raise MissingPathError(f"model {text!r}: no such folder (and not a Hugging Face hub id like org/name)")
    if "/" in text and path.parent.is_dir():  # runs/typo: shaped like org/name, but runs/ is right here
        raise MissingPathError(f"model {text!r}: no such folder in {path.parent}/{_near(path)}")
    check_hub_model(text)


def _near(path: Path) -> str:
    """`` (did you mean ...?)`` naming the folders beside ``path`` spelled closest to it."""
    import difflib

    try:
        names = [p.name for p in path.parent.iterdir() if p.is_dir()]
    except OSError:
        return ""
    close = difflib.get_close_matches(path.name, names, n=3)
    return f" (did you mean {', '.join(str(path.parent / c) for c in close)}?)" if close else ""


def check_hub_model(repo_id: str) -> None:
    """Raise :class:`NotAvailableError` at once when hub id ``repo_id`` cannot be had here.

    Offline (``HF_HUB_OFFLINE``) a model loads only from the local cache; with no route to the
    hub the clients would retry for about a minute, then fail with a traceback, after the run
    had made its output folder. Checked before anything is written.
    """
    cached = _cached(repo_id)
    if hub_offline():
        if not cached:
            raise NotAvailableError(
                f"model {repo_id!r} is not in the local Hugging Face cache and HF_HUB_OFFLINE is set; "
                "download it where the hub is reachable, or pass a local model folder"
            )
        return
    unreachable = hub_unreachable()
    if unreachable is not None:
        hint = (
            "it is cached here: set HF_HUB_OFFLINE=1 to use that copy"
            if cached
            else "download it where the hub is reachable, or pass a local model folder"
        )
        raise NotAvailableError(f"model {repo_id!r}: the Hugging Face hub is unreachable ({unreachable}); {hint}")


def _cached(repo_id: str) -> bool:
    """Whether the local hub cache holds ``repo_id``'s ``config.json`` (no network)."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return False
    try:
        found = try_to_load_from_cache(repo_id, "config.json")
    except Exception:  # an id the hub library rejects: not cached, and transformers will say why
        return False
    return isinstance(found, str)
